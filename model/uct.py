"""The in-tree policy: UCT with RAVE/AMAF, first-play urgency, virtual loss and progressive bias, as kernels.

Reward convention (negamax): every statistic stored at a node - the node's own value, its children's
values and AMAF values - is a sum of rewards in [0, 1] *for the player to move at that node*. So a node
always maximises over its children, and the reward of a finished simulation is turned into each node's
view on the way up: r for the first player (Black), 1 - r for the second (model.game.reward gives r).

Selection score of child j of node s, with n = N(s,j) + vloss_weight * inflight(s,j), n_a = N_amaf(s,j):
    n > 0:            (1 - beta) W/n + beta W_amaf/n_a + C sqrt(2 ln N(s) / n)     (Schaefers 2014, Def. 11/12)
    n = 0, n_a > 0:   W_amaf/n_a + C sqrt(2 ln N(s))                              (beta = 1, n counts as 1)
    n = 0, n_a = 0:   fpu                                                         (first-play urgency)
    plus pb * prior(s,j) / (n + 1) when progressive bias is on (for n = 0 only with pb_unvisited). Exact ties
    are broken uniformly at random.
beta = n_a / (n + n_a + 4 n n_a b^2) (Silver) or sqrt(k / (3n + k)) (equivalence parameter k, Gelly & Silver);
beta = 0 when RAVE is off or n_a = 0. Virtual losses count as visits that earned 0.

Knowledge (Christoph 2020): a game with priors (model/game.py, LOA) has each node's children stored best prior
first (stable, generation order among equals), the priors kept for progressive bias. Progressive unpruning
(unprune_u0 > 0) offers only the first U(N) = U_0 + floor(ln N / ln mu) children of a node with N visits,
and takes an unvisited one of them first, the best-ranked first. Christoph 2020's four agents (Table 5.1), as
model/loa/policy.py sets them: PU = unpruning + bias; FPU = urgency fpu + bias on visited children only
(pb_unvisited off); both with RAVE off, C = 2 C_uct, and a new node a leaf until its second visit
(expand_visits 0, expand_node_visits 1).

The small kernels (select_child, expand, add_vloss, update_edge, update_node, update_amaf) are what the
distributed roles call one step at a time on the nodes they own; run_simulations fuses them into whole
simulations (select with positional-superko checks, expand, playout, backup) for the sequential and
shared-tree searches, without returning to Python.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from numba import njit

from model import game
from model.atomics import atomic_add, atomic_add2, atomic_cas, atomic_load, atomic_store
from model.config import check
from model.rng import randint
from model.tt import EXPANDING, MISSING, NEW, UNEXPANDED, lookup, lookup_in

# --- parameters (flat float64 array, so kernels take them as one argument) ----------------------------------
(P_C, P_RAVE, P_RAVE_SCHEDULE, P_RAVE_K, P_RAVE_BIAS, P_FPU, P_VLOSS, P_EXPAND, P_PB, P_MAX_DEPTH, P_SUPERKO,
 P_PB_UNVISITED, P_U0, P_MU, P_EXPAND_NODE) = range(15)
N_PARAMS = 15
SCHEDULES = {"silver": 0, "equivalence": 1}

# --- counters (int64 array filled by run_simulations) -------------------------------------------------------
C_SIMS, C_PLAYOUTS, C_NEW, C_SUPERKO, C_DEPTH_SUM, C_MAX_DEPTH, C_NO_ROOM, C_EXPANDS = range(8)
N_COUNTERS = 8


@dataclass
class UctParams:
    """In-tree policy settings (all settable with --param key=value)."""

    c: float = 0.0                # UCT exploration C (in C sqrt(2 ln N / n)); RAVE explores by itself,
    #                               without RAVE use e.g. 0.7
    rave: bool = True             # RAVE / AMAF on
    rave_schedule: str = "silver"  # silver: beta = n_a/(n + n_a + 4 n n_a b^2); equivalence: sqrt(k/(3n + k))
    rave_k: float = 1000.0        # equivalence parameter k
    rave_bias: float = 0.015      # Silver's AMAF bias b (beta = 1/2 near n = 1 / (4 b^2) ~ 1100 visits)
    fpu: float = 1.0              # first-play urgency: score of a child without any visit (or AMAF sample)
    vloss: float = 1.0            # virtual visits per simulation in flight through an edge (0: off)
    expand_visits: int = 1        # a child node is stored once its edge has this many visits (0: at once)
    pb: float = 0.0               # progressive bias weight (needs priors)
    pb_unvisited: bool = True     # the bias also scores unvisited children (off: they score fpu alone)
    unprune_u0: int = 0           # progressive unpruning's initial window U_0 (0: off; needs priors)
    unprune_mu: float = 2.5365    # its rate mu: one more child each time N grows by a factor mu
    expand_node_visits: int = 0   # a stored node (not the root) gets its children on visit k + 1 (0: at once)
    max_depth: int = 400          # longest in-tree path
    superko: bool = True          # positional superko checked in the tree

    def validate(self) -> None:
        check(self.c >= 0, "c", "must be >= 0")
        check(self.rave_schedule in SCHEDULES, "rave_schedule", f"one of {', '.join(SCHEDULES)}")
        check(self.rave_k > 0, "rave_k", "must be > 0")
        check(self.rave_bias >= 0, "rave_bias", "must be >= 0")
        check(math.isfinite(self.fpu), "fpu", "must be finite")
        check(self.vloss >= 0, "vloss", "must be >= 0")
        check(self.expand_visits >= 0, "expand_visits", "must be >= 0")
        check(self.pb >= 0, "pb", "must be >= 0")
        check(self.unprune_u0 >= 0, "unprune_u0", "must be >= 0")
        check(self.unprune_mu > 1, "unprune_mu", "must be > 1")
        check(self.expand_node_visits >= 0, "expand_node_visits", "must be >= 0")
        check(1 <= self.max_depth <= 100_000, "max_depth", "must be in 1..100000")

    def to_array(self) -> np.ndarray:
        p = np.zeros(N_PARAMS, dtype=np.float64)
        p[P_C], p[P_RAVE], p[P_RAVE_SCHEDULE] = self.c, float(self.rave), SCHEDULES[self.rave_schedule]
        p[P_RAVE_K], p[P_RAVE_BIAS], p[P_FPU] = self.rave_k, self.rave_bias, self.fpu
        p[P_VLOSS], p[P_EXPAND], p[P_PB] = self.vloss, self.expand_visits, self.pb
        p[P_MAX_DEPTH], p[P_SUPERKO] = self.max_depth, float(self.superko)
        p[P_PB_UNVISITED], p[P_U0], p[P_MU] = float(self.pb_unvisited), self.unprune_u0, self.unprune_mu
        p[P_EXPAND_NODE] = self.expand_node_visits
        return p

    def as_dict(self) -> dict:
        return asdict(self)


# --- selection ------------------------------------------------------------------------------------------------

@njit(cache=True, nogil=True, inline="always")
def rave_beta(n, n_amaf, p):
    """Weight of the AMAF mean against the UCT mean for an edge with n visits and n_amaf AMAF samples."""
    if p[P_RAVE] == 0.0 or n_amaf <= 0:
        return 0.0
    if p[P_RAVE_SCHEDULE] == 0.0:
        b = p[P_RAVE_BIAS]
        return n_amaf / (n + n_amaf + 4.0 * n * n_amaf * b * b)
    k = p[P_RAVE_K]
    return math.sqrt(k / (3.0 * n + k))


@njit(cache=True, nogil=True, inline="always")
def _score(n, w, na, wa, prior, explore, p):
    """Selection score from an edge's (virtual-loss adjusted) count n, value sum w, AMAF count na and sum wa;
    explore = C sqrt(2 ln N(s)), the node's share of the exploration term. Silver's beta folds into one
    division: (1 - beta) w/n + beta wa/na = (w (1 + k n_a) + wa) / (n + n_a + k n n_a), k = 4 b^2."""
    if n > 0.0:
        if na > 0.0:
            if p[P_RAVE_SCHEDULE] == 0.0:
                k = 4.0 * p[P_RAVE_BIAS] * p[P_RAVE_BIAS]
                q = (w * (1.0 + k * na) + wa) / (n + na + k * n * na)
            else:
                beta = rave_beta(n, na, p)
                q = (1.0 - beta) * (w / n) + beta * (wa / na)
        else:
            q = w / n
        if explore != 0.0:
            q += explore / math.sqrt(n)
    elif na > 0.0:
        q = wa / na + explore
    else:
        q = p[P_FPU]
    if p[P_PB] != 0.0 and (n > 0.0 or p[P_PB_UNVISITED] != 0.0):
        q += p[P_PB] * prior / (n + 1.0)
    return q


@njit(cache=True, nogil=True)
def child_score(t, slot, j, log_n, p):
    """The selection score of child j of the node in slot (see the module docstring)."""
    n = float(t.child_visits[slot, j]) + p[P_VLOSS] * t.vloss[slot, j]
    na = float(t.amaf_visits[slot, j]) if p[P_RAVE] != 0.0 else 0.0
    return _score(n, t.child_value[slot, j], na, t.amaf_value[slot, j], t.prior[slot, j],
                  p[P_C] * math.sqrt(2.0 * log_n), p)


@njit(cache=True, nogil=True, inline="always")
def scores_in(visits, cv, cw, av, aw, vl, pr, slot, n_ch, p, out):
    """out[:n_ch] = the children's selection scores (_score), in simple loops the compiler vectorises."""
    vw = p[P_VLOSS]
    fpu = p[P_FPU]
    rave = p[P_RAVE] != 0.0
    explore = p[P_C] * math.sqrt(2.0 * math.log(max(float(visits[slot]), 1.0)))
    if rave and p[P_RAVE_SCHEDULE] != 0.0:  # equivalence schedule: a square root per child anyway
        for j in range(n_ch):
            out[j] = _score(float(cv[slot, j]) + vw * vl[slot, j], cw[slot, j], float(av[slot, j]), aw[slot, j],
                            pr[slot, j], explore, p)
        return
    if rave:  # Silver's beta folded into one division (see _score); n = 0 = n_a leaves den = 0
        k = 4.0 * p[P_RAVE_BIAS] * p[P_RAVE_BIAS]
        for j in range(n_ch):
            n = float(cv[slot, j]) + vw * float(vl[slot, j])
            na = float(av[slot, j])
            den = n + na + k * n * na
            out[j] = (cw[slot, j] * (1.0 + k * na) + aw[slot, j]) / den if den > 0.0 else fpu
    else:
        for j in range(n_ch):
            n = float(cv[slot, j]) + vw * float(vl[slot, j])
            out[j] = cw[slot, j] / n if n > 0.0 else fpu
    if explore != 0.0:
        for j in range(n_ch):
            n = float(cv[slot, j]) + vw * float(vl[slot, j])
            if n > 0.0 or (rave and av[slot, j] > 0):
                out[j] += explore / math.sqrt(max(n, 1.0))
    if p[P_PB] != 0.0:
        first = p[P_PB_UNVISITED] != 0.0
        for j in range(n_ch):
            n = float(cv[slot, j]) + vw * float(vl[slot, j])
            if n > 0.0 or first:
                out[j] += p[P_PB] * pr[slot, j] / (n + 1.0)


