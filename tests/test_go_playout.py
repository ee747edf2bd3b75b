"""Playouts: they end, never fill their own eyes, fill AMAF right, repeat by seed; the light policy's rules."""

import numpy as np
import pytest

from model.go import board as B
from model.go.game import GoGame
from model.rng import new_rng


def amaf_for(g) -> np.ndarray:
    return np.full(B.go_n_actions(g), -1, dtype=np.int8)


@pytest.mark.parametrize("size", [9, 19])
@pytest.mark.parametrize("policy", ["random", "light"])
def test_playouts_end_with_a_consistent_score(size, policy):
    g = B.make_params(size, 7.5, policy)
    s0 = B.new_state(g)
    rng = new_rng(11)
    lengths = []
    for _ in range(30):
        s = s0.copy()
        score = B.go_playout(g, s, rng, amaf_for(g))
        assert B.go_is_terminal(g, s)
        assert B.move_count(s) <= 3 * size * size
        assert score == B.go_score(g, s)
        assert -size * size - 7.5 <= score <= size * size - 7.5
        lengths.append(B.move_count(s))
    assert np.mean(lengths) > size * size  # games of realistic length, not early passes


@pytest.mark.parametrize("policy", ["random", "light"])
def test_stepwise_replay_never_fills_own_eye_and_matches_playout_and_amaf(policy):
    g = B.make_params(9, 7.5, policy)
    n = 81
    for seed in range(20):
        # the same stream of random numbers drives the policy step by step and the playout kernel
        s = B.new_state(g)
        rng = new_rng(seed)
        first = np.full(n + 1, -1, dtype=np.int8)
        while not B.go_is_terminal(g, s):
            player = int(B.go_to_move(g, s))
            a = int(B.go_policy_move(g, s, rng))
            if a != n:
                assert not B.go_is_eye(g, s, a, player), f"seed {seed}: own eye filled at {a}"
                if first[a] == -1:
                    first[a] = player
            assert B.go_play(g, s, a)
        t = B.new_state(g)
        amaf = amaf_for(g)
        score = B.go_playout(g, t, new_rng(seed), amaf)
        np.testing.assert_array_equal(t, s)
        assert score == B.go_score(g, s)
        np.testing.assert_array_equal(amaf, first)
        assert amaf[n] == -1  # passes are not recorded


def test_amaf_keeps_entries_set_by_the_caller():
    g = B.make_params(9, 7.5)
    amaf = amaf_for(g)
    amaf[:40] = 1                       # as if the tree part had played these points as White
    s = B.new_state(g)
    B.go_playout(g, s, new_rng(3), amaf)
    assert (amaf[:40] == 1).all()
    played = amaf[40:81]
    assert (played == 0).any() and (played == 1).any() and set(played.tolist()) <= {-1, 0, 1}


def test_same_seed_same_playout_other_seed_other_playout():
    for policy in ("random", "light"):
        g = B.make_params(9, 7.5, policy)
        s0 = B.new_state(g)
        runs = []
        for seed in (5, 5, 6):
            s = s0.copy()
            amaf = amaf_for(g)
            runs.append((B.go_playout(g, s, new_rng(seed), amaf), s, amaf))
        assert runs[0][0] == runs[1][0]
        np.testing.assert_array_equal(runs[0][1], runs[1][1])
        np.testing.assert_array_equal(runs[0][2], runs[1][2])
        assert not np.array_equal(runs[0][1], runs[2][1])


def test_playout_from_a_finished_game_only_scores():
    g = B.make_params(5, 0.5)
    s = B.new_state(g)
    B.go_play(g, s, 12)
    B.go_play(g, s, 25)
    B.go_play(g, s, 25)
    before = s.copy()
    assert B.go_playout(g, s, new_rng(1), amaf_for(g)) == 25 - 0.5
    np.testing.assert_array_equal(s, before)


def _after_white_move(diagram: str, white_move: str, policy: str):
    """Position from a diagram (top row first), then White plays white_move so that it is the last move."""
    rows = [r.split() for r in diagram.strip().splitlines()]
    size = len(rows)
    game = GoGame(size, 7.5, policy)
    black = [(size - 1 - i) * size + j for i, r in enumerate(rows) for j, c in enumerate(r) if c == "X"]
    white = [(size - 1 - i) * size + j for i, r in enumerate(rows) for j, c in enumerate(r) if c == "O"]
    game.set_setup(black, white, to_move=1)
    game.play_vertex(white_move)
    return game


