"""The in-tree policy kernels on hand-set statistics: UCT, RAVE beta, FPU, virtual loss, expand, backup."""

import math

import numpy as np
import pytest

from model import game, tt, uct
from model.errors import ConfigError
from model.rng import new_rng


def params(**kw):
    return uct.UctParams(**kw).to_array()


def node(t, n_children, visits):
    """A stored, expanded node with zeroed children 0..n-1 (actions 0..n-1)."""
    slot, st = tt.lookup(t, np.uint64(12345), True)
    assert st == tt.NEW
    t.n_children[slot] = n_children
    t.child_move[slot, :n_children] = np.arange(n_children)
    t.visits[slot] = visits
    return slot


def test_uct_formula_and_fpu():
    t = tt.new_table(64, 4)
    s = node(t, 3, 100)
    t.child_visits[s, :2] = [40, 10]
    t.child_value[s, :2] = [24.0, 7.0]
    p = params(c=0.5, rave=False, fpu=1.5)
    ln = math.log(100)
    assert uct.child_score(t, s, 0, ln, p) == pytest.approx(0.6 + 0.5 * math.sqrt(2 * ln / 40))
    assert uct.child_score(t, s, 1, ln, p) == pytest.approx(0.7 + 0.5 * math.sqrt(2 * ln / 10))
    assert uct.child_score(t, s, 2, ln, p) == 1.5  # unvisited: first-play urgency
    assert uct.select_child(t, s, p, new_rng(1)) == 2
    assert uct.select_child(t, s, params(c=0.5, rave=False, fpu=0.1), new_rng(1)) == 1
    assert uct.select_child(t, s, params(c=0.0, rave=False, fpu=0.1), new_rng(1)) == 1  # 0.7 > 0.6


def test_rave_beta_schedules():
    silver = params(rave=True, rave_schedule="silver", rave_bias=0.1)
    assert uct.rave_beta(10.0, 30.0, silver) == pytest.approx(30 / (10 + 30 + 4 * 10 * 30 * 0.01))
    assert uct.rave_beta(0.0, 30.0, silver) == 1.0
    equiv = params(rave=True, rave_schedule="equivalence", rave_k=500)
    assert uct.rave_beta(100.0, 30.0, equiv) == pytest.approx(math.sqrt(500 / (300 + 500)))
    assert uct.rave_beta(100.0, 0.0, equiv) == 0.0  # no AMAF sample: plain UCT
    assert uct.rave_beta(100.0, 30.0, params(rave=False)) == 0.0
    # decreasing in n: AMAF matters less as real visits accumulate
    assert uct.rave_beta(1000.0, 30.0, equiv) < uct.rave_beta(10.0, 30.0, equiv)


def test_rave_score_mixes_amaf():
    t = tt.new_table(64, 4)
    s = node(t, 2, 50)
    t.child_visits[s, 0], t.child_value[s, 0] = 10, 3.0
    t.amaf_visits[s, 0], t.amaf_value[s, 0] = 40, 32.0
    t.amaf_visits[s, 1], t.amaf_value[s, 1] = 20, 5.0  # AMAF only: beta = 1, n counts as 1
    p = params(c=0.2, rave=True, rave_schedule="equivalence", rave_k=100)
    ln = math.log(50)
    beta = math.sqrt(100 / (30 + 100))
    assert uct.child_score(t, s, 0, ln, p) == pytest.approx((1 - beta) * 0.3 + beta * 0.8
                                                             + 0.2 * math.sqrt(2 * ln / 10))
    assert uct.child_score(t, s, 1, ln, p) == pytest.approx(0.25 + 0.2 * math.sqrt(2 * ln))


def test_virtual_loss_counts_as_lost_visits_and_diverts_selection():
    t = tt.new_table(64, 4)
    s = node(t, 2, 20)
    t.child_visits[s, :2] = [10, 10]
    t.child_value[s, :2] = [7.0, 6.0]
    p = params(c=0.0, rave=False, vloss=3)
    assert uct.select_child(t, s, p, new_rng(1)) == 0
    uct.add_vloss(t, s, 0)
    assert t.vloss[s, 0] == 1
    assert uct.child_score(t, s, 0, 0.0, p) == pytest.approx(7.0 / 13)
    assert uct.select_child(t, s, p, new_rng(1)) == 1
    uct.remove_vloss(t, s, 0)
    assert t.vloss[s, 0] == 0 and uct.select_child(t, s, p, new_rng(1)) == 0


def test_ties_are_broken_at_random():
    t = tt.new_table(64, 8)
    s = node(t, 8, 0)
    rng = new_rng(3)
    picks = {uct.select_child(t, s, params(), rng) for _ in range(200)}
    assert len(picks) == 8


