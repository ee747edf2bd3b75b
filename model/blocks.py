"""Arrays that a kernel reads at the same index, carved from one zeroed block at spread offsets.

Each large numpy array starts a fresh mapping, so separate arrays of one row length begin at the same
address modulo 4 KiB, and a node's row of each lands in the same L1 cache sets. A UCT step reads six such
rows of a node (child visits, values, AMAF counts, virtual losses, priors) and its AMAF update stores to one
row just before it loads the next at the same low twelve address bits, which the core first takes for the
same address (4K aliasing). `treesplit bench kernels --passes` on the 2-core AMD EPYC VM, 19x19 rows of
361 children: an AMAF pass over nodes in cache 0.61-0.67 us with the arrays aligned alike, 0.36-0.44 us
spread apart; out of cache 0.97-1.06 and 0.76-0.99 us (three runs).
"""

from __future__ import annotations

import mmap

import numpy as np

PAGE = 4096
LINE = 64


def spread_zeros(specs: list[tuple[tuple[int, ...], type]], huge_pages: bool = True) -> list[np.ndarray]:
    """Zeroed C-contiguous arrays of the given (shape, dtype)s, in one block, the i-th of n starting at
    i/n of the way round a page (rounded to a cache line): arrays read together should be listed apart.
    The block's pages are touched only when used. huge_pages: as np.zeros allocates (numpy asks for
    transparent huge pages for large arrays: fewer TLB misses over a table read all over); False: 4 KiB
    pages, for a block used sparsely, where the first touch of each 2 MiB page would zero all of it."""
    sizes = [int(np.prod(shape, dtype=np.int64)) * np.dtype(dt).itemsize for shape, dt in specs]
    n = len(specs)
    total = sum(sizes) + (n + 1) * PAGE
    block = np.zeros(total, np.uint8) if huge_pages else small_pages(total)
    addr = block.__array_interface__["data"][0]
    out, at = [], 0
    for i, ((shape, dt), size) in enumerate(zip(specs, sizes)):
        want = (i * PAGE // n) // LINE * LINE
        at += (want - (addr + at)) % PAGE
        out.append(block[at:at + size].view(dt).reshape(shape))
        at += size
    return out


def small_pages(n: int) -> np.ndarray:
    """n zeroed bytes in an anonymous mapping that asks for no transparent huge pages, each 4 KiB page
    zeroed by the kernel when first touched (a huge page's first touch zeroes 2 MiB: 0.5-1 ms on the VM)."""
    m = mmap.mmap(-1, max(int(n), 1))
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        m.madvise(mmap.MADV_NOHUGEPAGE)
    return np.frombuffer(m, np.uint8)
