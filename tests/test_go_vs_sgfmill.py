"""The Go kernels against an independent implementation, sgfmill's Board, over many random games.

Both boards are driven with the same moves. sgfmill allows suicide and reports the simple-ko point, so a
move is legal for sgfmill here when its point is empty, is not the reported ko point, and playing it on a
copy does not remove the stone just played. After every move the two boards must be identical, and at the
end the area scores must agree. Moves are mostly the playout policy's (so games end with two passes), with
some uniformly drawn empty points (own-eye fills, suicides and ko retakes included) whose legality both
sides must judge the same way.
"""

import random

import numpy as np
import pytest
from sgfmill.boards import Board

from model.go import board as B
from model.rng import new_rng

ARBITRARY = 0.15   # share of moves that try a uniformly drawn empty point


_CODE = {None: 0, "b": 1, "w": 2}


def sgfmill_colors(bd: Board) -> list[list[int]]:
    return [[_CODE[c] for c in row] for row in bd.board]


def sgfmill_legal(bd: Board, ko, row: int, col: int, colour: str) -> bool:
    if bd.get(row, col) is not None or ko == (row, col):
        return False
    trial = bd.copy()
    trial.play(row, col, colour)
    return trial.get(row, col) is not None


def play_one_game(size: int, seed: int, full_legality_check: bool) -> tuple[int, int]:
    """Plays one game on both boards, asserting agreement; returns (moves, legality judgements)."""
    g = B.make_params(size, 7.5, "random")
    s = B.new_state(g)
    rng = new_rng(seed)
    pick = random.Random(seed)
    bd = Board(size)
    ko = None
    n = size * size
    checks = 0
    moves = 0
    while not B.go_is_terminal(g, s):
        player = int(B.go_to_move(g, s))
        colour = "bw"[player]
        if full_legality_check and moves % 7 == 0:
            mine = np.zeros(n + 1, dtype=np.int64)
            k = B.go_legal_actions(g, s, mine)
            mine_set = set(int(a) for a in mine[:k])
            theirs = {r * size + c for r in range(size) for c in range(size)
                      if sgfmill_legal(bd, ko, r, c, colour)} | {n}
            assert mine_set == theirs, f"seed {seed} move {moves}: legal sets differ"
            checks += n
        a = int(B.go_policy_move(g, s, rng))
        if pick.random() < ARBITRARY:
            empties = np.flatnonzero(B.board_colors(g, s).reshape(-1) == 0)
            if len(empties):
                b = int(empties[pick.randrange(len(empties))])
                r, c = divmod(b, size)
                legal = bool(B.go_is_legal(g, s, b))
                assert legal == sgfmill_legal(bd, ko, r, c, colour), \
                    f"seed {seed} move {moves}: {colour} at {(r, c)} legal for us: {legal}"
                checks += 1
                if legal:
                    a = b
        assert B.go_play(g, s, a)
        if a == n:
            ko = None
        else:
            # sgfmill would raise on an occupied point and take back a suicide itself (then the boards
            # differ below); only a ko retake needs checking here
            r, c = divmod(a, size)
            assert ko != (r, c), f"seed {seed} move {moves}: ko retaken"
            ko = bd.play(r, c, colour)
        moves += 1
        ko_mine = B.ko_action(g, s)
        assert (ko_mine if ko_mine >= 0 else None) == (None if ko is None else ko[0] * size + ko[1])
        assert B.board_colors(g, s).tolist() == sgfmill_colors(bd), f"seed {seed}: boards differ after move {moves}"
    assert B.go_score(g, s) == bd.area_score() - 7.5
    return moves, checks


def test_agrees_with_sgfmill_9x9_2000_games():
    total_moves = total_checks = 0
    for seed in range(2000):
        m, c = play_one_game(9, seed, full_legality_check=seed < 100)
        total_moves += m
        total_checks += c
    assert total_moves > 2000 * 50 and total_checks > 20000


def test_agrees_with_sgfmill_19x19_200_games():
    total_moves = 0
    for seed in range(200):
        m, _ = play_one_game(19, 10_000 + seed, full_legality_check=seed < 3)
        total_moves += m
    assert total_moves > 200 * 200


@pytest.mark.parametrize("size,games", [(2, 100), (3, 100), (5, 60), (13, 12)])
def test_agrees_with_sgfmill_other_sizes(size, games):
    for seed in range(games):
        play_one_game(size, 20_000 + seed, full_legality_check=seed < 4 or size < 13)