def test_expand_once_and_backup_negamax_with_amaf():
    g, s0 = game.make_game("pgame", branching=3, depth=4, seed=1)
    t = tt.new_table(64, 3)
    buf = np.zeros(3, np.int64)
    root, _ = tt.lookup(t, game.hash(g, s0), True)
    assert uct.expand(t, g, s0, root, buf) and t.n_children[root] == 3
    assert not uct.expand(t, g, s0, root, buf)  # already expanded
    s1 = s0.copy()
    game.play(g, s1, 2)
    child, _ = tt.lookup(t, game.hash(g, s1), True)
    uct.expand(t, g, s1, child, buf)
    # path: root --(2)--> child --(0)--> (not stored); the first player won (result > 0)
    path_slot = np.array([root, child, 0])
    path_child = np.array([2, 0, 0])
    path_player = np.array([0, 1, 0])
    amaf = np.full(3, -1, np.int8)
    amaf[1] = 0  # the playout: the first player played action 1 first
    uct.backup(t, g, path_slot, path_child, path_player, 2, 5.0, amaf, params(vloss=0))
    assert t.visits[root] == 1 and t.value[root] == 1.0      # first player to move at the root: won
    assert t.visits[child] == 1 and t.value[child] == 0.0    # second player to move there: lost
    assert t.child_visits[root, 2] == 1 and t.child_value[root, 2] == 1.0
    assert t.child_visits[child, 0] == 1 and t.child_value[child, 0] == 0.0
    # AMAF at the root: the first player's actions from the root on are 2 (tree) and 1 (playout)
    assert list(t.amaf_visits[root]) == [0, 1, 1] and t.amaf_value[root, 1] == 1.0
    # at the child (second player to move) only its own tree move 0 counts
    assert list(t.amaf_visits[child]) == [1, 0, 0] and t.amaf_value[child, 0] == 0.0


def test_run_simulations_counts_and_consistency():
    g, s = game.make_game("pgame", branching=4, depth=6, seed=5)
    t = tt.new_table(4096, 4)
    c = np.zeros(uct.N_COUNTERS, np.int64)
    hist = uct.history_array([game.position_hash(g, s)])
    uct.run_simulations(t, g, s, hist, params(), new_rng(1), 3000, c)
    root = uct.find_node(t, g, s)
    assert t.visits[root] == 3000 == c[uct.C_SIMS] == c[uct.C_PLAYOUTS]
    assert t.child_visits[root].sum() == 3000
    assert not t.vloss.any()  # every virtual loss taken back
    assert c[uct.C_NEW] == int((t.stamp == t.meta[tt.M_SEARCH]).sum())
    assert c[uct.C_MAX_DEPTH] == 6  # the whole tree fits: the search reaches the leaves
    # a node's visits are its children's, plus the visits that ended at it
    for slot in np.nonzero((t.stamp == t.meta[tt.M_SEARCH]) & (t.n_children > 0))[0]:
        assert t.child_visits[slot].sum() <= t.visits[slot]


def test_expand_visits_delays_node_creation():
    g, s = game.make_game("pgame", branching=4, depth=6, seed=5)
    hist = uct.history_array([game.position_hash(g, s)])
    made = []
    for ev in (0, 4):
        t = tt.new_table(4096, 4)
        c = np.zeros(uct.N_COUNTERS, np.int64)
        uct.run_simulations(t, g, s, hist, params(expand_visits=ev), new_rng(1), 500, c)
        made.append(c[uct.C_NEW])
    assert made[0] > 2 * made[1]


def test_params_validation():
    with pytest.raises(ConfigError, match="rave_schedule"):
        uct.UctParams(rave_schedule="nope").validate()
    with pytest.raises(ConfigError, match="c"):
        uct.UctParams(c=-1).validate()
    assert uct.UctParams().to_array().shape == (uct.N_PARAMS,)


def test_go_two_passes_end_the_path_and_never_update_the_root_twice():
    # Black passes, White passes: the game ends in a position whose hash is the root's own (same stones,
    # same side to move). The simulation must stop there, not count the root again or search on from it.
    g, s = game.make_game("go", size=5, komi=0.5)
    for a in (6, 18, 12, 8):
        assert game.play(g, s, a)
    t = tt.new_table(20000, 26)
    c = np.zeros(uct.N_COUNTERS, np.int64)
    uct.run_simulations(t, g, s, uct.history_array([game.position_hash(g, s)]), params(), new_rng(2), 3000, c)
    root = uct.find_node(t, g, s)
    assert t.visits[root] == 3000 == t.child_visits[root].sum()
    kids = {int(t.child_move[root, j]): int(t.child_visits[root, j]) for j in range(t.n_children[root])}
    assert kids[25] > 0  # the pass was tried (and ended those simulations at once)


def test_ties_are_broken_uniformly_even_when_apart():
    t = tt.new_table(64, 4)
    s = node(t, 3, 30)
    t.child_visits[s, :3] = [10, 10, 10]
    t.child_value[s, :3] = [6.0, 2.0, 6.0]  # children 0 and 2 tie, 1 lies between them
    p = params(c=0.0, rave=False)
    rng = new_rng(4)
    picks = np.bincount([uct.select_child(t, s, p, rng) for _ in range(4000)], minlength=3)
    assert picks[1] == 0
    assert abs(picks[0] - picks[2]) < 4 * math.sqrt(4000)   # 2000 each, +- 4 sigma (sigma ~ 32)


