"""The `tree` algorithm: T threads of one process run whole simulations on one shared table.

Tree parallelization with virtual loss (Chaslot et al.; seed 000 4.1): every thread runs model/uct.py's
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
        per_thread = np.zeros((n_threads, uct.N_COUNTERS), np.int64)
        rngs = [rng] + [self._rng(1000 + i) for i in range(1, n_threads)]
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

        def worker(i: int) -> None:
            chunk = 16
            try:
                while True:
                    n = claim(MAX_CHUNK if budget.seconds is None else chunk)
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
        counters[:] += per_thread.sum(axis=0)
        counters[uct.C_MAX_DEPTH] = deepest
        self.last_thread_sims = [int(x) for x in per_thread[:, uct.C_SIMS]]
        return int(per_thread[:, uct.C_SIMS].sum())
