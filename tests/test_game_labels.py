"""Naming and placing actions for people (model/game.py): board_axes / board_shape / action_label / action_cell."""

import pytest

from model.game import action_cell, action_label, board_axes, board_shape
from model.go.coords import action_to_vertex, vertex_to_action
from model.loa.game import parse_square
from model.loa.rules import N_ACTIONS as LOA_ACTIONS, PASS as LOA_PASS


def loa_move(frm: str, to: str) -> int:
    return parse_square(frm) * 64 + parse_square(to)


@pytest.mark.parametrize("size", [5, 9, 19])
def test_go_names_and_points_agree_with_gtp_coordinates(size):
    assert board_shape("go", size) == (size, size) and board_shape("Go", str(size)) == (size, size)
    cols, rows = board_axes("go", size)
    assert "I" not in cols and rows[0] == "1" and rows[-1] == str(size)
    for a in range(size * size):
        name = action_label("go", size, a)
        assert name == action_to_vertex(a, size) and vertex_to_action(name, size) == a
        x, y = action_cell("go", size, a)
        assert cols[x] + rows[y] == name
    assert action_label("go", size, size * size) == "pass" and action_cell("go", size, size * size) is None


def test_go_without_a_board_size_has_no_board():
    assert board_shape("go", None) is None and board_shape("go", "x") is None
    assert action_label("go", None, 40) == "40" and action_cell("go", 0, 40) is None


@pytest.mark.parametrize("board", [None, 8, 19])  # traces carry the engine's Go size; LOA ignores it
def test_loa_names_from_to_and_places_the_destination(board):
    assert board_shape("loa", board) == (8, 8)
    assert board_axes("loa", board) == (list("abcdefgh"), [str(i) for i in range(1, 9)])
    assert action_label("loa", board, loa_move("b1", "b3")) == "b1-b3"
    assert action_label("loa", board, loa_move("h8", "a1")) == "h8-a1"
    assert action_cell("loa", board, loa_move("b1", "b3")) == (1, 2)
    assert action_cell("loa", board, loa_move("d1", "b3")) == (1, 2)  # the square it lands on, not where it starts
    assert action_cell("loa", board, loa_move("a1", "h8")) == (7, 7)
    assert action_label("loa", board, LOA_PASS) == "pass" and action_cell("loa", board, LOA_PASS) is None
    cols, rows = board_axes("loa", board)
    for a in range(0, LOA_PASS, 37):
        x, y = action_cell("loa", board, a)
        assert 0 <= x < 8 and 0 <= y < 8
        assert action_label("loa", board, a).endswith(cols[x] + rows[y])
    assert action_label("loa", board, LOA_ACTIONS) == str(LOA_ACTIONS)  # out of range: the number, no crash


@pytest.mark.parametrize("game", ["pgame", "nosuchgame", "", None])
def test_games_without_a_board_name_actions_by_number(game):
    assert board_shape(game, 4) is None and board_axes(game, 4) is None
    assert action_label(game, 4, 3) == "3" and action_cell(game, 4, 3) is None
