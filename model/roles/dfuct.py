"""TDS with depth-first UCT, df-UCT (Yoshizoe et al. 2011; Christoph 2020, 3.4.2 and 4.4.3.2).

The tree is spread over the search ranks by hash exactly as in TDS (treesplit.py with N_dup = inf), but a
simulation does not climb back to the root after its playout. A *job* keeps searching below a node for as
long as the child it chose there stays the best, and carries for every node of its path a FRAME
(messages.py): the node's visits and the best and second-best children's statistics as the job saw them
when it selected there, and the results it gathered below the node since it last reported to its owner.

After each playout (or a tree move that loses at once) the job adds the result to every frame: to the
pending sums and to its own copy of the best child's statistics. Then it looks for the shallowest node
whose second-best child now scores higher (UCB on the copies) than the best:
    found at depth k   frames k and below are popped and the job selects again at node k, on k's owner;
    none               the deepest frame is popped and the job selects again there (the leaf's parent).
A popped frame's results go to its owner, merged (dn visits and a reward sum per edge, one UPDATE per
rank); the report the owner of node k must apply before it selects again travels inside the job (MOVE).
A kept frame whose pending count reaches `report_every` reports too, without popping (its virtual loss
stays), so near-root statistics never lag by more than that many results per job.

A job holds `tickets` simulations of its origin's share of the budget (-1: until stop). When they are
spent, or on a rank that has stopped, it pops every frame (the final flush) and ends: once every job has
ended, the tree holds exactly the completed simulations, root visits == simulations completed, and the
invariants of model/roles/invariants.py hold. A simulation counts as started and done on the rank that
ran its playout.

RAVE is refused: merged reports carry visit counts and reward sums, not each playout's moves; UCB with
c = 0.7 is the default (params.UCT_DEFAULTS). Priors (progressive bias) are left out of the switch test.
"""

from __future__ import annotations

import math

from model.roles import core as K
from model.roles.base import Layout, Setup
from model.roles.dfuct_kernels import F_POP, F_REPORT, apply_reports, fill_frames, fold_result
from model.roles.params import DfuctParams, TreesplitParams, check_uct
from model.roles.steps import Y_TRACK
from model.roles.treesplit import TreesplitSearch
from model.uct import P_RAVE, UctParams

__all__ = ["DfuctSearch", "F_POP", "F_REPORT", "apply_reports", "fill_frames", "fold_result"]


class DfuctSearch(TreesplitSearch):
    """A df-UCT search rank: model/roles/core.py in MODE_DFUCT (one package per step: each step's result
    decides where the job goes)."""

    def __init__(self, rank: int, layout: Layout, setup: Setup, uct: UctParams | None = None,
                 params: DfuctParams | None = None, table=None):
        self.df = params or DfuctParams()
        uct = uct or UctParams(rave=False, c=0.7)
        check_uct("dfuct", uct)
        ts = TreesplitParams(table_mb=self.df.table_mb, overload=self.df.overload, n_dup=math.inf,
                             share_root=False, balance_k=self.df.balance_k,
                             forward_playouts=self.df.forward_playouts, dup_rows=1, fuse=False,
                             min_in_flight=self.df.min_in_flight)
        super().__init__(rank, layout, setup, uct, ts, table, frames=True)
        assert self.p[P_RAVE] == 0.0
        self._set(mode=K.MODE_DFUCT, track=0, report_every=self.df.report_every)
        self.a.cs[0]["switch_margin"] = self.df.switch_margin
        self.y[Y_TRACK] = 0.0
