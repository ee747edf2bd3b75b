"""The transposition table: search statistics of tree nodes, keyed by position hash (Schaefers 2014, 4.2.3).

A structure of numpy arrays (`Table`, a NamedTuple so numba kernels take it whole). One slot per node;
the children of a node sit together in fixed blocks [slots, max_children], so one UCT step reads
contiguous memory. Statistics of an action are stored with the state it is played in (Schaefers 2014, 3.2.3).

Replacement follows the thesis' TableLookup, with the search id as the time stamp:
  - stamp 1 marks an empty slot, 0 a slot being replaced (locked), and a value >= 2 the id of the last
    search that touched the slot;
  - a lookup probes PROBES slots from h mod S (slot 0 is never used); a slot touched during the current
    search is never evicted; an insert takes the first empty slot, else the least recently touched one;
  - a hit on an old slot re-stamps it, so the subtree below the move actually played survives into the
    next search without any clearing (tree reuse), while the rest ages out and gets overwritten;
  - claims use compare-and-swap, so threads may share one table without locks.
When every probed slot belongs to the current search the table answers FULL and the search treats the
node as a leaf; a slot being replaced by another thread answers BUSY (also a leaf).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, uint64

from model.atomics import atomic_cas, atomic_load, atomic_store
from model.blocks import PAGE, spread_zeros

PROBES = 10
# A search process's table (MiB), every algorithm's (the sequential search, tree threads, each MPI rank). A
# 19x19 node takes ~9.4 kB, so this holds ~28,000 nodes: 5-8 s of one core's search from the empty board
# (3,300-5,200 new nodes a second on the 2-core VMs). One budget for all, so that no algorithm's tree stops
# growing sooner than another's in a comparison (when every probed slot is taken, a node stays a leaf).
BUDGET_MB = 256.0
EMPTY, LOCKED = 1, 0
FIRST_SEARCH = 2
# lookup outcomes
FOUND, NEW, MISSING, FULL, BUSY = 0, 1, 2, 3, 4
# n_children of a node that has not been expanded yet / is being expanded by some thread
UNEXPANDED, EXPANDING = -1, -2
# meta fields (only the stamp: every lookup reads it, so nothing that changes often may share its cache line)
M_SEARCH = 0
M_LEN = 1


class Table(NamedTuple):
    """S slots, K = max_children (the game's action count). Slot 0 is never used."""

    key: np.ndarray           # uint64[S]     position hash of the node in the slot
    stamp: np.ndarray         # int64[S]      id of the last search that touched it; 1 empty, 0 locked
    visits: np.ndarray        # int64[S]      simulations that passed through the node
    value: np.ndarray         # float64[S]    their summed reward, for the player to move at the node
    n_children: np.ndarray    # int32[S]      children stored; -1 not expanded, -2 being expanded
    child_move: np.ndarray    # int16[S, K]   action of each child
    child_visits: np.ndarray  # int32[S, K]   simulations that took the action here
    child_value: np.ndarray   # float32[S, K] their summed reward, for the player to move at the node
    amaf_visits: np.ndarray   # int32[S, K]   AMAF (RAVE) count: simulations that played the action later
    amaf_value: np.ndarray    # float32[S, K] their summed reward, same view
    vloss: np.ndarray         # int32[S, K]   simulations in flight through the edge (virtual loss)
    prior: np.ndarray         # float32[S, K] heuristic prior of the action (progressive bias), 0 if none
    meta: np.ndarray          # int64[1]      id of the current search


NODE_BYTES = 8 + 8 + 8 + 8 + 4
CHILD_BYTES = 2 + 4 + 4 + 4 + 4 + 4 + 4


def slot_bytes(max_children: int) -> int:
    return NODE_BYTES + CHILD_BYTES * max_children


def slots_for(mb: float, max_children: int) -> int:
    """How many slots a memory budget of `mb` MiB buys (at least 16)."""
    return max(16, int(mb * 2**20) // slot_bytes(max_children))


def new_table(slots: int, max_children: int) -> Table:
    """An empty table. Its pages are only touched on first use, so a large budget costs nothing upfront."""
    if slots < 2 or max_children < 1:
        raise ValueError("a table needs at least 2 slots and 1 child per node")
    if max_children > np.iinfo(np.int16).max:
        raise ValueError("actions must fit int16")
    S, K = int(slots), int(max_children)
    # the six per-child arrays a UCT step reads together alternate with the others (model/blocks.py)
    cv, key, cw, stamp, av, visits, aw, value, vl, n_children, pr, cm = spread_zeros([
        ((S, K), np.int32), ((S,), np.uint64), ((S, K), np.float32), ((S,), np.int64), ((S, K), np.int32),
        ((S,), np.int64), ((S, K), np.float32), ((S,), np.float64), ((S, K), np.int32), ((S,), np.int32),
        ((S, K), np.float32), ((S, K), np.int16)])
    stamp[:] = EMPTY
    n_children[:] = UNEXPANDED
    meta = np.zeros(M_LEN, dtype=np.int64)
    meta[M_SEARCH] = FIRST_SEARCH
    return Table(key=key, stamp=stamp, visits=visits, value=value, n_children=n_children, child_move=cm,
                 child_visits=cv, child_value=cw, amaf_visits=av, amaf_value=aw, vloss=vl, prior=pr, meta=meta)


def table_for_budget(mb: float, max_children: int) -> Table:
    return new_table(slots_for(mb, max_children), max_children)


def prefault(t: Table) -> None:
    """Touch every page of a new table now, so that searches do not pay the page faults (benchmarks; on
    some virtual machines a first touch of memory costs far more than on bare hardware). The arrays left
    untouched get zeros written, one per page; stamps and child counts were filled when made."""
    for a in (t.key, t.visits, t.value, t.child_move, t.child_visits, t.child_value, t.amaf_visits,
              t.amaf_value, t.vloss, t.prior):
        a.reshape(-1)[:: max(1, PAGE // a.itemsize)] = 0


def clear(t: Table) -> None:
    """Forget every node (stamps back to empty; the data is reset when a slot is taken again)."""
    t.stamp.fill(EMPTY)
    t.meta[M_SEARCH] = FIRST_SEARCH


def new_search(t: Table) -> int:
    """Start a search: bump the stamp. Slots from earlier searches become replaceable, not cleared."""
    t.meta[M_SEARCH] += 1
    return int(t.meta[M_SEARCH])


def current_nodes(t: Table) -> int:
    """Nodes touched by the current search."""
    return int(np.count_nonzero(t.stamp == t.meta[M_SEARCH]))


@njit(cache=True, nogil=True, inline="always")
def lookup_in(key, stamp, meta, visits, value, n_children, h, insert):
    """(slot, outcome) for hash h: FOUND, NEW (inserted, empty and unexpanded), or slot 0 with MISSING
    (insert False), FULL or BUSY. Safe to call from several threads at once. Takes t's arrays one by
    one: hot loops unpack the table once, since every attribute access costs reference counting."""
    now = meta[M_SEARCH]
    S = key.shape[0]
    i = np.int64(h % uint64(S))
    cand = 0
    cand_stamp = np.int64(0x7FFFFFFFFFFFFFFF)
    found = 0
    locked = False
    for _ in range(PROBES):
        if i == 0:
            i = 1
        a = atomic_load(stamp, i)
        if a == LOCKED:
            locked = True
        elif a == EMPTY:
            if cand_stamp != EMPTY:  # prefer an empty slot to any old one
                cand, cand_stamp = i, a
            break  # slots never become empty again, so h cannot be stored further on
        if a > LOCKED and a < now and cand_stamp != EMPTY and a < cand_stamp:
            cand, cand_stamp = i, a
        if a > EMPTY and key[i] == h and atomic_load(stamp, i) == a:
            found = i
            break
        i += 1
        if i == S:
            i = 0
    if found != 0:
        a = atomic_load(stamp, found)
        if a == now:
            return found, FOUND
        if a > EMPTY:
            atomic_cas(stamp, found, a, now)  # losing to another thread's touch is fine
            if atomic_load(stamp, found) == now and key[found] == h:
                return found, FOUND
        return 0, BUSY
    if not insert:
        return 0, MISSING
    if locked:  # another thread is storing some position in the window: maybe this one; don't duplicate it
        return 0, BUSY
    if cand == 0:
        return 0, FULL
    if not atomic_cas(stamp, cand, cand_stamp, LOCKED):
        # Another thread took the slot first; it may have inserted this very position.
        if atomic_load(stamp, cand) == now and key[cand] == h:
            return cand, FOUND
        return 0, BUSY
    key[cand] = h
    visits[cand] = 0
    value[cand] = 0.0
    n_children[cand] = UNEXPANDED
    atomic_store(stamp, cand, now)  # releases the lock after the cleared data is visible
    return cand, NEW


@njit(cache=True, nogil=True, inline="always")
def lookup(t, h, insert):
    """(slot, outcome) for hash h: FOUND, NEW (inserted, empty and unexpanded), or slot 0 with MISSING
    (insert False), FULL or BUSY. Safe to call from several threads at once."""
    return lookup_in(t.key, t.stamp, t.meta, t.visits, t.value, t.n_children, h, insert)


@njit(cache=True, nogil=True)
def find(t, h):
    """Slot of h if stored (touching it for the current search), else 0."""
    slot, _ = lookup(t, h, False)
    return slot
