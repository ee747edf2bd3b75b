"""Leaf parallelisation (seed 000 4.1.1): rank 0, the master, does all in-tree work; the other ranks compute
playouts.

    MLMP  (multiple leaves, multiple playouts) the master keeps (M-1) W O simulations in flight; each leaf's
          playout goes, as a JOB, to the worker rank with the fewest jobs outstanding; its RESULT comes back
          and the master backs it up
    SLMP  (single leaf, multiple playouts) every leaf goes to all (M-1) W worker threads at once; the master
          backs up each of their results (O leaves in flight)

A simulation is one playout and its backup, so the budget counts playouts. With M = 1 the master computes
its playouts itself and is the sequential search.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from model import game
from model.roles.base import EXPAND, PLAYOUT, SELECT, Actions, Layout, Package, Role, RoleStats, Setup
from model.roles.messages import JOB, RESULT, STEP, Message, Result, Steps
from model.roles.params import LeafParams, TreesplitParams
from model.roles.steps import ST_LOSS, ST_PLAYOUT, Y_TRACK, add_path_vloss, playout, replay
from model.roles.treesplit_py import Sim, TreesplitSearch
from model.rng import new_rng
from model.uct import P_RAVE, P_VLOSS, UctParams


class LeafMaster(TreesplitSearch):
    def __init__(self, rank: int, layout: Layout, setup: Setup, uct: UctParams | None = None,
                 params: LeafParams | None = None, table=None):
        if rank != 0:
            raise ValueError("the leaf-parallel master is rank 0")
        self.leaf_params = params or LeafParams()
        ts = TreesplitParams(table_mb=self.leaf_params.table_mb, overload=self.leaf_params.overload,
                             share_root=False, forward_playouts=False, dup_rows=1)
        super().__init__(rank, layout, setup, uct, ts, table)
        self.fuse = False  # its hooks look at every step's result
        self.kernel_ranks = 1
        self.y[Y_TRACK] = 0.0
        self.quota = setup.sims                      # the master starts every simulation
        self.workers_ranks = list(range(1, self.M))
        per_leaf = len(self.workers_ranks) * layout.workers
        self.slmp = self.leaf_params.variant == "slmp" and per_leaf > 0
        self.per_leaf = per_leaf if self.slmp else 1  # playouts per leaf
        if self.slmp:
            self.target = self.leaf_params.overload * per_leaf
        elif per_leaf:
            self.target = per_leaf * self.leaf_params.overload
        self.jobs = Counter({w: 0 for w in self.workers_ranks})  # worker rank -> jobs outstanding
        self.waiting: dict[int, list] = {}            # sim_id -> [sim, results still to come]
        self.leaves = 0

    # one leaf reserves `k` simulations of the budget (SLMP: one per worker thread)
    def _new_sim(self, out: Actions) -> None:
        k = self.per_leaf if self.quota is None else min(self.per_leaf, self.quota - self.started)
        sim_id = self.leaves * self.M  # origin rank 0
        self.leaves += 1
        self.started += k
        self.in_flight += k
        sim = Sim(sim_id, np.empty(self.max_depth + 2, STEP), 0)
        sim.s = self.root.copy()
        sim.path_pos = np.empty(self.max_depth + 2, np.uint64)
        sim.path_pos[0] = self.root_pos
        sim.playouts = k
        self._pkg(out, SELECT, sim_id, sim)

    def _fill(self, out: Actions) -> None:
        while self._may_start():
            k = self.per_leaf if self.quota is None else min(self.per_leaf, self.quota - self.started)
            if self.in_flight + k > self.target:
                return
            self._new_sim(out)

    def execute(self, pkg: Package):
        res = super().execute(pkg)
        if self.slmp and self.p[P_VLOSS] > 0:
            # the path got one virtual loss per edge; each of the leaf's results takes one away
            leaf = (pkg.kind == SELECT and res[0] in (ST_PLAYOUT, ST_LOSS)) or (pkg.kind == EXPAND and not res)
            sim = pkg.payload
            if leaf and sim.playouts > 1:
                add_path_vloss(self.t, sim.steps, sim.n, sim.playouts - 1)
        return res

    def _playout_or_forward(self, out: Actions, sim: Sim) -> None:
        if not self.workers_ranks:
            self._pkg(out, PLAYOUT, sim.sim_id, sim, front=True)
            return
        k = sim.playouts
        self.waiting[sim.sim_id] = [sim, k]
        steps = Steps(sim.steps[:sim.n])
        if self.slmp:
            for i in range(k):
                self._job(out, self.workers_ranks[i % len(self.workers_ranks)], steps, sim.sim_id)
        else:
            self._job(out, min(self.workers_ranks, key=self.jobs.__getitem__), steps, sim.sim_id)

    def _job(self, out: Actions, dst: int, steps: Steps, sim_id: int) -> None:
        self.jobs[dst] += 1
        self._send(out, JOB, dst, steps, sim_id)

    def _finish_sim(self, out: Actions, sim: Sim, result: float, amaf) -> None:
        for _ in range(sim.playouts):  # a lost leaf (LOSS) or the master's own playout: every reserved playout ends
            super()._finish_sim(out, sim, result, amaf)

    def on_message(self, msg: Message) -> Actions:
        if msg.kind != RESULT:
            raise ValueError(f"leaf master: unexpected {msg.kind} message")
        self.received[RESULT] += 1
        self.jobs[msg.src] -= 1
        entry = self.waiting[msg.sim_id]
        entry[1] -= 1
        if entry[1] == 0:
            del self.waiting[msg.sim_id]
        out = Actions()
        self.counts["playouts_remote"] += 1
        super()._finish_sim(out, entry[0], msg.payload.result, msg.payload.amaf)
        return out

    def idle(self) -> bool:
        return super().idle() and not self.waiting

    def holds_root(self) -> bool:
        return True


class LeafWorker(Role):
    """Computes the playouts the master sends: JOB (the leaf's path) in, RESULT (result, AMAF map) out."""

    def __init__(self, rank: int, layout: Layout, setup: Setup, uct: UctParams | None = None,
                 params: LeafParams | None = None):
        self.rank, self.layout, self.setup = rank, layout, setup
        self.g = setup.g
        self.root = np.asarray(setup.root)
        self.n_actions = int(game.n_actions(self.g))
        self.rave = (uct or UctParams()).to_array()[P_RAVE] != 0.0
        self.jobs = 0
        self.outstanding = 0
        self.sent = Counter()
        self.received = Counter()
        self.playouts = 0

    def on_message(self, msg: Message) -> Actions:
        if msg.kind != JOB:
            raise ValueError(f"leaf worker {self.rank}: unexpected {msg.kind} message")
        self.received[JOB] += 1
        steps = msg.payload.steps
        sim = Sim(msg.sim_id, steps, len(steps))
        sim.rng = new_rng((self.setup.seed * 0x9E3779B1 + self.rank * 1_000_003 + self.jobs) & (2**62 - 1))
        self.jobs += 1
        self.outstanding += 1
        out = Actions()
        out.pkgs.append(Package(PLAYOUT, msg.sim_id, (sim, msg.src)))
        return out

    def execute(self, pkg: Package):
        sim, _ = pkg.payload
        s = np.empty_like(self.root)
        replay(self.g, self.root, sim.steps, sim.n, s, np.empty(sim.n + 1, np.uint64))
        amaf = np.empty(self.n_actions, np.int8)
        return playout(self.g, s, sim.rng, amaf), amaf

    def on_work_done(self, pkg: Package, result) -> Actions:
        self.outstanding -= 1
        self.playouts += 1
        sim, master = pkg.payload
        res, amaf = result
        out = Actions()
        self.sent[RESULT] += 1
        out.msgs.append(Message(RESULT, self.rank, master, Result(res, np.zeros(0, STEP), amaf if self.rave else None),
                                sim.sim_id))
        return out

    def idle(self) -> bool:
        return self.outstanding == 0

    def stats(self) -> RoleStats:
        return RoleStats(playouts=self.playouts, queue_len=self.outstanding, messages_sent=dict(self.sent),
                         messages_received=dict(self.received))
