"""The role contract's small types: work packages, actions, the Role base class, the rank layout.

See model/roles/__init__.py for the contract itself (who calls what, from which thread).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Work-package kinds (model.trace.PACKAGE_KINDS)
SELECT, EXPAND, PLAYOUT, UPDATE, SYNC, BCAST, IO = "select", "expand", "playout", "update", "sync", "bcast", "io"
PART_KINDS = (SELECT, EXPAND, PLAYOUT, UPDATE)  # Package.parts counts these, in this order


class _Continue:
    __slots__ = ()

    def __repr__(self) -> str:
        return "CONTINUE"


# What execute() returns when the package goes on with another part at once (it has set pkg.kind to that
# part's kind): the runtime calls execute(pkg) again on the same worker, without on_work_done, and records
# (the simulator: charges) each part under its own kind. One package then carries a simulation through
# several steps (select, expand, select, playout, update) for the price of one hand-over.
CONTINUE = _Continue()


class Package:
    """One unit of work for a rank's workers.

    kind      one of model.trace.PACKAGE_KINDS
    sim_id    the simulation it belongs to (-1: none)
    payload   role-private; only the role that made it reads it (execute / on_work_done)
    front     a continuation of a simulation that just ran here: the runtime may run it next on the same
              worker (Schaefers 2014, 4.2.4 keeps a simulation on its core while it stays on the rank)
    cost      None: the simulator charges the profile's service time for `kind`; else seconds to charge
    parts     None, or set by an execute() that ran several parts in one call: counts per kind (PART_KINDS),
              which the simulator charges (the loopback counts) instead of the one `kind`
    log       None, or with parts, when the role was asked to record them (Role.record_parts): (kinds, sims,
              stamps, labels, steps): per part its PART_KINDS index, which simulation (an index into labels,
              the sim_ids), the cycle counter after it (model/cycles.py; stamps[0]: at the call's start; zeros
              unless stamps were asked for) and the tree steps it covered (model/roles/core.py's _log)
    """

    __slots__ = ("kind", "sim_id", "payload", "front", "cost", "parts", "log")

    def __init__(self, kind: str, sim_id: int = -1, payload: Any = None, front: bool = False,
                 cost: float | None = None):
        self.kind = kind
        self.sim_id = sim_id
        self.payload = payload
        self.front = front
        self.cost = cost
        self.parts = None
        self.log = None

    def __repr__(self) -> str:
        return f"Package({self.kind}, sim={self.sim_id})"


class Actions:
    """What a role callback asks the runtime to do: run packages, send messages, set timers."""

    __slots__ = ("pkgs", "msgs", "timers")

    def __init__(self) -> None:
        self.pkgs: list[Package] = []
        self.msgs: list = []  # model.roles.messages.Message, each with its dst
        self.timers: list[tuple[float, Any]] = []  # (delay in seconds, token) -> role.on_timer(token)

    def __bool__(self) -> bool:
        return bool(self.pkgs or self.msgs or self.timers)

    def extend(self, other: "Actions") -> "Actions":
        self.pkgs.extend(other.pkgs)
        self.msgs.extend(other.msgs)
        self.timers.extend(other.timers)
        return self


NOTHING = Actions()  # shared empty answer; callers must not append to it


@dataclass(frozen=True)
class Layout:
    """Who is who: search ranks 0..M-1, broadcast ranks M..M+B-1 (global rank numbers), W workers each.

    Each search rank s has one broadcast partner, M + s*B//M (blocks of consecutive search ranks, 1:4 by
    default); with B = 0 search ranks send their synchronisation messages to every other search rank.
    """

    search_ranks: int
    bcast_ranks: int = 0
    workers: int = 1
    peers: int = 12

    def __post_init__(self) -> None:
        from model.errors import ConfigError

        if self.search_ranks < 1:
            raise ConfigError("ranks: need at least 1 search rank")
        if self.bcast_ranks < 0:
            raise ConfigError("bcast_ranks: need a whole number >= 0")
        if self.bcast_ranks > self.search_ranks:
            raise ConfigError("bcast_ranks: at most one broadcast rank per search rank")
        if self.workers < 1:
            raise ConfigError("workers: need at least 1 worker per rank")

    @property
    def world(self) -> int:
        return self.search_ranks + self.bcast_ranks

    def is_search(self, rank: int) -> bool:
        return 0 <= rank < self.search_ranks

    def partner(self, search_rank: int) -> int:
        """The broadcast rank a search rank sends its SYNC messages to (and hears others' from)."""
        return self.search_ranks + search_rank * self.bcast_ranks // self.search_ranks

    def clients(self, bcast_rank: int) -> list[int]:
        """The search ranks served by a broadcast rank (global rank number)."""
        return [s for s in range(self.search_ranks) if self.partner(s) == bcast_rank]


@dataclass
class RoleStats:
    """Counters a role keeps for the trace's samples table and the final report."""

    sims_started: int = 0
    sims_done: int = 0          # simulations this rank started and saw completed
    playouts: int = 0           # playouts computed here
    nodes_stored: int = 0       # nodes created in this rank's table
    nodes_duplicated: int = 0   # duplicated nodes held here
    queue_len: int = 0          # packages handed to the runtime and not yet done
    moves_held: int = 0         # MOVE messages waiting here (the load-balance measure of Schaefers 2014, 4.2.5)
    messages_sent: dict = field(default_factory=dict)      # kind -> count
    messages_received: dict = field(default_factory=dict)  # kind -> count
    extra: dict = field(default_factory=dict)              # algorithm-specific counters

    def as_dict(self) -> dict:
        d = {k: v for k, v in self.__dict__.items() if k != "extra"}
        d.update(self.extra)
        return d


class Role:
    """Base class of every rank's role. Subclasses override what they need; see the package docstring."""

    rank: int
    layout: Layout

    def start(self) -> Actions:
        return Actions()

    def on_message(self, msg) -> Actions:
        raise NotImplementedError(f"{type(self).__name__} got an unexpected {msg.kind} message")

    def execute(self, pkg: Package) -> Any:
        raise NotImplementedError(f"{type(self).__name__} cannot run {pkg.kind} packages")

    def on_work_done(self, pkg: Package, result: Any) -> Actions:
        return Actions()

    def on_timer(self, token: Any) -> Actions:
        return Actions()

    def record_parts(self, on: bool, stamps: bool = False) -> None:
        """The runtime records every part of a package on its own (a trace): each part as its own execute()
        call (base.CONTINUE) rather than several in one, so that each gets its own times; or, with stamps
        (a runtime that can place them), several in one call with a stamped log of them (Package.log)."""

    def stop(self) -> Actions:
        """Start no new simulations (budget reached, time up, or a stop request); in-flight ones go on."""
        return Actions()

    def final_sync(self) -> Actions:
        """Called once after the runtime saw the drained system quiescent: push the last statistics."""
        return Actions()

    def idle(self) -> bool:
        """True if the role holds nothing it will still act on by itself (no delayed messages, no
        simulations it means to start). The runtime's own queues are its business."""
        return True

    def finished(self) -> bool:
        """True once the role has stopped and holds nothing (the runtime may stop feeding it)."""
        return self.idle()

    def stats(self) -> RoleStats:
        return RoleStats()

    def sims_done(self) -> int:
        """stats().sims_done, which runtimes read every few milliseconds: a role whose stats() costs more
        than microseconds (a table scan) answers it directly."""
        return self.stats().sims_done

    def report(self) -> dict:
        """JSON-able final report of this rank (the coordinator's includes the search result)."""
        return self.stats().as_dict()


@dataclass
class Setup:
    """The search every role of a run works on: the game params g, the root position, the game's
    position history (sorted uint64, for positional superko; uct.history_array makes it), the budget of
    simulations over all search ranks (None: until stop()), and the seed."""

    g: Any
    root: Any
    history: Any = None
    sims: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        import numpy as np

        if self.history is None:
            from model import game

            self.history = np.array([game.position_hash(self.g, self.root)], dtype=np.uint64)
        if self.sims is not None and self.sims < 0:
            from model.errors import ConfigError

            raise ConfigError("sims: must be >= 0")

    def quota(self, rank: int, search_ranks: int) -> int | None:
        """This search rank's share of the budget (the shares add up to `sims`)."""
        if self.sims is None:
            return None
        return self.sims // search_ranks + (1 if rank < self.sims % search_ranks else 0)
