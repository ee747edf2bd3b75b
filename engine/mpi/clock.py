"""One clock for all ranks: seconds since the run started, as rank 0 sees it.

At start-up every rank meets at a barrier, then rank 0 plays ping-pong with each rank in turn and keeps,
per rank, the round with the shortest round trip: offset = t_remote - (t_send + t_recv) / 2, accurate to
half that round trip. Rank 0 then sends each rank its offset and the start time, so that
t = perf_counter() - offset - start is comparable across ranks and hosts.
"""

from __future__ import annotations

import time

import numpy as np

from model.cycles import counting, cycles

TAG_PING, TAG_PONG, TAG_RESULT = 1, 2, 3


class Clock:
    def __init__(self, offset: float = 0.0, start: float | None = None, rtt: float = 0.0):
        self.offset = offset
        self.start = time.perf_counter() if start is None else start
        self.rtt = rtt  # round trip of the best ping-pong (0 on rank 0): the offset's uncertainty is rtt / 2
        self._base = self.offset + self.start

    def now(self) -> float:
        return time.perf_counter() - self._base


RESYNC_AFTER = 60.0  # s: a session measures the offsets again after this long (clocks of two hosts drift)


def synchronise(comm, cache: dict | None = None, rounds: int = 8) -> Clock:
    """Collective: every rank calls it at start-up, before any other traffic. Blocking on purpose.

    cache: a session's (engine.mpi.session), kept across its searches: the offsets measured by the last full
    synchronisation are reused for RESYNC_AFTER seconds, and only the start time goes round (one broadcast
    instead of 8 ping-pongs per rank, which cost tens of ms of every GTP move on a loaded machine)."""
    from mpi4py import MPI  # MPI starts when mpi4py.MPI is imported: launch.world() sets the thread level first

    rank, size = comm.Get_rank(), comm.Get_size()
    comm.Barrier()
    kept = cache.get("clock") if cache is not None else None
    mine = np.array([kept is None or time.monotonic() - kept[2] > RESYNC_AFTER], dtype=np.int32)
    stale = np.zeros(1, dtype=np.int32)
    comm.Allreduce([mine, MPI.INT32_T], [stale, MPI.INT32_T], op=MPI.MAX)  # every rank takes the same path
    if not stale[0]:
        start = np.array([time.perf_counter()], dtype=np.float64)
        comm.Bcast([start, MPI.DOUBLE], root=0)
        return Clock(kept[0], float(start[0]), kept[1])
    clock = _measure(comm, rank, size, rounds)
    if cache is not None:
        cache["clock"] = (clock.offset, clock.rtt, time.monotonic())
    return clock


def _measure(comm, rank: int, size: int, rounds: int) -> Clock:
    from mpi4py import MPI  # MPI starts when mpi4py.MPI is imported: launch.world() sets the thread level first

    buf = np.zeros(1, dtype=np.float64)
    if rank == 0:
        best = {}
        for r in range(1, size):
            for _ in range(rounds):
                t0 = time.perf_counter()
                comm.Send([buf, MPI.DOUBLE], dest=r, tag=TAG_PING)
                comm.Recv([buf, MPI.DOUBLE], source=r, tag=TAG_PONG)
                t1 = time.perf_counter()
                rtt, off = t1 - t0, float(buf[0]) - (t0 + t1) / 2
                if r not in best or rtt < best[r][0]:
                    best[r] = (rtt, off)
        comm.Barrier()
        start = time.perf_counter()
        for r in range(1, size):
            comm.Send([np.array([best[r][1], start, best[r][0]]), MPI.DOUBLE], dest=r, tag=TAG_RESULT)
        return Clock(0.0, start, 0.0)
    for _ in range(rounds):
        comm.Recv([buf, MPI.DOUBLE], source=0, tag=TAG_PING)
        buf[0] = time.perf_counter()
        comm.Send([buf, MPI.DOUBLE], dest=0, tag=TAG_PONG)
    comm.Barrier()
    res = np.zeros(3, dtype=np.float64)
    comm.Recv([res, MPI.DOUBLE], source=0, tag=TAG_RESULT)
    return Clock(float(res[0]), float(res[1]), float(res[2]))


_TICKS: list[float] = []


def ticks_per_second() -> float:
    """Cycle-counter ticks (model/cycles.py) per second of this clock, measured once per process over 20 ms
    (a rank's run slices are given in ticks: the kernel reads the counter, not this clock)."""
    if not _TICKS:
        if not counting():
            _TICKS.append(0.0)
        else:
            t0, c0 = time.perf_counter(), cycles()
            while time.perf_counter() - t0 < 0.02:
                pass
            _TICKS.append((cycles() - c0) / (time.perf_counter() - t0))
    return _TICKS[0]