@njit(cache=True, nogil=True, inline="always")
def unpruned(n, u0, mu):
    """U(n) = U_0 + floor(ln n / ln mu): how many of the best-ranked children a node with n visits offers."""
    if n < 1:
        return np.int64(u0)
    return np.int64(u0) + np.int64(math.floor(math.log(n) / math.log(mu) + 1e-12))


@njit(cache=True, nogil=True, inline="always")
def select_in(n_children, visits, cv, cw, av, aw, vl, pr, slot, p, rng, scratch):
    """select_child on the table's arrays, passed one by one (see tt.lookup_in for why); scratch:
    float64[>= n_children] for the scores."""
    n_ch = n_children[slot]
    if n_ch <= 0:
        return -1
    if p[P_U0] > 0.0:  # progressive unpruning: the window's unvisited children first, best-ranked first
        n_ch = min(n_ch, unpruned(visits[slot], p[P_U0], p[P_MU]))
        vw = p[P_VLOSS]
        for j in range(n_ch):
            if float(cv[slot, j]) + vw * float(vl[slot, j]) == 0.0:
                return j
    scores_in(visits, cv, cw, av, aw, vl, pr, slot, n_ch, p, scratch)
    # One random number, and only when there is a tie (commonly: children all unvisited), chooses uniformly
    # among the best.
    best = -np.inf
    bj = -1
    ties = 0
    for j in range(n_ch):
        x = scratch[j]
        if x > best:
            best, bj, ties = x, j, 1
        elif x == best:
            ties += 1
    if ties > 1:
        k = randint(rng, ties)
        for j in range(bj, n_ch):
            if scratch[j] == best:
                if k == 0:
                    return j
                k -= 1
    return bj


