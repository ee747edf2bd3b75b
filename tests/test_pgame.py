"""The synthetic P-game: an implicit, seeded tree with exact values; and the game dispatch over it."""

import time

import numpy as np
import pytest

from model import game, pgame
from model.errors import ConfigError
from model.go import board
from model.rng import new_rng


def make(**kw):
    return game.make_game("pgame", **kw)


def leaves(g, s):
    """All (path, final state) pairs below s, by brute force."""
    if game.is_terminal(g, s):
        return [((), s)]
    out = []
    for a in range(int(game.n_actions(g))):
        c = s.copy()
        assert game.play(g, c, a)
        out += [((a,) + p, leaf) for p, leaf in leaves(g, c)]
    return out


def test_game_ids_and_dispatch():
    assert game.GO == board.GAME_ID == 0 and game.PGAME == 1
    g, s = make(branching=3, depth=4)
    assert g[0] == game.PGAME and game.n_actions(g) == 3
    out = np.zeros(3, np.int64)
    assert game.legal_actions(g, s, out) == 3 and list(out) == [0, 1, 2]
    assert game.to_move(g, s) == 0 and not game.is_terminal(g, s)
    assert game.hash(g, s) == game.position_hash(g, s)
    with pytest.raises(ConfigError):
        game.make_game("chess")
    with pytest.raises(ConfigError):
        make(branching=0)


def test_tree_is_implicit_deterministic_and_seeded():
    g, s = make(branching=2, depth=3, seed=7)
    a = [(p, int(leaf[pgame.S_SUM]), game.hash(g, leaf)) for p, leaf in leaves(g, s)]
    g2, s2 = make(branching=2, depth=3, seed=7)
    assert a == [(p, int(leaf[pgame.S_SUM]), game.hash(g2, leaf)) for p, leaf in leaves(g2, s2)]
    g3, s3 = make(branching=2, depth=3, seed=8)
    assert [x[1] for x in a] != [int(leaf[pgame.S_SUM]) for _, leaf in leaves(g3, s3)]
    assert len({x[2] for x in a}) == 8  # distinct leaves, distinct hashes


def test_increments_signs_turns_and_terminal():
    g, s = make(branching=3, depth=4, seed=3)
    for path, leaf in leaves(g, s):
        c = s.copy()
        total = 0
        for a in path:
            inc = pgame.pg_increment(g, np.uint64(c[pgame.S_HASH]), a, game.to_move(g, c))
            assert (0 <= inc <= 127) if game.to_move(g, c) == 0 else (-127 <= inc <= 0)
            total += inc
            game.play(g, c, a)
        assert total == leaf[pgame.S_SUM]
        assert game.is_terminal(g, leaf) and game.legal_actions(g, leaf, np.zeros(3, np.int64)) == 0
        assert not game.play(g, leaf.copy(), 0)
    assert not game.play(g, s.copy(), 3) and not game.play(g, s.copy(), -1)


def test_playout_result_amaf_and_reward():
    g, s = make(branching=4, depth=6, seed=2)
    amaf = np.full(4, -1, np.int8)
    c = s.copy()
    r = game.playout(g, c, new_rng(5), amaf)
    assert game.is_terminal(g, c) and r == c[pgame.S_SUM]
    assert set(amaf.tolist()) <= {-1, 0, 1} and (amaf >= 0).any()
    assert game.reward(g, 3.0) == 1.0 and game.reward(g, -1.0) == 0.0 and game.reward(g, 0.0) == 0.5


def test_minimax_matches_brute_force():
    g, s = make(branching=2, depth=2, seed=11)
    vals = {}
    for path, leaf in leaves(g, s):
        vals[path] = int(np.sign(leaf[pgame.S_SUM]))
    # first player maximises at the root, second minimises below it
    expected = max(min(vals[(a, b)] for b in range(2)) for a in range(2))
    assert pgame.minimax(g, s) == expected


def test_playout_cost_burns_time_without_changing_results():
    g0, s0 = make(branching=3, depth=20, seed=1, cost=0)
    g1, s1 = make(branching=3, depth=20, seed=1, cost=200_000)
    amaf = np.full(3, -1, np.int8)
    for g, s in ((g0, s0), (g1, s1)):  # compile
        game.playout(g, s.copy(), new_rng(1), amaf.copy())
    t0 = time.process_time()
    r0 = game.playout(g0, s0.copy(), new_rng(9), amaf.copy())
    t1 = time.process_time()
    r1 = game.playout(g1, s1.copy(), new_rng(9), amaf.copy())
    t2 = time.process_time()
    assert r0 == r1
    # 20 steps x 200k iterations of a dependent multiply-add: milliseconds, against microseconds
    assert (t2 - t1) > 10 * (t1 - t0) and (t2 - t1) > 1e-3
