"""3x3 shape patterns for the light playout policy (the classic MoGo set: hane, cut and edge shapes).

A pattern is a 3x3 picture around an empty candidate point: X and O are the two colours (either way round),
x = not X (empty, O or off-board), o = not O, '.' empty, ' ' off-board, '?' anything. All 8 rotations and
reflections and both colour assignments are expanded into one bitset over the 8-neighbour code (2 bits per
neighbour: 0 empty, 1 black, 2 white, 3 border, in the order of NEIGHBOUR_ORDER), so a kernel tests a point
with eight reads and one bit lookup.
"""

from __future__ import annotations

import itertools

import numpy as np

# (row, col) offsets of the 8 neighbours; bit pair k of a code is the colour at offset k
NEIGHBOUR_ORDER = ((-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1))

PATTERNS = (
    ("XOX",
     "...",
     "???"),   # hane enclosing a stone
    ("XO.",
     "...",
     "?.?"),   # hane, not cutting
    ("XO?",
     "X..",
     "x.?"),   # hane under a stone (magari)
    (".O.",
     "X..",
     "..."),   # diagonal attachment
    ("XO?",
     "O.o",
     "?o?"),   # unprotected cut
    ("XO?",
     "O.X",
     "???"),   # peeped cut
    ("?X?",
     "O.O",
     "ooo"),   # cut through
    ("OX?",
     "o.O",
     "???"),   # cut of a knight's move
    ("X.?",
     "O.?",
     "   "),   # edge: chase
    ("OX?",
     "X.O",
     "   "),   # edge: block the cut
    ("?X?",
     "x.O",
     "   "),   # edge: block the connection
    ("?XO",
     "x.x",
     "   "),   # edge: descend (sagari)
    ("?OX",
     "X.O",
     "   "),   # edge: cut
)

_CELL = {".": 0, "X": 1, "O": 2, " ": 3}
_CHOICES = {".": (0,), "X": (1,), "O": (2,), " ": (3,), "?": (0, 1, 2, 3), "x": (0, 2, 3), "o": (0, 1, 3)}


def _symmetries(rows: tuple[str, str, str]):
    grid = [list(r) for r in rows]
    for _ in range(4):
        grid = [list(r) for r in zip(*grid[::-1])]  # rotate 90 degrees
        yield grid
        yield [r[::-1] for r in grid]


def _swap_colours(grid):
    table = str.maketrans("XOxo", "OXox")
    return [[c.translate(table) for c in row] for row in grid]


def build_table() -> np.ndarray:
    """Bitset (uint64[1024]) over 16-bit neighbourhood codes: bit set if some pattern matches."""
    bits = np.zeros(1 << 16, dtype=bool)
    for pat in PATTERNS:
        assert len(pat) == 3 and all(len(r) == 3 for r in pat) and pat[1][1] == "."
        for grid in _symmetries(pat):
            for g in (grid, _swap_colours(grid)):
                options = [_CHOICES[g[1 + dr][1 + dc]] for dr, dc in NEIGHBOUR_ORDER]
                for combo in itertools.product(*options):
                    bits[sum(c << (2 * k) for k, c in enumerate(combo))] = True
    packed = np.zeros(1024, dtype=np.uint64)
    for code in np.flatnonzero(bits):
        packed[code >> 6] |= np.uint64(1) << np.uint64(code & 63)
    return packed


PAT3 = build_table()
