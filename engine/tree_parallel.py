"""The `tree` algorithm: T threads of one process run whole simulations on one shared table.

Tree parallelization with virtual loss (Chaslot et al.; Schaefers 2014, 4.1): every thread runs model/uct.py's
fused kernel, which releases the GIL, on the same transposition table. There are no locks: slot claims
and node expansion use compare-and-swap (model/tt.py), visit counts, value sums and virtual losses use
atomic adds, so no update of those is lost and root visits equal the simulations run. Only AMAF
statistics use plain adds (an atomic per child per node would cost more than the rare lost sample).
Each thread has its own random stream and scratch buffers; simulations are handed out in chunks.
"""

from __future__ import annotations

import threading

import numpy as np

from engine.sequential import CHUNK_SECONDS, MAX_CHUNK, Position, SearchConfig, SequentialSearcher
from engine.timecontrol import Budget
from model import uct
from model.config import check


def _own_cache_line(rng: np.ndarray) -> np.ndarray:
    """The generator state moved into the middle of a 128-byte buffer. A playout writes it at every
    random draw; two tiny arrays allocated together can share a cache line, and threads writing to one
    line each turn would bounce it between cores (false sharing) hundreds of times per playout."""
    buf = np.zeros(16, np.uint64)
    buf[8] = rng[0]
    return buf[8:9]


class TreeSearcher(SequentialSearcher):
    """Shared-tree search on config.threads threads (1 thread behaves like the sequential search)."""

    name = "tree"

    def __init__(self, config: SearchConfig, **kw):
        super().__init__(config, **kw)
        check(config.threads <= 256, "threads", "at most 256")
        self.last_thread_sims: list[int] = []

    def _run(self, pos: Position, budget: Budget, counters: np.ndarray, rng: np.ndarray) -> int:
        n_threads = self.config.threads
        t = self.table
        lock = threading.Lock()
        claimed = [0]
        stop = threading.Event()
        start = self.clock()
        # one row per thread, padded so that no two threads' counters share a cache line
        per_thread = np.zeros((n_threads, max(uct.N_COUNTERS, 16)), np.int64)
        rngs = [_own_cache_line(r) for r in [rng] + [self._rng(1000 + i) for i in range(1, n_threads)]]
        errors: list[BaseException] = []

        def claim(want: int) -> int:
            with lock:
                if stop.is_set():
                    return 0
                n = want if budget.sims is None else min(want, budget.sims - claimed[0])
                if n <= 0:
                    return 0
                claimed[0] += n
                return n

        # a sims budget is handed out in pieces small enough that every thread gets a share to the end
        sims_chunk = MAX_CHUNK if budget.sims is None else max(1, min(MAX_CHUNK, budget.sims // (8 * n_threads)))

        def worker(i: int) -> None:
            chunk = 16
            try:
                while True:
                    n = claim(sims_chunk if budget.seconds is None else min(chunk, sims_chunk))
                    if n <= 0:
                        return
                    t0 = self.clock()
                    uct.run_simulations(t, pos.g, pos.s, pos.history, self.params, rngs[i], n, per_thread[i])
                    now = self.clock()
                    if budget.seconds is not None:
                        if now - start >= budget.seconds:
                            stop.set()
                            return
                        rate = n / max(now - t0, 1e-6)
                        left = budget.seconds - (now - start)
                        chunk = int(max(1, min(rate * CHUNK_SECONDS, rate * left, MAX_CHUNK)))
            except BaseException as e:  # surface in the caller, and let the other threads stop
                errors.append(e)
                stop.set()

        threads = [threading.Thread(target=worker, args=(i,), name=f"tree-worker-{i}", daemon=True)
                   for i in range(n_threads)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        if errors:
            raise errors[0]
        deepest = max(int(counters[uct.C_MAX_DEPTH]), int(per_thread[:, uct.C_MAX_DEPTH].max()))
        counters[:] += per_thread[:, :uct.N_COUNTERS].sum(axis=0)
        counters[uct.C_MAX_DEPTH] = deepest
        self.last_thread_sims = [int(x) for x in per_thread[:, uct.C_SIMS]]
        return int(per_thread[:, uct.C_SIMS].sum())
