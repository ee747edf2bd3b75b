"""Go rules on hand-made positions: captures, suicide, ko, snapback, eyes, superko, passes, scoring, hashing."""

import numpy as np
import pytest

from model.errors import ConfigError
from model.go import board as B
from model.go.coords import vertex_to_action
from model.go.game import GoGame, IllegalMove
from model.go.rules import S_CAPS_B, S_CAPS_W
from model.rng import new_rng


def position(diagram: str, to_move: int = 0, komi: float = 0.0, policy: str = "random"):
    """(g, s) from a diagram written top row first: X Black, O White, . empty."""
    rows = [r.split() for r in diagram.strip().splitlines()]
    size = len(rows)
    assert all(len(r) == size for r in rows)
    g = B.make_params(size, komi, policy)
    black, white = [], []
    for i, row in enumerate(rows):
        for col, ch in enumerate(row):
            a = (size - 1 - i) * size + col
            if ch == "X":
                black.append(a)
            elif ch == "O":
                white.append(a)
    return g, B.state_with_stones(g, black, white, to_move)


def act(v: str, g) -> int:
    return vertex_to_action(v, int(g[1]))


def colors_of(g, s) -> str:
    """Diagram (top row first) of a position, to compare against expectations."""
    c = B.board_colors(g, s)
    return "\n".join(" ".join(".XO"[v] for v in row) for row in c[::-1])


def legal(g, s) -> set[int]:
    out = np.empty(B.go_n_actions(g), dtype=np.int64)
    return set(out[: B.go_legal_actions(g, s, out)].tolist())


def test_make_params_validates():
    g = B.make_params(9, 6.5, "light")
    assert g[0] == 0 and g[1] == 9 and g[2] == 13 and g[3] == 1 and g[4] == 3 * 81
    assert B.go_n_actions(g) == 82
    for bad in [dict(size=1), dict(size=20), dict(size=9.0), dict(komi=float("nan")), dict(komi=7.3),
                dict(komi="x"), dict(policy="heavy")]:
        args = dict(size=9, komi=7.5, policy="random") | bad
        with pytest.raises(ConfigError):
            B.make_params(**args)


def test_game_id_matches_model_game():
    import model.game

    assert model.game.GO == B.make_params(9, 7.5)[0] == 0


def test_empty_board():
    g = B.make_params(9, 7.5)
    s = B.new_state(g)
    assert B.go_to_move(g, s) == 0 and not B.go_is_terminal(g, s)
    assert legal(g, s) == set(range(82))
    assert B.go_score(g, s) == -7.5


def test_multi_stone_capture():
    g, s = position("""
        . X O O .
        . X O O X
        . . X X .
        . . . . .
        . . . . .""")
    before = s.copy()
    assert not B.go_play(g, s, act("D4", g))  # occupied, and s is left alone
    np.testing.assert_array_equal(s, before)
    assert B.go_play(g, s, act("E5", g))      # takes the four White stones' last liberty
    assert colors_of(g, s) == "\n".join([". X . . X", ". X . . X", ". . X X .", ". . . . .", ". . . . ."])
    assert {act(v, g) for v in ("C5", "D5", "C4", "D4")} <= legal(g, s)
    assert int(s[S_CAPS_B]) == 4 and int(s[S_CAPS_W]) == 0


def test_setup_refuses_a_chain_without_liberty():
    with pytest.raises(ConfigError, match="no liberty"):
        position("""
            . X O O X
            . X O O X
            . . X X .
            . . . . .
            . . . . .""")


def test_suicide_is_illegal():
    g, s = position("""
        . X .
        X . X
        . X .""", to_move=1)
    assert not B.go_is_legal(g, s, act("B2", g))          # one stone
    assert act("B2", g) not in legal(g, s)
    assert not B.go_play(g, s, act("B2", g))
    g, s = position("""
        O O X .
        . X . .
        X . . .
        . . . .""", to_move=1)
    assert not B.go_is_legal(g, s, act("A3", g))          # filling the own chain's last liberty
    g, s = position("""
        . X O .
        X O . .
        O . . .
        . . . .""")
    assert not B.go_is_legal(g, s, act("A4", g))          # joining two chains in atari, capturing nothing


