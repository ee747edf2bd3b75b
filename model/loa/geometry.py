"""Fixed geometry of the 8x8 LOA board, built once at import: lines, line-move tables, quads, Zobrist keys.

Squares are sq = 8 * row + col, row 0 = rank 1 (Black's home row), col 0 = file a.

Lines (Christoph 2020, 4.1.1, after MIA): the 46 lines of the board in four orientations - 8 rows, 8 columns,
15 diagonals (row - col constant) and 15 anti-diagonals (row + col constant). A line's contents are kept as
a base-3 number sum(p_i * 3^i) over its squares (p = 0 empty, 1 black, 2 white), updated with one addition
per touched line when a piece comes or goes. The distance of a move is the number of pieces on its line and
the path rule (own pieces may be jumped, enemy ones not) depends only on the line's contents, so a table
indexed by (line length, encoding, position of the piece) gives the landing position in each of the two
directions, or -1. Move generation is then four table reads per piece.

Quads (Christoph 2020, 2.4.1, Winands' quad heuristic): the 81 2x2 windows of the board, partial ones at the edges
included. Each colour keeps a 4-bit occupancy per quad and the running sum of the quads' contributions to
4 * Euler number (8-connectivity): +1 for one filled corner, -1 for three, -2 for a diagonal pair. A colour
whose Euler number is above 1 has at least two groups, so the full connectivity test runs only when it is
at most 1.
"""

from __future__ import annotations

import numpy as np
from numba import njit

N_SQ = 64
N_LINES = 46
ORIENTATIONS = 4             # 0 rows, 1 columns, 2 diagonals (r - c const), 3 anti-diagonals (r + c const)
N_QUADS = 81
MAX_LINE = 8
POW3 = np.array([3 ** i for i in range(MAX_LINE + 1)], dtype=np.int64)
# first table row of the encodings of lines of each length (lengths 1..8; row = base + encoding)
LEN_BASE = np.zeros(MAX_LINE + 2, dtype=np.int64)
for _n in range(1, MAX_LINE + 1):
    LEN_BASE[_n + 1] = LEN_BASE[_n] + 3 ** _n
N_ROWS = int(LEN_BASE[MAX_LINE + 1])


def _lines():
    line_sq = np.full((N_LINES, MAX_LINE), -1, dtype=np.int64)
    line_len = np.zeros(N_LINES, dtype=np.int64)
    sq_line = np.zeros((ORIENTATIONS, N_SQ), dtype=np.int64)
    sq_pos = np.zeros((ORIENTATIONS, N_SQ), dtype=np.int64)
    for r in range(8):
        for c in range(8):
            sq = 8 * r + c
            d, a = r - c + 7, r + c
            for o, (line, pos) in enumerate((
                    (r, c),
                    (8 + c, r),
                    (16 + d, min(r, c)),                 # runs towards (+1, +1)
                    (31 + a, r - max(0, a - 7)))):       # runs towards (+1, -1)
                sq_line[o, sq], sq_pos[o, sq] = line, pos
                line_sq[line, pos] = sq
                line_len[line] = max(line_len[line], pos + 1)
    return line_sq, line_len, sq_line, sq_pos


LINE_SQ, LINE_LEN, SQ_LINE, SQ_POS = _lines()
LINE_SQ1 = np.hstack([np.zeros((N_LINES, 1), np.int64), np.maximum(LINE_SQ, 0)])  # [line, position + 1]
SQ_POW3 = POW3[SQ_POS]                  # [orientation, sq] -> 3^position
LINE_BASE = LEN_BASE[LINE_LEN]          # [line] -> first table row for its length
SQ_ENTRY = LINE_BASE[SQ_LINE] * 8 + SQ_POS   # [orientation, sq] -> MOVE_TABLE index for encoding 0


