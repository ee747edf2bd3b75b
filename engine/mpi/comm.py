"""The IO thread's MPI endpoint: batched non-blocking sends and probed receives of byte buffers.

Only the IO thread touches this object (and MPI): that is what lets the ranks run with
MPI_THREAD_FUNNELED. Messages to the rank itself never reach MPI; the runtime delivers them locally.
"""

from __future__ import annotations

from collections import defaultdict

from engine.mpi import wire

CONTROL = "CONTROL"


class Endpoint:
    def __init__(self, comm, now):
        from mpi4py import MPI

        self._MPI = MPI
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.now = now
        self._batches: dict[tuple[int, str], wire.Batch] = {}
        self._pending: list = []  # (request, buffer) of Isends not known complete; the buffer must live on
        self._status = MPI.Status()
        # (dst, kind) -> [messages, payload bytes] sent, for the report and the trace check
        self.sent: dict[tuple[int, str], list[int]] = defaultdict(lambda: [0, 0])
        # logical messages other than CONTROL: the counters of the termination detection
        self.app_sent = 0
        self.app_received = 0
        self.mpi_sends = 0
        self.mpi_receives = 0

    def post(self, dst: int, kind: str, payload: bytes, sim_id: int = -1, t_send: float | None = None) -> None:
        """Queue one logical message (t_send: when the role sent it; default now); it leaves at the next
        flush()."""
        b = self._batches.get((dst, kind))
        if b is None:
            b = self._batches[(dst, kind)] = wire.Batch()
        b.add(payload, sim_id, self.now() if t_send is None else t_send)
        cell = self.sent[(dst, kind)]
        cell[0] += 1
        cell[1] += len(payload)
        if kind != CONTROL:
            self.app_sent += 1

    def flush(self) -> int:
        """Start one Isend per (destination, kind) with queued messages; returns how many MPI sends."""
        if not self._batches:
            return 0
        MPI = self._MPI
        n = 0
        for (dst, kind), b in self._batches.items():
            buf = b.encode()
            req = self.comm.Isend([buf, MPI.BYTE], dest=dst, tag=wire.KIND_TAG[kind])
            self._pending.append((req, buf))
            n += 1
        self._batches = {}
        self.mpi_sends += n
        return n

    def reap(self) -> None:
        """Forget sends that completed (frees their buffers)."""
        if self._pending:
            self._pending = [p for p in self._pending if not p[0].Test()]

    @property
    def sends_in_flight(self) -> int:
        return len(self._pending) + len(self._batches)

    def poll(self, limit: int = 256) -> list[tuple[int, str, list[tuple[int, float, bytes]]]]:
        """Receive up to `limit` MPI messages that have arrived: [(src, kind, [(sim_id, t_send, payload)])]."""
        MPI = self._MPI
        out = []
        st = self._status
        iprobe = self.comm.Iprobe
        # A second probe when the first finds nothing: MPICH's first probe after the process slept only moves
        # what arrived meanwhile into its queues (measured: median latency 0.96 ms -> 0.31 ms with 0.5 ms naps)
        while len(out) < limit and (iprobe(MPI.ANY_SOURCE, MPI.ANY_TAG, st)
                                    or (not out and iprobe(MPI.ANY_SOURCE, MPI.ANY_TAG, st))):
            src, tag, count = st.Get_source(), st.Get_tag(), st.Get_count(MPI.BYTE)
            buf = bytearray(count)
            self.comm.Recv([buf, MPI.BYTE], source=src, tag=tag)
            kind = wire.TAG_KIND.get(tag)
            if kind is None:
                raise RuntimeError(f"rank {self.rank}: message with unknown tag {tag} from rank {src}")
            records = wire.decode(buf)
            if kind != CONTROL:
                self.app_received += len(records)
            out.append((src, kind, records))
        self.mpi_receives += len(out)
        return out

    def drain(self, timeout: float, idle) -> bool:
        """Flush and wait until every send completed (calling idle() between tests); False on timeout."""
        import time

        self.flush()
        end = time.monotonic() + timeout
        while self._pending:
            self.reap()
            if time.monotonic() > end:
                return False
            if self._pending:
                idle()
        return True
