"""A small, fast, reproducible random number generator for numba kernels (xorshift64*).

Each playout stream / worker owns its state: a uint64 array of shape [1]. Seeding is explicit, so
runs are reproducible and threads never share generator state (numpy's njit RNG is per-thread
global state that cannot be seeded per stream).
"""

import numpy as np
from numba import njit, uint64

_MULT = np.uint64(0x2545F4914F6CDD1D)


def new_rng(seed: int) -> np.ndarray:
    """A generator state (uint64[1]) from any integer seed; seed 0 is mapped away from the fixed point."""
    x = np.uint64((int(seed) * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) & 0xFFFFFFFFFFFFFFFF)
    if x == 0:
        x = np.uint64(0x9E3779B97F4A7C15)
    return np.array([x], dtype=np.uint64)


@njit(cache=True, nogil=True, inline="always")
def next_u64(st):
    x = st[0]
    x ^= x >> uint64(12)
    x ^= x << uint64(25)
    x ^= x >> uint64(27)
    st[0] = x
    return x * _MULT


@njit(cache=True, nogil=True, inline="always")
def randint(st, n):
    """Uniform integer in [0, n) (n > 0)."""
    return np.int64((next_u64(st) >> uint64(33)) % uint64(n))


@njit(cache=True, nogil=True, inline="always")
def random(st):
    """Uniform float in [0, 1)."""
    return (next_u64(st) >> uint64(11)) * (1.0 / 9007199254740992.0)