def test_capture_beats_suicide():
    g, s = position("""
        . O X .
        O X . .
        X . . .
        . . . .""")
    # A4 has no empty neighbour, but it takes the last liberty of both White stones
    assert B.go_play(g, s, act("A4", g))
    assert colors_of(g, s).splitlines()[:2] == ["X . X .", ". X . ."]
    assert B.ko_action(g, s) == -1  # two stones taken: no ko


def test_simple_ko():
    g, s = position("""
        . X O .
        X O . O
        . X O .
        . . . .""")
    c3, b3 = act("C3", g), act("B3", g)
    assert B.go_play(g, s, c3)                     # Black takes B3
    assert B.ko_action(g, s) == b3
    assert not B.go_is_legal(g, s, b3) and b3 not in legal(g, s)
    assert not B.go_play(g, s, b3)                 # no immediate retake
    t = s.copy()
    assert B.go_play(g, t, act("D1", g)) and B.go_play(g, t, act("A1", g))  # threat elsewhere, answer
    assert B.ko_action(g, t) == -1
    assert B.go_play(g, t, b3)                     # now White may retake...
    assert B.ko_action(g, t) == c3                 # ...and Black may not at once
    t = s.copy()
    assert B.go_play(g, t, B.go_n_actions(g) - 1)  # a pass lifts the ban too
    assert B.ko_action(g, t) == -1


def test_snapback_is_not_ko():
    g, s = position("""
        . . . .
        X X X X
        O O O X
        . . O X""")
    a1, b1 = act("A1", g), act("B1", g)
    assert B.go_play(g, s, b1)          # Black throws in
    assert B.go_play(g, s, a1)          # White takes the stone...
    assert B.ko_action(g, s) == -1      # ...with a chain of five: no ko
    assert B.go_play(g, s, b1)          # Black takes all five back at once
    assert colors_of(g, s).splitlines()[2:] == [". . . X", ". X . X"]
    assert int(s[S_CAPS_B]) == 5 and int(s[S_CAPS_W]) == 1


def test_eyes():
    g, s = position("""
        . X . X .
        X X X X X
        . X X X X
        X X X X X
        . X X X .""")
    for v in ("A5", "C5", "E5", "A3", "A1", "E1"):
        assert B.go_is_eye(g, s, act(v, g), 0), v
        assert not B.go_is_eye(g, s, act(v, g), 1), v
    g, s = position("""
        . . . . .
        . X X X .
        . X . X .
        . O X . .
        . . . . .""")
    assert B.go_is_eye(g, s, act("C3", g), 0)       # middle: one opponent diagonal is allowed
    g, s = position("""
        . . . . .
        . X X X .
        . X . X .
        . O X O .
        . . . . .""")
    assert not B.go_is_eye(g, s, act("C3", g), 0)   # middle: two make it false
    g, s = position("""
        . X . X .
        . O X X .
        . . . . .
        . . . . .
        . . . . .""")
    assert not B.go_is_eye(g, s, act("C5", g), 0)   # edge: one is enough
    g, s = position("""
        . X . X .
        . X X X .
        . . . . .
        . . . . .
        . . . . .""")
    assert B.go_is_eye(g, s, act("C5", g), 0)
    assert not B.go_is_eye(g, s, act("A5", g), 0)   # A4 is empty


def test_pass_and_two_passes_end_the_game():
    g = B.make_params(5, 0.5)
    s = B.new_state(g)
    p = B.go_n_actions(g) - 1
    assert B.go_play(g, s, p) and not B.go_is_terminal(g, s) and B.go_to_move(g, s) == 1
    assert B.go_play(g, s, act("C3", g)) and not B.go_is_terminal(g, s)
    assert B.go_play(g, s, p) and B.go_play(g, s, p) and B.go_is_terminal(g, s)
    assert B.go_score(g, s) == -25 - 0.5   # White's one stone owns the whole board


def test_move_cap_ends_the_game():
    g = B.make_params(2, 0.0)
    s = B.new_state(g)
    a = 0
    for _ in range(3 * 4):
        assert not B.go_is_terminal(g, s)
        B.go_play(g, s, a if B.go_is_legal(g, s, a) else 4)
        a = (a + 1) % 4
    assert B.go_is_terminal(g, s)


