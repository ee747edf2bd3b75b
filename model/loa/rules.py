"""LOA rules on one flat int64 array: moving and capturing, move generation, the terminal test, hashing.

Rules (Christoph 2020, 2.4): 8x8, 12 pieces a side, Black first. A piece moves in a straight line (8 directions)
exactly as many squares as there are pieces of either colour on that line; it may jump its own pieces, not
enemy ones, and captures by landing on an enemy. After a move, a player whose pieces form one 8-connected
group wins; a move that does so for both players at once is a draw. A player without a move passes (two
passes in a row: draw, so that a game always ends).

Everything a move changes is kept incrementally (geometry.py): the 46 line encodings that move generation
reads, each colour's quads and Euler number, the Zobrist hash, and each colour's piece list (with every
square's index in it, for O(1) removal and O(1) random piece choice). The terminal status is computed once
per move and stored, so is_terminal is one read.

Actions: from * 64 + to for a move, PASS = 4096 for a pass. Colours on the board: 0 empty, 1 black, 2 white;
the player to move is 0 (Black) or 1 (White), i.e. colour - 1.
"""

from __future__ import annotations

import numpy as np
from numba import njit, uint64

from model.loa.geometry import (LINE_SQ1, MOVE_TABLE, N_LINES, N_QUADS, N_SQ, NEIGHBOURS, QUAD_DELTA, SQ_ENTRY,
                                POPCOUNT8, SELECT8, SQ_LINE, SQ_POW3, ZOBRIST, ZOBRIST_SIDE)

GAME_ID = 2  # must equal model.game.LOA (checked by a test; no import here, to keep model.game free to import us)

EMPTY, BLACK, WHITE = 0, 1, 2
PASS = 4096
N_ACTIONS = 4097
MAX_PIECES = 12
MAX_MOVES = MAX_PIECES * 8   # a piece has at most one landing square per direction

# terminal status
ONGOING, BLACK_WINS, WHITE_WINS, DRAW = 0, 1, 2, 3

# --- params g (int64) --------------------------------------------------------------------------------------
G_GAME, G_POLICY, G_KNOWLEDGE, G_MAX_PLIES = 0, 1, 2, 3
G_LEN = 4
POLICY_RANDOM, POLICY_KNOWLEDGE = 0, 1
KNOWLEDGE_NONE, KNOWLEDGE_MC, KNOWLEDGE_EF = 0, 1, 2

# --- state s (int64) ---------------------------------------------------------------------------------------
S_TO_MOVE = 0     # 0 Black, 1 White
S_PLY = 1         # moves played (passes included)
S_PASSES = 2      # consecutive passes
S_HASH = 3        # Zobrist hash of the pieces and the side to move, int64 bits
S_STATUS = 4      # ONGOING / BLACK_WINS / WHITE_WINS / DRAW
S_COUNT = 5       # 5, 6: pieces of Black, White
S_EULER4 = 7      # 7, 8: 4 * Euler number of Black's, White's pieces
HEADER = 16
A_BOARD = HEADER                              # 64 colours
A_ENC = A_BOARD + N_SQ                        # 46 line encodings
A_QUAD = A_ENC + N_LINES                      # 2 x 81 quad occupancies (Black's, then White's)
A_PIECES = A_QUAD + 2 * N_QUADS               # 2 x 12 piece squares (Black's, then White's)
A_INDEX = A_PIECES + 2 * MAX_PIECES           # 64: index of the piece on a square in its colour's list
S_LEN = A_INDEX + N_SQ


# --- placing and removing pieces ------------------------------------------------------------------------------

@njit(cache=True, nogil=True, inline="always")
def _toggle_quads(s, c, sq):
    # square (r, c) is corner bit 1 << k of quad 9r + c + (10, 9, 1, 0)[k] (geometry._quads)
    q = A_QUAD + (c - 1) * N_QUADS + 9 * (sq >> 3) + (sq & 7)
    o0, o1, o2, o3 = s[q + 10], s[q + 9], s[q + 1], s[q]
    s[q + 10] = o0 ^ 1
    s[q + 9] = o1 ^ 2
    s[q + 1] = o2 ^ 4
    s[q] = o3 ^ 8
    s[S_EULER4 + c - 1] += QUAD_DELTA[o0, 0] + QUAD_DELTA[o1, 1] + QUAD_DELTA[o2, 2] + QUAD_DELTA[o3, 3]


