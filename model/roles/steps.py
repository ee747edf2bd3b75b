"""Kernels for distributed simulations: the work packages of the worker FSM of Schaefers 2014 (4.2.1) over a step stack.

A simulation that travels between ranks is its stack of STEP records (model/roles/messages.py): per
in-tree node the hash, the action taken, its child index, the player to move and the rank where the
selection took place; a stored leaf adds one record with idx -1. A rank rebuilds the position by replaying
the actions from the root (cheaper to send than a position), then:

    select_steps   UCT steps on every node it may decide here (owned by it, or duplicated here) in one
                   call; stops where the next node belongs to another rank (MOVE), needs expanding
                   (EXPAND), is a leaf (PLAYOUT), or the move was illegal / repeated a position (LOSS)
    expand_node    the owner stores the children of a new node
    update_steps   back up a result on the steps that were selected on this rank, and record the
                   increments of duplicated nodes; reports nodes to synchronise or duplicate

The logic mirrors model.uct.run_simulations step for step (same lookups, expansion rule, superko rule,
virtual loss, AMAF walk and backup order), so one rank with one simulation in flight and the same random
stream builds exactly the tree of the sequential search.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from model import game
from model.atomics import atomic_add, atomic_add2, atomic_load, atomic_store
from model.ownership import owner
from model.roles.dup import amaf_shared_in, dup_row_in
from model.tt import UNEXPANDED, lookup, lookup_in
from model.uct import (P_EXPAND, P_EXPAND_NODE, P_MAX_DEPTH, P_RAVE, P_SUPERKO, P_VLOSS, _repeats, amaf_in, expand,
                       select_in)

# select_steps outcomes
ST_MOVE, ST_EXPAND, ST_PLAYOUT, ST_LOSS = 0, 1, 2, 3
# sync parameters (float64 array)
Y_NSYNC_MIN, Y_NSYNC_MAX, Y_ALPHA, Y_NDUP, Y_TRACK, Y_DUP_DEPTH = 0, 1, 2, 3, 4, 5
Y_LEN = 6
KID_KNOWN = 1  # kids[j, 2]: the root's child j's hashes are filled in


@njit(cache=True, nogil=True, inline="always")
def copy_to(dst, src):
    """dst[:len(src)] = src as a loop: a slice assignment between arrays needs numba's runtime, which the
    kernels of a search rank run without (model/borrowed_struct.py)."""
    for i in range(src.shape[0]):
        dst[i] = src[i]


def new_kids(max_children: int) -> np.ndarray:
    """select_steps' table of the root's children: per child index, the hash and the position hash after
    its move, and whether they are filled in (KID_KNOWN). Cleared (reset_kids) whenever the root changes."""
    return np.zeros((max_children, 3), np.uint64)


@njit(cache=True, nogil=True, _nrt=False)
def reset_kids(kids):
    for j in range(kids.shape[0]):
        kids[j, 2] = 0


@njit(cache=True, nogil=True, _nrt=False)
def replay(g, s_root, steps, n, s, path_pos):
    """s := the position after the actions of steps[:n] (leaf records skipped); path_pos[k] := position
    hash after k actions. Returns the number of actions played. (No reference counting, as select_steps.)"""
    copy_to(s, s_root)
    path_pos[0] = game.position_hash(g, s)
    d = 0
    for k in range(n):
        if steps[k].idx < 0:
            break
        game.play(g, s, np.int64(steps[k].action))
        d += 1
        path_pos[d] = game.position_hash(g, s)
    return d


@njit(cache=True, nogil=True, inline="always")
def _hash_on_path(steps, n, h):
    for k in range(n):
        if steps[k].hash == h:
            return True
    return False


@njit(cache=True, nogil=True)
def _leaf(steps, n, h, me, player, pslots, slot):
    pslots[n] = slot
    steps[n].hash = h
    steps[n].action = -1
    steps[n].rank = me
    steps[n].idx = -1
    steps[n].player = player
    steps[n].flags = 0
    return n + 1


@njit(cache=True, nogil=True, inline="always")
def _ready(g, root, s, steps, n, lazy):
    """s := the position of steps[:n] if it is not yet (lazy); returns False (s is ready)."""
    if lazy:
        copy_to(s, root)
        for k in range(n):
            game.play(g, s, np.int64(steps[k].action))
    return False


@njit(cache=True, nogil=True, _nrt=False)
def select_steps(t, dt, g, s, p, rng, steps, n, path_pos, history, me, n_ranks, local_slots, insert, pslots, scores,
                 root, kids):
    """Select from the node of position s (steps[:n] lead there) for as long as this rank may decide.

    insert: whether the node is to be stored (True for the root, after a MOVE and after an expansion; then
    the edge-visit rule of run_simulations). pslots[k] gets the table slot of each record k it writes (an
    update on this rank then needs no lookup: a node of the current search is never replaced). Returns
    (outcome, n, arg): arg is the destination rank for ST_MOVE, the slot for ST_EXPAND, the player who made
    the losing move for ST_LOSS. scores: float64[max_children], scratch.

    From the root (n = 0) s need not hold a position yet: it reads `root` and copies it to s only where the
    simulation goes on here below the root. kids (uint64[max_children, 3], see new_kids) keeps, for each
    child of the root, the hash and position hash after its move; so a simulation whose next node after the
    root belongs to another rank leaves without a copy of the root (25 kB at 19x19, what a hop to its next
    rank costs again). s holds the position on every outcome but ST_MOVE.

    Compiled without reference counting (it allocates nothing): a table's arrays counted in and out at
    every call of a helper made up a fifth of a search rank's time."""
    lazy = n == 0
    max_depth = int(p[P_MAX_DEPTH])
    use_vl = p[P_VLOSS] > 0.0
    superko = p[P_SUPERKO] != 0.0
    expand_at = p[P_EXPAND]
    key, stamp, meta, visits, value, n_children = t.key, t.stamp, t.meta, t.visits, t.value, t.n_children
    cm, cv, cw, av, aw, vl, pr = (t.child_move, t.child_visits, t.child_value, t.amaf_visits, t.amaf_value,
                                  t.vloss, t.prior)
    row_of, ready = dt.row_of, dt.ready
    h = game.hash(g, root if lazy else s)
    while True:
        if n > 0 and _hash_on_path(steps, n, h):
            # back at a node of this path (as run_simulations: the walk ends, played out from here)
            _ready(g, root, s, steps, n, lazy)
            return ST_PLAYOUT, n, 0
        slot = 0
        if n_ranks == 1:
            slot, _ = lookup_in(key, stamp, meta, visits, value, n_children, h, insert)
        else:
            found, _ = lookup_in(key, stamp, meta, visits, value, n_children, h, False)
            if found != 0 and dup_row_in(row_of, ready, found) >= 0:
                slot = found
            elif owner(h, n_ranks, local_slots) == me:
                if found != 0:
                    slot = found
                else:
                    slot, _ = lookup_in(key, stamp, meta, visits, value, n_children, h, insert)
            elif insert:
                return ST_MOVE, n, owner(h, n_ranks, local_slots)
            else:
                _ready(g, root, s, steps, n, lazy)
                return ST_PLAYOUT, n, 0  # not stored as far as this rank can tell: a leaf
        if n > 0:
            lazy = _ready(g, root, s, steps, n, lazy)
        at = root if lazy else s
        player = game.to_move(g, at)
        if game.is_terminal(g, at):
            # As in run_simulations: a finished game is no tree node (after two passes in Go its hash is the
            # position's before them), so no leaf record: nothing is updated or searched on from it.
            _ready(g, root, s, steps, n, lazy)
            return ST_PLAYOUT, n, 0
        if slot == 0 or n >= max_depth:
            _ready(g, root, s, steps, n, lazy)
            if slot != 0:
                n = _leaf(steps, n, h, me, player, pslots, slot)
            return ST_PLAYOUT, n, 0
        nc = atomic_load(n_children, slot)
        if nc == UNEXPANDED:
            _ready(g, root, s, steps, n, lazy)
            if n > 0 and visits[slot] < p[P_EXPAND_NODE]:  # as in run_simulations: a stored leaf for now
                return ST_PLAYOUT, _leaf(steps, n, h, me, player, pslots, slot), 0
            return ST_EXPAND, n, slot
        if nc <= 0:
            _ready(g, root, s, steps, n, lazy)
            return ST_PLAYOUT, _leaf(steps, n, h, me, player, pslots, slot), 0
        j = select_in(n_children, visits, cv, cw, av, aw, vl, pr, slot, p, rng, scores)
        if use_vl:
            atomic_add2(vl, slot, j, 1)
        a = cm[slot, j]
        pslots[n] = slot
        steps[n].hash = h
        steps[n].action = a
        steps[n].rank = me
        steps[n].idx = j
        steps[n].player = player
        steps[n].flags = 0
        n += 1
        if lazy and atomic_load(kids[j:j + 1, 2], 0) == KID_KNOWN:
            h, pos, ok = kids[j, 0], kids[j, 1], True
        else:
            lazy = _ready(g, root, s, steps, n - 1, lazy)
            ok = game.play(g, s, np.int64(a))
            h, pos = game.hash(g, s), game.position_hash(g, s)
            if n == 1 and ok:
                kids[j, 0] = h
                kids[j, 1] = pos
                atomic_store(kids[j:j + 1, 2], 0, KID_KNOWN)  # after its figures (threads share kids)
        if not ok or (superko and pos != path_pos[n - 1] and _repeats(pos, path_pos, n, history)):
            _ready(g, root, s, steps, n, lazy)
            return ST_LOSS, n, player
        path_pos[n] = pos
        insert = cv[slot, j] >= expand_at


