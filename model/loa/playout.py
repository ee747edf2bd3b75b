"""LOA playouts: play a position to the end and return the result from Black's view (+1 / -1 / 0).

Random policy (Christoph 2020, 4.1.1.2): pick a random piece of the side to move and a random one of its moves; a
piece without moves is a miss, and after three misses the move is drawn uniformly from all legal moves
(a pass if there is none). Cheap and close to uniform: a move's chance is 1/(pieces * moves of its piece).

Knowledge policy (option): every legal move weighted by its category's transition probability (Table A.1,
model/loa/knowledge.py), drawn by roulette; a floor keeps every legal move possible (Table A.1 has zeros).

A playout longer than g's ply cap (G_MAX_PLIES) is scored a draw: random LOA games can wander for long.
"""

from __future__ import annotations

import numpy as np
from numba import njit, uint64

from model.loa.knowledge import CATEGORY_P, category
from model.loa.rules import (A_PIECES, BLACK_WINS, G_MAX_PLIES, G_POLICY, MAX_PIECES, ONGOING, PASS,
                             POLICY_KNOWLEDGE, S_COUNT, S_PLY, S_STATUS, S_TO_MOVE, WHITE_WINS, count_moves,
                             n_targets, play_move, play_pass, piece_targets,
                             target_at)
from model.rng import next_u64, random

MISSES = 3
MIN_WEIGHT = 0.001


@njit(cache=True, nogil=True, inline="always")
def _below(x, n):
    """Uniform integer in [0, n) from 32 random bits x: a multiply-shift, no division."""
    return np.int64((x * uint64(n)) >> uint64(32))


@njit(cache=True, nogil=True, inline="always")
def _nth_move(s, c, k):
    """The k-th move (from * 64 + to) in piece-list order of colour c."""
    p0 = A_PIECES + (c - 1) * MAX_PIECES
    for i in range(s[S_COUNT + c - 1]):
        frm = s[p0 + i]
        packed = piece_targets(s, frm)
        m = n_targets(packed)
        if k < m:
            return frm * 64 + target_at(packed, k)
        k -= m
    return PASS


@njit(cache=True, nogil=True, inline="always")
def random_move(s, rng):
    """A move of the side to move by the random policy (PASS if it has none)."""
    c = s[S_TO_MOVE] + 1
    p0 = A_PIECES + (c - 1) * MAX_PIECES
    n = s[S_COUNT + c - 1]
    for _ in range(MISSES):
        x = next_u64(rng)   # the high half picks the piece, the low half its move
        frm = s[p0 + _below(x >> uint64(32), n)]
        packed = piece_targets(s, frm)
        m = n_targets(packed)
        if m > 0:
            return frm * 64 + target_at(packed, _below(x & uint64(0xFFFFFFFF), m))
    total = count_moves(s)
    if total == 0:
        return PASS
    return _nth_move(s, c, _below(next_u64(rng) >> uint64(32), total))


@njit(cache=True, nogil=True, inline="always")
def knowledge_move(s, rng):
    """A move drawn with probability proportional to its category's transition probability."""
    c = s[S_TO_MOVE] + 1
    p0 = A_PIECES + (c - 1) * MAX_PIECES
    total = 0.0
    for i in range(s[S_COUNT + c - 1]):
        frm = s[p0 + i]
        packed = piece_targets(s, frm)
        for j in range(n_targets(packed)):
            total += max(CATEGORY_P[category(s, frm, target_at(packed, j))], MIN_WEIGHT)
    if total == 0.0:
        return PASS
    x = random(rng) * total
    last = PASS
    for i in range(s[S_COUNT + c - 1]):
        frm = s[p0 + i]
        packed = piece_targets(s, frm)
        for j in range(n_targets(packed)):
            to = target_at(packed, j)
            last = frm * 64 + to
            x -= max(CATEGORY_P[category(s, frm, to)], MIN_WEIGHT)
            if x < 0.0:
                return last
    return last   # rounding left x >= 0 after the last move


@njit(cache=True, nogil=True, inline="always")
def status_result(status):
    if status == BLACK_WINS:
        return 1.0
    if status == WHITE_WINS:
        return -1.0
    return 0.0


@njit(cache=True, nogil=True)
def playout(g, s, rng, amaf):
    """Play s to the end in place; returns the result from Black's view. amaf[a] is set to the player of
    the first playout move with action a where it is still -1."""
    knowledge = g[G_POLICY] == POLICY_KNOWLEDGE
    stop = s[S_PLY] + g[G_MAX_PLIES]
    while s[S_STATUS] == ONGOING:
        if s[S_PLY] >= stop:
            return 0.0
        a = knowledge_move(s, rng) if knowledge else random_move(s, rng)
        if amaf[a] < 0:
            amaf[a] = s[S_TO_MOVE]
        if a == PASS:
            play_pass(s)
        else:
            play_move(s, a >> 6, a & 63)
    return status_result(s[S_STATUS])


@njit(cache=True, nogil=True)
def playout_batch(g, s0, rng, n):
    """n playouts from s0 (unchanged); returns the moves played in all (for benchmarks)."""
    amaf = np.empty(PASS + 1, dtype=np.int8)
    t = s0.copy()
    moves = 0
    for _ in range(n):
        t[:] = s0
        amaf[:] = -1
        playout(g, t, rng, amaf)
        moves += t[S_PLY] - s0[S_PLY]
    return moves
