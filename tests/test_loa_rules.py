"""LOA rules: hand-made positions, incremental structures against recomputation, and a perft count checked
against a brute-force plain-Python move generator that shares nothing with the kernels."""

from __future__ import annotations

import numpy as np
import pytest

from model import game
from model.loa import board as B
from model.loa import rules as R
from model.loa.game import LoaGame, parse_square, square_name
from model.errors import UserError
from model.rng import new_rng

DIRECTIONS = [(dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if dr or dc]


# --- the brute-force reference ---------------------------------------------------------------------------------

def brute_moves(board: list[int], player: int) -> set[tuple[int, int]]:
    """Every (from, to) for player (0 Black, 1 White) on a 64-list of colours, straight from the rules."""
    me, enemy = player + 1, 2 - player
    moves = set()
    for sq in range(64):
        if board[sq] != me:
            continue
        r, c = divmod(sq, 8)
        for dr, dc in DIRECTIONS:
            count = 1   # the piece itself, then both ways along the line
            for sgn in (1, -1):
                rr, cc = r + sgn * dr, c + sgn * dc
                while 0 <= rr < 8 and 0 <= cc < 8:
                    count += board[8 * rr + cc] != 0
                    rr, cc = rr + sgn * dr, cc + sgn * dc
            tr, tc = r + count * dr, c + count * dc
            if not (0 <= tr < 8 and 0 <= tc < 8) or board[8 * tr + tc] == me:
                continue
            if any(board[8 * (r + k * dr) + c + k * dc] == enemy for k in range(1, count)):
                continue
            moves.add((sq, 8 * tr + tc))
    return moves


def brute_united(board: list[int], colour: int) -> bool:
    pieces = [sq for sq in range(64) if board[sq] == colour]
    seen, todo = {pieces[0]}, [pieces[0]]
    while todo:
        r, c = divmod(todo.pop(), 8)
        for dr, dc in DIRECTIONS:
            n = 8 * (r + dr) + c + dc
            if 0 <= r + dr < 8 and 0 <= c + dc < 8 and board[n] == colour and n not in seen:
                seen.add(n)
                todo.append(n)
    return len(seen) == len(pieces)


def brute_euler(board: list[int], colour: int) -> int:
    """Groups (8-connected) minus holes (4-connected empty regions cut off from the outside)."""
    own = {sq for sq in range(64) if board[sq] == colour}
    groups, seen = 0, set()
    for p in own:
        if p in seen:
            continue
        groups += 1
        todo = [p]
        seen.add(p)
        while todo:
            r, c = divmod(todo.pop(), 8)
            for dr, dc in DIRECTIONS:
                n = 8 * (r + dr) + c + dc
                if 0 <= r + dr < 8 and 0 <= c + dc < 8 and n in own and n not in seen:
                    seen.add(n)
                    todo.append(n)
    # background on a 10 x 10 frame, so the outside is one region
    back = {(r, c) for r in range(-1, 9) for c in range(-1, 9)} - {divmod(p, 8) for p in own}
    regions, seen2 = 0, set()
    for p in back:
        if p in seen2:
            continue
        regions += 1
        todo = [p]
        seen2.add(p)
        while todo:
            r, c = todo.pop()
            for n in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
                if n in back and n not in seen2:
                    seen2.add(n)
                    todo.append(n)
    return groups - (regions - 1)


def brute_status(board: list[int], mover: int) -> int:
    """Status after `mover` (0/1) moved, by the rules (both united: draw)."""
    mine, theirs = brute_united(board, mover + 1), brute_united(board, 2 - mover)
    if mine and theirs:
        return R.DRAW
    if mine:
        return mover + 1
    if theirs:
        return 2 - mover
    return R.ONGOING


def brute_play(board: list[int], frm: int, to: int) -> list[int]:
    b = list(board)
    b[to], b[frm] = b[frm], 0
    return b


def brute_perft(board: list[int], player: int, depth: int) -> int:
    if depth == 0:
        return 1
    moves = brute_moves(board, player)
    if not moves:
        return brute_perft(board, 1 - player, depth - 1)   # the pass
    total = 0
    for frm, to in moves:
        b = brute_play(board, frm, to)
        if brute_status(b, player) != R.ONGOING:
            total += 1 if depth == 1 else 0
        else:
            total += brute_perft(b, 1 - player, depth - 1)
    return total


def kernel_perft(g, s, depth: int, buf: np.ndarray) -> int:
    if depth == 0:
        return 1
    n = B.loa_legal_actions(g, s, buf)
    if depth == 1:
        return n
    acts = buf[:n].copy()
    total = 0
    for a in acts:
        c = s.copy()
        assert B.loa_play(g, c, a)
        total += kernel_perft(g, c, depth - 1, buf)
    return total


# --- helpers ---------------------------------------------------------------------------------------------------

def position(black: str, white: str, to_move: int = 0) -> np.ndarray:
    board = np.zeros(64, dtype=np.int64)
    for name in black.split():
        board[parse_square(name)] = 1
    for name in white.split():
        board[parse_square(name)] = 2
    return B.state_of(board, to_move)


def moves_of(s: np.ndarray, square: str) -> set[str]:
    g = B.make_params()
    buf = np.empty(R.N_ACTIONS, np.int64)
    n = B.loa_legal_actions(g, s, buf)
    frm = parse_square(square)
    return {square_name(int(a) & 63) for a in buf[:n] if int(a) != R.PASS and int(a) >> 6 == frm}


def assert_consistent(s: np.ndarray) -> None:
    """Every incremental structure equals its recomputation from the board alone."""
    ref = R.state_from_board(s[R.A_BOARD:R.A_BOARD + 64].copy(), int(s[R.S_TO_MOVE]))
    for name, lo, hi in (("encodings", R.A_ENC, R.A_QUAD), ("quads", R.A_QUAD, R.A_PIECES),
                         ("hash", R.S_HASH, R.S_HASH + 1), ("counts", R.S_COUNT, R.S_COUNT + 2),
                         ("euler", R.S_EULER4, R.S_EULER4 + 2)):
        assert np.array_equal(s[lo:hi], ref[lo:hi]), name
    for c in (1, 2):
        n = s[R.S_COUNT + c - 1]
        p0 = R.A_PIECES + (c - 1) * R.MAX_PIECES
        pieces = s[p0:p0 + n]
        assert sorted(pieces) == [sq for sq in range(64) if s[R.A_BOARD + sq] == c]
        assert all(s[R.A_INDEX + sq] == i for i, sq in enumerate(pieces))


# --- the tests -------------------------------------------------------------------------------------------------

def test_game_id_matches_dispatch():
    assert R.GAME_ID == game.LOA
    g, s = game.make_game("loa")
    assert g[0] == game.LOA and game.n_actions(g) == R.N_ACTIONS and game.max_children(g) == R.MAX_MOVES


def test_start_position_has_36_moves_and_matches_brute_force():
    g = B.make_params()
    s = B.new_state(g)
    buf = np.empty(R.N_ACTIONS, np.int64)
    n = B.loa_legal_actions(g, s, buf)
    ours = {(int(a) >> 6, int(a) & 63) for a in buf[:n]}
    assert ours == brute_moves(list(s[R.A_BOARD:R.A_BOARD + 64]), 0)
    assert n == 36
    assert moves_of(s, "b1") == {"h1", "b3", "d3"}   # 6 on the rank (jumping own), 2 on the file, 2 diagonally


def test_a_lone_piece_moves_one_step_in_every_direction():
    s = position("d4 b8", "a2 h3")   # no other piece on d4's four lines
    assert moves_of(s, "d4") == {"c3", "c4", "c5", "d3", "d5", "e3", "e4", "e5"}


def test_distance_counts_pieces_of_both_colours_on_the_line():
    # file d holds d4, d7 (Black) and d2 (White): 3 pieces, so d4 moves 3 along the file: d7 (own: no), d1
    s = position("d4 d7 h8", "d2 a1")
    got = moves_of(s, "d4")
    assert "d1" not in got                   # jumps the white piece on d2: not allowed
    assert "d7" not in got                   # lands on its own piece
    s2 = position("d4 d2 h8", "d7 a1")       # now d2 is Black: jumping it is fine, landing on d1
    assert "d1" in moves_of(s2, "d4") and "d7" in moves_of(s2, "d4")   # d7: capture, 3 up


def test_every_direction_with_longer_lines():
    # one more piece on each line through e5: every move is 2 squares
    s = position("e5 b5 e2 b2", "h2 a7")
    assert moves_of(s, "e5") == {"c3", "c5", "c7", "e3", "e7", "g3", "g5", "g7"}
    assert moves_of(s, "e5") == {square_name(to) for frm, to in brute_moves(
        list(s[R.A_BOARD:R.A_BOARD + 64]), 0) if frm == parse_square("e5")}


def test_jumping_own_pieces_and_edges():
    s = position("a1 b1 c1 h8", "a8 h4")
    assert moves_of(s, "a1") == {"d1", "a3", "c3"}       # d1 jumps b1 and c1 (own); a3 and c3: 2 on the line
    assert moves_of(s, "c1") == {"f1", "c2", "d2", "b2"}  # 3 to the left would leave the board


def test_capture_removes_the_enemy_piece():
    s = position("a1 h8", "a3 d5 f7")
    g = B.make_params()
    a = parse_square("a1") * 64 + parse_square("a3")
    assert B.loa_play(g, s, a)
    assert s[R.S_COUNT + 1] == 2 and not B.loa_is_terminal(g, s) and s[R.A_BOARD + parse_square("a3")] == 1
    assert_consistent(s)


def test_win_by_connecting_all_pieces():
    s = position("a1 c2", "e8 h5")
    g = B.make_params()
    assert not B.loa_is_terminal(g, s)
    assert B.loa_play(g, s, parse_square("a1") * 64 + parse_square("b1"))
    assert s[R.S_STATUS] == R.BLACK_WINS and B.loa_is_terminal(g, s)
    buf = np.empty(R.N_ACTIONS, np.int64)
    assert B.loa_legal_actions(g, s, buf) == 0
    assert not B.loa_play(g, s, R.PASS)


def test_capture_that_unites_the_opponent_makes_the_opponent_win():
    # White's stray piece on f6 is captured; White's remaining pieces a7, a8 are one group
    s = position("f1 f3 h8", "f6 a7 a8")
    g = B.make_params()
    assert B.loa_play(g, s, parse_square("f3") * 64 + parse_square("f6"))   # file f: 3 pieces
    assert s[R.S_STATUS] == R.WHITE_WINS


def test_euler_number_counts_holes():
    # a black ring around e5 (one group, one hole): Euler number 0, yet the quad heuristic must not be fooled
    ring = "d4 e4 f4 d5 f5 d6 e6 f6"
    s = position(ring + " a1", "h8 h1")
    assert s[R.S_EULER4] == 4 * brute_euler(list(s[R.A_BOARD:R.A_BOARD + 64]), 1) == 4 * (2 - 1)
    assert not R.is_united(s, 1)     # two groups (the ring and a1) with one hole: E = 1, so the full test runs


def test_move_that_unites_both_sides_is_a_draw():
    # file f holds f3, f6, f8: Black f3 takes f6 and joins g7, h8; White is left with f8, e8: both united
    s = position("f3 g7 h8", "f6 f8 e8")
    g = B.make_params()
    assert not B.loa_is_terminal(g, s)
    assert B.loa_play(g, s, parse_square("f3") * 64 + parse_square("f6"))
    assert s[R.S_STATUS] == R.DRAW == brute_status(list(s[R.A_BOARD:R.A_BOARD + 64]), 0)
    assert B.loa_playout(g, s, new_rng(1), np.full(R.N_ACTIONS, -1, np.int8)) == 0.0


def test_no_move_means_pass():
    # Black a1 and h8 are walled in by White pieces they may not jump
    s = position("a1 h8", "b1 c1 a2 a3 b2 g8 f8 h7 h6 g7")
    g = B.make_params()
    buf = np.empty(R.N_ACTIONS, np.int64)
    assert brute_moves(list(s[R.A_BOARD:R.A_BOARD + 64]), 0) == set()
    assert B.loa_legal_actions(g, s, buf) == 1 and buf[0] == R.PASS
    assert not B.loa_play(g, s, parse_square("a1") * 64 + parse_square("b2"))
    h = B.loa_hash(g, s)
    assert B.loa_play(g, s, R.PASS)
    assert B.loa_to_move(g, s) == 1 and B.loa_hash(g, s) != h and not B.loa_is_terminal(g, s)
    # a pass is illegal for a side that has moves
    assert not B.loa_play(g, s, R.PASS)


def test_perft_depth_3_incremental_equals_brute_force():
    g = B.make_params()
    s = B.new_state(g)
    buf = np.empty(R.N_ACTIONS, np.int64)
    board = list(s[R.A_BOARD:R.A_BOARD + 64])
    counts = [kernel_perft(g, s, d, buf) for d in (1, 2, 3)]
    assert counts == [brute_perft(board, 0, d) for d in (1, 2, 3)]
    assert counts[0] == 36 and counts[1] > 36 * 30


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_games_agree_with_brute_force_move_by_move(seed):
    g = B.make_params()
    s = B.new_state(g)
    rng = np.random.default_rng(seed)
    buf = np.empty(R.N_ACTIONS, np.int64)
    for _ in range(400):
        board = list(s[R.A_BOARD:R.A_BOARD + 64])
        player = int(s[R.S_TO_MOVE])
        n = B.loa_legal_actions(g, s, buf)
        if s[R.S_STATUS] != R.ONGOING:
            assert n == 0
            break
        moves = {(int(a) >> 6, int(a) & 63) for a in buf[:n] if a != R.PASS}
        assert moves == brute_moves(board, player)
        a = int(buf[rng.integers(n)])
        assert B.loa_play(g, s, a)
        if a != R.PASS:
            assert s[R.S_STATUS] == brute_status(brute_play(board, a >> 6, a & 63), player)
        assert_consistent(s)
        after = list(s[R.A_BOARD:R.A_BOARD + 64])
        assert [s[R.S_EULER4 + c - 1] for c in (1, 2)] == [4 * brute_euler(after, c) for c in (1, 2)]


def test_hash_depends_on_side_to_move_and_position_hash_never_repeats():
    g = B.make_params()
    s = B.new_state(g)
    seen = {int(B.loa_position_hash(g, s))}
    a, back = parse_square("b1") * 64 + parse_square("b3"), parse_square("b3") * 64 + parse_square("b1")
    w, wback = parse_square("a2") * 64 + parse_square("c2"), parse_square("c2") * 64 + parse_square("a2")
    h0 = int(B.loa_hash(g, s))
    for act in (a, w, back, wback):
        assert B.loa_play(g, s, act)
        seen.add(int(B.loa_position_hash(g, s)))
    assert int(B.loa_hash(g, s)) == h0          # same pieces, same side: a transposition
    assert len(seen) == 5                        # ... but never a repetition for the superko check


def test_playouts_end_and_set_amaf():
    g = B.make_params()
    for policy in ("random", "knowledge"):
        g = B.make_params(policy)
        rng = new_rng(5)
        results = []
        for _ in range(50):
            s = B.new_state(g)
            amaf = np.full(R.N_ACTIONS, -1, np.int8)
            r = B.loa_playout(g, s, rng, amaf)
            assert B.loa_is_terminal(g, s) or s[R.S_PLY] >= B.DEFAULT_MAX_PLIES
            assert r == R.result_of(int(s[R.S_STATUS]))
            assert 0 < (amaf >= 0).sum() <= s[R.S_PLY] and set(np.unique(amaf)) <= {-1, 0, 1}
            assert_consistent(s)
            results.append(r)
        assert 1.0 in results and -1.0 in results


def test_game_record_plays_names_and_undoes():
    gm = LoaGame()
    assert len(gm.legal_actions()) == 36
    gm.play_name("b1-b3")
    gm.play_name("a2c2")
    assert gm.to_move == 0 and gm.ply == 2 and gm.action_name(gm.moves[0][1]) == "b1-b3"
    gm.undo()
    assert gm.to_move == 1 and gm.ply == 1
    with pytest.raises(UserError):
        gm.play_name("b3-b5")   # not White's piece
    with pytest.raises(UserError):
        gm.play_name("z9-b5")
    board = gm.show()
    assert board.count("X") == 12 and board.count("O") == 12