@njit(cache=True, nogil=True)
def select_child(t, slot, p, rng):
    """Index of the child to follow from an expanded node (-1 if it has none); ties broken at random."""
    return select_in(t.n_children, t.visits, t.child_visits, t.child_value, t.amaf_visits, t.amaf_value,
                     t.vloss, t.prior, slot, p, rng, np.empty(t.child_move.shape[1], np.float64))


# --- expansion, virtual loss, update --------------------------------------------------------------------------

@njit(cache=True, nogil=True, inline="always")
def sort_by_value(actions, val, n):
    """Order actions[:n] by val[:n], highest first, stably (insertion sort: n <= max_children)."""
    for i in range(1, n):
        a, v = actions[i], val[i]
        k = i - 1
        while k >= 0 and val[k] < v:
            actions[k + 1], val[k + 1] = actions[k], val[k]
            k -= 1
        actions[k + 1], val[k + 1] = a, v


@njit(cache=True, nogil=True, inline="always")
def expand_in(n_children, cm, cv, cw, av, aw, vl, pr, g, s, slot, buf, val):
    if not atomic_cas(n_children, slot, UNEXPANDED, EXPANDING):
        return False
    n = game.legal_actions(g, s, buf)
    if game.priors(g, s, buf, n, val):
        sort_by_value(buf, val, n)
    for j in range(n):
        cm[slot, j] = buf[j]
        cv[slot, j] = 0
        cw[slot, j] = 0.0
        av[slot, j] = 0
        aw[slot, j] = 0.0
        vl[slot, j] = 0
        pr[slot, j] = val[j]
    atomic_store(n_children, slot, n)
    return True