@njit(cache=True, nogil=True)
def expand_node(t, g, s, slot, buf, steps, n, me, pslots):
    """Store the children of the node in slot. If another thread got there first the node is a stored
    leaf for this simulation (as in run_simulations): its leaf record is appended. Returns (expanded, n)."""
    if expand(t, g, s, slot, buf):
        return True, n
    return False, _leaf(steps, n, t.key[slot], me, game.to_move(g, s), pslots, slot)


@njit(cache=True, nogil=True, _nrt=False)
def playout(g, s, rng, amaf):
    for i in range(amaf.shape[0]):
        amaf[i] = -1
    return game.playout(g, s, rng, amaf)


@njit(cache=True, nogil=True, _nrt=False)
def update_steps(t, dt, g, steps, n, me, result, amaf, p, y, n_ranks, local_slots, out_sync, out_dup, pslots):
    """Back up `result` (first player's view) on the records of steps[:n] selected on rank `me`; pslots[k]
    is record k's table slot where select_steps wrote it here, 0 where it must be looked up.

    amaf: the playout's first-player map (consumed: the tree moves are written in on the way up) or an
    empty array when RAVE is off. Duplicated nodes also collect their increments in dt; rows whose delta
    reached N_sync(s,a) = min(N_sync_max, max(N_sync_min, alpha * (N_delta + N))) go to out_sync, owned
    nodes that reached N_dup visits to out_dup (slots). y[Y_TRACK] = 0 turns all that off (one rank);
    y[Y_DUP_DEPTH] limits duplication to nodes above that depth. Returns (sync rows, dup slots, missing).
    Compiled without reference counting, as select_steps."""
    r0 = game.reward(g, result)
    use_vl = p[P_VLOSS] > 0.0
    rave = p[P_RAVE] != 0.0 and amaf.shape[0] > 0
    n_dup = y[Y_NDUP]
    track = y[Y_TRACK] != 0.0
    key, stamp, meta, visits, value, n_children = t.key, t.stamp, t.meta, t.visits, t.value, t.n_children
    cm, cv, cw, av, aw, vl = t.child_move, t.child_visits, t.child_value, t.amaf_visits, t.amaf_value, t.vloss
    row_of, ready, dn, dw, dan, daw, node_n, node_w = (dt.row_of, dt.ready, dt.n, dt.w, dt.an, dt.aw, dt.node_n,
                                                       dt.node_w)
    ns = 0
    nd = 0
    missing = 0
    for k in range(n - 1, -1, -1):
        st = steps[k]
        j = st.idx
        pl = st.player
        if rave and j >= 0:
            amaf[st.action] = pl
        if st.rank != me:
            continue
        slot = pslots[k]
        if slot == 0:
            slot, _ = lookup_in(key, stamp, meta, visits, value, n_children, st.hash, False)
        if slot == 0:
            missing += 1
            continue
        r = r0 if pl == 0 else 1.0 - r0
        if j >= 0:
            atomic_add2(cv, slot, j, 1)
            atomic_add2(cw, slot, j, r)
            if use_vl:
                atomic_add2(vl, slot, j, -1)
        atomic_add(visits, slot, 1)
        atomic_add(value, slot, r)
        row = dup_row_in(row_of, ready, slot) if track else -1
        if rave and j >= 0:
            if row >= 0:
                # plain adds, as for the tree's own AMAF (uct.amaf_in): an atomic per child made an update
                # through the shared 19x19 root ~0.8 us dearer; with several workers a sample may rarely be
                # lost or sent twice, which a heuristic count tolerates
                amaf_shared_in(n_children, cm, av, aw, dan, daw, slot, row, amaf, pl, r)
            else:
                amaf_in(n_children, cm, av, aw, slot, amaf, pl, r)
        if not track:
            continue
        if row >= 0:
            atomic_add(node_n, row, 1)
            atomic_add(node_w, row, r)
            if j >= 0:
                atomic_add2(dn, row, j, 1)
                atomic_add2(dw, row, j, r)
                thr = min(y[Y_NSYNC_MAX], max(y[Y_NSYNC_MIN], y[Y_ALPHA] * cv[slot, j]))
                if dn[row, j] >= thr:
                    out_sync[ns] = row
                    ns += 1
        elif (visits[slot] >= n_dup and n_children[slot] > 0 and k < y[Y_DUP_DEPTH]
              and (n_ranks == 1 or owner(st.hash, n_ranks, local_slots) == me)):
            out_dup[nd] = slot
            nd += 1
    return ns, nd, missing


@njit(cache=True, nogil=True)
def add_path_vloss(t, steps, n, times):
    """`times` more virtual losses on every edge of steps[:n] (leaf parallelisation with several playouts
    from one leaf: each of their updates takes one away)."""
    for k in range(n):
        if steps[k].idx >= 0:
            slot, _ = lookup(t, steps[k].hash, False)
            if slot != 0:
                atomic_add2(t.vloss, slot, steps[k].idx, times)
