"""Capacity timelines: a pool of k identical servers (a rank's workers, an IO core, a NIC) as used capacity
per time bin, so that work can be booked ahead of time and out of order.

book(t, c) places c seconds of work that becomes ready at t, at most one server at a time (a package runs
on one core; book(t, c, n) books n such packages side by side): it takes what is left of each bin from t
on, up to one bin width per bin, until c is placed, and returns when it started and ended. Work booked
earlier has taken its capacity first, which is first-come-first-served in booking order; when a pool is
full, packages stretch over the bins and share it, as processor sharing would. Full bins are skipped with
path-compressed "next bin with room" links, so booking far behind a long queue costs about as much as
booking on an idle pool. The statistical fidelity (sim/statistical_kernel.py) books whole simulations at
once with this, instead of advancing per-core queues event by event.

The kernels work on many pools at once, kept in the caller's arrays: pool p's settings and sums are a row
of floats at F[pf:pf + N_PF] (PF_*), its bin indices a row of ints at I[pi:pi + N_PI] (PI_*), and its bins
a ring over absolute bins base .. base + len - 1 (bin x in slot x mod len) in UL[p] (used capacity) and
NL[p] (absolute index of a bin at or after this one that may have room). A booking beyond the ring doubles
it on the spot (typed lists let a kernel replace an array in place). `Pool` is one such pool on arrays of
its own, for Python callers.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.typed import List

PF_H, PF_CAP, PF_BOOKED, PF_FIN_SUM = range(4)  # bin width, capacity of one bin, work booked, work in past bins
N_PF = 4
PI_BASE, PI_FIN_BIN = range(2)  # oldest bin kept, first bin whose use is not final yet
N_PI = 2

_EPS = 1e-15


@njit(cache=True, nogil=True)
def _room(nxt, mask, b):
    """The first bin at or after absolute bin b that is not full (path-compressed links)."""
    root = b
    while True:
        r = nxt[root & mask]
        if r == root:
            break
        root = r
    while b != root:
        i = b & mask
        b2 = nxt[i]
        nxt[i] = root
        b = b2
    return root


@njit(cache=True, nogil=True)
def _grow(UL, NL, p, base, need):
    """Make pool p's ring hold bins base .. base + need (at least twice the size it had)."""
    used, nxt = UL[p], NL[p]
    ring = used.shape[0]
    new = 2 * ring
    while new <= need:
        new *= 2
    nu = np.zeros(new)
    nn = np.empty(new, np.int64)
    for x in range(base, base + new):
        j = x & (new - 1)
        if x < base + ring:
            nu[j] = used[x & (ring - 1)]
            nn[j] = nxt[x & (ring - 1)]
        else:
            nn[j] = x
    UL[p] = nu
    NL[p] = nn


@njit(cache=True, nogil=True)
def book(F, I, UL, NL, p, pf, pi, t, c, servers):
    """Book c server-seconds ready at t on at most `servers` servers of pool p; returns (start, end)."""
    hb = F[pf + PF_H]
    cap = F[pf + PF_CAP]
    base = I[pi + PI_BASE]
    b = int(t / hb)
    if b < base:  # before the trimmed past: start at the oldest bin kept
        b = base
        t = base * hb
    F[pf + PF_BOOKED] += c
    h = hb * servers
    used, nxt = UL[p], NL[p]
    if b - base >= used.shape[0]:
        _grow(UL, NL, p, base, b - base)
        used, nxt = UL[p], NL[p]
    mask = used.shape[0] - 1
    i = b & mask
    if nxt[i] == b:
        free = cap - used[i]
        lim = ((b + 1) * hb - t) * servers
        take = lim if lim < free else free
        if take >= c:
            used[i] += c
            if cap - used[i] <= _EPS:
                nxt[i] = b + 1
            return t, t + c / servers
        start = t
        used[i] += take
        rem = c - take
        if cap - used[i] <= _EPS:
            nxt[i] = b + 1
    else:
        start = -1.0
        rem = c
    while True:
        b += 1
        if b - base >= used.shape[0]:
            _grow(UL, NL, p, base, b - base)
            used, nxt = UL[p], NL[p]
            mask = used.shape[0] - 1
        i = b & mask
        if nxt[i] != b:
            b = _room(nxt, mask, b)  # links never point past the last bin in the ring + 1
            if b - base >= used.shape[0]:
                _grow(UL, NL, p, base, b - base)
                used, nxt = UL[p], NL[p]
                mask = used.shape[0] - 1
            i = b & mask
        free = cap - used[i]
        take = h if h < free else free
        if start < 0.0:
            start = b * hb
        if take >= rem:
            used[i] += rem
            if cap - used[i] <= _EPS:
                nxt[i] = b + 1
            return start, b * hb + rem / servers
        used[i] += take
        rem -= take
        if cap - used[i] <= _EPS:
            nxt[i] = b + 1


