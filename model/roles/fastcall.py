"""Calling a numba kernel without the dispatcher's per-call type resolution.

A dispatcher call works out the numba type of every argument before it can pick the compiled version; for a
transposition table (a NamedTuple of 13 arrays) that alone costs several microseconds, more than many work
packages spend computing. A role calls its kernels with arguments of the same types every time (its own
table, its own buffers), so `Bound` resolves the compiled entry point on the first call and calls it
directly afterwards. Callers must keep the argument types fixed (e.g. copy read-only message arrays first).

Resolving is itself slow (numba types every argument twice), and a simulated cluster has thousands of roles
binding the same kernels to arguments of the same types; so entry points are also kept per kernel and
argument fingerprint (`_fingerprint`: what numba's typeof looks at, read without typing), and a Bound whose
arguments match one already resolved takes it from there.
"""

from __future__ import annotations

import numpy as np

_INT64_MAX = (1 << 63) - 1
_RESOLVED: dict[tuple, object] = {}  # (kernel id, argument fingerprints) -> entry point


def _fingerprint(a):
    """What numba's typeof of `a` depends on, as a hashable value; None for values not covered here."""
    t = type(a)
    if t is np.ndarray:
        f = a.flags
        d = a.dtype
        return (d, d.isalignedstruct, a.ndim, f.c_contiguous, f.f_contiguous, f.writeable, f.aligned)
    if t is int:
        return (int, a > _INT64_MAX or a < -_INT64_MAX - 1)  # numba types big ints differently
    if t is float or t is bool or isinstance(a, np.number) or t is np.bool_:
        return t
    if isinstance(a, tuple):
        parts = tuple(_fingerprint(x) for x in a)
        if None in parts:
            return None
        return (t, parts)  # a NamedTuple's type is its class and its fields' types
    return None


class Bound:
    __slots__ = ("kernel", "entry")

    def __init__(self, kernel):
        self.kernel = kernel
        self.entry = None

    def __call__(self, *args):
        entry = self.entry
        if entry is not None:
            return entry(*args)
        fps = tuple(_fingerprint(a) for a in args)
        key = None if None in fps else (id(self.kernel), fps)
        if key is not None:
            entry = _RESOLVED.get(key)
            if entry is not None:
                self.entry = entry
                return entry(*args)
        result = self.kernel(*args)  # compiles or loads from the cache, checks the types
        try:
            sig = tuple(self.kernel.typeof_pyval(a) for a in args)
            self.entry = self.kernel.overloads[sig].entry_point
            if key is not None:
                _RESOLVED[key] = self.entry
        except (AttributeError, KeyError):  # not a numba dispatcher (e.g. NUMBA_DISABLE_JIT): stay generic
            self.entry = self.kernel
        return result
