"""Root parallelisation: every rank grows its own tree; near-root statistics are merged now and then.

Each rank runs whole simulations on its own table (the treesplit machinery with one-rank ownership, so no
simulation ever leaves its rank). The root, and nodes within `merge_depth` levels below it that reached
`merge_min_visits` visits on some rank, are shared the way UCT-Treesplit shares duplicated nodes (Schaefers
2014 compares the two in 4.3.2, Figures 4.16/4.17): the rank that starts sharing a node sends its statistics;
every rank keeps counting what it adds to a shared node as unsent deltas, and every `merge_every` of its
own simulations sends them all, in one MERGE message to each other rank (non-blocking: nobody waits for
anybody). A rank that hears of a node it grew itself keeps its own statistics and shares them from then on.
After the final synchronisation every shared node, the root included, holds the sum over all ranks.
"""

from __future__ import annotations

import math

from model.roles.base import Layout, Setup
from model.roles.messages import CODE, MERGE
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
                             n_dup=max(1, rp.merge_min_visits), forward_playouts=False, min_in_flight=1,
                             dup_rows=TreesplitParams().dup_rows)
        super().__init__(rank, layout, setup, uct, ts, table)
        # every node is this rank's own; adopting a node reads its statistics, so no update may run meanwhile;
        # increments go out on the merge period only
        self._set(kernel_ranks=1, adopt=1, gate_syncs=1, dup_kind=CODE[MERGE], sync_kind=CODE[MERGE],
                  merge_every=rp.merge_every, chain=rp.package_chain(), accept=1 << CODE[MERGE])
        self.y[Y_TRACK] = float(self.M > 1)
        self.y[Y_DUP_DEPTH] = rp.merge_depth
        self.y[Y_NDUP] = max(1, rp.merge_min_visits) if self.M > 1 else math.inf
        self.y[Y_NSYNC_MIN] = self.y[Y_NSYNC_MAX] = math.inf

    def holds_root(self) -> bool:
        return True