@njit(cache=True, nogil=True)
def expand(t, g, s, slot, buf):
    """Store the children (legal actions of s) of the node in slot, best prior first when the game has
    knowledge. False if another thread expands or expanded it. buf: int64[n_actions] scratch."""
    return expand_in(t.n_children, t.child_move, t.child_visits, t.child_value, t.amaf_visits, t.amaf_value,
                     t.vloss, t.prior, g, s, slot, buf, np.empty(buf.shape[0], np.float64))


@njit(cache=True, nogil=True)
def add_vloss(t, slot, j):
    atomic_add2(t.vloss, slot, j, 1)


@njit(cache=True, nogil=True)
def remove_vloss(t, slot, j):
    atomic_add2(t.vloss, slot, j, -1)


@njit(cache=True, nogil=True)
def update_edge(t, slot, j, r):
    """One more simulation took child j of slot and earned r (for the player to move at slot)."""
    atomic_add2(t.child_visits, slot, j, 1)
    atomic_add2(t.child_value, slot, j, r)


@njit(cache=True, nogil=True)
def update_node(t, slot, r):
    atomic_add(t.visits, slot, 1)
    atomic_add(t.value, slot, r)


# _SAME[(a - player) mod 256] is 1.0 where an AMAF map entry a (a player, or -1) is `player`, else 0.0
_SAME = np.zeros(256)
_SAME[0] = 1.0


