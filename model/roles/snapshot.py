"""The top of a distributed search tree as rows of the trace's `tree` table (model/trace.py), for both runtimes.

A node is read as a record, [hash, visits, value, [moves], [child visits], [child values], duplicated] (plain
Python values: the engine's ranks send theirs to rank 0 in their final report), from a rank that may decide
there: its owner, a rank holding a duplicate, or any rank when the algorithm does not split the tree
(kernel_ranks 1). Where several ranks hold one, the lowest rank's copy speaks: after the final synchronisation
the copies of a duplicated node are equal; before it (the simulator's snapshots during a run) they are not.

The table has no parent pointers, so link() walks down from the root, replaying moves to get each child's
hash: the simulator reads records straight from every search rank's table (tree_rows), the engine from the
most visited nodes each rank reported (held_nodes, merge_records). Given one rank's role, tree_rows shows what
that rank holds (the duplicated top and its own nodes below it).

A row per node, breadth first, each node once (a transposition under the first parent reached): hash,
parent (0 for the root), move (-1 for the root), depth, visits and wins of the move into it (from the
parent's statistics: the mover's view; the root's own for the root), owner, duplicated. Children with visits
that no rank holds (or reported) are rows without children of their own.
"""

from __future__ import annotations

from collections import deque
from typing import Callable, Iterable

import numpy as np

from model import game
from model.ownership import owner
from model.tt import lookup

COLUMNS = ("hash", "parent", "move", "depth", "visits", "wins", "owner", "duplicated")
DTYPES = {"hash": np.uint64, "parent": np.uint64, "move": np.int32, "depth": np.int32, "visits": np.int64,
          "wins": np.float64, "owner": np.int32, "duplicated": bool}


def _may_decide(role, slot: int, h) -> bool:
    M = getattr(role, "kernel_ranks", 1)
    dt = getattr(role, "dt", None)
    return (M == 1 or (dt is not None and dt.row_of[slot] >= 0)
            or owner(np.uint64(h), M, role.local_slots) == role.rank)


def _record(role, slot: int) -> list:
    t, dt = role.t, getattr(role, "dt", None)
    nc = max(int(t.n_children[slot]), 0)
    cv = t.child_visits[slot, :nc]
    keep = np.flatnonzero(cv > 0)
    return [int(t.key[slot]), int(t.visits[slot]), float(t.value[slot]),
            t.child_move[slot, keep].astype(int).tolist(), cv[keep].astype(int).tolist(),
            t.child_value[slot, keep].astype(float).tolist(), bool(dt is not None and dt.row_of[slot] >= 0)]


def _keep(first: list | None, e: list) -> list:
    """The first copy of a node (the lowest rank's), duplicated if either copy is."""
    if first is None:
        return e
    return first if first[6] or not e[6] else [*first[:6], True]


def held_nodes(role, limit: int) -> list[list]:
    """Records of the `limit` most visited nodes of the current search that this rank may decide at."""
    t = role.t
    live = np.flatnonzero((t.stamp == t.meta[0]) & (t.visits > 0))
    M = getattr(role, "kernel_ranks", 1)
    if M > 1:  # _may_decide over the whole table at once (a GTP move's report: ~9 ms slot by slot)
        mine = (t.key[live] // np.uint64(role.local_slots)) % np.uint64(M) == np.uint64(role.rank)
        dt = getattr(role, "dt", None)
        live = live[mine | (dt.row_of[live] >= 0) if dt is not None else mine]
    if len(live) > limit:
        live = live[np.argsort(t.visits[live], kind="stable")[-limit:]]
    return [_record(role, s) for s in live.tolist()]


def merge_records(per_rank: Iterable[Iterable[list]]) -> dict[int, list]:
    """hash -> record, over the records of every rank (in rank order)."""
    nodes: dict[int, list] = {}
    for records in per_rank:
        for e in records:
            nodes[e[0]] = _keep(nodes.get(e[0]), e)
    return nodes


class _Tables:
    """Records read on demand from the roles' tables (a snapshot needs the top of the tree only)."""

    def __init__(self, roles):
        self.roles = roles

    def get(self, h: int) -> list | None:
        best = None
        for r in self.roles:
            slot, _ = lookup(r.t, np.uint64(h), False)
            if slot != 0 and _may_decide(r, slot, h):
                best = _keep(best, _record(r, slot))
        return best


def link(g, root, nodes: Callable[[int], list | None] | dict, kernel_ranks: int, local_slots: int | None,
         max_depth: int, max_nodes: int) -> dict[str, np.ndarray]:
    """Columns of the snapshot below root (breadth first, at most max_nodes rows down to max_depth);
    nodes: hash -> record (a dict, or anything with get). Owners follow the hash partition of kernel_ranks
    ranks of local_slots slots each (0 everywhere for one rank or an unknown table size)."""
    get = nodes.get if hasattr(nodes, "get") else nodes
    root = np.asarray(root)
    rows: dict[str, list] = {c: [] for c in COLUMNS}
    split = kernel_ranks > 1 and bool(local_slots)

    def emit(h, parent, move, depth, visits, wins, dup):
        for c, v in zip(COLUMNS, (h, parent, move, depth, visits, wins,
                                  int(owner(np.uint64(h), kernel_ranks, local_slots)) if split else 0, dup)):
            rows[c].append(v)

    h0 = int(game.hash(g, root))
    top = get(h0)
    if top is not None and max_nodes > 0:
        emit(h0, 0, -1, 0, top[1], top[2], top[6])
        queue = deque([(root, h0, 0, top)])
        seen = {h0}
    else:
        queue = deque()
    while queue and len(rows["hash"]) < max_nodes:
        s, h, depth, e = queue.popleft()
        if depth >= max_depth:
            continue
        for move, n, w in zip(e[3], e[4], e[5]):
            c = s.copy()
            if not game.play(g, c, np.int64(move)):
                continue
            hc = int(game.hash(g, c))
            if hc in seen:
                continue
            seen.add(hc)
            ec = get(hc)
            emit(hc, h, int(move), depth + 1, int(n), float(w), bool(ec is not None and ec[6]))
            if len(rows["hash"]) >= max_nodes:
                break
            if ec is not None:
                queue.append((c, hc, depth + 1, ec))
    return {c: np.array(v, dtype=DTYPES[c]) for c, v in rows.items()}


def tree_rows(roles, max_depth: int = 3, max_nodes: int = 5000) -> dict[str, np.ndarray]:
    """The snapshot read from the tables of these search roles (every rank's, or one rank's part)."""
    first = roles[0]
    return link(first.g, first.root, _Tables(roles), first.kernel_ranks, first.local_slots, max_depth, max_nodes)


def principal_variation(g, root, nodes: dict[int, list], first: int, max_len: int = 20) -> list[int]:
    """The move `first`, then the most visited child of each node after it (records: hash -> record)."""
    if first < 0:
        return []
    pv, s = [first], np.array(root, copy=True)
    if not game.play(g, s, np.int64(first)):
        return pv
    while len(pv) < max_len:
        e = nodes.get(int(game.hash(g, s)))
        if e is None or not e[4]:
            break
        m = e[3][int(np.argmax(e[4]))]
        if not game.play(g, s, np.int64(m)):
            break
        pv.append(int(m))
    return pv
