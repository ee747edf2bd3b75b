"""Root parallelisation: every rank grows its own tree; near-root statistics are merged now and then.

Each rank runs whole simulations on its own table (the treesplit machinery with one-rank ownership, so no
simulation ever leaves its rank). The root, and nodes within `merge_depth` levels below it that reached
`merge_min_visits` visits on some rank, are shared the way UCT-Treesplit shares duplicated nodes (seed 000
compares the two in 4.3.2, Figures 4.16/4.17): the rank that starts sharing a node sends its statistics;
every rank keeps counting what it adds to a shared node as unsent deltas, and every `merge_every` of its
own simulations sends them all, in one MERGE message to each other rank (non-blocking: nobody waits for
anybody). A rank that hears of a node it grew itself keeps its own statistics and shares them from then on.
After the final synchronisation every shared node, the root included, holds the sum over all ranks.
"""

from __future__ import annotations

import math

from model.roles.base import Actions, Layout, Setup
from model.roles.messages import MERGE, Message
from model.roles.params import RootParams, TreesplitParams
from model.roles.steps import Y_DUP_DEPTH, Y_NDUP, Y_NSYNC_MAX, Y_NSYNC_MIN, Y_TRACK
from model.roles.treesplit import TreesplitSearch
from model.uct import UctParams


class RootSearch(TreesplitSearch):
    def __init__(self, rank: int, layout: Layout, setup: Setup, uct: UctParams | None = None,
                 params: RootParams | None = None, table=None):
        self.root_params = params or RootParams()
        rp = self.root_params
        ts = TreesplitParams(table_mb=rp.table_mb, overload=rp.overload, fuse=rp.fuse, chain=rp.chain,
                             n_dup=max(1, rp.merge_min_visits), forward_playouts=False,
                             dup_rows=TreesplitParams().dup_rows)
        super().__init__(rank, layout, setup, uct, ts, table)
        self.kernel_ranks = 1           # every node is this rank's own
        self.adopt = True
        self.gate_syncs = True          # adopting a node reads its statistics: no update may run meanwhile
        self.dup_kind = self.sync_kind = MERGE
        self.y[Y_TRACK] = float(self.M > 1)
        self.y[Y_DUP_DEPTH] = rp.merge_depth
        self.y[Y_NDUP] = max(1, rp.merge_min_visits) if self.M > 1 else math.inf
        self.y[Y_NSYNC_MIN] = self.y[Y_NSYNC_MAX] = math.inf  # increments go out on the merge period only
        self.since_merge = 0
        self.chain = min(self.chain, rp.merge_every)  # a package must not finish more than a merge period

    def on_message(self, msg: Message) -> Actions:
        if msg.kind != MERGE:
            raise ValueError(f"root search rank {self.rank}: unexpected {msg.kind} message")
        self.received[MERGE] += 1
        out = Actions()
        self.rows_in.append(msg.payload.rows)
        self._kick_sync(out)
        return out

    def on_work_done(self, pkg, result) -> Actions:
        done_before = self.done
        out = super().on_work_done(pkg, result)
        if self.done != done_before and self.M > 1:
            self.since_merge += self.done - done_before
            if self.since_merge >= self.root_params.merge_every:
                self.since_merge -= self.root_params.merge_every  # a chaining package may pass it by several
                self.counts["merges"] += 1
                self.flush_all = True
                self._kick_sync(out)
        return out

    def holds_root(self) -> bool:
        return True