@njit(cache=True, nogil=True, inline="always")
def amaf_weight(a, player):
    """1.0 if a == player else 0.0, as a load from a table. The float of a comparison, r * (a == player),
    compiles to a branch per child, and whether the player played a child's move first is a coin flip per
    child: a 19x19 node's pass over maps that differ from one simulation to the next took 2.2 us in cache
    with the branch and takes 0.36-0.44 without (`treesplit bench kernels --passes`). The products are the
    same: r * 1.0 or r * 0.0."""
    return _SAME[np.uint8(np.int64(a) - np.int64(player))]


@njit(cache=True, nogil=True, inline="always")
def amaf_in(n_children, cm, av, aw, slot, amaf, player, r):
    # Plain adds: a rare AMAF sample lost between threads costs less than an atomic per child. No branch on
    # the map (amaf_weight; adding 0 leaves a sum as it was).
    for j in range(n_children[slot]):
        a = amaf[cm[slot, j]]
        av[slot, j] += a == player
        aw[slot, j] += r * amaf_weight(a, player)


@njit(cache=True, nogil=True)
def update_amaf(t, slot, amaf, player, r):
    """AMAF update of every child whose action `player` played first from here on (amaf[a] == player)."""
    amaf_in(t.n_children, t.child_move, t.amaf_visits, t.amaf_value, slot, amaf, player, r)


@njit(cache=True, nogil=True, inline="always")
def backup_in(visits, value, n_children, cm, cv, cw, av, aw, vl, g, path_slot, path_child, path_player, depth,
              result, amaf, p):
    r0 = game.reward(g, result)
    use_vl = p[P_VLOSS] > 0.0
    rave = p[P_RAVE] != 0.0
    leaf = path_slot[depth]
    if leaf != 0:
        atomic_add(visits, leaf, 1)
        atomic_add(value, leaf, r0 if path_player[depth] == 0 else 1.0 - r0)
    for k in range(depth - 1, -1, -1):
        slot = path_slot[k]
        j = path_child[k]
        pl = path_player[k]
        r = r0 if pl == 0 else 1.0 - r0
        atomic_add2(cv, slot, j, 1)
        atomic_add2(cw, slot, j, r)
        if use_vl:
            atomic_add2(vl, slot, j, -1)
        atomic_add(visits, slot, 1)
        atomic_add(value, slot, r)
        if rave:
            amaf[cm[slot, j]] = pl
            amaf_in(n_children, cm, av, aw, slot, amaf, pl, r)


@njit(cache=True, nogil=True)
def backup(t, g, path_slot, path_child, path_player, depth, result, amaf, p):
    """Propagate a simulation's result (first player's view) from its leaf up to the root.
    path_slot[0..depth] are the nodes (path_slot[depth] may be 0: the leaf is not stored), path_child[k]
    the child taken at node k, path_player[k] the player to move there. amaf holds the playout's first
    players per action; the tree moves are added on the way up, so each node sees the actions played
    at or below it. Virtual loss (if on) is taken back from every edge of the path."""
    backup_in(t.visits, t.value, t.n_children, t.child_move, t.child_visits, t.child_value, t.amaf_visits,
              t.amaf_value, t.vloss, g, path_slot, path_child, path_player, depth, result, amaf, p)