@njit(cache=True, nogil=True, inline="always")
def _lines_add(s, sq, v):
    for o in range(4):
        s[A_ENC + SQ_LINE[o, sq]] += v * SQ_POW3[o, sq]


@njit(cache=True, nogil=True, inline="always")
def _remove(s, c, sq):
    """Take colour c's piece off sq (a capture)."""
    s[A_BOARD + sq] = EMPTY
    _lines_add(s, sq, -c)
    _toggle_quads(s, c, sq)
    s[S_HASH] ^= ZOBRIST[c, sq]
    p0 = A_PIECES + (c - 1) * MAX_PIECES
    n = s[S_COUNT + c - 1] - 1
    i = s[A_INDEX + sq]
    last = s[p0 + n]
    s[p0 + i] = last
    s[A_INDEX + last] = i
    s[S_COUNT + c - 1] = n


@njit(cache=True, nogil=True, inline="always")
def _add(s, c, sq):
    s[A_BOARD + sq] = c
    _lines_add(s, sq, c)
    _toggle_quads(s, c, sq)
    s[S_HASH] ^= ZOBRIST[c, sq]
    n = s[S_COUNT + c - 1]
    s[A_PIECES + (c - 1) * MAX_PIECES + n] = sq
    s[A_INDEX + sq] = n
    s[S_COUNT + c - 1] = n + 1


@njit(cache=True, nogil=True, inline="always")
def _shift(s, c, frm, to):
    """Colour c's piece goes from frm to the empty square to; it keeps its place in the piece list."""
    s[A_BOARD + frm] = EMPTY
    s[A_BOARD + to] = c
    for o in range(4):
        s[A_ENC + SQ_LINE[o, frm]] -= c * SQ_POW3[o, frm]
        s[A_ENC + SQ_LINE[o, to]] += c * SQ_POW3[o, to]
    _toggle_quads(s, c, frm)
    _toggle_quads(s, c, to)
    s[S_HASH] ^= ZOBRIST[c, frm] ^ ZOBRIST[c, to]
    i = s[A_INDEX + frm]
    s[A_PIECES + (c - 1) * MAX_PIECES + i] = to
    s[A_INDEX + to] = i


# --- the terminal test ------------------------------------------------------------------------------------------

@njit(cache=True, nogil=True, inline="always")
def connected(s, c):
    """All of colour c's pieces form one 8-connected group (a full test: grow a group over the piece list)."""
    n = s[S_COUNT + c - 1]
    if n <= 1:
        return True
    p0 = A_PIECES + (c - 1) * MAX_PIECES
    group = uint64(1) << uint64(s[p0])
    size = 1
    grew = True
    while grew:
        grew = False
        for i in range(1, n):
            sq = s[p0 + i]
            bit = uint64(1) << uint64(sq)
            if (group & bit) == uint64(0) and (NEIGHBOURS[sq] & group) != uint64(0):
                group |= bit
                size += 1
                grew = True
        if size == n:
            return True
    return False


@njit(cache=True, nogil=True, inline="always")
def is_united(s, c):
    """The quad heuristic first: an Euler number above 1 means at least two groups."""
    return s[S_EULER4 + c - 1] <= 4 and connected(s, c)


@njit(cache=True, nogil=True, inline="always")
def _status_after(s, c, captured):
    """Status after colour c moved; the opponent can only have become united by losing a piece."""
    mine = is_united(s, c)
    theirs = captured and is_united(s, 3 - c)
    if mine and theirs:
        return DRAW
    if mine:
        return c       # BLACK_WINS == BLACK, WHITE_WINS == WHITE
    if theirs:
        return 3 - c
    return ONGOING


# --- moves ------------------------------------------------------------------------------------------------------

@njit(cache=True, nogil=True, inline="always")
def play_move(s, frm, to):
    """The side to move plays frm -> to, which must be legal (playouts and checked callers only)."""
    c = s[S_TO_MOVE] + 1
    captured = s[A_BOARD + to] != EMPTY
    if captured:
        _remove(s, 3 - c, to)
    _shift(s, c, frm, to)
    s[S_TO_MOVE] = 2 - c
    s[S_HASH] ^= ZOBRIST_SIDE
    s[S_PLY] += 1
    s[S_PASSES] = 0
    s[S_STATUS] = _status_after(s, c, captured)


@njit(cache=True, nogil=True, inline="always")
def play_pass(s):
    s[S_TO_MOVE] ^= 1
    s[S_HASH] ^= ZOBRIST_SIDE
    s[S_PLY] += 1
    s[S_PASSES] += 1
    if s[S_PASSES] >= 2:
        s[S_STATUS] = DRAW


