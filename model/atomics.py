"""Atomic operations on numpy array elements for numba kernels (numba has none for the CPU).

Worker threads share one transposition table without locks (tree parallelization, Schaefers 2014, 4.2.3); the
few updates that must not be lost (visit counts, value sums, virtual loss, slot claims) go through these
LLVM atomics. Each takes an array, one or two indices (no bounds check, no negative indices) and values
cast to the array's dtype.
"""

from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _pointer(context, builder, arr_t, arr, idx_types, idx_values):
    ary = context.make_array(arr_t)(context, builder, arr)
    ids = [context.cast(builder, v, t, types.intp) for t, v in zip(idx_types, idx_values)]
    return cgutils.get_item_pointer(context, builder, arr_t, ary, ids, wraparound=False)


def _rmw(n_idx):
    def typer(typingctx, arr, *rest):
        if not isinstance(arr, types.Array) or arr.ndim != n_idx or len(rest) != n_idx + 1:
            return None
        op = "fadd" if isinstance(arr.dtype, types.Float) else "add"

        def codegen(context, builder, sig, args):
            ptr = _pointer(context, builder, sig.args[0], args[0], sig.args[1:-1], args[1:-1])
            v = context.cast(builder, args[-1], sig.args[-1], sig.args[0].dtype)
            return builder.atomic_rmw(op, ptr, v, "seq_cst")

        return arr.dtype(arr, *rest), codegen

    return typer


@intrinsic
def atomic_add(typingctx, arr, i, val):
    """arr[i] += val atomically; returns the old value."""
    return _rmw(1)(typingctx, arr, i, val)


@intrinsic
def atomic_add2(typingctx, arr, i, j, val):
    """arr[i, j] += val atomically; returns the old value."""
    return _rmw(2)(typingctx, arr, i, j, val)


@intrinsic
def atomic_cas(typingctx, arr, i, old, new):
    """If arr[i] == old, set it to new; returns True when it did (compare-and-swap, sequentially consistent)."""
    if not isinstance(arr, types.Array) or arr.ndim != 1:
        return None

    def codegen(context, builder, sig, args):
        ptr = _pointer(context, builder, sig.args[0], args[0], sig.args[1:2], args[1:2])
        o = context.cast(builder, args[2], sig.args[2], sig.args[0].dtype)
        n = context.cast(builder, args[3], sig.args[3], sig.args[0].dtype)
        return builder.extract_value(builder.cmpxchg(ptr, o, n, "seq_cst", "seq_cst"), 1)

    return types.boolean(arr, i, old, new), codegen


@intrinsic
def atomic_load(typingctx, arr, i):
    """arr[i], read so the compiler can neither cache nor reorder it (acquire)."""
    if not isinstance(arr, types.Array) or arr.ndim != 1:
        return None

    def codegen(context, builder, sig, args):
        ptr = _pointer(context, builder, sig.args[0], args[0], sig.args[1:2], args[1:2])
        align = context.get_abi_sizeof(context.get_value_type(sig.args[0].dtype))
        return builder.load_atomic(ptr, "acquire", align)

    return arr.dtype(arr, i), codegen


@intrinsic
def atomic_store(typingctx, arr, i, val):
    """arr[i] = val after every earlier write of this thread is visible (release)."""
    if not isinstance(arr, types.Array) or arr.ndim != 1:
        return None

    def codegen(context, builder, sig, args):
        ptr = _pointer(context, builder, sig.args[0], args[0], sig.args[1:2], args[1:2])
        v = context.cast(builder, args[2], sig.args[2], sig.args[0].dtype)
        align = context.get_abi_sizeof(context.get_value_type(sig.args[0].dtype))
        builder.store_atomic(v, ptr, "release", align)
        return context.get_dummy_value()

    return types.none(arr, i, val), codegen