@njit(cache=True, nogil=True, inline="always")
def _repeats(pos, path_pos, depth, history):
    for k in range(depth):
        if path_pos[k] == pos:
            return True
    i = np.searchsorted(history, pos)
    return i < history.shape[0] and history[i] == pos


# --- whole simulations ------------------------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def run_simulations(t, g, s_root, history, p, rng, n_sims, counters):
    """Run n_sims simulations from s_root on table t; returns how many ran. Thread-safe on a shared t.

    history: sorted uint64 position hashes of the game so far (s_root's included), for positional superko.
    A tree move that repeats a position loses for the player who made it (no playout); the game record
    still keeps such a move from being played. counters (int64[N_COUNTERS]) accumulate C_* figures.
    """
    na = game.n_actions(g)
    max_depth = int(p[P_MAX_DEPTH])
    use_vl = p[P_VLOSS] > 0.0
    superko = p[P_SUPERKO] != 0.0
    expand_at = p[P_EXPAND]
    expand_node = p[P_EXPAND_NODE]
    path_slot = np.zeros(max_depth + 1, np.int64)
    path_child = np.zeros(max_depth + 1, np.int64)
    path_player = np.zeros(max_depth + 1, np.int64)
    path_pos = np.zeros(max_depth + 1, np.uint64)
    buf = np.empty(na, np.int64)
    scratch = np.empty(na, np.float64)
    amaf = np.empty(na, np.int8)
    s = s_root.copy()
    key, stamp, meta, visits, value, nch = t.key, t.stamp, t.meta, t.visits, t.value, t.n_children
    cm, cv, cw, av, aw, vl, pr = t.child_move, t.child_visits, t.child_value, t.amaf_visits, t.amaf_value, \
        t.vloss, t.prior
    root_h = game.hash(g, s_root)
    root_pos = game.position_hash(g, s_root)
    for _ in range(n_sims):
        s[:] = s_root
        amaf[:] = -1
        slot, st = lookup_in(key, stamp, meta, visits, value, nch, root_h, True)
        if st == NEW:
            counters[C_NEW] += 1
        depth = 0
        path_pos[0] = root_pos
        need_playout = True
        result = 0.0
        while True:
            path_slot[depth] = slot
            path_player[depth] = game.to_move(g, s)
            if game.is_terminal(g, s):
                # A finished game is never a tree node: in Go, two passes lead back to the hash of the
                # position before them (same stones, same side to move), whose node must not be updated
                # for a game that has ended, nor searched on from.
                path_slot[depth] = 0
                break
            if slot == 0 or depth >= max_depth:
                break
            nc = atomic_load(nch, slot)
            if nc == UNEXPANDED:
                if depth > 0 and visits[slot] < expand_node:  # a stored leaf until its visit expand_node + 1
                    break
                if not expand_in(nch, cm, cv, cw, av, aw, vl, pr, g, s, slot, buf, scratch):
                    break
                counters[C_EXPANDS] += 1
                nc = nch[slot]
            if nc <= 0:  # terminal, or being expanded by another thread
                break
            j = select_in(nch, visits, cv, cw, av, aw, vl, pr, slot, p, rng, scratch)
            if use_vl:
                atomic_add2(vl, slot, j, 1)
            path_child[depth] = j
            mover = path_player[depth]
            ok = game.play(g, s, np.int64(cm[slot, j]))
            depth += 1
            pos = game.position_hash(g, s)
            if not ok or (superko and pos != path_pos[depth - 1] and _repeats(pos, path_pos, depth, history)):
                # illegal here (superko, or a hash collision): a loss for the mover, nothing stored below
                path_slot[depth] = 0
                path_player[depth] = 1 - mover
                result = -1.0 if mover == 0 else 1.0
                need_playout = False
                counters[C_SUPERKO] += 1
                break
            path_pos[depth] = pos
            slot, st = lookup_in(key, stamp, meta, visits, value, nch, game.hash(g, s), cv[path_slot[depth - 1], j] >= expand_at)
            if st == NEW:
                counters[C_NEW] += 1
            elif slot == 0 and st != MISSING:  # FULL or BUSY (MISSING is the normal frontier)
                counters[C_NO_ROOM] += 1
            if slot != 0 and on_path(path_slot, depth, slot):
                # back at a node of this path (a game without a repetition rule, e.g. LOA): the walk ends
                # here, played out, and no node is updated twice for one simulation
                path_slot[depth] = 0
                break
        if need_playout:
            result = game.playout(g, s, rng, amaf)
            counters[C_PLAYOUTS] += 1
        backup_in(visits, value, nch, cm, cv, cw, av, aw, vl, g, path_slot, path_child, path_player, depth, result,
                  amaf, p)
        counters[C_SIMS] += 1
        counters[C_DEPTH_SUM] += depth
        if depth > counters[C_MAX_DEPTH]:
            counters[C_MAX_DEPTH] = depth
    return n_sims