@njit(cache=True, nogil=True)
def used_until(F, I, UL, p, pf, pi, t):
    """Work done on pool p before t (server-seconds). t must not go back in time between calls."""
    used = UL[p]
    ring = used.shape[0]
    mask = ring - 1
    hb = F[pf + PF_H]
    base = I[pi + PI_BASE]
    b = int(t / hb)
    fb = I[pi + PI_FIN_BIN]
    if b > fb:
        s = 0.0
        lo = fb if fb > base else base
        hi = b if b < base + ring else base + ring
        for x in range(lo, hi):
            s += used[x & mask]
        F[pf + PF_FIN_SUM] += s
        I[pi + PI_FIN_BIN] = b
    part = 0.0
    if base <= b < base + ring:  # the current bin, pro rata
        f = (t - b * hb) / hb
        part = used[b & mask] * (f if f < 1.0 else 1.0)
    return F[pf + PF_FIN_SUM] + part


@njit(cache=True, nogil=True)
def trim(F, I, UL, NL, p, pf, pi, t):
    """Forget bins before t (nothing is booked before the current time), keeping their sum."""
    used_until(F, I, UL, p, pf, pi, t)
    used, nxt = UL[p], NL[p]
    ring = used.shape[0]
    mask = ring - 1
    base = I[pi + PI_BASE]
    fb = I[pi + PI_FIN_BIN]
    if fb <= base:
        return
    lo = base if base > fb - ring else fb - ring
    for x in range(lo, fb):  # the slot of bin x now holds bin x + ring: empty, with room
        i = x & mask
        used[i] = 0.0
        nxt[i] = x + ring
    I[pi + PI_BASE] = fb


@njit(cache=True)
def _rings(pools, ring):
    # Built in a cached kernel: a typed list filled from Python compiles its append in every process (~3 s)
    UL, NL = List(), List()
    for _ in range(pools):
        UL.append(np.zeros(ring))
        NL.append(np.arange(ring))
    return UL, NL


def new_rings(pools: int, ring: int) -> tuple[List, List]:
    """UL, NL for `pools` empty pools of `ring` bins each (a power of two)."""
    if ring < 1 or ring & (ring - 1):
        raise ValueError(f"ring: need a power of two, got {ring}")
    return _rings(pools, ring)


class Pool:
    """One pool of `servers` servers with bins of `bin_width` seconds, on arrays of its own."""

    def __init__(self, servers: int, bin_width: float, ring: int = 256):
        self.F = np.zeros(N_PF)
        self.F[PF_H] = bin_width
        self.F[PF_CAP] = servers * bin_width
        self.I = np.zeros(N_PI, dtype=np.int64)
        self.UL, self.NL = new_rings(1, ring)

    def book(self, t: float, c: float, servers: int = 1) -> tuple[float, float]:
        """Book c server-seconds ready at t on at most `servers` servers at once; returns (start, end)."""
        return book(self.F, self.I, self.UL, self.NL, 0, 0, 0, float(t), float(c), int(servers))

    def used_until(self, t: float) -> float:
        """Work done before t (server-seconds). t must not go back in time between calls."""
        return used_until(self.F, self.I, self.UL, 0, 0, 0, float(t))

    def trim(self, t: float) -> None:
        """Forget bins before t, keeping their sum."""
        trim(self.F, self.I, self.UL, self.NL, 0, 0, 0, float(t))
