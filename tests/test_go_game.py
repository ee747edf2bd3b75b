"""GoGame: moves and their errors, undo, coordinates, showboard, SGF round trip and bad SGF."""

import numpy as np
import pytest
from sgfmill import sgf

from model.errors import ConfigError, UserError
from model.go import board as B
from model.go.game import GoGame, IllegalMove
from model.rng import new_rng


def random_game(size: int, seed: int, max_moves: int = 200) -> GoGame:
    game = GoGame(size, 6.5)
    rng = np.random.default_rng(seed)
    while not game.is_over and len(game.moves) < max_moves:
        game.play(int(B.go_policy_move(game.g, game.state, new_rng(int(rng.integers(1 << 30))))))
    return game


def test_coordinates():
    game = GoGame(19)
    assert game.vertex_to_action("A1") == 0
    assert game.vertex_to_action("t19") == 360
    assert game.vertex_to_action("J1") == 8              # no I column
    assert game.vertex_to_action("PASS") == 361
    for a in (0, 8, 180, 360, 361):
        assert game.vertex_to_action(game.action_to_vertex(a)) == a
    for bad in ("I5", "Z1", "A20", "A0", "", "D", "4D"):
        with pytest.raises(UserError):
            game.vertex_to_action(bad)
    with pytest.raises(UserError):
        GoGame(9).vertex_to_action("K5")                 # exists on 19x19, not on 9x9


def test_bad_size_or_komi():
    with pytest.raises(ConfigError):
        GoGame(1)
    with pytest.raises(ConfigError):
        GoGame(25)
    with pytest.raises(ConfigError):
        GoGame(9, komi=float("inf"))


def test_illegal_moves_say_why():
    game = GoGame(5, 0.5)
    game.play_vertex("C3")
    with pytest.raises(IllegalMove, match="occupied"):
        game.play_vertex("C3")
    with pytest.raises(IllegalMove, match="off the"):
        game.play(25 + 3)
    # White stone at A1 surrounded: White playing into Black's A1 corner eye is suicide
    game = GoGame(5, 0.5)
    for v in ["B1", "E5", "A2", "E4"]:
        game.play_vertex(v)
    with pytest.raises(IllegalMove, match="suicide"):
        game.play_vertex("A1", "w")
    # ko
    game = GoGame(5, 0.5)
    for v in ["B4", "C4", "A3", "D3", "B2", "C2", "E5", "B3", "C3"]:
        game.play_vertex(v)
    with pytest.raises(IllegalMove, match="ko"):
        game.play_vertex("B3")
    # game over
    game = GoGame(5, 0.5)
    game.play(None)
    game.play(None)
    assert game.is_over and game.legal_actions() == []
    with pytest.raises(IllegalMove, match="over"):
        game.play_vertex("C3")
    with pytest.raises(UserError):
        game.play_vertex("C3", "purple")


def test_play_out_of_turn_and_undo():
    game = GoGame(9, 7.5)
    game.play_vertex("E5", "b")
    game.play_vertex("D4", "b")                           # Black twice (GTP allows it)
    assert game.to_move == 1
    game.play_vertex("C3", "w")
    assert [p for p, _ in game.moves] == [0, 0, 1]
    h = game.hash()
    game.play_vertex("C4")
    game.undo()
    assert game.hash() == h and len(game.moves) == 3 and game.to_move == 0
    game.undo()
    game.undo()
    game.undo()
    np.testing.assert_array_equal(game.state, GoGame(9, 7.5).state)
    with pytest.raises(UserError, match="undo"):
        game.undo()


def test_undo_restores_superko_history():
    game = random_game(9, 1, max_moves=60)
    seen = game.superko_hashes
    game.play_vertex("pass")
    game.undo()
    assert game.superko_hashes == seen
    assert len(game.superko_array()) == len(seen)


def test_legal_actions_agree_with_play():
    game = random_game(9, 2, max_moves=70)
    legal = set(game.legal_actions())
    for a in range(82):
        ok = game.illegal_reason(a) is None
        assert ok == (a in legal)


def test_showboard():
    game = GoGame(9)
    game.play_vertex("D4")
    game.play_vertex("J9")
    text = game.showboard()
    lines = text.splitlines()
    assert lines[0].split() == list("ABCDEFGHJ") and lines[10].split() == list("ABCDEFGHJ")
    assert lines[1].split()[0] == "9" and lines[1].split()[-2] == "O"
    assert lines[6].split() == ["4", ".", ".", ".", "X", ".", ".", ".", ".", ".", "4"]
    assert "Black to move" in text


def test_sgf_round_trip():
    for size, seed in ((9, 3), (13, 4), (19, 5)):
        game = random_game(size, seed, max_moves=150)
        data = game.to_sgf()
        back = GoGame.from_sgf(data)
        assert back.size == size and back.komi == 6.5
        assert back.moves == game.moves
        np.testing.assert_array_equal(back.state, game.state)
    finished = random_game(9, 6, max_moves=10_000)
    assert finished.is_over
    parsed = sgf.Sgf_game.from_bytes(finished.to_sgf())
    assert parsed.get_root().get("RE") == GoGame.result_string(finished.score())


def test_sgf_with_handicap_and_setup():
    data = b"(;GM[1]FF[4]SZ[9]KM[0.5]HA[2]AB[cc][gg];W[ee];B[ce])"
    game = GoGame.from_sgf(data)
    assert game.komi == 0.5 and len(game.moves) == 2
    assert game.moves[0] == (1, game.vertex_to_action("E5"))
    c = game.colors()
    assert c[6, 2] == 1 and c[2, 6] == 1          # cc = C7, gg = G3
    back = GoGame.from_sgf(game.to_sgf())
    np.testing.assert_array_equal(back.state, game.state)
    assert back.setup_black == game.setup_black
    assert sgf.Sgf_game.from_bytes(game.to_sgf()).get_root().get("HA") == 2
    # setup with both colours and no moves: PL says who moves
    game = GoGame.from_sgf(b"(;SZ[5]AB[aa]AW[bb]PL[W])")
    assert game.to_move == 1 and game.colors()[4, 0] == 1 and game.colors()[3, 1] == 2


@pytest.mark.parametrize("data,match", [
    (b"not an sgf", "not a readable SGF"),
    (b"(;SZ[25])", "size"),
    (b"(;SZ[9]KM[seven])", "KM|komi"),
    (b"(;SZ[9];B[ee];W[ee])", "move 2.*occupied"),
    (b"(;SZ[9]AB[aa][bb]AW[ab][ba])", "setup position not legal"),
    (b"(;SZ[9];B[zz])", "off the board"),
])
def test_bad_sgf_is_a_user_error(data, match):
    with pytest.raises(UserError, match=match):
        GoGame.from_sgf(data)
