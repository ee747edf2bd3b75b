"""Playouts: play a position to the end with a cheap policy and score it.

Random policy: uniform over the legal moves that do not fill one's own single-point eye, drawn the way fast
engines do it: a random start in the empty-point list, then a cyclic scan to the first acceptable point;
pass when there is none.

Light policy (in the spirit of Pachi's and Gomorra's light playouts), tried in this order around the
opponent's last move, each rule with a probability, falling back to the random policy:
  1. capture: the last move's chain (or an opponent chain next to it) is in atari -> take it;
  2. escape: the last move put one of our chains in atari -> capture a neighbour of that chain that is in
     atari, else extend on the liberty if that gains liberties;
  3. 3x3 patterns (model.go.patterns) on the 8 points around the last move, one match chosen at random,
     skipping self-atari.
"""

from __future__ import annotations

import numpy as np
from numba import njit, uint64

from model.go.patterns import PAT3
from model.go.rules import (A_COLOR, A_EMPTY, A_HEAD, A_NEXT, EMPTY, G_KOMI2, G_POLICY, G_SIZE,
                            HEADER, POLICY_LIGHT, S_LAST, S_MOVE_LIMIT, S_MOVES, S_N_EMPTY, S_PASSES, S_TO_MOVE,
                            action_of,
                            area_owner, area_score, atari_liberty, in_atari, is_eye, is_legal_point, play_pass,
                            play_point, simple_area_score)
from model.rng import next_u64, random

# light policy: chance that each rule is tried (the rest of the time it is skipped, for diversity)
P_CAPTURE = 0.9
P_ESCAPE = 0.9
P_PATTERN = 0.9


@njit(cache=True, nogil=True, inline="always")
def below(rng, n):
    """Uniform integer in [0, n), n < 2**32: a multiply-shift instead of model.rng.randint's division."""
    return np.int64(((next_u64(rng) >> uint64(32)) * uint64(n)) >> uint64(32))


@njit(cache=True, nogil=True, inline="always")
def random_move(s, P, W, col, rng):
    """A uniformly drawn legal point that is not col's own eye, or -1 (then the player passes)."""
    n = s[S_N_EMPTY]
    if n == 0:
        return -1
    E = HEADER + A_EMPTY * P
    i = below(rng, n)
    for _ in range(n):
        p = s[E + i]
        if not is_eye(s, P, W, p, col) and is_legal_point(s, P, W, p, col):
            return p
        i += 1
        if i == n:
            i = 0
    return -1


@njit(cache=True, nogil=True, _nrt=False)
def _gains_liberties(s, P, W, p, col):
    """Playing col at p leaves the new chain with at least two liberties (or captures something)."""
    C = HEADER + A_COLOR * P
    H = HEADER + A_HEAD * P
    N = HEADER + A_NEXT * P
    opp = 3 - col
    lib = -1
    for n in (p - W, p - 1, p + 1, p + W):
        c = s[C + n]
        if c == EMPTY:
            if lib < 0:
                lib = n
            elif n != lib:
                return True
        elif c == opp:
            if in_atari(s, P, s[H + n]):
                return True
    for n in (p - W, p - 1, p + 1, p + W):
        if s[C + n] == col:
            h = s[H + n]
            q = h
            while True:
                for m in (q - W, q - 1, q + 1, q + W):
                    if m != p and s[C + m] == EMPTY:
                        if lib < 0:
                            lib = m
                        elif m != lib:
                            return True
                q = s[N + q]
                if q == h:
                    break
    return False


@njit(cache=True, nogil=True, _nrt=False)
def _capture_next_to(s, P, W, h, col):
    """A legal move for col that captures an opponent chain touching chain h, or -1."""
    C = HEADER + A_COLOR * P
    H = HEADER + A_HEAD * P
    N = HEADER + A_NEXT * P
    opp = 3 - col
    q = h
    while True:
        for m in (q - W, q - 1, q + 1, q + W):
            if s[C + m] == opp:
                hm = s[H + m]
                if in_atari(s, P, hm):
                    lib = atari_liberty(s, P, hm)
                    if is_legal_point(s, P, W, lib, col):
                        return lib
        q = s[N + q]
        if q == h:
            break
    return -1


@njit(cache=True, nogil=True, inline="always")
def pattern_code(s, P, W, p):
    C = HEADER + A_COLOR * P
    return (s[C + p - W - 1] | (s[C + p - W] << 2) | (s[C + p - W + 1] << 4) | (s[C + p - 1] << 6)
            | (s[C + p + 1] << 8) | (s[C + p + W - 1] << 10) | (s[C + p + W] << 12) | (s[C + p + W + 1] << 14))


@njit(cache=True, nogil=True, _nrt=False)
def matches_pattern(s, P, W, p):
    code = pattern_code(s, P, W, p)
    return (PAT3[code >> 6] >> uint64(code & 63)) & uint64(1) != uint64(0)


