"""The top of a distributed search tree as rows of the trace's `tree` table (model/trace.py).

The table has no parent pointers, so the walk goes down from the root, replaying moves to get each child's
hash, and reads each node on a rank that holds it (its owner, or any rank with a duplicate). With the
roles of every rank (loopback, simulator) the walk sees the whole top of the tree; the engine gives one
rank's role and gets what that rank holds (the duplicated top, and its own nodes below it).

A row per node: hash, parent (0 for the root), move (-1 for the root), depth, visits and wins of the move
into it (from the parent's statistics: the mover's view; the root's own for the root), owner, duplicated.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from model import game
from model.ownership import owner
from model.tt import lookup

COLUMNS = ("hash", "parent", "move", "depth", "visits", "wins", "owner", "duplicated")


def _holder(roles, h):
    """(role, slot) of a rank that holds node h, preferring one that may decide there."""
    fallback = None
    for r in roles:
        slot, _ = lookup(r.t, h, False)
        if slot == 0:
            continue
        if r.dt.row_of[slot] >= 0 or r.kernel_ranks == 1 or owner(h, r.kernel_ranks, r.local_slots) == r.rank:
            return r, slot
        fallback = fallback or (r, slot)
    return fallback if fallback and fallback[0].kernel_ranks == 1 else (None, 0)


def tree_rows(roles, max_depth: int = 3, max_nodes: int = 5000) -> dict[str, np.ndarray]:
    """Columns of the tree snapshot, breadth first, at most max_nodes rows down to max_depth."""
    first = roles[0]
    g = first.g
    M = first.kernel_ranks
    rows: dict[str, list] = {c: [] for c in COLUMNS}

    def emit(h, parent, move, depth, visits, wins, dup):
        rows["hash"].append(h)
        rows["parent"].append(parent)
        rows["move"].append(move)
        rows["depth"].append(depth)
        rows["visits"].append(visits)
        rows["wins"].append(wins)
        rows["owner"].append(owner(np.uint64(h), M, first.local_slots) if M > 1 else 0)
        rows["duplicated"].append(dup)

    root = np.asarray(first.root)
    h0 = np.uint64(game.hash(g, root))
    queue = deque([(root, h0, 0)])
    role, slot = _holder(roles, h0)
    if role is None:
        return {c: np.asarray(v) for c, v in rows.items()}
    emit(int(h0), 0, -1, 0, int(role.t.visits[slot]), float(role.t.value[slot]), bool(role.dt.row_of[slot] >= 0))
    while queue and len(rows["hash"]) < max_nodes:
        s, h, depth = queue.popleft()
        role, slot = _holder(roles, h)
        if role is None or depth >= max_depth:
            continue
        t = role.t
        for j in range(max(int(t.n_children[slot]), 0)):
            n = int(t.child_visits[slot, j])
            if n == 0:
                continue
            c = s.copy()
            move = int(t.child_move[slot, j])
            if not game.play(g, c, move):
                continue
            hc = np.uint64(game.hash(g, c))
            holder, cslot = _holder(roles, hc)
            dup = bool(holder is not None and holder.dt.row_of[cslot] >= 0)
            emit(int(hc), int(h), move, depth + 1, n, float(t.child_value[slot, j]), dup)
            if len(rows["hash"]) >= max_nodes:
                break
            queue.append((c, hc, depth + 1))
    out = {c: np.asarray(v) for c, v in rows.items()}
    out["hash"] = out["hash"].astype(np.uint64)
    out["parent"] = out["parent"].astype(np.uint64)
    return out
