"""Go rules on one flat int64 array: placing stones, captures, legality, simple ko, Zobrist hash, area score.

The board has a one-point border, so a point p has the neighbours p-1, p+1, p-W, p+W (W = size + 2) and no
bounds checks are needed. Chains are kept incrementally (the scheme of fast playout engines):
  - every stone knows its chain's head (HEAD) and the next stone of its chain (NEXT, a circular list), so
    merging two chains relabels the smaller one and splices the two lists in O(smaller size);
  - a chain's liberties are pseudo-liberties: the count of (stone, empty neighbour) pairs, with the sum and
    the sum of squares of those empty points. The chain is captured when the count is 0, and it is in atari
    (exactly one distinct liberty) when count * sum_of_squares == sum^2 (Cauchy-Schwarz equality), the
    liberty then being sum / count. No liberty set is ever enumerated. The three numbers are packed in one
    int64 (count: 11 bits, sum: 20, sum of squares: 29; none can overflow on 19x19 and none goes negative),
    so one addition updates all three.
  - the empty points are a list with O(1) removal (EPOS = index of a point in the list).

Actions are 0..size*size-1 for the points, row-major with row 0 at the bottom (so A1 = 0, as in GTP and
sgfmill), and size*size for pass. Colours on the board: 0 empty, 1 black, 2 white, 3 border; the player to
move is 0 (Black) or 1 (White), i.e. colour - 1.
"""

from __future__ import annotations

import numpy as np
from numba import njit

GAME_ID = 0  # must equal model.game.GO (checked by a test; no import here, to keep model.game free to import us)

EMPTY, BLACK, WHITE, BORDER = 0, 1, 2, 3
MIN_SIZE, MAX_SIZE = 2, 19
MAX_POINTS = (MAX_SIZE + 2) ** 2

# --- params g (int64) -------------------------------------------------------------------------------------
G_GAME, G_SIZE, G_KOMI2, G_POLICY, G_MAX_MOVES, G_W, G_P = 0, 1, 2, 3, 4, 5, 6
G_LEN = 8
POLICY_RANDOM, POLICY_LIGHT = 0, 1

# --- state s (int64): a header, then seven arrays of P = W*W entries ---------------------------------------
S_TO_MOVE = 0    # 0 Black, 1 White
S_KO = 1         # point the side to move may not play (simple ko), -1 if none
S_PASSES = 2     # consecutive passes
S_MOVES = 3      # moves played (passes included)
S_HASH = 4       # Zobrist hash of the stones (position only), int64 bits
S_N_EMPTY = 5    # length of the empty-point list
S_LAST = 6       # last move's point, -1 for pass or none
S_LAST2 = 7      # the move before, same coding
S_CAPS_B = 8     # stones captured by Black (prisoners; informative only, area scoring ignores them)
S_CAPS_W = 9
S_MOVE_LIMIT = 10  # the game is cut (terminal) when S_MOVES reaches this: the move cap, counted from the
                   # position the game record last handed out, so a long real game still leaves room to play
HEADER = 16
# array k lives at HEADER + k*P: colour; chain head and next stone (stones); packed pseudo-liberties and
# stone count (chain heads); the empty-point list and each point's index in it
A_COLOR, A_HEAD, A_NEXT, A_LIB, A_CSIZE, A_EMPTY, A_EPOS = range(7)
N_ARRAYS = 7
LIB_SUM_SHIFT, LIB_SQ_SHIFT = 11, 31
LIB_COUNT_MASK, LIB_SUM_MASK = (1 << 11) - 1, (1 << 20) - 1


def _zobrist_keys() -> tuple[np.ndarray, np.int64]:
    """Fixed-seed keys, so hashes (and thus rank ownership of nodes) agree between processes and runs."""
    rng = np.random.Generator(np.random.PCG64(0x7EE5_9117))
    keys = rng.integers(0, 2**64 - 1, size=(3, MAX_POINTS), dtype=np.uint64, endpoint=True).view(np.int64)
    keys[EMPTY, :] = 0
    side = rng.integers(1, 2**63 - 1, dtype=np.int64)
    return keys, side


ZOBRIST, ZOBRIST_SIDE = _zobrist_keys()


# --- small helpers (inline="always": numba splices them into the kernels that use them) -----------------