@njit(cache=True)
def _build_move_table(len_base, n_rows):
    """[row, position, direction] -> landing position of the piece at `position` moving towards higher (0)
    or lower (1) positions, or -1. The piece's colour is the line's digit at `position`."""
    t = np.full((n_rows, 8, 2), -1, dtype=np.int8)
    digits = np.zeros(8, dtype=np.int64)
    for n in range(1, 9):
        for e in range(3 ** n):
            x = e
            count = 0
            for i in range(n):
                digits[i] = x % 3
                x //= 3
                if digits[i] != 0:
                    count += 1
            row = len_base[n] + e
            for i in range(n):
                me = digits[i]
                if me == 0:
                    continue
                for d in range(2):
                    step = 1 if d == 0 else -1
                    j = i + step * count
                    if j < 0 or j >= n or digits[j] == me:
                        continue
                    ok = True
                    k = i + step
                    while k != j:
                        if digits[k] != 0 and digits[k] != me:
                            ok = False
                            break
                        k += step
                    if ok:
                        t[row, i, d] = j
    return t


def _packed_move_table() -> np.ndarray:
    """[(row * 8 + position)] -> both landing positions in one byte: (fwd + 1) | (bwd + 1) << 4 (0: none)."""
    t = _build_move_table(LEN_BASE, N_ROWS).astype(np.int64) + 1
    return (t[:, :, 0] | (t[:, :, 1] << 4)).astype(np.uint8).reshape(-1)


MOVE_TABLE = _packed_move_table()


def _quads():
    """Quad (qr, qc), qr, qc in 0..8, is number 9 qr + qc and covers rows qr-1..qr and columns qc-1..qc; its
    bits are 1 (qr-1, qc-1), 2 (qr-1, qc), 4 (qr, qc-1), 8 (qr, qc). So square (r, c) is bit 1 << k of quad
    9 r + c + (10, 9, 1, 0)[k]."""
    contrib = np.zeros(16, dtype=np.int64)   # 4 * Euler contribution of a quad with these bits
    for q in range(16):
        n = bin(q).count("1")
        contrib[q] = 1 if n == 1 else (-1 if n == 3 else (-2 if q in (9, 6) else 0))
    delta = np.zeros((16, 4), dtype=np.int64)  # [quad, k] -> change of contribution when bit 1 << k flips
    for q in range(16):
        for k in range(4):
            delta[q, k] = contrib[q ^ (1 << k)] - contrib[q]
    return contrib, delta


QUAD_CONTRIB, QUAD_DELTA = _quads()


def _neighbour_masks() -> np.ndarray:
    m = np.zeros(N_SQ, dtype=np.uint64)
    for r in range(8):
        for c in range(8):
            bits = 0
            for dr in (-1, 0, 1):
                for dc in (-1, 0, 1):
                    if (dr or dc) and 0 <= r + dr < 8 and 0 <= c + dc < 8:
                        bits |= 1 << (8 * (r + dr) + c + dc)
            m[8 * r + c] = np.uint64(bits)
    return m


NEIGHBOURS = _neighbour_masks()    # uint64 8-neighbourhood of each square

# 8-bit masks: number of set bits, and the position of the r-th set bit ([mask * 8 + r])
POPCOUNT8 = np.array([bin(m).count("1") for m in range(256)], dtype=np.int64)
SELECT8 = np.zeros(256 * 8, dtype=np.int64)
for _m in range(256):
    for _r, _b in enumerate(b for b in range(8) if _m >> b & 1):
        SELECT8[_m * 8 + _r] = _b


def _zobrist() -> tuple[np.ndarray, np.int64]:
    """Fixed-seed keys (hashes must agree between processes: they decide which rank owns a node)."""
    rng = np.random.Generator(np.random.PCG64(0x10A_5EED))
    keys = rng.integers(0, 2**64 - 1, size=(3, N_SQ), dtype=np.uint64, endpoint=True).view(np.int64)
    keys[0, :] = 0
    side = rng.integers(1, 2**63 - 1, dtype=np.int64)
    return keys, side


ZOBRIST, ZOBRIST_SIDE = _zobrist()    # [colour 1/2, sq]; colour 0 rows are zero
