"""Calling a numba kernel without the dispatcher's per-call type resolution.

A dispatcher call works out the numba type of every argument before it can pick the compiled version; for a
transposition table (a NamedTuple of 13 arrays) that alone costs several microseconds, more than many work
packages spend computing. A role calls its kernels with arguments of the same types every time (its own
table, its own buffers), so `Bound` resolves the compiled entry point on the first call and calls it
directly afterwards. Callers must keep the argument types fixed (e.g. copy read-only message arrays first).
"""

from __future__ import annotations


class Bound:
    __slots__ = ("kernel", "entry")

    def __init__(self, kernel):
        self.kernel = kernel
        self.entry = None

    def __call__(self, *args):
        entry = self.entry
        if entry is not None:
            return entry(*args)
        result = self.kernel(*args)  # compiles or loads from the cache, checks the types
        try:
            sig = tuple(self.kernel.typeof_pyval(a) for a in args)
            self.entry = self.kernel.overloads[sig].entry_point
        except (AttributeError, KeyError):  # not a numba dispatcher (e.g. NUMBA_DISABLE_JIT): stay generic
            self.entry = self.kernel
        return result
