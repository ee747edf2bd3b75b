"""The CPU's cycle counter, for stamping the parts of a work package in a trace.

model/ keeps no clock (docs/ARCHITECTURE.md) and nothing here breaks that: no decision in a kernel or a role depends on
what `cycles()` returns. A kernel that runs several parts of a package in one call
(model/roles/steps.run_fused) writes the counter after each part when its runtime records a trace; the
runtime knows its own clock at the call's start and end and places the parts in between in proportion to the
counts (engine/mpi/recorder.run_recorded). Where LLVM has no cycle counter for the CPU it reads 0 (`counting()` is False)
and the parts run one call each instead.
"""

from __future__ import annotations

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def _readcyclecounter(typingctx):
    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.IntType(64), [])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.readcyclecounter")
        return builder.call(fn, [])

    return types.int64(), codegen


@njit(cache=True, nogil=True)
def cycles():
    return _readcyclecounter()


def counting() -> bool:
    """Whether the counter moves on this CPU."""
    a = cycles()
    b = a
    for _ in range(1000):
        b = cycles()
        if b != a:
            break
    return b != a