@njit(cache=True, nogil=True, inline="always")
def piece_targets(s, sq):
    """Landing squares of the piece on sq, packed: square of direction slot i (0..7) in bits 6i..6i+5, and
    bit 48 + i set if that direction has a move. Slots are fixed, so the four line lookups are independent
    of each other (no running count), which matters more than the few bits wasted."""
    packed = 0
    for o in range(4):
        line = SQ_LINE[o, sq]
        both = np.int64(MOVE_TABLE[SQ_ENTRY[o, sq] + 8 * s[A_ENC + line]])
        j0 = both & 15
        j1 = both >> 4
        packed |= (LINE_SQ1[line, j0] << (12 * o)) | (LINE_SQ1[line, j1] << (12 * o + 6))
        packed |= (np.int64(j0 != 0) << (48 + 2 * o)) | (np.int64(j1 != 0) << (49 + 2 * o))
    return packed


@njit(cache=True, nogil=True, inline="always")
def n_targets(packed):
    return POPCOUNT8[packed >> 48]


@njit(cache=True, nogil=True, inline="always")
def target_at(packed, r):
    """The r-th (0-based) landing square of a piece_targets result."""
    return (packed >> (6 * SELECT8[(packed >> 48) * 8 + r])) & 63


@njit(cache=True, nogil=True)
def generate_moves(s, out):
    """Every move (from * 64 + to) of the side to move, written to out; returns the count (no pass added)."""
    c = s[S_TO_MOVE] + 1
    p0 = A_PIECES + (c - 1) * MAX_PIECES
    k = 0
    for i in range(s[S_COUNT + c - 1]):
        frm = s[p0 + i]
        packed = piece_targets(s, frm)
        for j in range(n_targets(packed)):
            out[k] = frm * 64 + target_at(packed, j)
            k += 1
    return k


@njit(cache=True, nogil=True)
def count_moves(s):
    c = s[S_TO_MOVE] + 1
    p0 = A_PIECES + (c - 1) * MAX_PIECES
    k = 0
    for i in range(s[S_COUNT + c - 1]):
        k += n_targets(piece_targets(s, s[p0 + i]))
    return k


@njit(cache=True, nogil=True)
def is_legal(s, a):
    """Action a is legal for the side to move (a pass only when there is no move)."""
    if s[S_STATUS] != ONGOING:
        return False
    if a == PASS:
        return count_moves(s) == 0
    if a < 0 or a >= PASS:
        return False
    frm, to = a >> 6, a & 63
    if s[A_BOARD + frm] != s[S_TO_MOVE] + 1:
        return False
    packed = piece_targets(s, frm)
    for j in range(n_targets(packed)):
        if target_at(packed, j) == to:
            return True
    return False


@njit(cache=True, nogil=True)
def play_action(s, a):
    if a == PASS:
        play_pass(s)
    else:
        play_move(s, a >> 6, a & 63)


# --- setting up positions ---------------------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def _empty_state():
    s = np.zeros(S_LEN, dtype=np.int64)
    s[S_HASH] = 0
    return s


@njit(cache=True, nogil=True)
def state_from_board(board, to_move):
    """A position from 64 colours (0/1/2) and the side to move; every incremental structure built by adding
    the pieces one at a time (so this is also the reference the tests compare incremental updates with).
    The status is evaluated as if the opponent of to_move had just moved without capturing."""
    s = _empty_state()
    for sq in range(N_SQ):
        if board[sq] != EMPTY:
            _add(s, board[sq], sq)
    s[S_TO_MOVE] = to_move
    if to_move == 1:
        s[S_HASH] ^= ZOBRIST_SIDE
    mover = 2 - to_move
    s[S_STATUS] = _status_after(s, mover, True)
    return s


def start_board() -> np.ndarray:
    """The initial position: Black on b1-g1 and b8-g8, White on a2-a7 and h2-h7."""
    b = np.zeros(N_SQ, dtype=np.int64)
    for c in range(1, 7):
        b[c] = BLACK
        b[56 + c] = BLACK
    for r in range(1, 7):
        b[8 * r] = WHITE
        b[8 * r + 7] = WHITE
    return b


def result_of(status: int) -> float:
    """Result from Black's view as the game interface wants it: +1 / -1 / 0."""
    return 1.0 if status == BLACK_WINS else (-1.0 if status == WHITE_WINS else 0.0)
