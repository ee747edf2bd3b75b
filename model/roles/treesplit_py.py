"""UCT-Treesplit's search rank (seed 000, 4.2), and TDS (the same with N_dup = inf).

A search rank owns the nodes whose hash maps to it (eq. 4.6/4.7, model/ownership.py) and keeps W*O of its
own simulations in flight (S_par / M). A simulation's life (the worker FSM of Figure 4.2):

    SELECT  at the origin from the root, then on every rank that owns (or holds a duplicate of) the next
            node; between ranks it travels as a MOVE message carrying its step stack
    EXPAND  the owner stores the children of a node met for the first time, then selection goes on
    PLAYOUT from the leaf; forwarded (PLAYOUT_FWD) to a random rank while more than K S_par/M MOVEs wait
            here (4.2.5)
    UPDATE  one per rank that selected a step (a package here, an UPDATE message elsewhere); the origin
            counts the simulation done when its own update has run, and starts the next one

Duplication and synchronisation (4.2.2, model/roles/dup.py): the root is duplicated on every rank from the
start; an owned node that reaches N_dup visits is duplicated (DUP, its full statistics); a duplicated
node's increments are sent (SYNC, all its changed children in one message) once some child's delta
reaches N_sync(s,a). Both go to the rank's broadcast partner (model/roles/broadcast.py), or straight to
every other search rank when the run has no broadcast ranks. All sync work runs in `sync` packages, one at
a time per rank; while a DUP snapshot waits, update packages are held back so none slips between the
snapshot and the delta counters.
"""

from __future__ import annotations

import itertools
import random
import threading
from collections import Counter

import numpy as np

from model import game
from model.roles.base import (CONTINUE, EXPAND, PLAYOUT, SELECT, SYNC, UPDATE, Actions, Layout, Package,
                              Role, RoleStats, Setup)
from model.roles.fastcall import Bound
from model.roles.dup import D_DROPPED, D_REFUSED, D_ROWS, apply_rows, flush_rows, new_dup_table, share_root, write_dup
from model.roles.messages import DUP, MOVE, PLAYOUT_FWD, STAT, STEP, Message, Result, Stats, Steps
from model.roles.messages import SYNC as SYNC_MSG
from model.roles.messages import UPDATE as UPDATE_MSG
from model.roles.params import TreesplitParams
from model.roles.steps import (ST_EXPAND, ST_MOVE, ST_PLAYOUT, Y_ALPHA, Y_DUP_DEPTH, Y_LEN, Y_NDUP,
                               Y_NSYNC_MAX, Y_NSYNC_MIN, Y_TRACK, A_DONE, A_EDGES, A_LEN, A_LOG, A_MISSING,
                               A_RECORDS, F_EXPAND, F_PLAYOUT, F_UPDATE, expand_node, log_capacity, playout, replay,
                               run_fused, select_steps, update_steps)
from model.ownership import owner
from model.rng import new_rng
from model.tt import current_nodes, lookup, new_search, new_table, slots_for
from model.uct import P_MAX_DEPTH, P_RAVE, UctParams, expand


class Sim:
    """A simulation while it is on this rank (package payload)."""

    __slots__ = ("sim_id", "steps", "n", "s", "path_pos", "insert", "moved", "slot", "rng", "playouts", "fuse",
                 "fuse_playout", "may_update", "expands", "result", "amaf", "chain_left", "chain_done",
                 "chain_records", "chain_edges", "chain_missing")

    def __init__(self, sim_id: int, steps: np.ndarray, n: int):
        self.sim_id = sim_id
        self.steps = steps
        self.n = n
        self.s = None          # position at the current node, None until replayed here
        self.path_pos = None
        self.insert = True
        self.moved = False     # arrived by MOVE and not yet selected on (counts as a held MOVE)
        self.slot = 0
        self.rng = None
        self.playouts = 1      # results this simulation's selection gets (leaf parallelisation: SLMP)
        # A fused package (role.fuse) goes on by itself from part to part while the simulation stays here:
        # select -> expand -> select -> playout (if fuse_playout) -> this rank's update (if may_update).
        # Both flags are decided by the role when it hands the package out (playout forwarding, DUP gate).
        self.fuse = False
        self.fuse_playout = False
        self.may_update = False
        self.expands = 0       # expansions run inside the current package
        self.result = 0.0      # the playout's result and AMAF map, kept for the UPDATE messages
        self.amaf = None
        # Chaining (params.chain): a simulation started here (only those get chain_left) that runs from the
        # root to its update inside one fused package is finished in that package, which goes on with a new
        # simulation, up to chain_left more times; what the finished ones add up to waits here for
        # on_work_done (the role's counters are only touched there).
        self.chain_left = 0
        self.chain_done = 0
        self.chain_records = 0
        self.chain_edges = 0
        self.chain_missing = 0