def test_progressive_unpruning_window_and_unvisited_first():
    t = tt.new_table(64, 8)
    s = node(t, 6, 0)
    p = params(c=0.0, rave=False, unprune_u0=2, unprune_mu=2.0, pb=1.0)
    assert uct.unpruned(0, 2, 2.0) == 2 and uct.unpruned(8, 2, 2.0) == 5
    assert uct.select_child(t, s, p, new_rng(1)) == 0          # unvisited candidates in rank order
    t.child_visits[s, 0], t.child_value[s, 0] = 1, 0.0
    assert uct.select_child(t, s, p, new_rng(1)) == 1
    t.child_visits[s, 1], t.child_value[s, 1] = 1, 0.0
    t.visits[s] = 2                                               # window 2 + 1 = 3: child 2 joins
    assert uct.select_child(t, s, p, new_rng(1)) == 2
    t.child_visits[s, 2], t.child_value[s, 2] = 1, 0.0
    t.child_value[s, 5] = 99.0                                    # outside the window: never chosen
    t.prior[s, :6] = [0.1, 0.9, 0.2, 0.0, 0.0, 5.0]
    assert uct.select_child(t, s, p, new_rng(1)) == 1             # only the bias tells 0..2 apart


def test_bias_on_unvisited_children_is_optional():
    t = tt.new_table(64, 4)
    s = node(t, 2, 10)
    t.child_visits[s, 0], t.child_value[s, 0] = 10, 6.0
    t.prior[s, :2] = [0.0, 1.0]
    on, off = params(c=0.0, rave=False, fpu=0.5, pb=1.0), params(c=0.0, rave=False, fpu=0.5, pb=1.0,
                                                              pb_unvisited=False)
    assert uct.child_score(t, s, 1, math.log(10), on) == pytest.approx(1.5)
    assert uct.child_score(t, s, 1, math.log(10), off) == pytest.approx(0.5)
    assert uct.select_child(t, s, on, new_rng(1)) == 1 and uct.select_child(t, s, off, new_rng(1)) == 0


def test_expansion_orders_children_by_knowledge():
    g, s0 = game.make_game("loa", knowledge="mc")
    t = tt.new_table(64, int(game.max_children(g)))
    slot, _ = tt.lookup(t, np.uint64(777), True)
    assert uct.expand(t, g, s0, slot, np.empty(game.n_actions(g), np.int64))
    n = int(t.n_children[slot])
    moves = t.child_move[slot, :n].astype(np.int64)
    want = np.zeros(n)
    game.priors(g, s0, moves, n, want)
    assert n == 36 and np.all(np.diff(t.prior[slot, :n]) <= 0) and t.prior[slot, 0] > 0
    assert np.allclose(t.prior[slot, :n], want)
    gg, sg = game.make_game("go", size=5)                          # no knowledge: generation order, no priors
    t2 = tt.new_table(64, int(game.max_children(gg)))
    slot, _ = tt.lookup(t2, np.uint64(778), True)
    uct.expand(t2, gg, sg, slot, np.empty(game.n_actions(gg), np.int64))
    assert t2.child_move[slot, :26].tolist() == list(range(26)) and not t2.prior[slot].any()


def test_amaf_update_counts_the_children_whose_move_the_player_played_first():
    from model.roles.dup import amaf_shared_in, new_dup_table

    rng = np.random.default_rng(3)
    t = tt.new_table(64, 40)
    s = node(t, 37, 0)
    t.child_move[s, :37] = rng.permutation(40)[:37]
    dt = new_dup_table(64, 40, 2)
    # every value an int8 map entry can hold, not only -1 and the two players
    amaf = rng.integers(-128, 128, 40).astype(np.int8)
    amaf[t.child_move[s, :10]] = rng.integers(0, 2, 10)
    for player, r in ((0, 1.0), (1, 0.25), (0, 0.0)):
        av, aw = t.amaf_visits[s].copy(), t.amaf_value[s].copy()
        hit = amaf[t.child_move[s, :37]] == player
        uct.update_amaf(t, s, amaf, player, r)
        assert (t.amaf_visits[s, :37] == av[:37] + hit).all() and (t.amaf_visits[s, 37:] == 0).all()
        assert np.array_equal(t.amaf_value[s, :37], (aw[:37] + np.float32(r) * hit).astype(np.float32))
        # a duplicated node: the table's counts and the row's unsent ones alike
        dan, daw = dt.an[1].copy(), dt.aw[1].copy()
        amaf_shared_in(t.n_children, t.child_move, t.amaf_visits, t.amaf_value, dt.an, dt.aw, s, 1, amaf, player, r)
        assert (dt.an[1, :37] == dan[:37] + hit).all()
        assert np.array_equal(dt.aw[1, :37], (daw[:37] + np.float32(r) * hit).astype(np.float32))
