"""Arrays that a kernel reads at the same index, carved from one zeroed block at spread offsets.

Each large numpy array starts a fresh mapping, so separate arrays of one row length begin at the same
address modulo 4 KiB, and a node's row of each lands in the same L1 cache sets. A UCT step reads six such
rows of a node (child visits, values, AMAF counts, virtual losses, priors) and its AMAF update stores to one
row just before it loads the next at the same low twelve address bits, which the core first takes for the
same address (4K aliasing). `treesplit bench kernels --passes` on the 2-core AMD EPYC VM, 19x19 rows of
361 children: an AMAF pass over nodes in cache 0.86 us with the arrays aligned alike, 0.43 us spread apart;
out of cache 2.62 and 2.28 us (a whole sequential 19x19 search: ~3% more simulations a CPU-second).
"""

from __future__ import annotations

import numpy as np

PAGE = 4096
LINE = 64


def spread_zeros(specs: list[tuple[tuple[int, ...], type]]) -> list[np.ndarray]:
    """Zeroed C-contiguous arrays of the given (shape, dtype)s, in one block, the i-th of n starting at
    i/n of the way round a page (rounded to a cache line): arrays read together should be listed apart.
    The block is allocated as np.zeros does, so its pages are touched only when used."""
    sizes = [int(np.prod(shape, dtype=np.int64)) * np.dtype(dt).itemsize for shape, dt in specs]
    n = len(specs)
    block = np.zeros(sum(sizes) + (n + 1) * PAGE, np.uint8)
    addr = block.__array_interface__["data"][0]
    out, at = [], 0
    for i, ((shape, dt), size) in enumerate(zip(specs, sizes)):
        want = (i * PAGE // n) // LINE * LINE
        at += (want - (addr + at)) % PAGE
        out.append(block[at:at + size].view(dt).reshape(shape))
        at += size
    return out
