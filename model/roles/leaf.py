"""Leaf parallelisation (Schaefers 2014, 4.1.1): rank 0, the master, does all in-tree work; the other ranks
compute playouts.

    MLMP  (multiple leaves, multiple playouts) the master keeps (M-1) W O simulations in flight; each leaf's
          playout goes, as a JOB, to the playout rank with the fewest jobs outstanding; its RESULT comes back
          and the master backs it up. With master_playouts (the default; the thesis's master does in-tree
          work only) each playout rank is kept W playout_jobs jobs ahead, enough to last a round trip,
          and the master plays a leaf out itself when nothing else is queued and every one has them,
          keeping O W more in flight for that (LeafParams.master_in_flight): on 2 ranks it otherwise idles
          half the time at 19x19 while its one playout rank, O W jobs ahead, waits for the next job a third
          of the time at 9x9
    SLMP  (single leaf, multiple playouts) every leaf goes to all (M-1) W playout threads at once; the master
          backs up each of their results (O leaves in flight)

A simulation is one playout and its backup, so the budget counts playouts. With M = 1 the master computes
its playouts itself and is the sequential search. Both sides are model/roles/core.py, in MODE_LEAF_MASTER
and MODE_LEAF_WORKER.
"""

from __future__ import annotations

from model.roles import core as K
from model.roles.base import Layout, Setup
from model.roles.messages import CODE, JOB, RESULT
from model.roles.params import LeafParams, TreesplitParams
from model.roles.steps import Y_TRACK
from model.roles.treesplit import TreesplitSearch
from model.uct import UctParams


class LeafMaster(TreesplitSearch):
    def __init__(self, rank: int, layout: Layout, setup: Setup, uct: UctParams | None = None,
                 params: LeafParams | None = None, table=None):
        if rank != 0:
            raise ValueError("the leaf-parallel master is rank 0")
        self.leaf_params = lp = params or LeafParams()
        ts = TreesplitParams(table_mb=lp.table_mb, overload=lp.overload, chain=lp.chain, share_root=False,
                             forward_playouts=False, dup_rows=1, min_in_flight=1)
        super().__init__(rank, layout, setup, uct, ts, table)
        self.workers_ranks = list(range(1, self.M))
        per_leaf = len(self.workers_ranks) * layout.workers
        slmp = lp.variant == "slmp" and per_leaf > 0
        # (an IO core alone counts as one thread)
        share = lp.playout_jobs * max(1, layout.workers) if lp.master_plays(self.M) else 0
        if share:
            target = lp.master_in_flight(layout.workers, self.M)
        else:
            target = lp.overload * per_leaf if per_leaf else self.target
        self.quota = setup.sims  # the master starts every simulation
        self._set(mode=K.MODE_LEAF_MASTER, kernel_ranks=1, track=0, quota=-1 if setup.sims is None else setup.sims,
                  per_leaf=per_leaf if slmp else 1, slmp=int(slmp), leaf_ranks=len(self.workers_ranks),
                  leaf_share=share,
                  target=target, accept=1 << CODE[RESULT])
        self.y[Y_TRACK] = 0.0

    def holds_root(self) -> bool:
        return True


class LeafWorker(TreesplitSearch):
    """Computes the playouts the master sends: JOB (the leaf's path) in, RESULT (result, AMAF map) out."""

    def __init__(self, rank: int, layout: Layout, setup: Setup, uct: UctParams | None = None,
                 params: LeafParams | None = None):
        from model import game
        from model.tt import new_table

        lp = params or LeafParams()
        ts = TreesplitParams(overload=lp.overload, share_root=False, forward_playouts=False, dup_rows=1,
                             fuse=False, min_in_flight=1)
        # no tree here: a table of a few slots for the core's contract
        super().__init__(rank, layout, setup, uct, ts, new_table(16, int(game.max_children(setup.g))))
        self._set(mode=K.MODE_LEAF_WORKER, kernel_ranks=1, track=0, quota=0, shared_rng=0, accept=1 << CODE[JOB])
        self.quota = 0
        self.y[Y_TRACK] = 0.0

    def holds_root(self) -> bool:
        return False

    def report(self) -> dict:
        return self.stats().as_dict()

    @property
    def playouts(self) -> int:
        return int(self.a.cnt[K.C_PLAYOUTS])

    @property
    def jobs(self) -> int:
        return self._cs("jobs")