def _edges(steps: np.ndarray, n: int) -> int:
    """Tree edges among the records steps[:n]: all but a final leaf record (idx -1)."""
    return n - (1 if n and steps[n - 1]["idx"] < 0 else 0)


class SyncJob:
    __slots__ = ("rows_in", "dup_slots", "flush", "flush_all")

    def __init__(self, rows_in, dup_slots, flush, flush_all):
        self.rows_in = rows_in
        self.dup_slots = dup_slots
        self.flush = flush
        self.flush_all = flush_all


class UpdateJob:
    __slots__ = ("steps", "result", "amaf", "origin_done")

    def __init__(self, steps, result, amaf, origin_done):
        self.steps = steps
        self.result = result
        self.amaf = amaf
        self.origin_done = origin_done


class TreesplitSearch(Role):
    def __init__(self, rank: int, layout: Layout, setup: Setup, uct: UctParams | None = None,
                 params: TreesplitParams | None = None, table=None):
        self.rank, self.layout, self.setup = rank, layout, setup
        self.uct = uct or UctParams()
        self.params = params or TreesplitParams()
        self.g = setup.g
        self.root = np.asarray(setup.root)
        self.history = np.asarray(setup.history, dtype=np.uint64)
        self.p = self.uct.to_array()
        self.M = layout.search_ranks
        self.n_actions = int(game.n_actions(self.g))
        self.max_depth = int(self.p[P_MAX_DEPTH])
        self.rave = self.p[P_RAVE] != 0.0
        if table is None:
            k = int(game.max_children(self.g))
            table = new_table(slots_for(self.params.table_mb, k), k)
        self.t = table
        self.local_slots = int(table.key.shape[0])  # |H|/M: every rank's table must have the same size
        self.dt = new_dup_table(self.local_slots, table.child_move.shape[1],
                                self.params.dup_rows if self.M > 1 else 1)
        # What subclasses (root, leaf) change: ranks the kernels spread the tree over, whether shared nodes
        # count deltas, how a first-heard node is taken in, whether every sync package waits for the
        # updates, and the message kinds of snapshots and increments.
        self.kernel_ranks = self.M
        self.adopt = False
        self.gate_syncs = False
        self.dup_kind, self.sync_kind = DUP, SYNC_MSG
        # Fused packages (base.CONTINUE): a simulation's steps on this rank run as one package. Subclasses
        # whose hooks look at each step's result (leaf, dfuct) turn it off.
        self.fuse = bool(self.params.fuse)
        self.chain = int(self.params.chain)
        y = np.zeros(Y_LEN)
        y[Y_NSYNC_MIN], y[Y_NSYNC_MAX] = self.params.n_sync_min, self.params.n_sync_max
        y[Y_ALPHA], y[Y_NDUP] = self.params.alpha, self.params.n_dup
        y[Y_TRACK], y[Y_DUP_DEPTH] = float(self.M > 1), np.inf
        self.y = y
        self.quota = setup.quota(rank, self.M)
        self.target = layout.workers * self.params.overload   # S_par / M
        self.balance_limit = self.params.balance_k * self.target
        self.sync_peers = ([layout.partner(rank)] if layout.bcast_ranks > 0
                           else [r for r in range(self.M) if r != rank])
        self.shared_rng = new_rng(setup.seed * 1000003 + rank) if layout.workers == 1 else None
        self.py_rng = random.Random(setup.seed * 7919 + rank)
        self.no_amaf = np.zeros(0, np.int8)
        self.root_pos = np.uint64(game.position_hash(self.g, self.root))
        # the hot kernels, called without per-call type resolution (argument types stay fixed per role)
        self._select, self._update_k = Bound(select_steps), Bound(update_steps)
        self._expand, self._playout, self._replay = Bound(expand_node), Bound(playout), Bound(replay)
        self._fused = Bound(run_fused)
        self._no_log = (np.empty(0, np.int8), np.empty(0, np.int32), np.empty(0, np.int64))
        # state of the role (touched by the IO side only)
        self.started = 0
        self.done = 0
        self.reserved = 0             # simulations that chaining packages out there may still start
        # what a chaining kernel looks at between simulations: [stopped, a duplication waits]
        self.halt = np.zeros(2, np.int64)
        self._ids = itertools.count()  # next() is atomic: a chaining worker draws ids without the role lock
        self.sim_label = int          # package sim_id for the trace (hybrid maps group-local ids)
        self.split_parts = False      # record_parts(): each part its own kernel call, for per-part records
        self.part_log = False         # record_parts(stamps=True): one call, with a stamped log of its parts
        self._logs = threading.local()  # per worker thread: the part log buffers
        self.in_flight = 0
        self.stopped = False
        self.final_synced = False
        self.outstanding = 0          # packages handed out and not yet back
        self.moves_held = 0
        self.updates_running = 0
        self.held_updates: list[Package] = []
        self.sync_running = False
        self.dup_running = False
        self.rows_in: list[np.ndarray] = []
        self.to_flush: set[int] = set()
        self.to_dup: set[int] = set()
        self.flush_all = False
        self.counts = Counter()        # playouts, expands, forwarded, missing, ...
        self.sent = Counter()
        self.received = Counter()
        self.root_slot = 0
        self.root_hash = np.uint64(0)

    # --- helpers ------------------------------------------------------------------------------------------
    def _pkg(self, out: Actions, kind: str, sim_id: int, payload, front: bool = False) -> None:
        self.outstanding += 1
        out.pkgs.append(Package(kind, sim_id, payload, front))

    def _sim_pkg(self, out: Actions, kind: str, sim: Sim, front: bool = False) -> None:
        """A package of simulation `sim`; fused (see Sim) when the role fuses. A fused package that may
        update counts as a running update from now on (the DUP snapshot waits for it)."""
        if self.fuse:
            sim.fuse = True
            sim.fuse_playout = kind == PLAYOUT or not self._forwarding()
            sim.may_update = sim.fuse_playout and not (self.to_dup or self.dup_running)
            if sim.may_update:
                self.updates_running += 1
        self._pkg(out, kind, sim.sim_id, sim, front)

    def _forwarding(self) -> bool:
        return self.M > 1 and self.params.forward_playouts and self.moves_held > self.balance_limit

    def _send(self, out: Actions, kind: str, dst: int, payload, sim_id: int = -1) -> None:
        self.sent[kind] += 1
        out.msgs.append(Message(kind, self.rank, dst, payload, sim_id))

    def _new_sim(self, out: Actions) -> None:
        sim_id = self.rank + self.M * next(self._ids)
        self.started += 1
        self.in_flight += 1
        sim = Sim(sim_id, np.empty(self.max_depth + 2, STEP), 0)
        sim.s = self.root.copy()
        sim.path_pos = np.empty(self.max_depth + 2, np.uint64)
        sim.path_pos[0] = self.root_pos
        if self.fuse and self.chain > 1:
            left = self.chain - 1
            if self.quota is not None:  # only what the quota has beyond keeping S_par / M in flight
                spare = self.quota - self.started - self.reserved - max(self.target - self.in_flight, 0)
                left = min(left, spare)
            sim.chain_left = max(left, 0)
            self.reserved += sim.chain_left
        self._sim_pkg(out, SELECT, sim)

    def _may_start(self) -> bool:
        return not self.stopped and (self.quota is None or self.started + self.reserved < self.quota)

    def _chained(self, pkg: Package, sim: Sim, done: int, records: int, edges: int, missing: int) -> list[int]:
        """`done` simulations finished in this package, which now carries the origin's next one under a new
        id. Runs on the worker, without the role lock: only the package's own Sim is written; the role's
        counters take it in at on_work_done (_chain_settle). Returns the trace labels of the new ids."""
        sim.chain_left -= done
        sim.chain_done += done
        sim.chain_records += records
        sim.chain_edges += edges
        sim.chain_missing += missing
        labels = []
        for _ in range(done):
            sim.sim_id = self.rank + self.M * next(self._ids)
            labels.append(self.sim_label(sim.sim_id))
        pkg.sim_id = labels[-1]
        sim.rng = None  # a stream of its own from its own id (workers > 1)
        return labels

    def _chain_next(self, pkg: Package, sim: Sim, missing: int) -> None:
        """The simulation of this package ended here (a part-by-part run): on with the origin's next one."""
        n = sim.n
        self._chained(pkg, sim, 1, n, _edges(sim.steps, n), int(missing))
        sim.n = 0
        sim.s[:] = self.root
        sim.path_pos[0] = self.root_pos
        sim.insert = True
        sim.amaf = None
        sim.fuse_playout = not self._forwarding()
        pkg.kind = SELECT

    def _chain_settle(self, sim: Sim) -> None:
        """Take in what a chaining package finished (on_work_done, under the role lock) and give back the
        simulations it was allowed to start and did not."""
        k = sim.chain_done
        if k:
            self.started += k
            self.done += k
            c = self.counts
            c["playouts"] += k
            c["updates"] += k
            c["updates_local"] += k
            c["records_finished"] += sim.chain_records
            c["edges_finished"] += sim.chain_edges
            if sim.chain_missing:
                c["update_missing"] += sim.chain_missing
            sim.chain_done = sim.chain_records = sim.chain_edges = sim.chain_missing = 0
        self.reserved -= k + sim.chain_left
        sim.chain_left = 0

    def _fill(self, out: Actions) -> None:
        while self.in_flight < self.target and self._may_start():
            self._new_sim(out)

    def _rng(self, sim: Sim):
        if self.shared_rng is not None:
            return self.shared_rng
        if sim.rng is None:
            sim.rng = new_rng((self.setup.seed * 0x9E3779B1 + sim.sim_id * 2654435761 + self.rank) & (2**62 - 1))
        return sim.rng

    def _arrived(self, steps: np.ndarray, sim_id: int) -> Sim:
        n = len(steps)
        buf = np.empty(self.max_depth + 2, STEP)
        buf[:n] = steps
        return Sim(sim_id, buf, n)

    # --- the contract -------------------------------------------------------------------------------------
    def start(self) -> Actions:
        out = Actions()
        t = self.t
        new_search(t)  # a table kept from an earlier search: its old nodes become replaceable, not lost
        h = np.uint64(game.hash(self.g, self.root))  # numba hands uint64 back as a Python int
        slot, _ = lookup(t, h, True)
        if slot == 0:
            raise RuntimeError("no room for the root in the transposition table")
        self.root_slot = slot
        self.root_hash = h
        if self.M > 1 and self.params.share_root:
            # The root is shared by all ranks from the start (4.2.4): same zeroed statistics, same children.
            t.visits[slot] = 0
            t.value[slot] = 0.0
            t.child_visits[slot, :] = 0
            t.child_value[slot, :] = 0.0
            t.amaf_visits[slot, :] = 0
            t.amaf_value[slot, :] = 0.0
            t.vloss[slot, :] = 0
            if t.n_children[slot] < 0 and not game.is_terminal(self.g, self.root):
                t.n_children[slot] = -1
                expand(t, self.g, self.root.copy(), slot, np.empty(self.n_actions, np.int64))
            share_root(t, self.dt, slot, h)
        self._fill(out)
        return out

    def on_message(self, msg: Message) -> Actions:
        out = Actions()
        kind = msg.kind
        self.received[kind] += 1
        if kind == MOVE:
            sim = self._arrived(msg.payload.steps, msg.sim_id)
            sim.moved = True
            self.moves_held += 1
            self._sim_pkg(out, SELECT, sim)
        elif kind == UPDATE_MSG:
            p = msg.payload
            steps = p.steps if p.steps.flags.writeable else p.steps.copy()  # keeps the kernel's types fixed
            self._update(out, UpdateJob(steps, p.result, p.amaf, msg.sim_id % self.M == self.rank), msg.sim_id)
        elif kind == PLAYOUT_FWD:
            self._playout_or_forward(out, self._arrived(msg.payload.steps, msg.sim_id))
        elif kind in (SYNC_MSG, DUP):
            self.rows_in.append(msg.payload.rows)
            self._kick_sync(out)
        else:
            raise ValueError(f"treesplit search rank {self.rank}: unexpected {kind} message")
        return out

    def execute(self, pkg: Package):
        kind = pkg.kind
        if kind == SELECT and pkg.payload.fuse and not self.split_parts:
            return self._execute_fused(pkg)
        if kind == SELECT:
            sim = pkg.payload
            if sim.s is None:
                sim.s = np.empty_like(self.root)
                sim.path_pos = np.empty(self.max_depth + 2, np.uint64)
                self._replay(self.g, self.root, sim.steps, sim.n, sim.s, sim.path_pos)
            st, n, arg = self._select(self.t, self.dt, self.g, sim.s, self.p, self._rng(sim), sim.steps, sim.n,
                                      sim.path_pos, self.history, self.rank, self.kernel_ranks, self.local_slots,
                                      sim.insert)
            sim.n = n
            if sim.fuse:
                if st == ST_EXPAND:
                    sim.slot = int(arg)
                    pkg.kind = EXPAND
                    return CONTINUE
                if st == ST_PLAYOUT and sim.fuse_playout:
                    pkg.kind = PLAYOUT
                    return CONTINUE
            return st, arg
        if kind == PLAYOUT:
            sim = pkg.payload
            if sim.s is None:
                sim.s = np.empty_like(self.root)
                sim.path_pos = np.empty(self.max_depth + 2, np.uint64)
                self._replay(self.g, self.root, sim.steps, sim.n, sim.s, sim.path_pos)
            amaf = np.empty(self.n_actions, np.int8)
            result = self._playout(self.g, sim.s, self._rng(sim), amaf)
            if sim.may_update:
                sim.result, sim.amaf = result, amaf
                pkg.kind = UPDATE
                return CONTINUE
            return result, amaf
        if kind == UPDATE:
            job = pkg.payload
            if type(job) is Sim:  # a fused package: this rank's records of the simulation it just played out
                sim = job
                n = sim.n
                amaf = sim.amaf.copy() if self.rave else self.no_amaf  # the UPDATE messages carry the original
                out_sync = np.empty(n, np.int64)
                out_dup = np.empty(n, np.int64)
                ns, nd, missing = self._update_k(self.t, self.dt, self.g, sim.steps, n, self.rank, sim.result,
                                                 amaf, self.p, self.y, self.kernel_ranks, self.local_slots,
                                                 out_sync, out_dup)
                # Started here and never left, so this was its only update: finished. Racy reads of stopped
                # and to_dup only make a chain one simulation longer or shorter.
                if sim.chain_left > 0 and ns == 0 and nd == 0 and not self.stopped \
                        and not self.to_dup:
                    self._chain_next(pkg, sim, missing)
                    return CONTINUE
                return out_sync[:ns], out_dup[:nd], missing
            n = len(job.steps)
            amaf = self.no_amaf if job.amaf is None else job.amaf.copy()
            out_sync = np.empty(n, np.int64)
            out_dup = np.empty(n, np.int64)
            ns, nd, missing = self._update_k(self.t, self.dt, self.g, job.steps, n, self.rank, job.result, amaf,
                                           self.p, self.y, self.kernel_ranks, self.local_slots, out_sync, out_dup)
            return out_sync[:ns], out_dup[:nd], missing
        if kind == EXPAND:
            sim = pkg.payload
            ok, sim.n = self._expand(self.t, self.g, sim.s, sim.slot, np.empty(self.n_actions, np.int64),
                                    sim.steps, sim.n, self.rank)
            if sim.fuse:
                sim.expands += 1
                if ok:
                    sim.insert = True
                    pkg.kind = SELECT
                    return CONTINUE
                if sim.fuse_playout:
                    pkg.kind = PLAYOUT
                    return CONTINUE
            return ok
        if kind == SYNC:
            return self._run_sync(pkg.payload)
        raise ValueError(f"treesplit search rank: no {kind} packages")

    def _execute_fused(self, pkg: Package):
        """A fused package that starts with a selection, in one kernel call (model.roles.steps.run_fused),
        chaining included. It hands back what its last part would have (see execute) and leaves the parts
        it ran in pkg.parts for runtimes that charge per part."""
        sim = pkg.payload
        if sim.s is None:
            sim.s = np.empty_like(self.root)
            sim.path_pos = np.empty(self.max_depth + 2, np.uint64)
            self._replay(self.g, self.root, sim.steps, sim.n, sim.s, sim.path_pos)
        na, k = self.n_actions, self.max_depth + 2
        parts = np.zeros(4, np.int64)
        acc = np.zeros(A_LEN, np.int64)
        amaf = np.empty(na, np.int8)
        out_sync, out_dup = np.empty(k, np.int64), np.empty(k, np.int64)
        logs = self._log_buffers() if self.part_log else self._no_log
        stop, st, arg, n, result, ns, nd, missing = self._fused(
            self.t, self.dt, self.g, sim.s, self.p, self.y, self._rng(sim), sim.steps, sim.n, sim.path_pos,
            self.history, self.rank, self.kernel_ranks, self.local_slots, sim.insert, sim.fuse_playout,
            sim.may_update, amaf, np.empty(na if self.rave else 0, np.int8), np.empty(na, np.int64), out_sync,
            out_dup, self.root, self.root_pos, sim.chain_left, self.halt, acc, parts, *logs)
        sim.n = n
        pkg.parts = parts
        sim.expands += int(parts[F_EXPAND])
        done = int(acc[A_DONE])
        labels = [pkg.sim_id]
        if done:
            labels += self._chained(pkg, sim, done, int(acc[A_RECORDS]), int(acc[A_EDGES]), int(acc[A_MISSING]))
        if self.part_log:
            m = int(acc[A_LOG])
            pkg.log = (logs[0][:m], logs[1][:m], logs[2][:m + 1], labels)
        if stop == F_UPDATE:
            sim.result, sim.amaf = result, amaf
            pkg.kind = UPDATE
            return out_sync[:ns], out_dup[:nd], missing
        if stop == F_PLAYOUT:
            pkg.kind = PLAYOUT
            return result, amaf
        if stop == F_EXPAND:
            pkg.kind = EXPAND
            return False
        return st, arg

    def on_work_done(self, pkg: Package, result) -> Actions:
        out = Actions()
        self.outstanding -= 1
        kind = pkg.kind
        if type(pkg.payload) is Sim and pkg.payload.fuse:
            self._fused_done(out, pkg.payload, kind, result)
            return out
        if kind == SELECT:
            sim = pkg.payload
            if sim.moved:
                sim.moved = False
                self.moves_held -= 1
            st, arg = result
            if st == ST_MOVE:
                self._send(out, MOVE, int(arg), Steps(sim.steps[:sim.n]), sim.sim_id)
            elif st == ST_PLAYOUT:
                self._playout_or_forward(out, sim)
            elif st == ST_EXPAND:
                sim.slot = int(arg)
                self._pkg(out, EXPAND, sim.sim_id, sim, front=True)
            else:  # ST_LOSS: the mover played an illegal or repeating move: a loss for it, no playout
                amaf = np.full(self.n_actions, -1, np.int8) if self.rave else None  # the tree moves only
                self._finish_sim(out, sim, -1.0 if arg == 0 else 1.0, amaf)
        elif kind == PLAYOUT:
            sim = pkg.payload
            self.counts["playouts"] += 1
            res, amaf = result
            self._finish_sim(out, sim, res, amaf if self.rave else None)
        elif kind == UPDATE:
            self.updates_running -= 1
            self._update_done(out, result, pkg.payload.origin_done)
        elif kind == EXPAND:
            sim = pkg.payload
            self.counts["expands"] += 1
            if result:
                sim.insert = True
                self._sim_pkg(out, SELECT, sim, front=True)
            else:
                self._playout_or_forward(out, sim)
        elif kind == SYNC:
            self._sync_done(out, pkg.payload, result)
        return out

    def record_parts(self, on: bool, stamps: bool = False) -> None:
        from model.cycles import counting

        self.part_log = on and stamps and counting()
        self.split_parts = on and not self.part_log

    def _log_buffers(self):
        b = getattr(self._logs, "b", None)
        if b is None:
            cap = log_capacity(self.chain, self.max_depth)
            b = self._logs.b = (np.empty(cap, np.int8), np.empty(cap, np.int32), np.empty(cap + 1, np.int64))
        return b

    def stop(self) -> Actions:
        self.stopped = True
        self.halt[0] = 1
        return Actions()

    def final_sync(self) -> Actions:
        out = Actions()
        self.stopped = True
        self.halt[0] = 1
        if self.y[Y_TRACK] != 0.0:
            self.flush_all = True
            self._kick_sync(out)
        self.final_synced = True
        return out

    def idle(self) -> bool:
        return (self.outstanding == 0 and not self.held_updates and not self.rows_in and not self.to_flush
                and not self.to_dup and not self.flush_all and not self._may_start())

    def finished(self) -> bool:
        return self.final_synced and self.idle()

    # --- simulations --------------------------------------------------------------------------------------
    def _fused_done(self, out: Actions, sim: Sim, kind: str, result) -> None:
        """A fused package ended; `kind` is its last part's. It stopped because the simulation leaves this
        rank (MOVE), lost in the tree, awaits the forwarding decision, or was played out (and updated here)."""
        if sim.moved:
            sim.moved = False
            self.moves_held -= 1
        if sim.chain_left or sim.chain_done:
            self._chain_settle(sim)
        if sim.expands:
            self.counts["expands"] += sim.expands
            sim.expands = 0
        counted = sim.may_update
        if counted:
            sim.may_update = False
            self.updates_running -= 1
        if kind == SELECT:
            st, arg = result
            if st == ST_MOVE:
                self._send(out, MOVE, int(arg), Steps(sim.steps[:sim.n]), sim.sim_id)
            elif st == ST_PLAYOUT:
                self._playout_or_forward(out, sim)
            else:  # ST_LOSS (as in the unfused path)
                amaf = np.full(self.n_actions, -1, np.int8) if self.rave else None
                self._finish_sim(out, sim, -1.0 if arg == 0 else 1.0, amaf)
        elif kind == EXPAND:  # another thread expanded the node first: a leaf, playout not fused
            self._playout_or_forward(out, sim)
        elif kind == PLAYOUT:
            self.counts["playouts"] += 1
            res, amaf = result
            self._finish_sim(out, sim, res, amaf if self.rave else None)
        else:  # UPDATE: played out and this rank's records updated in the package
            self.counts["playouts"] += 1
            self._finish_sim(out, sim, sim.result, sim.amaf if self.rave else None, local=result)
            sim.amaf = None
        if counted:
            self._kick_sync(out)

    def _update_done(self, out: Actions, result, origin_done: bool) -> None:
        sync_rows, dup_slots, missing = result
        if missing:
            self.counts["update_missing"] += int(missing)
        self.counts["updates"] += 1
        if len(sync_rows):
            self.to_flush.update(sync_rows.tolist())
        if len(dup_slots):
            self.to_dup.update(dup_slots.tolist())
            self.halt[1] = 1
        if origin_done:
            self.done += 1
            self.in_flight -= 1
            self._fill(out)
        self._kick_sync(out)

    def _playout_or_forward(self, out: Actions, sim: Sim) -> None:
        if (self.M > 1 and self.params.forward_playouts and self.moves_held > self.balance_limit):
            dst = self.py_rng.randrange(self.M - 1)
            dst += dst >= self.rank
            self.counts["playouts_forwarded"] += 1
            self._send(out, PLAYOUT_FWD, dst, Steps(sim.steps[:sim.n]), sim.sim_id)
            return
        self._sim_pkg(out, PLAYOUT, sim, front=True)

    def _finish_sim(self, out: Actions, sim: Sim, result: float, amaf, local=None) -> None:
        """Back up a finished simulation: UPDATE messages to the other ranks it visited, an update package
        here, or (local) the result of the update a fused package already ran here."""
        steps = sim.steps[:sim.n]
        col = steps["rank"].tolist()
        ranks = set(col)
        origin = sim.sim_id % self.M
        self.counts["records_finished"] += sim.n
        self.counts["edges_finished"] += _edges(steps, sim.n)
        ranks.add(origin)  # the origin hears the end even if it selected nothing (an unshared root)
        one = len(ranks) == 1
        for r in ranks:
            mine = steps if (self.rave or one) else steps[steps["rank"] == r]
            if r == self.rank:
                self.counts["updates_local"] += 1
                if local is not None:
                    self._update_done(out, local, origin == self.rank)
                else:
                    self._update(out, UpdateJob(mine, result, amaf, origin == self.rank), sim.sim_id)
            else:
                self._send(out, UPDATE_MSG, r, Result(result, mine, amaf), sim.sim_id)

    def _update(self, out: Actions, job: UpdateJob, sim_id: int) -> None:
        pkg = Package(UPDATE, sim_id, job)
        if self.to_dup or self.dup_running:
            self.held_updates.append(pkg)
            return
        self.outstanding += 1
        self.updates_running += 1
        out.pkgs.append(pkg)

    # --- synchronisation ----------------------------------------------------------------------------------
    def _kick_sync(self, out: Actions) -> None:
        if self.sync_running:
            return
        dups = list(self.to_dup) if (self.to_dup and self.updates_running == 0) else []
        if not (self.rows_in or self.to_flush or self.flush_all or dups):
            return
        if self.gate_syncs and self.updates_running:
            self.to_dup.add(-1)  # holds back new updates until the running ones are done; -1 is no slot
            self.halt[1] = 1
            return
        self.to_dup.discard(-1)
        self.halt[1] = int(bool(self.to_dup))
        dups = [d for d in dups if d >= 0]
        job = SyncJob(self.rows_in, dups, list(self.to_flush), self.flush_all)
        self.rows_in, self.to_flush, self.flush_all = [], set(), False
        gate = bool(dups) or self.gate_syncs
        if gate:
            self.to_dup = set()
            self.halt[1] = 0
            self.dup_running = True
        self.sync_running = True
        self._pkg(out, SYNC, -1, job)

    def _run_sync(self, job: SyncJob):
        t, dt = self.t, self.dt
        K = t.child_move.shape[1]
        dropped = 0
        for rows in job.rows_in:
            dropped += apply_rows(t, dt, rows, len(rows), self.adopt)
        dup_rows = None
        if job.dup_slots:
            slots = np.asarray(job.dup_slots, np.int64)
            buf = np.empty(len(slots) * (K + 1), STAT)
            dup_rows = buf[:write_dup(t, dt, slots, len(slots), buf)]
        sync_rows = None
        if job.flush or job.flush_all:
            rows = np.asarray(job.flush, np.int64)
            n_rows = int(dt.meta[D_ROWS]) if job.flush_all else len(rows)
            buf = np.empty(n_rows * (K + 1), STAT)
            sync_rows = buf[:flush_rows(t, dt, rows, len(rows), job.flush_all, buf)]
        return dup_rows, sync_rows, dropped

    def _sync_done(self, out: Actions, job: SyncJob, result) -> None:
        dup_rows, sync_rows, dropped = result
        self.counts["sync_rows_dropped"] += int(dropped)
        if dup_rows is not None and len(dup_rows):
            self.counts["dups"] += int(np.count_nonzero(dup_rows["idx"] < 0))
            payload = Stats(dup_rows)
            for dst in self.sync_peers:
                self._send(out, self.dup_kind, dst, payload)
        if sync_rows is not None and len(sync_rows):
            self.counts["sync_rows"] += len(sync_rows)
            payload = Stats(sync_rows)
            for dst in self.sync_peers:
                self._send(out, self.sync_kind, dst, payload)
        self.sync_running = False
        if self.dup_running:
            self.dup_running = False
            if not self.to_dup and self.held_updates:
                held, self.held_updates = self.held_updates, []
                for pkg in held:
                    self.outstanding += 1
                    self.updates_running += 1
                    out.pkgs.append(pkg)
        self._kick_sync(out)

    # --- reporting ----------------------------------------------------------------------------------------
    def holds_root(self) -> bool:
        """Whether this rank's root statistics are the search's (the root is shared, or owned here)."""
        return (self.M == 1 or self.dt.row_of[self.root_slot] >= 0
                or owner(self.root_hash, self.M, self.local_slots) == self.rank)

    def root_stats(self) -> dict:
        """The root as this rank sees it: visits, and per child move, visits, value (for the player to move)."""
        t, s = self.t, self.root_slot
        nc = max(int(t.n_children[s]), 0)
        return {
            "visits": int(t.visits[s]), "value": float(t.value[s]),
            "moves": t.child_move[s, :nc].astype(int).tolist(),
            "child_visits": t.child_visits[s, :nc].astype(int).tolist(),
            "child_value": t.child_value[s, :nc].astype(float).tolist(),
        }

    def best_move(self) -> int:
        t, s = self.t, self.root_slot
        nc = int(t.n_children[s])
        if nc <= 0:
            return -1
        return int(t.child_move[s, int(np.argmax(t.child_visits[s, :nc]))])

    def stats(self) -> RoleStats:
        st = RoleStats(sims_started=self.started, sims_done=self.done, playouts=self.counts["playouts"],
                       nodes_stored=current_nodes(self.t), nodes_duplicated=int(self.dt.meta[D_ROWS]),
                       queue_len=self.outstanding, moves_held=self.moves_held,
                       messages_sent=dict(self.sent), messages_received=dict(self.received))
        st.extra = dict(self.counts)
        st.extra["dup_refused"] = int(self.dt.meta[D_REFUSED])
        st.extra["dup_dropped"] = int(self.dt.meta[D_DROPPED])
        return st

    def report(self) -> dict:
        d = self.stats().as_dict()
        if self.holds_root():
            d["root"] = self.root_stats()
            d["best_move"] = self.best_move()
        return d