@njit(cache=True, nogil=True, inline="always")
def on_path(path, n, x):
    """Whether x is among path[:n] (a node met again on one simulation's way down)."""
    for k in range(n):
        if path[k] == x:
            return True
    return False


def history_array(position_hashes) -> np.ndarray:
    """Sorted unique uint64 array of a game's position hashes, as run_simulations takes it."""
    h = np.asarray(list(position_hashes) if not isinstance(position_hashes, np.ndarray) else position_hashes)
    return np.unique(h.astype(np.uint64)) if h.size else np.zeros(0, np.uint64)


# --- reading the tree (Python; after a search) ------------------------------------------------------------------

@dataclass
class RootChild:
    action: int
    visits: int
    value: float       # mean reward for the player to move at the root (nan without visits)
    amaf_visits: int
    amaf_value: float  # AMAF mean, same view (nan without samples)


def root_children(t, slot: int) -> list[RootChild]:
    """The children of the node in slot, most visited first (empty if the slot holds no expanded node)."""
    if slot <= 0:
        return []
    n = int(t.n_children[slot])
    out = []
    for j in range(max(n, 0)):
        v, av = int(t.child_visits[slot, j]), int(t.amaf_visits[slot, j])
        out.append(RootChild(int(t.child_move[slot, j]), v, float(t.child_value[slot, j]) / v if v else math.nan,
                             av, float(t.amaf_value[slot, j]) / av if av else math.nan))
    out.sort(key=lambda c: (-c.visits, -(c.value if c.visits else -1.0)))
    return out


def repeats_history(g, s, action: int, history: np.ndarray) -> bool:
    """Would `action` recreate a position of the game (positional superko)? A pass never does."""
    c = s.copy()
    if not game.play(g, c, action):
        return True
    pos = game.position_hash(g, c)
    if pos == game.position_hash(g, s):
        return False
    i = np.searchsorted(history, pos)
    return bool(i < history.shape[0] and history[i] == pos)


@njit(cache=True, nogil=True)
def find_node(t, g, s):
    """Slot of position s in t (0 if not stored). Hashes inside the kernel: a uint64 hash does not survive
    the trip through a Python int into a numba int64 argument."""
    slot, _ = lookup(t, game.hash(g, s), False)
    return slot


def principal_variation(t, g, s, max_len: int = 20) -> list[int]:
    """Most-visited line from s through the table (stops where the tree ends)."""
    pv: list[int] = []
    c = s.copy()
    for _ in range(max_len):
        slot = find_node(t, g, c)
        kids = root_children(t, slot)
        if not kids or kids[0].visits == 0:
            break
        pv.append(kids[0].action)
        if not game.play(g, c, kids[0].action):
            break
    return pv
