"""The serial agents of seed 001 (Table 5.1): UCT with progressive bias, plus progressive unpruning (PU) or
first-play urgency (FPU), with move categories (MC) or the concentration evaluation (EF) as knowledge.

Selection at a node with N visits, over its children sorted by knowledge value H (highest first, ties in
move-generation order, as seed 001 4.2.1 sorts them), child i having n_i visits and reward sum v_i:
    UCT_pb(i) = v_i / n_i + 2 C_uct sqrt(2 ln N / n_i) + C_pb H_i / (n_i + 1)          (seed 001 eq. 2.3, 2.5)
  PU:  only the first U(N) = U_0 + floor(ln N / ln mu) children are candidates (eq. 2.4; U_0 when N = 0);
       an unvisited candidate is taken first (value infinity, as in plain UCT), the best-ranked one first.
  FPU: every child is a candidate; an unvisited child scores the fixed urgency FPU, knowledge plays no
       part before a child's first visit (seed 001 5.2.2 credits PU's lead over FPU to PU's knowledge order).
       Option fpu_bias adds the bias with n_i = 0, C_pb H_i, to FPU: knowledge then orders the first visits
       too, which (with the evaluation as H) makes FPU agents far stronger than seed 001's.
Exact ties are broken at random. The move played is the most visited root child.

One simulation: descend from the root through stored nodes, storing the first new node reached (a new
node is a leaf: it gets its children, sorted by knowledge, on its second visit), play out from there, and
back the result up with model/uct.py's negamax backup. Statistics live in model/tt.py's table, so the
agent reuses the subtree of the moves played between searches as the engine's searches do.

The kernels take any game through model/game.py (legal_actions, priors, playout...); the Table 5.1 agents
are LOA agents only in the knowledge their game params g ask model/loa/knowledge.py for.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from numba import njit

from model import game, tt, uct
from model.config import check
from model.rng import new_rng, randint
from model.tt import UNEXPANDED, lookup_in

PU, FPU = 0, 1
KINDS = {"pu": PU, "fpu": FPU}
# agent parameters (float64 array)
P_KIND, P_C, P_CPB, P_FPU, P_U0, P_MU, P_MAX_DEPTH, P_FPU_BIAS = range(8)
N_PARAMS = 8
# counters
C_SIMS, C_NEW, C_EXPANDS, C_DEPTH_SUM, C_MAX_DEPTH, C_NO_ROOM = range(6)
N_COUNTERS = 6


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
    fpu_bias: bool = False     # FPU agents: an unvisited child scores FPU + C_pb H (not in seed 001)

    def validate(self) -> None:
        check(self.kind in KINDS, "kind", f"one of {', '.join(KINDS)}")
        check(self.knowledge in ("mc", "ef", "none"), "knowledge", "one of mc, ef, none")
        check(self.c_uct >= 0, "c_uct", "must be >= 0")
        check(self.c_pb >= 0, "c_pb", "must be >= 0")
        check(math.isfinite(self.fpu), "fpu", "must be finite")
        check(self.u0 >= 1, "u0", "must be >= 1")
        check(self.mu > 1, "mu", "must be > 1")
        check(1 <= self.max_depth <= 10_000, "max_depth", "must be in 1..10000")

    def to_array(self) -> np.ndarray:
        p = np.zeros(N_PARAMS, dtype=np.float64)
        p[P_KIND], p[P_C], p[P_CPB], p[P_FPU] = KINDS[self.kind], self.c_uct, self.c_pb, self.fpu
        p[P_U0], p[P_MU], p[P_MAX_DEPTH], p[P_FPU_BIAS] = self.u0, self.mu, self.max_depth, float(self.fpu_bias)
        return p

    def as_dict(self) -> dict:
        return asdict(self)


# Table 5.1 of seed 001 (CLOP-tuned)
AGENTS = {
    "pu-mc": AgentParams("pu", "mc", c_uct=1.0748, c_pb=12.3619, u0=1, mu=2.5365),
    "pu-ef": AgentParams("pu", "ef", c_uct=0.8610, c_pb=14.2020, u0=2, mu=2.6011),
    "fpu-mc": AgentParams("fpu", "mc", c_uct=0.6838, c_pb=16.0458, fpu=1.1050),
    "fpu-ef": AgentParams("fpu", "ef", c_uct=1.1077, c_pb=10.8757, fpu=1.1734),
}


@njit(cache=True, nogil=True, inline="always")
def unpruned(n, u0, mu):
    """U(n) = U_0 + floor(ln n / ln mu): how many of the best-ranked children a node with n visits offers."""
    if n < 1:
        return np.int64(u0)
    return np.int64(u0) + np.int64(math.floor(math.log(n) / math.log(mu) + 1e-12))


@njit(cache=True, nogil=True, inline="always")
def select_in(n_children, visits, cv, cw, pr, slot, p, rng):
    """The child to follow from an expanded node (see the module docstring)."""
    n_ch = n_children[slot]
    big_n = visits[slot]
    if p[P_KIND] == PU:
        w = unpruned(big_n, p[P_U0], p[P_MU])
        if w < n_ch:
            n_ch = w
        for j in range(n_ch):
            if cv[slot, j] == 0:
                return j
    log_n = math.log(max(float(big_n), 1.0))
    c2 = 2.0 * p[P_C]
    cpb = p[P_CPB]
    first = cpb if p[P_FPU_BIAS] != 0.0 else 0.0
    best = -np.inf
    bj = 0
    ties = 0
    for j in range(n_ch):
        n = float(cv[slot, j])
        if n == 0.0:
            sc = p[P_FPU] + first * pr[slot, j]
        else:
            sc = cw[slot, j] / n + c2 * math.sqrt(2.0 * log_n / n) + cpb * pr[slot, j] / (n + 1.0)
        if sc > best:
            best, bj, ties = sc, j, 1
        elif sc == best:
            ties += 1
            if randint(rng, ties) == 0:
                bj = j
    return bj


@njit(cache=True, nogil=True, inline="always")
def expand_sorted(n_children, cm, cv, cw, av, aw, vl, pr, g, s, slot, buf, val):
    """Store the node's children ordered by knowledge value, highest first (stable: generation order among
    equals). buf: int64[n_actions], val: float64[n_actions] scratch."""
    n = game.legal_actions(g, s, buf)
    game.priors(g, s, buf, n, val)
    for i in range(1, n):   # insertion sort: n <= max_children, and mostly short runs
        a, v = buf[i], val[i]
        k = i - 1
        while k >= 0 and val[k] < v:
            buf[k + 1], val[k + 1] = buf[k], val[k]
            k -= 1
        buf[k + 1], val[k + 1] = a, v
    for j in range(n):
        cm[slot, j] = buf[j]
        pr[slot, j] = val[j]
        cv[slot, j] = 0
        cw[slot, j] = 0.0
        av[slot, j] = 0
        aw[slot, j] = 0.0
        vl[slot, j] = 0
    n_children[slot] = n


@njit(cache=True, nogil=True)
def run_agent(t, g, s_root, p, up, rng, n_sims, counters):
    """Run n_sims simulations of the agent p from s_root on table t (one thread). up: model/uct.py's
    params array for the backup (RAVE and virtual loss off)."""
    na = game.n_actions(g)
    max_depth = int(p[P_MAX_DEPTH])
    path_slot = np.zeros(max_depth + 1, np.int64)
    path_child = np.zeros(max_depth + 1, np.int64)
    path_player = np.zeros(max_depth + 1, np.int64)
    buf = np.empty(na, np.int64)
    val = np.empty(na, np.float64)
    amaf = np.empty(na, np.int8)
    s = s_root.copy()
    key, stamp, meta, visits, value, nch = t.key, t.stamp, t.meta, t.visits, t.value, t.n_children
    cm, cv, cw, av, aw, vl, pr = t.child_move, t.child_visits, t.child_value, t.amaf_visits, t.amaf_value, \
        t.vloss, t.prior
    root_h = game.hash(g, s_root)
    for _ in range(n_sims):
        s[:] = s_root
        amaf[:] = -1
        slot, st = lookup_in(key, stamp, meta, visits, value, nch, root_h, True)
        depth = 0
        while True:
            path_slot[depth] = slot
            path_player[depth] = game.to_move(g, s)
            if slot == 0:
                counters[C_NO_ROOM] += 1
                break
            if depth >= max_depth or game.is_terminal(g, s):
                break
            if nch[slot] == UNEXPANDED:
                if depth > 0 and visits[slot] == 0:
                    counters[C_NEW] += 1
                    break
                expand_sorted(nch, cm, cv, cw, av, aw, vl, pr, g, s, slot, buf, val)
                counters[C_EXPANDS] += 1
            if nch[slot] <= 0:
                break
            j = select_in(nch, visits, cv, cw, pr, slot, p, rng)
            path_child[depth] = j
            game.play(g, s, np.int64(cm[slot, j]))
            depth += 1
            slot, st = lookup_in(key, stamp, meta, visits, value, nch, game.hash(g, s), True)
        result = game.playout(g, s, rng, amaf)
        uct.backup_in(visits, value, nch, cm, cv, cw, av, aw, vl, g, path_slot, path_child, path_player, depth,
                      result, amaf, up)
        counters[C_SIMS] += 1
        counters[C_DEPTH_SUM] += depth
        if depth > counters[C_MAX_DEPTH]:
            counters[C_MAX_DEPTH] = depth
    return n_sims


class Agent:
    """A serial agent that keeps its table between moves (a new search only bumps the time stamp)."""

    def __init__(self, params: AgentParams, tt_slots: int = 1 << 14, seed: int = 1):
        params.validate()
        self.params = params
        self.p = params.to_array()
        self.up = uct.UctParams(rave=False, vloss=0.0).to_array()
        self.tt_slots = int(tt_slots)
        self.seed = int(seed)
        self.table: tt.Table | None = None
        self.n_searches = 0
        self.counters = np.zeros(N_COUNTERS, np.int64)

    def choose(self, g: np.ndarray, s: np.ndarray, sims: int) -> int:
        """The most visited root child after `sims` simulations from s (-1 if s has no move). g must carry
        this agent's knowledge (for LOA: model.loa.board.make_params(knowledge=params.knowledge))."""
        if sims < 1:
            raise ValueError("an agent needs at least one simulation per move")
        gg = g
        if self.table is None:
            self.table = tt.new_table(self.tt_slots, int(game.max_children(gg)))
        t = self.table
        tt.new_search(t)
        self.n_searches += 1
        rng = new_rng(self.seed * 1_000_003 + self.n_searches)
        run_agent(t, gg, s, self.p, self.up, rng, int(sims), self.counters)
        slot = int(uct.find_node(t, gg, s))
        kids = uct.root_children(t, slot)
        return kids[0].action if kids and kids[0].visits > 0 else -1

    def reset(self) -> None:
        self.table = None
