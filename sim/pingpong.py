"""MPI ping-pong and bandwidth sweep for `treesplit calibrate`: `mpiexec -n 2 python -m sim.pingpong`.

Rank 0 prints one JSON object with the LogGP parameters of the path between the two ranks, measured the
way the engine talks (mpi4py buffer calls from Python, so Python's per-call cost is part of o):
    overhead o       time to post one small Isend
    latency L        half the round trip of an 8-byte message, minus 2 o
    gap g            time per message of a burst of small messages (at least o)
    gap_per_byte G   slope of the one-way time over large messages
    poll_base, poll_per_request   one Testsome over 1 and over 64 posted receives (the IO loop's poll)
    one_way          {bytes: seconds} of the sweep
Each size runs for a bounded time (--budget seconds in all), so the sweep ends in a few seconds; one-way
times are medians of the round trips, so that a rank descheduled now and then does not count as latency.
"""

from __future__ import annotations

import json
import sys
import time

SIZES = (8, 64, 512, 4096, 32768, 262144, 1048576)


def main(budget: float = 4.0) -> int:
    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if size != 2:
        if rank == 0:
            print(json.dumps({"error": f"needs exactly 2 ranks, got {size}"}))
        return 2
    other = 1 - rank
    per_size = budget / (len(SIZES) + 3)
    one_way = {}
    for nbytes in SIZES:
        buf = np.zeros(nbytes, dtype=np.uint8)
        comm.Barrier()
        rtts = []
        t0 = time.perf_counter()
        # both ranks agree on the repetition count: rank 0 decides when to stop and says so in the payload
        while True:
            t1 = time.perf_counter()
            if rank == 0:
                buf[0] = 1 if t1 - t0 < per_size and len(rtts) < 20000 else 0
                comm.Send([buf, MPI.BYTE], dest=other, tag=1)
                comm.Recv([buf, MPI.BYTE], source=other, tag=1)
            else:
                comm.Recv([buf, MPI.BYTE], source=other, tag=1)
                comm.Send([buf, MPI.BYTE], dest=other, tag=1)
            rtts.append(time.perf_counter() - t1)
            if buf[0] == 0:
                break
        # the median: a shared machine deschedules a rank now and then, which is not the network
        one_way[nbytes] = float(np.median(rtts)) / 2
    # overhead of posting a small send, and the gap of a burst of them
    small = np.zeros(8, dtype=np.uint8)
    n_burst = 2000
    comm.Barrier()
    if rank == 0:
        t0 = time.perf_counter()
        reqs = [comm.Isend([small, MPI.BYTE], dest=other, tag=2) for _ in range(n_burst)]
        t_post = time.perf_counter() - t0
        MPI.Request.Waitall(reqs)
        comm.Recv([small, MPI.BYTE], source=other, tag=3)
        t_burst = time.perf_counter() - t0
    else:
        rbuf = np.zeros(8, dtype=np.uint8)
        for _ in range(n_burst):
            comm.Recv([rbuf, MPI.BYTE], source=other, tag=2)
        comm.Send([small, MPI.BYTE], dest=other, tag=3)
    # the poll: Testsome over posted receives that never complete
    polls = {}
    for n_req in (1, 64):
        bufs = [np.zeros(8, dtype=np.uint8) for _ in range(n_req)]
        reqs = [comm.Irecv([b, MPI.BYTE], source=other, tag=100 + i) for i, b in enumerate(bufs)]
        n_calls, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < per_size / 2:
            MPI.Request.Testsome(reqs)
            n_calls += 1
        polls[n_req] = (time.perf_counter() - t0) / n_calls
        for r in reqs:
            r.Cancel()
        MPI.Request.Waitall(reqs)
    comm.Barrier()
    if rank == 0:
        # posting a send cannot cost more than half a one-way trip (o is paid at both ends)
        o = min(t_post / n_burst, one_way[8] / 2)
        G = float(np.median([(one_way[s] - one_way[8]) / s for s in SIZES if s >= 32768]))
        res = {
            "overhead": o,
            "latency": max(0.0, one_way[8] - 2 * o),
            "gap": min(max(o, (t_burst - 2 * one_way[8]) / n_burst), one_way[8]),
            "gap_per_byte": max(0.0, G),
            "poll_base": polls[1],
            "poll_per_request": max(0.0, (polls[64] - polls[1]) / 63),
            "one_way": {str(k): v for k, v in one_way.items()},
            "mpi": MPI.Get_library_version().splitlines()[0],
        }
        print(json.dumps(res))
    return 0


if __name__ == "__main__":
    b = float(sys.argv[1]) if len(sys.argv) > 1 else 4.0
    sys.exit(main(b))
