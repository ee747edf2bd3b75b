"""Interval arithmetic over time bins, exact and vectorised (no Python loop per package)."""

from __future__ import annotations

import numpy as np


def busy_integral(t_start: np.ndarray, t_end: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Busy time in [0, at[i]] summed over the intervals [t_start, t_end). The integral of the number of
    open intervals is piecewise linear between interval ends, so interpolating it at `at` is exact."""
    if len(t_start) == 0:
        return np.zeros(len(at))
    ev_t = np.concatenate([t_start, t_end])
    ev_d = np.concatenate([np.ones(len(t_start)), -np.ones(len(t_end))])
    order = np.argsort(ev_t, kind="stable")
    ev_t, ev_d = ev_t[order], ev_d[order]
    level = np.cumsum(ev_d)
    integ = np.concatenate(([0.0], np.cumsum(level[:-1] * np.diff(ev_t))))
    return np.interp(at, ev_t, integ, left=0.0, right=integ[-1])


def open_at(t_start: np.ndarray, t_end: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Number of intervals with t_start <= at[i] < t_end."""
    return (np.searchsorted(np.sort(t_start), at, side="right")
            - np.searchsorted(np.sort(t_end), at, side="right"))


def nice_step(span: float, max_bins: int = 300, minimum: float = 0.0) -> float:
    """The smallest 1/2/5 x 10^k step >= max(span / max_bins, minimum)."""
    want = max(span / max_bins, minimum, 1e-9)
    k = np.floor(np.log10(want))
    for m in (1, 2, 5, 10):
        step = m * 10.0**k
        if step >= want * (1 - 1e-9):
            return float(step)
    return float(10.0 ** (k + 1))


def busy_per_bin(group: np.ndarray, t_start: np.ndarray, t_end: np.ndarray, n_groups: int,
                 edges: np.ndarray) -> np.ndarray:
    """(n_groups, T) busy time per group and equal-width bin from intervals [t_start, t_end), exact and
    without sorting: each interval adds its partial first and last bins directly and its whole bins in
    between through a difference array."""
    T = len(edges) - 1
    b = float(edges[1] - edges[0]) if T else 1.0
    out = np.zeros((n_groups, T))
    if len(t_start) == 0 or T == 0:
        return out
    s = np.clip(t_start, 0.0, T * b)
    e = np.clip(np.maximum(t_end, t_start), 0.0, T * b)
    bs = np.minimum((s / b).astype(np.int64), T - 1)
    be = np.minimum((e / b).astype(np.int64), T - 1)
    g = group.astype(np.int64) * T
    same = bs == be
    size = n_groups * T
    acc = np.zeros(size)  # (bincount of nothing is an int array: start from floats)
    acc += np.bincount(g[same] + bs[same], weights=(e - s)[same], minlength=size)
    d = ~same
    acc += np.bincount(g[d] + bs[d], weights=((bs[d] + 1) * b - s[d]), minlength=size)
    acc += np.bincount(g[d] + be[d], weights=(e[d] - be[d] * b), minlength=size)
    # whole bins bs+1 .. be-1: +b from bs+1, -b from be (per group row, so the cumsum stays in its row)
    inner = d & (be > bs + 1)
    diff = np.bincount(g[inner] + bs[inner] + 1, minlength=size) - np.bincount(g[inner] + be[inner], minlength=size)
    out = acc.reshape(n_groups, T) + b * np.cumsum(diff.reshape(n_groups, T), axis=1)
    return out