@njit(cache=True, nogil=True, _nrt=False)
def heuristic_move(s, P, W, col, rng):
    """The light policy's rules 1-3 around the last move; -1 if none applies."""
    last = s[S_LAST]
    if last < 0:
        return -1
    C = HEADER + A_COLOR * P
    H = HEADER + A_HEAD * P
    opp = 3 - col
    if random(rng) < P_CAPTURE:
        for n in (last, last - W, last - 1, last + 1, last + W):
            if s[C + n] == opp:
                h = s[H + n]
                if in_atari(s, P, h):
                    lib = atari_liberty(s, P, h)
                    if is_legal_point(s, P, W, lib, col):
                        return lib
    if random(rng) < P_ESCAPE:
        for n in (last - W, last - 1, last + 1, last + W):
            if s[C + n] == col:
                h = s[H + n]
                if in_atari(s, P, h):
                    m = _capture_next_to(s, P, W, h, col)
                    if m >= 0:
                        return m
                    lib = atari_liberty(s, P, h)
                    if is_legal_point(s, P, W, lib, col) and not is_eye(s, P, W, lib, col) \
                            and _gains_liberties(s, P, W, lib, col):
                        return lib
    if random(rng) < P_PATTERN:
        chosen = -1
        seen = 0
        for q in (last - W - 1, last - W, last - W + 1, last - 1, last + 1, last + W - 1, last + W, last + W + 1):
            if s[C + q] == EMPTY and matches_pattern(s, P, W, q) and is_legal_point(s, P, W, q, col) \
                    and not is_eye(s, P, W, q, col) and _gains_liberties(s, P, W, q, col):
                seen += 1
                if seen == 1 or below(rng, seen) == 0:
                    chosen = q
        if chosen >= 0:
            return chosen
    return -1


@njit(cache=True, nogil=True, _nrt=False)
def policy_move(g, s, rng):
    """The action g's playout policy would play now (pass if none), without playing it."""
    size = g[G_SIZE]
    W = size + 2
    P = W * W
    col = s[S_TO_MOVE] + 1
    p = -1
    if g[G_POLICY] == POLICY_LIGHT:
        p = heuristic_move(s, P, W, col, rng)
    if p < 0:
        p = random_move(s, P, W, col, rng)
    if p < 0:
        return size * size
    return action_of(size, p)


@njit(cache=True, nogil=True, _nrt=False)
def playout(g, s, rng, amaf):
    """Play s to the end in place with g's policy; returns the area score (Black - White - komi).
    amaf[a] is set to the player (0/1) of the first playout move on point a where it is still -1;
    passes are not recorded (pass is no point: AMAF values for it would only mislead RAVE)."""
    size = g[G_SIZE]
    W = size + 2
    P = W * W
    cap = s[S_MOVE_LIMIT]
    light = g[G_POLICY] == POLICY_LIGHT
    while s[S_PASSES] < 2 and s[S_MOVES] < cap:
        player = s[S_TO_MOVE]
        col = player + 1
        p = -1
        if light:
            p = heuristic_move(s, P, W, col, rng)
        if p < 0:
            p = random_move(s, P, W, col, rng)
        if p < 0:
            play_pass(s)
        else:
            a = action_of(size, p)
            if amaf[a] == -1:
                amaf[a] = player
            play_point(s, P, W, p)
    ok, total = simple_area_score(s, P, W)
    if ok:
        return total - g[G_KOMI2] * 0.5
    return area_score(g, s)


@njit(cache=True, nogil=True, _nrt=True)  # allocates, also when called from an _nrt=False kernel
def playout_batch(g, s0, rng, n):
    """n playouts, each from a fresh copy of s0 (s0 unchanged); returns the total number of moves played."""
    t = s0.copy()
    amaf = np.empty(g[G_SIZE] * g[G_SIZE] + 1, dtype=np.int8)
    moves = 0
    for _ in range(n):
        t[:] = s0
        amaf[:] = -1
        playout(g, t, rng, amaf)
        moves += t[S_MOVES] - s0[S_MOVES]
    return moves


@njit(cache=True, nogil=True, _nrt=True)  # allocates, also when called from an _nrt=False kernel
def ownership(g, s, n, rng):
    """Mean Tromp-Taylor owner of each point (+1 Black, -1 White) over n playouts from s (s is unchanged)."""
    size = g[G_SIZE]
    acc = np.zeros(size * size, dtype=np.float64)
    own = np.empty(size * size, dtype=np.int64)
    amaf = np.empty(size * size + 1, dtype=np.int8)
    for _ in range(n):
        t = s.copy()
        amaf[:] = -1
        playout(g, t, rng, amaf)
        area_owner(g, t, own)
        for a in range(size * size):
            acc[a] += own[a]
    return acc / max(n, 1)
