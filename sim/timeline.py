"""Capacity timelines: a pool of k identical servers (a rank's workers, an IO core, a NIC) as used capacity
per time bin, so that work can be booked ahead of time and out of order.

book(t, c) places c seconds of work that becomes ready at t, at most one server at a time (a package runs
on one core; book(t, c, n) books n such packages side by side): it takes what is left of each bin from t on, up to one bin width per bin, until c is placed,
and returns when it started and ended. Work booked earlier has taken its capacity first, which is
first-come-first-served in booking order; when a pool is full, packages stretch over the bins and share
it, as processor sharing would. Full bins are skipped with path-compressed "next bin with room" links, so
booking far behind a long queue costs about as much as booking on an idle pool. The statistical fidelity
books whole simulations at once with this, instead of advancing per-core queues event by event: its
Python reference (sim/statistical.py's ReferenceStatWorld) with this class, its numba kernel
(sim/statistical_kernel.py) with the same algorithm on rings of bins.
"""

from __future__ import annotations

_EPS = 1e-15
_GROW = 512


class Pool:
    __slots__ = ("h", "cap", "used", "nxt", "base", "booked", "fin_bin", "fin_sum")

    def __init__(self, servers: int, bin_width: float):
        self.h = bin_width
        self.cap = servers * bin_width   # capacity of one bin
        self.used: list[float] = []      # used capacity of bins base, base+1, ...
        self.nxt: list[int] = []         # absolute index of a bin at or after this one that may have room
        self.base = 0
        self.booked = 0.0                # all work booked so far
        self.fin_bin = 0                 # bins before this one are in the past: their use is final
        self.fin_sum = 0.0               # and sums to this

    def _grow(self, upto: int) -> None:
        n = len(self.used)
        if upto >= n:
            k = upto - n + _GROW
            self.used.extend([0.0] * k)
            a = self.base + n
            self.nxt.extend(range(a, a + k))

    def _room(self, b: int) -> int:
        """The first bin at or after absolute bin b that is not full."""
        nxt, base = self.nxt, self.base
        root = b
        while True:
            i = root - base
            if i >= len(nxt):
                self._grow(i)
                nxt = self.nxt
            r = nxt[i]
            if r == root:
                break
            root = r
        while b != root:  # path compression
            i = b - base
            b, nxt[i] = nxt[i], root
        return root

    def book(self, t: float, c: float, servers: int = 1) -> tuple[float, float]:
        """Book c server-seconds ready at t on at most `servers` servers at once; returns (start, end)."""
        # most bookings fit in the rest of their first bin: settle those with as few steps as possible
        hb = self.h
        b = int(t / hb)
        i = b - self.base
        used = self.used
        if 0 <= i < len(used) and self.nxt[i] == b:
            cap = self.cap
            if cap - used[i] >= c and ((b + 1) * hb - t) * servers >= c:
                used[i] += c
                self.booked += c
                if cap - used[i] <= _EPS:
                    self.nxt[i] = b + 1
                return t, t + c / servers
        return self._book(t, c, servers)

    def _book(self, t: float, c: float, servers: int) -> tuple[float, float]:
        h = self.h * servers
        hb = self.h
        cap = self.cap
        b = int(t / hb)
        base = self.base
        if b < base:  # before the trimmed past: start at the oldest bin kept
            b, t = base, base * hb
        self.booked += c
        used = self.used
        nxt = self.nxt
        i = b - base
        if i >= len(used):
            self._grow(i)
        # the first bin: only the part after t
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
        # then whole bins, skipping the full ones
        while True:
            b += 1
            i = b - base
            if i >= len(used):
                self._grow(i)
                used, nxt = self.used, self.nxt
            if nxt[i] != b:
                b = self._room(b)
                i = b - base
                used, nxt = self.used, self.nxt
            free = cap - used[i]
            take = h if h < free else free
            if start < 0:
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

    def used_until(self, t: float) -> float:
        """Work done before t (server-seconds). t must not go back in time between calls."""
        b = int(t / self.h)
        if b > self.fin_bin:
            i0 = self.fin_bin - self.base
            self.fin_sum += sum(self.used[max(0, i0):max(0, b - self.base)])
            self.fin_bin = b
        i = b - self.base
        part = 0.0
        if 0 <= i < len(self.used):  # the current bin, pro rata
            part = self.used[i] * min(1.0, (t - b * self.h) / self.h)
        return self.fin_sum + part

    def trim(self, t: float) -> None:
        """Forget bins before t (nothing is booked before the current time), keeping their sum."""
        self.used_until(t)
        k = self.fin_bin - self.base - 1
        if k > 4096:
            del self.used[:k]
            del self.nxt[:k]
            self.base += k
