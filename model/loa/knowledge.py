"""LOA knowledge (Christoph 2020, 4.1.3): move categories with Table A.1's transition probabilities, and the
concentration evaluation. Both give a move a value H for progressive bias and unpruning order; the move
categories also weight the knowledge playout.

Move categories: the board has four regions - A the corners, B the rest of the rim, C the borders of the
6x6 and 4x4 inner squares, D the central 2x2 - and a move's category is (region of from, region of to,
capture or not): 32 categories. Table A.1 gives each the probability that a master played a move of it when
one was available (Winands et al.'s transition probability, from Billings' game records).

Concentration (the concentration term of Winands' evaluation): after the move, each colour's pieces have a
centre of mass (rounded to a square); their sum of distances (Chebyshev: king steps) to it, less the least
sum possible for that many pieces (SOMD), is the excess of distances EOD; concentration = 1 / EOD. The
move's value is the mover's concentration minus the opponent's. EOD = 0 (a perfectly compact set, which
the thesis leaves undefined) counts as EOD = 1/2, i.e. twice as concentrated as EOD = 1.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from model.loa.rules import (A_BOARD, A_PIECES, EMPTY, KNOWLEDGE_EF, KNOWLEDGE_MC, MAX_PIECES, PASS, S_COUNT,
                             S_TO_MOVE, G_KNOWLEDGE)

REGION_NAMES = "ABCD"


def _regions() -> np.ndarray:
    reg = np.zeros(64, dtype=np.int64)
    for r in range(8):
        for c in range(8):
            ring = min(r, c, 7 - r, 7 - c)
            if ring == 0:
                reg[8 * r + c] = 0 if (r in (0, 7) and c in (0, 7)) else 1
            else:
                reg[8 * r + c] = 2 if ring < 3 else 3
    return reg


REGION = _regions()

# Table A.1: [from region][to region] -> (capture, no capture)
TABLE_A1 = {
    ("A", "A"): (0.0000, 0.0000), ("A", "B"): (0.1975, 0.0546), ("A", "C"): (0.3077, 0.2233),
    ("A", "D"): (0.3833, 0.1772),
    ("B", "A"): (0.0000, 0.0052), ("B", "B"): (0.0245, 0.0163), ("B", "C"): (0.2471, 0.0453),
    ("B", "D"): (0.2665, 0.0686),
    ("C", "A"): (0.0000, 0.0005), ("C", "B"): (0.0142, 0.0051), ("C", "C"): (0.1429, 0.0231),
    ("C", "D"): (0.2164, 0.0430),
    ("D", "A"): (0.0000, 0.0011), ("D", "B"): (0.0180, 0.0035), ("D", "C"): (0.1275, 0.0146),
    ("D", "D"): (0.0000, 0.0339),
}
N_CATEGORIES = 32


def _category_probabilities() -> np.ndarray:
    p = np.zeros(N_CATEGORIES, dtype=np.float64)
    for (f, t), (cap, quiet) in TABLE_A1.items():
        base = (REGION_NAMES.index(f) * 4 + REGION_NAMES.index(t)) * 2
        p[base + 1], p[base] = cap, quiet
    return p


CATEGORY_P = _category_probabilities()   # [category] -> transition probability
# least sum of Chebyshev distances of n pieces to one square: 8 at distance 1, then 16 at distance 2
SOMD = np.array([0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14], dtype=np.int64)


@njit(cache=True, nogil=True, inline="always")
def category(s, frm, to):
    """(region of frm * 4 + region of to) * 2 + 1 if the move captures."""
    cap = 1 if s[A_BOARD + to] != EMPTY else 0
    return (REGION[frm] * 4 + REGION[to]) * 2 + cap


@njit(cache=True, nogil=True, inline="always")
def transition_probability(s, a):
    if a == PASS:
        return 0.0
    return CATEGORY_P[category(s, a >> 6, a & 63)]


@njit(cache=True, nogil=True, inline="always")
def _concentration(s, c, skip, moved_from, moved_to):
    """Concentration of colour c's pieces, with the square `skip` left out (a captured piece) and the piece
    on moved_from standing on moved_to instead (-1: none)."""
    p0 = A_PIECES + (c - 1) * MAX_PIECES
    n = 0
    sr = 0
    sc = 0
    for i in range(s[S_COUNT + c - 1]):
        sq = s[p0 + i]
        if sq == skip:
            continue
        if sq == moved_from:
            sq = moved_to
        sr += sq >> 3
        sc += sq & 7
        n += 1
    if n <= 1:
        return 2.0
    cr = (2 * sr + n) // (2 * n)     # rounded centre of mass
    cc = (2 * sc + n) // (2 * n)
    sod = 0
    for i in range(s[S_COUNT + c - 1]):
        sq = s[p0 + i]
        if sq == skip:
            continue
        if sq == moved_from:
            sq = moved_to
        dr = abs((sq >> 3) - cr)
        dc = abs((sq & 7) - cc)
        sod += dr if dr > dc else dc
    eod = sod - SOMD[n]
    return 2.0 if eod <= 0 else 1.0 / eod


@njit(cache=True, nogil=True, inline="always")
def move_evaluation(s, a):
    """Concentration of the mover minus the opponent's, after move a (from the mover's view)."""
    c = s[S_TO_MOVE] + 1
    if a == PASS:
        return _concentration(s, c, -1, -1, -1) - _concentration(s, 3 - c, -1, -1, -1)
    frm, to = a >> 6, a & 63
    return _concentration(s, c, -1, frm, to) - _concentration(s, 3 - c, to, -1, -1)


@njit(cache=True, nogil=True)
def loa_priors(g, s, actions, n, out):
    """Knowledge value of each of actions[:n] (g's kind: none / move categories / evaluation) into out[:n];
    returns False (all zeros) when g asks for none."""
    kind = g[G_KNOWLEDGE]
    for j in range(n):
        if kind == KNOWLEDGE_MC:
            out[j] = transition_probability(s, actions[j])
        elif kind == KNOWLEDGE_EF:
            out[j] = move_evaluation(s, actions[j])
        else:
            out[j] = 0.0
    return kind == KNOWLEDGE_MC or kind == KNOWLEDGE_EF
