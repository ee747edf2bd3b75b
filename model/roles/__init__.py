"""The distributed algorithms' roles, sans I/O: one algorithm, two runtimes (docs/ARCHITECTURE.md).

Each rank of a distributed search runs one Role object. Roles never call MPI, SimPy, threads or a clock;
a runtime (engine/: MPI ranks, an IO thread and worker threads; sim/: SimPy processes; loopback.py here:
an in-process event queue for tests) feeds them events and carries out what they ask.

The contract
------------
Every callback returns an `Actions` (base.py): `pkgs` (work packages to run on this rank's workers), `msgs`
(Messages to send, each with its dst) and `timers` ((delay seconds, token): call on_timer(token) later).

    role.start()                   once, before anything else
    role.on_message(msg)           a message arrived (msg.src, msg.kind, msg.payload, msg.sim_id)
    role.execute(pkg) -> result    the package's pure compute on this rank's tree. The engine calls it
                                   from worker threads, several at once (the kernels use atomics and
                                   release the GIL); the simulator may call it or only charge its cost.
                                   It touches the tree and the package's payload, never the role's state.
                                   It may return base.CONTINUE after setting pkg.kind to the next part:
                                   the runtime then calls execute(pkg) again at once (a package of
                                   several parts, each recorded and charged under its own kind)
    role.on_work_done(pkg, result) the package finished (pass execute's result back unchanged)
    role.on_timer(token)           a timer the role asked for expired
    role.stop()                    start no new simulations (budget reached, time up, stop request)
    role.final_sync()              once, after the runtime saw the drained system quiescent
    role.idle() -> bool            the role holds nothing it will act on by itself
    role.stats() / role.report()   counters for the trace samples / the final JSON report; the report
                                   of a rank that holds the root's statistics has "root" and "best_move"
                                   (treesplit, root, hybrid: every search rank; tds, dfuct: the root's
                                   owner; leaf: the master)

start/on_message/on_work_done/on_timer/stop/final_sync are never called concurrently with each other (the
engine serialises them with one lock per rank: the IO thread delivers messages, and a worker reports its own
finished package, which saves a thread hand-off per package); execute may run concurrently with them and with itself. A rank's
packages may run in any order; `pkg.front` marks the continuation of a simulation that may run next on
the same worker. Messages between two ranks may arrive in any order (no FIFO assumed). Message sizes
(msg.nbytes) are exact; the engine sends msg.encode() and rebuilds with messages.decode(kind, src, dst,
sim_id, data) (numpy records and struct, never pickle). Package and message kinds are model.trace's.

Termination (what every runtime does; loopback.py is the reference):
    RUN    roles start simulations up to their share of Setup.sims (then stop by themselves), or until
           the runtime calls stop() on every role (time up, or a stop CONTROL message)
    DRAIN  stop() on every role; in-flight simulations finish; wait until quiescent: no message in flight,
           no package queued or running, every role idle() (the engine proves it with counter waves)
    SYNC   final_sync() on every role (duplicated nodes push their last increments); wait until
           quiescent again. Now every duplicated node has the same statistics on every rank, and the
           root's visits equal the simulations completed: nothing lost, nothing counted twice.

Ranks: search ranks are 0..M-1, broadcast ranks M..M+B-1 (base.Layout; leaf: rank 0 is the master, the
others compute playouts). make_role() builds a rank's role for a base.Setup (game params g, root position,
position history for superko, simulation budget, seed); every search rank of a run needs a table of the
same size (the size is |H|/M of eq. 4.6/4.7). A rank's start() begins a new search on its table, so a
table kept from the previous move is reused (tree reuse).

Other helpers here: params.py (the parameters, thesis defaults, split_params), messages.py (kinds, layouts,
merge_stats), snapshot.py (the top of the tree as trace `tree` rows), invariants.py (what must hold after a
drained, synchronised search; loopback tests and the functional simulator can check it).

Kernels: steps.py (select / expand / playout / update on a simulation's step stack, mirroring
model.uct.run_simulations, so one rank with one simulation in flight builds the sequential tree exactly),
dup.py (duplicated nodes' delta counters, DUP snapshots, SYNC flushes, applying rows from other ranks).

Algorithms
----------
    treesplit  UCT-Treesplit (Schaefers 2014, 4.2): treesplit.py (search ranks), broadcast.py (broadcast ranks)
    tds        the same with n_dup = inf and share_root off: the tree spread by hash, nothing duplicated
               (every simulation starts with a MOVE to the root's owner)
    root       root parallelisation: root.py
    leaf       leaf parallelisation (MLMP/SLMP): leaf.py
    dfuct      TDS with depth-first UCT (delayed, merged backpropagation): dfuct.py
    hybrid     groups of treesplit ranks joined by root parallelisation: hybrid.py (each group's ranks run
               treesplit.py / broadcast.py under global rank numbers)
"""

from __future__ import annotations

from typing import Any

from model import algorithms
from model.roles.base import CONTINUE, Actions, Layout, Package, Role, RoleStats, Setup
from model.roles.broadcast import TreesplitBroadcast
from model.roles.dfuct import DfuctSearch
from model.roles.hybrid import make_hybrid_role
from model.roles.leaf import LeafMaster, LeafWorker
from model.roles.messages import Message, decode
from model.roles.params import split_params
from model.roles.root import RootSearch
from model.roles.treesplit import TreesplitSearch

ALGORITHMS = algorithms.DISTRIBUTED


def _treesplit(rank, layout, setup, uct, own, table) -> Role:
    if layout.is_search(rank):
        return TreesplitSearch(rank, layout, setup, uct, own, table)
    return TreesplitBroadcast(rank, layout, own)


def _leaf(rank, layout, setup, uct, own, table) -> Role:
    if rank == 0:
        return LeafMaster(rank, layout, setup, uct, own, table)
    return LeafWorker(rank, layout, setup, uct, own)


# algorithm -> the role of one rank: (rank, layout, setup, uct params, own params, table) -> Role
ROLES = {
    "treesplit": _treesplit,
    "tds": _treesplit,
    "root": RootSearch,
    "leaf": _leaf,
    "dfuct": DfuctSearch,
    "hybrid": make_hybrid_role,
}


def make_role(algo: str, rank: int, layout: Layout, setup: Setup, params: dict[str, Any] | None = None,
              table=None) -> Role:
    """The role of global rank `rank` for algorithm `algo`; params: --param key=value pairs (strings ok).
    A layout the algorithm can't run (model.algorithms.resolve_layout) is a ConfigError."""
    uct, own = split_params(algo, params or {})
    algorithms.resolve_layout(algo, layout.search_ranks, layout.bcast_ranks, own)
    return ROLES[algo](rank, layout, setup, uct, own, table)


def make_roles(algo: str, layout: Layout, setup: Setup, params: dict[str, Any] | None = None) -> list[Role]:
    """Every rank's role (for in-process runtimes: loopback, simulator)."""
    return [make_role(algo, r, layout, setup, params) for r in range(layout.world)]


__all__ = ["ALGORITHMS", "CONTINUE", "ROLES", "Actions", "Layout", "Message", "Package", "Role", "RoleStats", "Setup",
           "decode", "make_role", "make_roles", "split_params"]
