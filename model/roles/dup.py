"""Duplicated tree nodes and their synchronisation (Schaefers 2014, 4.2.2): delta counters beside the table.

A duplicated node keeps living in the rank's transposition table (model/tt.py), whose statistics are the
rank's whole view N + N_delta; the DupTable holds, per duplicated node (a "row"), the part N_delta not yet
sent to the other ranks. So UCT reads the table as always, an update adds to the table and to the deltas,
a synchronisation sends the deltas and subtracts what it sent, and increments from other ranks are added to
the table only. Every operation is an addition, so messages may arrive in any order: a SYNC that overtakes
the DUP of its node just accumulates until the DUP brings the child list and makes the node usable here.

Threads: select and update kernels may run on several workers at once (atomic adds); row allocation,
sync-in and flush run in `sync` packages, of which the role runs one at a time per rank; the owner's DUP
snapshot runs while the role holds back update packages (so no update falls between snapshot and delta).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from model.atomics import atomic_add, atomic_add2, atomic_cas, atomic_load, atomic_store
from model.blocks import spread_zeros
from model.roles.messages import NODE_ROW, STAT
from model.tt import EXPANDING, UNEXPANDED, lookup
from model.uct import amaf_weight

# meta fields
D_ROWS, D_REFUSED, D_DROPPED = 0, 1, 2
D_LEN = 4
# n_children of a node whose statistics arrived before its child list (root parallelisation): not to be
# expanded here, a leaf until the list comes (model/tt.py uses -1 and -2)
MERGING = -3


class DupTable(NamedTuple):
    row_of: np.ndarray   # int32[S]     table slot -> row, -1 if the node is not duplicated here
    ready: np.ndarray    # int32[D]     1 once the child list is known (the node may be used here)
    slot: np.ndarray     # int64[D]     row -> table slot
    key: np.ndarray      # uint64[D]    row -> node hash
    n: np.ndarray        # int32[D, K]  unsent child visits
    w: np.ndarray        # float32[D, K] unsent child value (player to move at the node)
    an: np.ndarray       # int32[D, K]  unsent AMAF visits
    aw: np.ndarray       # float32[D, K] unsent AMAF value
    node_n: np.ndarray   # int64[D]     unsent node visits
    node_w: np.ndarray   # float64[D]   unsent node value
    meta: np.ndarray     # int64[4]     rows used, rows refused (no room), STAT rows dropped (no table room)


def new_dup_table(slots: int, max_children: int, rows: int) -> DupTable:
    """Delta counters for up to `rows` duplicated nodes of a table with `slots` slots (in small pages, each
    touched only when used, so a generous `rows` costs little: a search duplicates a few hundred nodes, and
    every search rank makes its table anew)."""
    D, K = int(rows), int(max_children)
    # an update of a duplicated node adds to its four rows together: they alternate with the others
    n, row_of, w, ready, an, slot, aw, key, node_n, node_w = spread_zeros([
        ((D, K), np.int32), ((int(slots),), np.int32), ((D, K), np.float32), ((D,), np.int32), ((D, K), np.int32),
        ((D,), np.int64), ((D, K), np.float32), ((D,), np.uint64), ((D,), np.int64), ((D,), np.float64)],
        huge_pages=False)
    row_of[:] = -1
    return DupTable(row_of=row_of, ready=ready, slot=slot, key=key, n=n, w=w, an=an, aw=aw, node_n=node_n,
                    node_w=node_w, meta=np.zeros(D_LEN, np.int64))


@njit(cache=True, nogil=True, inline="always")
def dup_row_in(row_of, ready, slot):
    """Row of a duplicated node usable here, or -1 (row_of, ready: the DupTable's)."""
    row = atomic_load(row_of, slot)
    if row >= 0 and atomic_load(ready, row) == 1:
        return row
    return -1


@njit(cache=True, nogil=True, inline="always")
def amaf_shared_in(n_children, cm, av, aw, dan, daw, slot, row, amaf, player, r):
    """uct.amaf_in on a duplicated node (table slot, DupTable row): the table's AMAF counts and the row's
    unsent ones in one pass over the children (dan, daw: the DupTable's an, aw)."""
    for j in range(n_children[slot]):
        a = amaf[cm[slot, j]]
        m = a == player
        x = r * amaf_weight(a, player)
        av[slot, j] += m
        aw[slot, j] += x
        dan[row, j] += m
        daw[row, j] += x


@njit(cache=True, nogil=True)
def dup_row(dt, slot):
    """Row of a duplicated node usable here, or -1."""
    return dup_row_in(dt.row_of, dt.ready, slot)


@njit(cache=True, nogil=True)
def _alloc(dt, slot, h, ready):
    r = dt.meta[D_ROWS]
    if r >= dt.ready.shape[0]:
        dt.meta[D_REFUSED] += 1
        return -1
    dt.meta[D_ROWS] = r + 1
    dt.slot[r] = slot
    dt.key[r] = h
    dt.node_n[r] = 0
    dt.node_w[r] = 0.0
    dt.n[r, :] = 0
    dt.w[r, :] = 0.0
    dt.an[r, :] = 0
    dt.aw[r, :] = 0.0
    atomic_store(dt.ready, r, ready)
    atomic_store(dt.row_of, slot, r)
    return r


@njit(cache=True, nogil=True)
def share_root(t, dt, slot, h):
    """Mark the root (expanded, statistics zeroed by the caller) duplicated on this rank."""
    if atomic_load(dt.row_of, slot) >= 0:
        return True
    return _alloc(dt, slot, h, 1) >= 0


@njit(cache=True, nogil=True)
def share_kept_root(t, dt, slot, h):
    """Mark the root (expanded, with the statistics an earlier search left) duplicated on this rank, all of
    them unsent: the first synchronisation gives them to the other ranks, whose copy starts from zero."""
    if atomic_load(dt.row_of, slot) >= 0:
        return True
    r = _alloc(dt, slot, h, 1)
    if r >= 0:
        _unsent(t, dt, r, slot, t.n_children[slot])
    return r >= 0


@njit(cache=True, nogil=True)
def _unsent(t, dt, r, slot, nc):
    """Row r's unsent increments are all the node's statistics (its nc children's too)."""
    dt.node_n[r] = t.visits[slot]
    dt.node_w[r] = t.value[slot]
    for j in range(max(nc, 0)):
        dt.n[r, j] = t.child_visits[slot, j]
        dt.w[r, j] = t.child_value[slot, j]
        dt.an[r, j] = t.amaf_visits[slot, j]
        dt.aw[r, j] = t.amaf_value[slot, j]


@njit(cache=True, nogil=True)
def write_dup(t, dt, slots, n_slots, out):
    """Owner side: duplicate the nodes in slots[:n_slots] (not yet duplicated, expanded) and write their
    full statistics as DUP rows to out; returns the number of rows written. The caller guarantees that no
    update runs on this rank meanwhile."""
    k = 0
    for i in range(n_slots):
        slot = slots[i]
        nc = t.n_children[slot]
        if atomic_load(dt.row_of, slot) >= 0 or nc <= 0:
            continue
        if _alloc(dt, slot, t.key[slot], 1) < 0:
            continue
        h = t.key[slot]
        out[k].hash = h
        out[k].idx = NODE_ROW
        out[k].move = nc
        out[k].n = t.visits[slot]
        out[k].w = t.value[slot]
        out[k].an = 0
        out[k].aw = 0.0
        k += 1
        for j in range(nc):
            out[k].hash = h
            out[k].idx = j
            out[k].move = t.child_move[slot, j]
            out[k].n = t.child_visits[slot, j]
            out[k].w = t.child_value[slot, j]
            out[k].an = t.amaf_visits[slot, j]
            out[k].aw = t.amaf_value[slot, j]
            k += 1
    return k


@njit(cache=True, nogil=True)
def flush_rows(t, dt, rows, n_rows, all_rows, out):
    """Write the unsent increments of the given rows (every row if all_rows) as SYNC rows to out and take
    them out of the deltas; returns the number of rows written. Rows without increments write nothing."""
    k = 0
    count = dt.meta[D_ROWS] if all_rows else n_rows
    for i in range(count):
        r = i if all_rows else rows[i]
        if atomic_load(dt.ready, r) != 1:
            continue
        slot = dt.slot[r]
        h = dt.key[r]
        nc = t.n_children[slot]
        nn = dt.node_n[r]
        nw = dt.node_w[r]
        start = k
        out[k].hash = h
        out[k].idx = NODE_ROW
        out[k].move = -1
        out[k].n = nn
        out[k].w = nw
        out[k].an = 0
        out[k].aw = 0.0
        k += 1
        atomic_add(dt.node_n, r, -nn)
        atomic_add(dt.node_w, r, -nw)
        any_child = False
        for j in range(nc):
            cn = dt.n[r, j]
            can = dt.an[r, j]
            if cn == 0 and can == 0:
                continue
            cw = dt.w[r, j]
            caw = dt.aw[r, j]
            out[k].hash = h
            out[k].idx = j
            out[k].move = t.child_move[slot, j]
            out[k].n = cn
            out[k].w = cw
            out[k].an = can
            out[k].aw = caw
            k += 1
            any_child = True
            atomic_add2(dt.n, r, j, -cn)
            atomic_add2(dt.w, r, j, -cw)
            atomic_add2(dt.an, r, j, -can)
            atomic_add2(dt.aw, r, j, -caw)
        if not any_child and nn == 0:
            k = start  # nothing to say about this node
    return k


@njit(cache=True, nogil=True)
def _zero(t, slot):
    t.visits[slot] = 0
    t.value[slot] = 0.0
    for j in range(t.child_move.shape[1]):
        t.child_visits[slot, j] = 0
        t.child_value[slot, j] = 0.0
        t.amaf_visits[slot, j] = 0
        t.amaf_value[slot, j] = 0.0
        t.vloss[slot, j] = 0
        t.prior[slot, j] = 0.0


@njit(cache=True, nogil=True)
def _adopt(t, dt, slot, h):
    """Root parallelisation: a node this rank grew itself starts being shared. Its own statistics so far are
    all unsent, so they become the deltas. A node it does not have yet is blocked (MERGING) against local
    expansion until the sender's full child list arrives. The caller holds back update packages."""
    while atomic_load(t.n_children, slot) == EXPANDING:  # a worker is storing the children right now
        pass
    nc = atomic_load(t.n_children, slot)
    if nc == UNEXPANDED and atomic_cas(t.n_children, slot, UNEXPANDED, MERGING):
        nn, nw = t.visits[slot], t.value[slot]  # a stored leaf's own visits (0 for a new slot)
        _zero(t, slot)
        t.visits[slot], t.value[slot] = nn, nw
        r = _alloc(dt, slot, h, 0)
        if r >= 0:
            dt.node_n[r], dt.node_w[r] = nn, nw
        return r
    nc = atomic_load(t.n_children, slot)
    r = _alloc(dt, slot, h, 1 if nc >= 0 else 0)
    if r >= 0:
        _unsent(t, dt, r, slot, nc)
    return r


@njit(cache=True, nogil=True)
def apply_rows(t, dt, rows, n_rows, adopt):
    """Add DUP/SYNC/MERGE rows from other ranks to this rank's table, creating shared nodes as needed.
    Rows of one node are contiguous, node row first (merge_stats and the writers above keep that order).
    adopt False (treesplit): a node first heard of here starts from zero, whatever an earlier search left
    in the slot; adopt True (root parallelisation): this rank's own statistics of it are kept and shared.
    Returns the number of rows dropped for want of room (table or DupTable full)."""
    dropped = 0
    i = 0
    while i < n_rows:
        h = rows[i].hash
        e = i
        while e < n_rows and rows[e].hash == h:
            e += 1
        slot, _ = lookup(t, h, True)
        row = -1
        if slot != 0:
            row = atomic_load(dt.row_of, slot)
            if row < 0:
                if adopt:
                    row = _adopt(t, dt, slot, h)
                else:
                    _zero(t, slot)
                    t.n_children[slot] = UNEXPANDED
                    row = _alloc(dt, slot, h, 0)
        if row < 0:
            dropped += e - i
            i = e
            continue
        full = -1
        for q in range(i, e):
            j = rows[q].idx
            if j == NODE_ROW:
                atomic_add(t.visits, slot, rows[q].n)
                atomic_add(t.value, slot, rows[q].w)
                if rows[q].move >= 0:
                    full = rows[q].move
            else:
                t.child_move[slot, j] = rows[q].move
                atomic_add2(t.child_visits, slot, j, rows[q].n)
                atomic_add2(t.child_value, slot, j, rows[q].w)
                atomic_add2(t.amaf_visits, slot, j, rows[q].an)
                atomic_add2(t.amaf_value, slot, j, rows[q].aw)
        if full >= 0 and atomic_load(dt.ready, row) == 0:
            atomic_store(t.n_children, slot, full)
            atomic_store(dt.ready, row, 1)
        i = e
    dt.meta[D_DROPPED] += dropped
    return dropped


def empty_rows(n: int) -> np.ndarray:
    return np.empty(n, dtype=STAT)
