"""What a rank records: its part of the trace (packages, messages, samples, a final tree snapshot) and the
live telemetry windows. Hot paths only append tuples to lists (workers to their own, the IO thread to its
own; a call that ran many parts appends them as arrays); this class turns them into trace columns and
telemetry records on the IO thread every SAMPLE_EVERY s.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from model.roles.base import CONTINUE, IO, PART_KINDS
from engine.trace_files import TraceWriter
from model.trace import Meta

SAMPLE_EVERY = 0.1
TELEMETRY_EVERY = 0.2
# The IO thread's lane in the trace (the simulator's IO core's too): the packages it runs itself (--threads 1)
# and its turns that handle arrived messages (kind IO, sim_id -1)
IO_WORKER = -1
_KEEP_MULT = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: sampling keeps or drops whole simulations


def _keep_mask(sim_ids: np.ndarray, rate: float) -> np.ndarray:
    if rate >= 1.0:
        return np.ones(len(sim_ids), dtype=bool)
    h = (sim_ids.astype(np.uint64) * _KEEP_MULT) >> np.uint64(11)
    return (h.astype(np.float64) / float(1 << 53)) < rate


LOGGED = "logged"  # a record's kind: the record is (t_start, t_end, worker, LOGGED, a call's parts as columns)
NO_STEPS = -1  # a package record's tree steps where the role did not say (its kinds without steps say 0)


def run_recorded(pkg, execute, describe, now, worker: int, records) -> tuple[Any, float, float]:
    """Run a package and all of its parts (model.roles.CONTINUE), appending one package record
    (t_start, t_end, worker, kind, sim_id, steps) per part to `records`; returns (result, start, end).

    A part's kind and simulation are read before it runs (a chaining package moves on to its next
    simulation between parts). A call that ran several parts and logged them (Package.log) gives one record
    (t_start, t_end, worker, LOGGED, columns): its parts placed between the call's start and end in
    proportion to their cycle-counter stamps, as arrays (a chain of 64 simulations logs ~250 parts; a tuple
    each cost the worker ~0.15 ms a call, and the collector walked them all)."""
    kind, sim_id = describe(pkg)
    t0 = start = now()
    while True:
        result = execute(pkg)
        t1 = now()
        log = getattr(pkg, "log", None)  # packages of a role_factory host may not have one
        if log is None:
            records.append((t0, t1, worker, kind, sim_id, NO_STEPS))
        else:
            pkg.log = None
            if len(log[0]) <= FEW_PARTS:
                records.extend(_few_parts(t0, t1, worker, log))
            else:
                records.append((t0, t1, worker, LOGGED, _logged_parts(t0, t1, log)))
        if result is not CONTINUE:
            return result, start, t1
        kind, sim_id = describe(pkg)
        t0 = t1


_PART_NAMES = np.asarray(PART_KINDS + ("sync",), dtype=object)  # a logged call's kind codes
# Up to this many parts a call's records are tuples: a call to the kernel costs ~5 us and an array record
# ~10 us more to collect, several times a few tuples (2x1 layouts run ~2 parts a call; traced, they lost
# ~20% of their simulations to the arrays)
FEW_PARTS = 8


def _few_parts(t0: float, t1: float, worker: int, log) -> list[tuple]:
    """What _place_parts gives, as records, for a handful of parts (a test holds the two to the same placement)."""
    kinds, sims, stamps, labels, steps = log
    n = len(kinds)
    stamps = stamps.tolist()
    span = stamps[n] - stamps[0] if n else 0
    out = []
    prev = t0
    for i in range(n):
        end = t0 + (t1 - t0) * ((stamps[i + 1] - stamps[0]) / span if span > 0 else (i + 1) / n)
        end = min(max(end, prev), t1)
        out.append((prev, end, worker, PART_KINDS[kinds[i]], labels[sims[i]], int(steps[i])))
        prev = end
    return out


def _logged_parts(t0: float, t1: float, log) -> tuple[np.ndarray, ...]:
    """(starts, ends, kind codes into PART_KINDS, simulation ids, tree steps) of a logged call's parts. New
    arrays: the log's buffers belong to the worker, which reuses them in its next call (steps is a copy)."""
    kinds, sims, stamps, labels, steps = log
    return (*_place_parts(t0, t1, kinds, sims, stamps, np.asarray(labels, dtype=np.int64)), steps)