def _policy_choices(game, seeds=200):
    return [int(B.go_policy_move(game.g, game.state, new_rng(seed))) for seed in range(seeds)]


def test_light_policy_captures_a_stone_in_atari():
    diagram = """
        . . . . . . . . .
        . . . . . . . . .
        . . . . . . . . .
        . . . X . . . . .
        . . X . . . . . .
        . . . X . . . . .
        . . . . . . . . .
        . . . . . . . . .
        . . . . . . . . ."""
    # White D5, between D6, C5 and D4, is left with the one liberty E5: the light policy takes it there
    light = _policy_choices(_after_white_move(diagram, "D5", "light"))
    rand = _policy_choices(_after_white_move(diagram, "D5", "random"))
    e5 = GoGame(9).vertex_to_action("E5")
    assert light.count(e5) > 0.8 * len(light)
    assert rand.count(e5) < 0.1 * len(rand)


def test_light_policy_escapes_atari():
    diagram = """
        . . . . . . . . .
        . . . . . . . . .
        . . . . . . . . .
        . . . O . . . . .
        . . O X . . . . .
        . . . . . . . . .
        . . . . . . . . .
        . . . . . . . . .
        . . . . . . . . ."""
    # White D4 puts Black's D5 in atari (liberty E5); extending there gives it three liberties
    light = _policy_choices(_after_white_move(diagram, "D4", "light"))
    e5 = GoGame(9).vertex_to_action("E5")
    assert light.count(e5) > 0.7 * len(light)


def test_ownership_and_dead_stones():
    rows = """
        . X . X X X X X X
        X X X X . X X X X
        X X X X O X X X X
        X X X X X X X X X
        X X X X X X X X X
        O O O O O O O O O
        O O O O O O O O O
        O O O O O O O O O
        . O . O O O O O O"""
    game = _after_white_move(rows, "pass", "random")   # Black to move
    own = game.ownership(100, seed=1)
    assert own[game.vertex_to_action("A9")] == 1 and own[game.vertex_to_action("A1")] == -1
    assert own[game.vertex_to_action("E7")] == 1            # White's lone stone ends up Black's
    assert game.final_status_list("dead", 100, seed=1) == ["E7"]
    assert "E5" in game.final_status_list("alive", 100, seed=1)
    # Black 41 stones + A9 C9; White 34 stones + A1 C1 + E7 alive, E8 nobody's
    assert game.score() == (41 + 2) - (34 + 2 + 1) - 7.5
    assert game.final_score(100, seed=1) == (41 + 2 + 2) - (34 + 2) - 7.5  # E7 dead: E7, E8 Black's


def test_bench_playouts_command(run_cli, tmp_path):
    import json

    r = run_cli("bench", "playouts", "--board", "5", "--policy", "light", "--runs", "2", "--seconds", "0.05",
                "--json", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["board"] == 5 and res["policy"] == "light" and len(res["playouts_per_s_runs"]) == 2
    assert res["playouts_per_s_min"] <= res["playouts_per_s_median"] <= res["playouts_per_s_max"]
    assert res["playouts_per_s_min"] > 0 and 5 < res["moves_per_playout"] <= 75
    saved = json.loads((tmp_path / "bench-playouts-5-light.json").read_text())
    assert saved["playouts_per_s_median"] == res["playouts_per_s_median"] and "machine" in saved
    bad = run_cli("bench", "playouts", "--board", "25")
    assert bad.returncode == 2 and "board size" in bad.stderr and "Traceback" not in bad.stderr


def test_kernels_run_in_threads_without_sharing_state():
    """nogil kernels in two threads, each with its own generator, repeat what one thread does alone."""
    import threading

    g = B.make_params(9, 7.5, "light")
    s0 = B.new_state(g)
    alone = [B.go_playout_batch(g, s0, new_rng(seed), 300) for seed in (1, 2)]
    together = [0, 0]

    def work(i):
        together[i] = B.go_playout_batch(g, s0, new_rng(i + 1), 300)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert together == alone and alone[0] != alone[1]
    np.testing.assert_array_equal(s0, B.new_state(g))
