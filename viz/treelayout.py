"""Tree snapshots as arrays: parent links, principal variation, depth/branching profiles, and a layered
('tidy') layout of the most visited top of the tree. All numpy over whole levels, no object per node, so a
snapshot of 10^5 nodes takes milliseconds."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass
class TreeIndex:
    hash: np.ndarray
    parent: np.ndarray  # row of the parent, -1 for the root or a parent missing from the snapshot
    move: np.ndarray
    visits: np.ndarray
    wins: np.ndarray
    owner: np.ndarray
    duplicated: np.ndarray
    root: int
    level: np.ndarray  # moves from the root along parent links, -1 if not reachable from the root
    children: np.ndarray  # number of children in the snapshot

    def __len__(self) -> int:
        return len(self.hash)


def index_tree(df: pd.DataFrame, max_level: int = 64) -> TreeIndex:
    """Resolve parent hashes to rows and levels; the root is the most visited of the shallowest nodes."""
    h = df["hash"].to_numpy()
    n = len(h)
    order = np.argsort(h, kind="stable")
    sh = h[order]
    ph = df["parent"].to_numpy()
    pos = np.clip(np.searchsorted(sh, ph), 0, max(n - 1, 0))
    parent = np.where((n > 0) & (sh[pos] == ph), order[pos], -1) if n else np.zeros(0, np.int64)
    depth = df["depth"].to_numpy()
    visits = df["visits"].to_numpy().astype(np.int64)
    if n:
        shallow = np.flatnonzero(depth == depth.min())
        root = int(shallow[np.argmax(visits[shallow])])
        parent[root] = -1
    else:
        root = -1
    level = np.full(n, -1, np.int64)
    if n:
        level[root] = 0
        has_parent = parent >= 0
        for step in range(1, max_level + 1):
            new = (level < 0) & has_parent & (level[np.maximum(parent, 0)] == step - 1)
            if not new.any():
                break
            level[new] = step
    children = np.bincount(parent[parent >= 0], minlength=n) if n else np.zeros(0, np.int64)
    return TreeIndex(h, parent, df["move"].to_numpy(), visits, df["wins"].to_numpy(), df["owner"].to_numpy(),
                     df["duplicated"].to_numpy().astype(bool), root, level, children)


def best_children(ti: TreeIndex) -> np.ndarray:
    """For each row, its most visited child's row (-1 for a leaf)."""
    n = len(ti)
    best = np.full(n, -1, np.int64)
    kids = np.flatnonzero((ti.parent >= 0) & (ti.level > 0))
    if len(kids):
        o = kids[np.lexsort((-ti.visits[kids], ti.parent[kids]))]
        first = np.ones(len(o), bool)
        first[1:] = ti.parent[o[1:]] != ti.parent[o[:-1]]
        best[ti.parent[o[first]]] = o[first]
    return best


def principal_variation(ti: TreeIndex, limit: int = 64) -> list[int]:
    """Rows from the root down, following the most visited child each time."""
    if ti.root < 0:
        return []
    best = best_children(ti)
    pv, i = [ti.root], best[ti.root]
    while i >= 0 and len(pv) < limit:
        pv.append(int(i))
        i = best[i]
    return pv


def profiles(ti: TreeIndex) -> dict[str, np.ndarray]:
    """Per level: nodes, visits, duplicated nodes, and the mean branching of the nodes that have children."""
    ok = ti.level >= 0
    lv = ti.level[ok]
    L = int(lv.max()) + 1 if len(lv) else 0
    nodes = np.bincount(lv, minlength=L)
    inner = ok & (ti.children > 0)
    n_inner = np.bincount(ti.level[inner], minlength=L)
    kids = np.bincount(ti.level[inner], weights=ti.children[inner], minlength=L)
    return dict(depth=np.arange(L), nodes=nodes, visits=np.bincount(lv, weights=ti.visits[ok], minlength=L),
                duplicated=np.bincount(lv, weights=ti.duplicated[ok], minlength=L).astype(np.int64),
                branching=np.divide(kids, n_inner, out=np.zeros(L), where=n_inner > 0))


def select_top(ti: TreeIndex, max_level: int, max_nodes: int) -> np.ndarray:
    """Rows to draw: reachable within max_level, the max_nodes most visited, closed under parents."""
    cand = np.flatnonzero((ti.level >= 0) & (ti.level <= max_level))
    if len(cand) > max_nodes:
        cand = cand[np.argpartition(-ti.visits[cand], max_nodes - 1)[:max_nodes]]
    keep = np.zeros(len(ti), bool)
    keep[cand] = True
    keep[ti.root] = True
    for lv in range(1, max_level + 1):  # a node whose parent was cut is cut too
        at = np.flatnonzero(keep & (ti.level == lv))
        keep[at] = keep[ti.parent[at]]
    return np.flatnonzero(keep)


def layered_positions(ti: TreeIndex, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tidy layered layout of the drawn rows: y = -level; each node is centred over the leaves below it,
    siblings ordered by visits (most visited first, on the left). x is in [0, 1]."""
    n = len(rows)
    if n == 0:
        return np.zeros(0), np.zeros(0)
    loc = np.full(len(ti), -1, np.int64)
    loc[rows] = np.arange(n)
    lp = np.where(ti.parent[rows] >= 0, loc[np.maximum(ti.parent[rows], 0)], -1)
    lv = ti.level[rows]
    vis = ti.visits[rows]
    leaves = np.zeros(n)
    below = np.zeros(n)
    for level in range(int(lv.max()), -1, -1):  # bottom-up: leaves under each node
        at = np.flatnonzero(lv == level)
        leaves[at] = np.maximum(below[at], 1.0)
        has = at[lp[at] >= 0]
        np.add.at(below, lp[has], leaves[has])
    start = np.zeros(n)
    for level in range(1, int(lv.max()) + 1):  # top-down: children share their parent's span in order
        at = np.flatnonzero(lv == level)
        at = at[np.lexsort((-vis[at], lp[at]))]
        lw = leaves[at]
        cs = np.cumsum(lw) - lw
        first = np.ones(len(at), bool)
        first[1:] = lp[at[1:]] != lp[at[:-1]]
        group_start = np.maximum.accumulate(np.where(first, np.arange(len(at)), 0))
        start[at] = start[lp[at]] + cs - cs[group_start]
    total = max(leaves[lv == 0].sum(), 1.0)
    return (start + leaves / 2) / total, -lv.astype(np.float64)
