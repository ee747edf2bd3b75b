"""Which rank owns a node of the distributed transposition table, and where it sits there (Schaefers 2014,
eq. 4.6, 4.7).

The whole table H of |H| = M * L entries is split over M ranks of L = |H|/M entries each. A node with hash h
lives on rank i(h) = (h div L) mod M at local index h mod L. For L a power of two the owner is read from
the hash bits just above those of the local index, so the two are independent and every rank's table
fills evenly. The local table (model/tt.py) starts its probing at exactly h mod L.
"""

from __future__ import annotations

from numba import njit, uint64


@njit(cache=True, nogil=True)
def owner(h, n_ranks, local_slots):
    """Rank i(h) = (h / (|H|/M)) mod M, with |H|/M = local_slots (eq. 4.6)."""
    return int((uint64(h) // uint64(local_slots)) % uint64(n_ranks))


@njit(cache=True, nogil=True)
def local_index(h, local_slots):
    """Index into the owner's table, I(h) = h mod (|H|/M) (eq. 4.7)."""
    return int(uint64(h) % uint64(local_slots))
