"""Worker threads of one rank: they run work packages from in-memory queues.

Each worker has its own queue; new packages go to the shortest one, a continuation of a simulation
(pkg.front) to the front of the queue of the worker that ran its previous step, and a worker whose queue is
empty takes from the back of the others' (Schaefers 2014, 4.2.4: stealing improved the workload even though the
queues then need locking; here the GIL-atomic deque operations are the lock). The hot work inside
execute() is numba nogil code, so workers and the IO thread really run at once.

A finished package goes to `complete(pkg, result, worker)`, which the rank runtime provides: it takes the
rank's role lock and lets the role turn the result into the next packages and messages, on the worker
itself (as the worker cores of Schaefers 2014, 4.2.4 do), so a simulation that stays on the rank never waits for the
IO thread. Per package (per part of a package that returns model.roles.CONTINUE) a worker appends one tuple
(t_start, t_end, worker, kind, sim_id) to its own record deque; the IO thread empties them now and then.
"""

from __future__ import annotations

import threading
import traceback
from collections import deque
from typing import Any, Callable

from engine.mpi.recorder import run_recorded
from model.roles.base import CONTINUE


class WorkerPool:
    def __init__(self, n: int, execute: Callable[[Any], Any], describe: Callable[[Any], tuple[str, int]],
                 complete: Callable[[Any, Any, int], None], now: Callable[[], float], on_error: Callable[[], None],
                 record: bool = True):
        self.n = n
        self.execute, self.describe, self.complete, self.now = execute, describe, complete, now
        self.on_error = on_error
        self.record = record
        self.queues: list[deque] = [deque() for _ in range(n)]
        self.records: list[deque] = [deque() for _ in range(n)]
        self.busy_time = [0.0] * n
        self.packages_done = [0] * n
        self.error: BaseException | None = None
        self.error_text = ""
        self.error_details = ""
        self._cond = threading.Condition()
        self._sleeping = 0
        self._stop = False
        self._threads = [threading.Thread(target=self._loop, args=(w,), name=f"worker-{w}", daemon=True)
                         for w in range(n)]

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def submit(self, pkg: Any, worker: int = -1) -> None:
        """Queue a package (the caller holds the rank's role lock). `worker`: the worker whose package
        produced this one, or -1 (a message, a timer)."""
        if worker >= 0 and getattr(pkg, "front", False):
            self.queues[worker].appendleft(pkg)  # that worker is awake: it is the one handing this over
            if self.n == 1:
                return
        else:
            (min(self.queues, key=len) if self.n > 1 else self.queues[0]).append(pkg)
        if self._sleeping:
            with self._cond:
                self._cond.notify()

    @property
    def queued(self) -> int:
        return sum(len(q) for q in self.queues)

    def take_records(self) -> list[tuple]:
        out = []
        for recs in self.records:
            for _ in range(len(recs)):  # popleft is atomic; a record appended meanwhile waits for next time
                out.append(recs.popleft())
        return out

    def _take(self, w: int) -> Any:
        try:
            return self.queues[w].popleft()
        except IndexError:
            pass
        for i in range(1, self.n):  # steal from the back of the others' queues
            try:
                return self.queues[(w + i) % self.n].pop()
            except IndexError:
                continue
        return None

    def _loop(self, w: int) -> None:
        now, execute, describe, complete = self.now, self.execute, self.describe, self.complete
        records = self.records
        try:
            while not self._stop:
                pkg = self._take(w)
                if pkg is None:
                    with self._cond:
                        if not self._stop and not any(self.queues):
                            self._sleeping += 1
                            self._cond.wait(0.05)
                            self._sleeping -= 1
                    continue
                if self.record:
                    result, start, t1 = run_recorded(pkg, execute, describe, now, w, records[w])
                else:
                    start = now()
                    result = execute(pkg)
                    while result is CONTINUE:  # the package goes on with its next part
                        result = execute(pkg)
                    t1 = now()
                self.busy_time[w] += t1 - start
                self.packages_done[w] += 1
                complete(pkg, result, w)
        except BaseException as e:  # reported by the IO thread, which aborts the job
            self.error_text = f"worker {w}: {type(e).__name__}: {e}"
            self.error_details = traceback.format_exc()
            self.error = e
            self.on_error()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop = True
        with self._cond:
            self._cond.notify_all()
        for t in self._threads:
            if t.is_alive():
                t.join(timeout)