@njit(cache=True, nogil=True)
def _place_parts(t0, t1, kinds, sims, stamps, labels):
    # one call: in numpy this was ~10 small-array operations, ~15 us a package
    n = len(kinds)
    starts, ends = np.empty(n), np.empty(n)
    codes, ids = np.empty(n, np.int8), np.empty(n, np.int64)
    span = stamps[n] - stamps[0] if n else 0
    prev = t0
    for i in range(n):
        # a counter that did not move (or went back: another core's) spreads the parts evenly
        f = (stamps[i + 1] - stamps[0]) / span if span > 0 else (i + 1) / n
        end = min(max(t0 + (t1 - t0) * f, prev), t1)
        starts[i], ends[i] = prev, end
        codes[i], ids[i] = kinds[i], labels[sims[i]]
        prev = end
    return starts, ends, codes, ids


def package_columns(records: list[tuple]) -> dict[str, np.ndarray]:
    """The packages table's columns (rank left out) of run_recorded's records: the plain records first, then
    each logged call's parts (a finished trace is sorted by time)."""
    plain = [r for r in records if r[3] is not LOGGED]
    parts = []
    if plain:
        t0, t1, w, kind, sim, steps = zip(*plain)
        parts.append((np.asarray(t0, np.float64), np.asarray(t1, np.float64), np.asarray(w, np.int32),
                      np.asarray(kind, object), np.asarray(sim, np.int64), np.asarray(steps, np.int32)))
    if len(plain) < len(records):
        for r in records:
            if r[3] is LOGGED:
                s, e, k, ids, steps = r[4]
                parts.append((s, e, np.full(len(s), r[2], np.int32), _PART_NAMES[k], ids, steps.astype(np.int32)))
    names = ("t_start", "t_end", "worker", "kind", "sim_id", "steps")
    if not parts:
        return {n: np.zeros(0, object if n == "kind" else np.int32 if n == "steps" else None) for n in names}
    return {n: np.concatenate([p[i] for p in parts]) for i, n in enumerate(names)}


