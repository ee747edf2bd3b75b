"""The synthetic game: an implicit P-game tree with set branching factor, depth and playout cost.

A P-game (Kocsis & Szepesvári; used by Yoshizoe et al. for df-UCT) is a uniform tree of branching b and
depth d whose edges carry random increments: moves of the first player add a value in [0, 127], moves of
the second subtract one in [0, 127]. A leaf's result is the sum along its path, from the first player's
view (> 0 first player wins). Nothing is stored: a node is its path hash, and every increment is a hash of
(seed, node hash, action), so the tree is the same for every run and process, of any size.

The playout cost is set exactly: each playout step spins `cost` iterations of a busy loop, so the simulator
and tests can give playouts any duration relative to tree work.

Parameters g (int64):  [PGAME, b, d, seed, cost]
State s (int64):       [path hash (uint64 bits), depth, sum of increments, busy-loop residue]
"""

from __future__ import annotations

import numpy as np
from numba import njit, uint64

from model.rng import randint

# g layout (g[0] is the game id, set by make_params)
G_B, G_D, G_SEED, G_COST = 1, 2, 3, 4
G_LEN = 5
# s layout
S_HASH, S_DEPTH, S_SUM, S_SPIN = 0, 1, 2, 3
S_LEN = 4

MAX_INCREMENT = 127


@njit(cache=True, nogil=True, inline="always")
def _mix(x):
    """splitmix64 finaliser: a bijective scrambler, so distinct paths get unrelated values."""
    x = (x ^ (x >> uint64(30))) * uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> uint64(27))) * uint64(0x94D049BB133111EB)
    return x ^ (x >> uint64(31))


@njit(cache=True, nogil=True, inline="always")
def _edge_key(g, h, a):
    return _mix(h ^ _mix(uint64(g[G_SEED]) + uint64(a) * uint64(0x9E3779B97F4A7C15) + uint64(1)))


@njit(cache=True, nogil=True)
def pg_increment(g, h, a, player):
    """The edge's increment: player 0 gains 0..127, player 1 takes away 0..127."""
    v = np.int64(_edge_key(g, h, a) % uint64(MAX_INCREMENT + 1))
    return v if player == 0 else -v


@njit(cache=True, nogil=True)
def pg_n_actions(g):
    return g[G_B]


@njit(cache=True, nogil=True)
def pg_is_terminal(g, s):
    return s[S_DEPTH] >= g[G_D]


@njit(cache=True, nogil=True)
def pg_to_move(g, s):
    return s[S_DEPTH] % 2


@njit(cache=True, nogil=True)
def pg_legal_actions(g, s, out):
    if s[S_DEPTH] >= g[G_D]:
        return 0
    b = g[G_B]
    for a in range(b):
        out[a] = a
    return b


@njit(cache=True, nogil=True)
def pg_hash(g, s):
    return uint64(s[S_HASH])


@njit(cache=True, nogil=True)
def pg_play(g, s, a):
    if a < 0 or a >= g[G_B] or s[S_DEPTH] >= g[G_D]:
        return False
    h = uint64(s[S_HASH])
    s[S_SUM] += pg_increment(g, h, a, s[S_DEPTH] % 2)
    s[S_HASH] = np.int64(_edge_key(g, h, a) * uint64(0xD1B54A32D192ED03) + uint64(0x8CB92BA72F3D8DD7))
    s[S_DEPTH] += 1
    return True


@njit(cache=True, nogil=True)
def _spin(n, x):
    # xorshift steps: a serial dependency the optimiser can neither fold nor vectorise (a linear
    # congruential step gets rewritten into something far cheaper); pg_playout stores the result in s.
    x |= uint64(1)
    for _ in range(n):
        x ^= x << uint64(13)
        x ^= x >> uint64(7)
        x ^= x << uint64(17)
    return x


@njit(cache=True, nogil=True)
def pg_playout(g, s, rng, amaf):
    cost = g[G_COST]
    acc = uint64(s[S_SPIN])
    while s[S_DEPTH] < g[G_D]:
        a = randint(rng, g[G_B])
        if amaf[a] < 0:
            amaf[a] = s[S_DEPTH] % 2
        acc = _spin(cost, acc)
        pg_play(g, s, a)
    s[S_SPIN] = np.int64(acc)
    return float(s[S_SUM])


def make_params(branching: int = 4, depth: int = 8, seed: int = 1, cost: int = 0, game_id: int = 1) -> np.ndarray:
    """Game parameters g for a P-game; game_id is model.game.PGAME (passed in to avoid an import cycle)."""
    if branching < 1 or depth < 1 or cost < 0:
        raise ValueError("P-game needs branching >= 1, depth >= 1, cost >= 0")
    g = np.zeros(G_LEN, dtype=np.int64)
    g[0], g[G_B], g[G_D], g[G_SEED], g[G_COST] = game_id, branching, depth, seed, cost
    return g


def new_state(g: np.ndarray) -> np.ndarray:
    s = np.zeros(S_LEN, dtype=np.int64)
    root = _root_hash(np.uint64(int(g[G_SEED]) & 0xFFFFFFFFFFFFFFFF))
    s[S_HASH] = np.array([root], dtype=np.uint64).view(np.int64)[0]
    return s


@njit(cache=True)
def _root_hash(seed):
    return _mix(seed ^ uint64(0xA0761D6478BD642F))


def minimax(g: np.ndarray, s: np.ndarray) -> int:
    """Exact game value of s from the first player's view: +1 win, -1 loss, 0 draw (small trees only)."""
    if pg_is_terminal(g, s):
        return int(np.sign(s[S_SUM]))
    vals = []
    for a in range(int(g[G_B])):
        c = s.copy()
        pg_play(g, c, a)
        vals.append(minimax(g, c))
    return max(vals) if pg_to_move(g, s) == 0 else min(vals)
