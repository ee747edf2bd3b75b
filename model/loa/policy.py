"""The serial agents of Christoph 2020 (Table 5.1): UCT with progressive bias, plus progressive unpruning (PU) or
first-play urgency (FPU), with move categories (MC) or the concentration evaluation (EF) as knowledge.

Selection at a node with N visits, over its children sorted by knowledge value H (highest first, ties in
move-generation order, as Christoph 2020, 4.2.1, sorts them), child i having n_i visits and reward sum v_i:
    UCT_pb(i) = v_i / n_i + 2 C_uct sqrt(2 ln N / n_i) + C_pb H_i / (n_i + 1)          (Christoph 2020, eq. 2.3, 2.5)
  PU:  only the first U(N) = U_0 + floor(ln N / ln mu) children are candidates (eq. 2.4; U_0 when N = 0);
       an unvisited candidate is taken first (value infinity, as in plain UCT), the best-ranked one first.
  FPU: every child is a candidate; an unvisited child scores the fixed urgency FPU, knowledge plays no
       part before a child's first visit (Christoph 2020, 5.2.2, credits PU's lead over FPU to PU's knowledge order).
       Option fpu_bias adds the bias with n_i = 0, C_pb H_i, to FPU: knowledge then orders the first visits
       too, which (with the evaluation as H) makes FPU agents far stronger than Christoph 2020's.
Exact ties are broken at random. The move played is the most visited root child.

One simulation: descend from the root through stored nodes, storing the first new node reached (a new
node is a leaf: it gets its children, sorted by knowledge, on its second visit), play out from there, and
back the result up. All of it is model/uct.py's run_simulations with the knowledge hooks set as
AgentParams.uct_params() says, so any search that takes UctParams can run these policies. Statistics live
in model/tt.py's table, so the agent reuses the subtree of the moves played between searches as the
engine's searches do. The agents are LOA agents only in the knowledge their game params g ask
model/loa/knowledge.py for.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from model import game, tt, uct
from model.config import check
from model.rng import new_rng

KINDS = ("pu", "fpu")


@dataclass
class AgentParams:
    """One serial agent: selection kind, knowledge and its Table 5.1 constants."""

    kind: str = "pu"           # pu: progressive unpruning | fpu: first-play urgency
    knowledge: str = "mc"      # mc: move categories (Table A.1) | ef: concentration evaluation | none
    c_uct: float = 1.0748
    c_pb: float = 12.3619
    fpu: float = 1.1050        # FPU agents only
    u0: int = 1                # PU agents only: initial window
    mu: float = 2.5365         # PU agents only: unpruning rate
    max_depth: int = 200       # longest in-tree path
    fpu_bias: bool = False     # FPU agents: an unvisited child scores FPU + C_pb H (not in Christoph 2020)

    def validate(self) -> None:
        check(self.kind in KINDS, "kind", f"one of {', '.join(KINDS)}")
        check(self.knowledge in ("mc", "ef", "none"), "knowledge", "one of mc, ef, none")
        check(self.c_uct >= 0, "c_uct", "must be >= 0")
        check(self.c_pb >= 0, "c_pb", "must be >= 0")
        check(math.isfinite(self.fpu), "fpu", "must be finite")
        check(self.u0 >= 1, "u0", "must be >= 1")
        check(self.mu > 1, "mu", "must be > 1")
        check(1 <= self.max_depth <= 10_000, "max_depth", "must be in 1..10000")

    def uct_params(self) -> uct.UctParams:
        """The in-tree policy that is this agent (model/uct.py's knowledge hooks; RAVE and virtual loss off;
        Christoph 2020's exploration term 2 C_uct sqrt(2 ln N / n) is UCT's C sqrt(2 ln N / n) with C = 2 C_uct)."""
        pu = self.kind == "pu"
        return uct.UctParams(c=2.0 * self.c_uct, rave=False, fpu=self.fpu, vloss=0.0, expand_visits=0,
                             expand_node_visits=1, pb=self.c_pb, pb_unvisited=self.fpu_bias,
                             unprune_u0=self.u0 if pu else 0, unprune_mu=self.mu, max_depth=self.max_depth,
                             superko=False)

    def as_dict(self) -> dict:
        return asdict(self)


# Table 5.1 of Christoph 2020 (CLOP-tuned)
AGENTS = {
    "pu-mc": AgentParams("pu", "mc", c_uct=1.0748, c_pb=12.3619, u0=1, mu=2.5365),
    "pu-ef": AgentParams("pu", "ef", c_uct=0.8610, c_pb=14.2020, u0=2, mu=2.6011),
    "fpu-mc": AgentParams("fpu", "mc", c_uct=0.6838, c_pb=16.0458, fpu=1.1050),
    "fpu-ef": AgentParams("fpu", "ef", c_uct=1.1077, c_pb=10.8757, fpu=1.1734),
}
NO_HISTORY = np.zeros(0, np.uint64)  # LOA has no repetition rule: no superko history


class Agent:
    """A serial agent that keeps its table between moves (a new search only bumps the time stamp)."""

    def __init__(self, params: AgentParams, tt_slots: int = 1 << 14, seed: int = 1):
        params.validate()
        self.params = params
        self.p = params.uct_params().to_array()
        self.tt_slots = int(tt_slots)
        self.seed = int(seed)
        self.table: tt.Table | None = None
        self.n_searches = 0
        self.counters = np.zeros(uct.N_COUNTERS, np.int64)

    def choose(self, g: np.ndarray, s: np.ndarray, sims: int) -> int:
        """The most visited root child after `sims` simulations from s (-1 if s has no move). g must carry
        this agent's knowledge (for LOA: model.loa.board.make_params(knowledge=params.knowledge))."""
        if sims < 1:
            raise ValueError("an agent needs at least one simulation per move")
        if self.table is None:
            self.table = tt.new_table(self.tt_slots, int(game.max_children(g)))
        t = self.table
        tt.new_search(t)
        self.n_searches += 1
        rng = new_rng(self.seed * 1_000_003 + self.n_searches)
        uct.run_simulations(t, g, s, NO_HISTORY, self.p, rng, int(sims), self.counters)
        slot = int(uct.find_node(t, g, s))
        kids = uct.root_children(t, slot)
        return kids[0].action if kids and kids[0].visits > 0 else -1

    def reset(self) -> None:
        self.table = None