@njit(cache=True, nogil=True, inline="always")
def point_of(size, a):
    """Board point of action a (not pass)."""
    return (a // size + 1) * (size + 2) + a % size + 1


@njit(cache=True, nogil=True, inline="always")
def action_of(size, p):
    w = size + 2
    return (p // w - 1) * size + p % w - 1


@njit(cache=True, nogil=True, inline="always")
def lib_pair(n):
    """Packed pseudo-liberty entry of empty point n (count 1, sum n, square n*n)."""
    return 1 + (n << LIB_SUM_SHIFT) + ((n * n) << LIB_SQ_SHIFT)


@njit(cache=True, nogil=True, inline="always")
def liberty_count(s, P, h):
    """Pseudo-liberties of chain h (0 exactly when it has no liberty)."""
    return s[HEADER + A_LIB * P + h] & LIB_COUNT_MASK


@njit(cache=True, nogil=True, inline="always")
def in_atari(s, P, h):
    """Chain with head h has exactly one (distinct) liberty."""
    v = s[HEADER + A_LIB * P + h]
    n = v & LIB_COUNT_MASK
    sm = (v >> LIB_SUM_SHIFT) & LIB_SUM_MASK
    return n != 0 and n * (v >> LIB_SQ_SHIFT) == sm * sm


@njit(cache=True, nogil=True, inline="always")
def atari_liberty(s, P, h):
    """The liberty of a chain in atari."""
    v = s[HEADER + A_LIB * P + h]
    return ((v >> LIB_SUM_SHIFT) & LIB_SUM_MASK) // (v & LIB_COUNT_MASK)


@njit(cache=True, nogil=True, inline="always")
def _frees(s, P, n, col):
    """Neighbour n makes a col stone next to it legal: n is empty, an own chain with a second liberty, or an
    opponent chain in atari (captured)."""
    c = s[HEADER + A_COLOR * P + n]
    if c == EMPTY:
        return True
    if c == col:
        return not in_atari(s, P, s[HEADER + A_HEAD * P + n])
    if c != BORDER:
        return in_atari(s, P, s[HEADER + A_HEAD * P + n])
    return False


@njit(cache=True, nogil=True, inline="always")
def is_legal_point(s, P, W, p, col):
    """Colour col may play on point p: empty, not the ko point, not suicide."""
    if s[HEADER + A_COLOR * P + p] != EMPTY or p == s[S_KO]:
        return False
    return _frees(s, P, p - W, col) or _frees(s, P, p - 1, col) or _frees(s, P, p + 1, col) \
        or _frees(s, P, p + W, col)


@njit(cache=True, nogil=True, inline="always")
def _own_or_edge(s, P, n, col):
    c = s[HEADER + A_COLOR * P + n]
    return c == col or c == BORDER


@njit(cache=True, nogil=True, inline="always")
def is_eye(s, P, W, p, col):
    """p is a single-point eye of colour col: all neighbours col (or border) and not a false eye
    (at most one opponent diagonal in the middle, none on the edge)."""
    if not (_own_or_edge(s, P, p - W, col) and _own_or_edge(s, P, p - 1, col) and _own_or_edge(s, P, p + 1, col)
            and _own_or_edge(s, P, p + W, col)):
        return False
    C = HEADER + A_COLOR * P
    d1 = s[C + p - W - 1]
    d2 = s[C + p - W + 1]
    d3 = s[C + p + W - 1]
    d4 = s[C + p + W + 1]
    opp = 3 - col
    bad = int(d1 == opp) + int(d2 == opp) + int(d3 == opp) + int(d4 == opp)
    edge = int(d1 == BORDER or d2 == BORDER or d3 == BORDER or d4 == BORDER)
    return bad + edge < 2


# --- the empty-point list -----------------------------------------------------------------------------------

@njit(cache=True, nogil=True, inline="always")
def _empty_remove(s, P, p):
    E = HEADER + A_EMPTY * P
    EP = HEADER + A_EPOS * P
    i = s[EP + p]
    n = s[S_N_EMPTY] - 1
    last = s[E + n]
    s[E + i] = last
    s[EP + last] = i
    s[S_N_EMPTY] = n


@njit(cache=True, nogil=True, inline="always")
def _empty_add(s, P, p):
    n = s[S_N_EMPTY]
    s[HEADER + A_EMPTY * P + n] = p
    s[HEADER + A_EPOS * P + p] = n
    s[S_N_EMPTY] = n + 1


# --- placing a stone ----------------------------------------------------------------------------------------

@njit(cache=True, nogil=True, _nrt=False)
def _merge(s, P, big, small):
    """Chain `small` joins chain `big` (both heads)."""
    H = HEADER + A_HEAD * P
    N = HEADER + A_NEXT * P
    q = small
    while True:
        s[H + q] = big
        q = s[N + q]
        if q == small:
            break
    nb = s[N + big]
    s[N + big] = s[N + small]
    s[N + small] = nb
    s[HEADER + A_LIB * P + big] += s[HEADER + A_LIB * P + small]
    s[HEADER + A_CSIZE * P + big] += s[HEADER + A_CSIZE * P + small]


@njit(cache=True, nogil=True, inline="always")
def _give_liberty(s, P, n, d):
    """If n is a stone, its chain gains the packed liberty d."""
    c = s[HEADER + A_COLOR * P + n]
    if c == BLACK or c == WHITE:
        s[HEADER + A_LIB * P + s[HEADER + A_HEAD * P + n]] += d


@njit(cache=True, nogil=True, _nrt=False)
def _remove_chain(s, P, W, h):
    """Take chain h off the board; returns the number of stones."""
    C = HEADER + A_COLOR * P
    N = HEADER + A_NEXT * P
    col = s[C + h]
    hsh = s[S_HASH]
    count = 0
    q = h
    while True:
        s[C + q] = EMPTY
        hsh ^= ZOBRIST[col, q]
        _empty_add(s, P, q)
        count += 1
        q = s[N + q]
        if q == h:
            break
    s[S_HASH] = hsh
    # only now, with the whole chain gone, do its points become liberties of the neighbouring chains
    q = h
    while True:
        d = lib_pair(q)
        _give_liberty(s, P, q - W, d)
        _give_liberty(s, P, q - 1, d)
        _give_liberty(s, P, q + 1, d)
        _give_liberty(s, P, q + W, d)
        q = s[N + q]
        if q == h:
            break
    return count


@njit(cache=True, nogil=True, inline="always")
def _touch(s, P, W, p, n, col, dp, h, captured, ko_point):
    """place_stone's work for neighbour n of the new col stone at p (h: head of the new stone's chain)."""
    C = HEADER + A_COLOR * P
    H = HEADER + A_HEAD * P
    LB = HEADER + A_LIB * P
    CS = HEADER + A_CSIZE * P
    c = s[C + n]
    if c == EMPTY:
        s[LB + h] += lib_pair(n)
    elif c == col:
        hn = s[H + n]
        s[LB + hn] -= dp
        if hn != h:
            if s[CS + hn] >= s[CS + h]:
                _merge(s, P, hn, h)
                h = hn
            else:
                _merge(s, P, h, hn)
    elif c != BORDER:
        hn = s[H + n]
        s[LB + hn] -= dp
        if s[LB + hn] == 0:
            captured += _remove_chain(s, P, W, hn)
            ko_point = n
    return h, captured, ko_point


@njit(cache=True, nogil=True, _nrt=False)
def place_stone(s, P, W, p, col):
    """Put a col stone on empty point p, merge, capture; sets the ko point. No legality check, no turn change.
    Returns the number of stones captured."""
    C = HEADER + A_COLOR * P
    H = HEADER + A_HEAD * P
    N = HEADER + A_NEXT * P
    LB = HEADER + A_LIB * P
    CS = HEADER + A_CSIZE * P
    _empty_remove(s, P, p)
    s[C + p] = col
    s[S_HASH] ^= ZOBRIST[col, p]
    s[H + p] = p
    s[N + p] = p
    s[CS + p] = 1
    s[LB + p] = 0
    dp = lib_pair(p)
    h = p
    captured = 0
    ko_point = -1
    # One pass over the neighbours (unrolled). An opponent chain touching p at several points reaches 0
    # pseudo-liberties only at its last contact, so no later neighbour belongs to a chain already taken off.
    h, captured, ko_point = _touch(s, P, W, p, p - W, col, dp, h, captured, ko_point)
    h, captured, ko_point = _touch(s, P, W, p, p - 1, col, dp, h, captured, ko_point)
    h, captured, ko_point = _touch(s, P, W, p, p + 1, col, dp, h, captured, ko_point)
    h, captured, ko_point = _touch(s, P, W, p, p + W, col, dp, h, captured, ko_point)
    # simple ko: one stone taken by a lone stone whose only liberty is the point just emptied
    if captured == 1 and s[CS + h] == 1 and (s[LB + h] & LIB_COUNT_MASK) == 1:
        s[S_KO] = ko_point
    else:
        s[S_KO] = -1
    if captured:
        s[S_CAPS_B + col - 1] += captured
    return captured


@njit(cache=True, nogil=True, inline="always")
def play_point(s, P, W, p):
    """Side to move plays on point p (legality already checked) and the turn passes."""
    place_stone(s, P, W, p, s[S_TO_MOVE] + 1)
    s[S_TO_MOVE] ^= 1
    s[S_PASSES] = 0
    s[S_MOVES] += 1
    s[S_LAST2] = s[S_LAST]
    s[S_LAST] = p


@njit(cache=True, nogil=True, inline="always")
def play_pass(s):
    s[S_TO_MOVE] ^= 1
    s[S_PASSES] += 1
    s[S_MOVES] += 1
    s[S_KO] = -1
    s[S_LAST2] = s[S_LAST]
    s[S_LAST] = -1


# --- the position as a whole ----------------------------------------------------------------------------------

@njit(cache=True, nogil=True, _nrt=True)  # allocates, also when called from an _nrt=False kernel
def init_state(g):
    """The empty board, Black to move."""
    size = g[G_SIZE]
    W = size + 2
    P = W * W
    s = np.zeros(HEADER + N_ARRAYS * P, dtype=np.int64)
    s[S_KO] = -1
    s[S_LAST] = -1
    s[S_LAST2] = -1
    s[S_MOVE_LIMIT] = g[G_MAX_MOVES]
    C = HEADER + A_COLOR * P
    for p in range(P):
        r = p // W
        c = p % W
        if r == 0 or c == 0 or r == W - 1 or c == W - 1:
            s[C + p] = BORDER
        else:
            _empty_add(s, P, p)
    return s


@njit(cache=True, nogil=True, _nrt=True)  # allocates, also when called from an _nrt=False kernel
def area_owner(g, s, out):
    """Tromp-Taylor owner of every point (out[action] = +1 Black, -1 White, 0 neither); returns B - W."""
    size = g[G_SIZE]
    W = size + 2
    P = W * W
    C = HEADER + A_COLOR * P
    seen = np.zeros(P, dtype=np.bool_)
    stack = np.empty(size * size, dtype=np.int64)
    region = np.empty(size * size, dtype=np.int64)
    total = 0
    for a in range(size * size):
        r = a // size  # once per point, and only outside playouts (they use simple_area_score)
        p = (r + 1) * W + a - r * size + 1
        c = s[C + p]
        if c == BLACK:
            out[a] = 1
            total += 1
        elif c == WHITE:
            out[a] = -1
            total -= 1
        elif not seen[p]:
            # flood the empty region, noting which colours it reaches
            top = 1
            stack[0] = p
            seen[p] = True
            nreg = 0
            reach = 0
            while top > 0:
                top -= 1
                q = stack[top]
                region[nreg] = q
                nreg += 1
                for n in (q - W, q - 1, q + 1, q + W):
                    cn = s[C + n]
                    if cn == EMPTY:
                        if not seen[n]:
                            seen[n] = True
                            stack[top] = n
                            top += 1
                    elif cn != BORDER:
                        reach |= cn
            v = 1 if reach == BLACK else (-1 if reach == WHITE else 0)
            total += v * nreg
            for i in range(nreg):
                q = region[i]
                out[action_of(size, q)] = v
    return total


@njit(cache=True, nogil=True, _nrt=False)
def simple_area_score(s, P, W):
    """(True, Black - White area) when every empty point is surrounded by one colour (with the border), as at
    the end of nearly every playout; (False, 0) when some empty region is larger than a point. No komi."""
    C = HEADER + A_COLOR * P
    total = 0
    for p in range(W + 1, P - W - 1):
        c = s[C + p]
        if c == BLACK:
            total += 1
        elif c == WHITE:
            total -= 1
        elif c == EMPTY:
            reach = 0
            for n in (p - W, p - 1, p + 1, p + W):
                cn = s[C + n]
                if cn == EMPTY:
                    return False, 0
                if cn != BORDER:
                    reach |= cn
            if reach == BLACK:
                total += 1
            elif reach == WHITE:
                total -= 1
    return True, total


@njit(cache=True, nogil=True, _nrt=True)  # allocates, also when called from an _nrt=False kernel
def area_score(g, s):
    """Tromp-Taylor area score Black minus White, komi included."""
    size = g[G_SIZE]
    out = np.empty(size * size, dtype=np.int64)
    return area_owner(g, s, out) - g[G_KOMI2] * 0.5