def test_game_record_moves_the_cap_on():
    """The kernels cut a game 3 x points moves after the empty board (playouts end); a real game going on
    longer is not cut: the record moves the cap on with every move it plays."""
    game = GoGame(2, 0.0)
    for i in range(3 * 4 + 3):
        assert not B.go_is_terminal(game.g, game.state)
        legal = game.legal_actions()
        game.play(legal[0] if len(legal) > 1 and i % 3 else legal[-1])
    assert B.move_count(game.state) == 15 and not game.is_over
    assert not B.go_is_terminal(game.g, game.state)
    t = game.state.copy()
    B.go_playout(game.g, t, new_rng(1), np.full(5, -1, dtype=np.int8))
    assert B.go_is_terminal(game.g, t) and 15 < B.move_count(t) <= 15 + 12


def test_area_score_with_komi_and_dame():
    g, s = position("""
        . X O . .
        . X O . .
        X X O O O
        . X . O .
        . X O . .""", komi=6.5)
    # Black: 6 stones + A5 A4 A2 A1; White: 7 stones + D5 E5 D4 E4 E2 D1 E1; C2 touches both: nobody's
    assert B.go_score(g, s) == (6 + 4) - (7 + 7) - 6.5
    own = np.empty(25, dtype=np.int64)
    assert B.go_owner(g, s, own) == -4
    assert own[act("C2", g)] == 0 and own[act("A1", g)] == 1 and own[act("E5", g)] == -1
    assert own[act("B3", g)] == 1 and own[act("C1", g)] == -1


def test_hash_is_incremental_and_includes_side_to_move():
    g = B.make_params(9, 7.5)
    rng_moves = np.random.default_rng(1)
    s = B.new_state(g)
    for _ in range(60):
        out = np.empty(82, dtype=np.int64)
        n = B.go_legal_actions(g, s, out)
        B.go_play(g, s, int(out[rng_moves.integers(n)]))
    c = B.board_colors(g, s).reshape(-1)
    fresh = B.state_with_stones(g, np.flatnonzero(c == 1).tolist(), np.flatnonzero(c == 2).tolist(),
                                int(B.go_to_move(g, s)))
    assert B.go_position_hash(g, s) == B.go_position_hash(g, fresh)
    assert B.go_hash(g, s) == B.go_hash(g, fresh)
    other = fresh.copy()
    B.set_to_move(other, 1 - int(B.go_to_move(g, s)))
    assert B.go_hash(g, other) != B.go_hash(g, fresh)
    assert B.go_position_hash(g, other) == B.go_position_hash(g, fresh)
    assert B.go_position_hash(g, B.new_state(g)) == 0


def test_positional_superko_at_game_level():
    # 2x2: after B A2, W B1, B B2, W A1 (takes two), B A2, W B2 (takes one), Black A2 would take three
    # stones and recreate the position after move 1: no simple ko, but positional superko
    game = GoGame(2, 0.0)
    for v in ["A2", "B1", "B2", "A1", "A2", "B2"]:
        game.play_vertex(v)
    a2 = game.vertex_to_action("A2")
    assert B.go_is_legal(game.g, game.state, a2)         # the history-free kernels allow it
    assert "superko" in game.illegal_reason(a2)
    assert a2 not in game.legal_actions()
    with pytest.raises(IllegalMove, match="superko"):
        game.play(a2)
    assert len(game.moves) == 6
    t = game.state.copy()
    B.go_play(game.g, t, a2)
    assert int(B.go_position_hash(game.g, t)) in game.superko_hashes


def test_superko_rejects_exactly_repeated_boards():
    """On tiny boards random games repeat positions often: GoGame must refuse exactly the board moves
    whose resulting board (compared stone by stone, not by hash) occurred before."""
    rng = np.random.default_rng(7)
    refused = 0
    for game_no in range(80):
        game = GoGame(2 + game_no % 2, 0.0)
        n = game.size * game.size
        boards = [game.colors().tobytes()]
        for _ in range(30):
            legal_now = game.legal_actions()
            for a in range(n):
                if not B.go_is_legal(game.g, game.state, a):
                    continue
                t = game.state.copy()
                B.go_play(game.g, t, a)
                repeats = B.board_colors(game.g, t).tobytes() in boards
                assert (a not in legal_now) == repeats
                refused += repeats
            moves = [a for a in legal_now if a != n]
            game.play(int(rng.choice(moves)) if moves and rng.random() < 0.95 else n)
            if game.is_over:
                break
            boards.append(game.colors().tobytes())
    assert refused > 20