class Recorder:
    def __init__(self, rank: int, trace_dir: str | None, meta: Meta | None, sample_rate: float,
                 telemetry: str | None, flush_rows: int = 200_000):
        self.rank = rank
        self.sample_rate = sample_rate
        self.writer = TraceWriter(trace_dir, meta, part=f"rank{rank}", flush_rows=flush_rows) if trace_dir else None
        self.sender = None
        self.window = None
        self.live = None  # engine.mpi.live.LiveFields, made at the first telemetry record
        if telemetry:
            from engine.telemetry import TelemetrySender
            from model.telemetry import Window

            host, _, port = telemetry.rpartition(":")
            self.sender = TelemetrySender(host, int(port))
            self.window = Window(rank)
        self.recording = self.writer is not None or self.sender is not None  # packages and messages wanted
        self.active = self.recording  # ... and recorded now (a probing trace pauses every other window)
        if self.recording:  # load (or compile: ~0.5 s) the kernel that places logged parts before the search
            _place_parts(0.0, 1.0, np.zeros(1, np.int8), np.zeros(1, np.int32), np.zeros(2, np.int64),
                         np.zeros(1, np.int64))
        self._last_sent: dict[tuple[int, str], tuple[int, int]] = {}
        self.messages: list[tuple] = []  # IO thread: (t_send, t_recv, src, dst, kind, nbytes, sim_id) received
        self.io_packages: list[tuple] = []  # IO thread (inline work, message handling): (t0, t1, worker, kind, sim_id)
        self.io_time = 0.0  # the IO thread's recorded busy seconds (telemetry's io_busy)
        self.next_sample = 0.0
        self.next_telemetry = 0.0
        self._last_busy = 0.0
        self._last_t = 0.0

    def collect(self, package_records: list[tuple]) -> None:
        """Move package and message records into the trace (and the telemetry window)."""
        io = self.io_packages
        if io:
            self.io_time += sum([r[1] - r[0] for r in io])
            pk = package_records + io
            self.io_packages = []
        else:
            pk = package_records
        msgs = self.messages[:]  # the IO loop holds a reference to this very list
        self.messages.clear()
        if pk and (self.window is not None or self.writer is not None):
            cols = package_columns(pk)
            if self.window is not None:
                for kind, n in zip(*np.unique(cols["kind"], return_counts=True)):
                    self.window.package(kind, int(n))
            if self.writer is not None:
                cols["rank"] = np.full(len(cols["t_start"]), self.rank, np.int32)
                self.writer.extend("packages", self._sampled(cols, False))
        if self.writer is None:
            return
        if msgs:
            ts, tr, src, dst, kind, nb, sim = zip(*msgs)
            cols = {"t_send": ts, "t_recv": tr, "src": src, "dst": dst, "kind": kind, "bytes": nb, "sim_id": sim}
            self.writer.extend("messages", self._sampled(cols, True))

    def _sampled(self, cols: dict[str, tuple], keep_unattached: bool) -> dict[str, Any]:
        """The rows of whole simulations kept by the sampling rate (all of them at rate 1; messages that
        belong to no simulation, sim_id -1, always)."""
        if self.sample_rate >= 1.0:
            return cols
        sim = np.asarray(cols["sim_id"], dtype=np.int64)
        keep = _keep_mask(sim, self.sample_rate)
        if keep_unattached:
            keep |= sim < 0
        return {k: np.asarray(v, dtype=object if k == "kind" else None)[keep] for k, v in cols.items()}

    def sample(self, t: float, busy_time: float, workers: int, queue_len: int, counters: dict[str, int]) -> float:
        """Record one sample; returns the busy fraction over the window since the last one."""
        dt = t - self._last_t
        busy = (busy_time - self._last_busy) / (dt * max(workers, 1)) if dt > 0 else 0.0
        busy = min(1.0, max(0.0, busy))
        self._last_busy, self._last_t = busy_time, t
        if self.writer is not None:
            self.writer.sample(t, self.rank, queue_len, busy, int(counters.get("sims_done", 0)),
                               int(counters.get("playouts_done", 0)), int(counters.get("nodes_stored", 0)),
                               int(counters.get("nodes_duplicated", 0)))
        return busy

    def push_telemetry(self, t: float, busy: float, counters: dict[str, int], rank) -> None:
        """Every TELEMETRY_EVERY s: the window's record (the sample, what was sent, engine.mpi.live's fields).
        rank: the rank runtime (engine.mpi.rank.RankRuntime) whose endpoint, pool and role are read."""
        if self.sender is None or t < self.next_telemetry:
            return
        self.next_telemetry = t + TELEMETRY_EVERY
        for key, (c, b) in rank.sent_totals().items():  # the rank keeps totals; the window wants this window's share
            c0, b0 = self._last_sent.get(key, (0, 0))
            if c > c0:
                cell = self.window.messages.setdefault(key, [0, 0])
                cell[0] += c - c0
                cell[1] += b - b0
            self._last_sent[key] = (c, b)
        fields = {"queue_len": int(rank.queue_len()), "busy_frac": float(busy),
                  "in_flight": int(counters.get("in_flight", 0)),
                  **{k: int(counters.get(k, 0)) for k in ("sims_done", "playouts_done", "nodes_stored",
                                                          "nodes_duplicated")}}
        if self.live is None:
            from engine.mpi.live import LiveFields

            self.live = LiveFields(rank.config)
        pool = rank.pool
        fields.update(self.live.fields(t, list(pool.busy_time) if pool is not None else [], self.io_time,
                                       getattr(rank.host, "role", None)))
        self._send(self.window.flush(t, **fields))

    def finish(self, result: dict[str, Any], t_end: float) -> None:
        """Rank 0, after the summary: the last record says the search is over and what it found."""
        if self.sender is None:
            return
        from engine.mpi.live import final_fields

        self._send(self.window.flush(t_end, **final_fields(result, t_end)))
        self.sender.close()

    def _send(self, record: dict[str, Any]) -> None:
        if not self.sender.send(record) and record.pop("tree", None) is not None:
            self.sender.send(record)  # a tree that made the datagram too large: the rest still goes

    def tree(self, columns: dict[str, Any] | None) -> None:
        if self.writer is None or columns is None or not len(columns.get("hash", ())):
            return
        # typed arrays: a list of Python ints above 2**63 would otherwise go through float64
        types = {"t": np.float64, "hash": np.uint64, "parent": np.uint64, "move": np.int32, "depth": np.int32,
                 "visits": np.int64, "wins": np.float64, "owner": np.int32, "duplicated": bool}
        self.writer.tree({k: np.asarray(columns[k], dtype=types[k]) for k in types})

    def close(self, t_end: float | None = None) -> None:
        if self.writer is not None:
            self.writer.close(t_end)
        if self.sender is not None and self.rank != 0:  # rank 0's sends the final record (finish)
            self.sender.close()
