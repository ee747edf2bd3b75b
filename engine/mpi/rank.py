"""One MPI rank of a distributed search: an IO thread (the caller's, the only one that calls MPI) and
worker threads, hosting one role (engine.mpi.host).

Role callbacks run under one lock per rank, never two at once: a worker that finishes a package takes the
lock and lets the role turn the result into the next packages (its own queue first, so a simulation that
stays on the rank stays on its core) and messages (into the outbox); the IO thread takes it for what comes
from outside. The IO loop, one turn:
    receive what arrived (MPI probe + receive, byte buffers) -> role.on_message / the CONTROL protocol
    deliver messages the rank sent to itself; without workers (threads = 1), run packages for INLINE_SLICE
    send the outbox (batched Isends), forget completed sends
    every 1 ms: time for the role (timers) and the CONTROL protocol; every 100 ms: a trace sample;
    every 200 ms: telemetry
    nothing happened -> wait up to IDLE_WAIT for a worker's message; a search rank without workers (its IO
    thread runs the packages, one core per rank) instead keeps polling for SPIN_FOR after its last work,
    yielding the core between polls to any other runnable process

Failures never hang the job: an exception on any thread prints one clear line and aborts the MPI job
(mpiexec then stops every rank with a non-zero exit); a watchdog thread aborts when the loop, the
simulations or the shutdown stop moving for `stall_timeout` seconds. SIGINT/SIGTERM close the trace part
(readable unmerged) and exit 130. `kill -USR1 <pid>` prints every thread's stack.
"""

from __future__ import annotations

import gc
import math
import os
import signal
import sys
import threading
import time
import traceback
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np

from engine.mpi import control as ctl
from engine.mpi import wire
from engine.mpi.clock import synchronise, ticks_per_second
from engine.mpi.comm import CONTROL, Endpoint
from engine.mpi.config import DistributedConfig
from engine.mpi.host import Host, make_host
from engine.mpi.recorder import IO_WORKER, NO_STEPS, SAMPLE_EVERY, Recorder, run_recorded
from engine.mpi.workers import WorkerPool
from model.cycles import cycles
from model.errors import ConfigError, UserError
from model.roles.base import CONTINUE, IO
from model.roles.fastcall import Bound

IDLE_WAIT = 0.0001  # longest nap of an idle IO thread: a message waits about half of it (0.5 ms: 2.5x fewer sims/s)
# A nap costs far more than IDLE_WAIT: ~185 us on the 2-core VM when idle, and on a loaded machine the woken
# rank may wait milliseconds for a core (measured: median MOVE latency 3 ms, p90 10 ms). A sched_yield costs
# ~1 us and hands the core to anyone else who wants it. Only the IO thread of a search rank without workers
# spins: with workers it would hold the GIL they need.
SPIN_FOR = 0.002
TICK_EVERY = 0.001
INLINE_SLICE = 0.0002  # without workers: run packages this long between two polls
# A role that runs its own packages in batches: this long between two polls. A turn costs a few microseconds
# of Python and MPI calls; the slice must be long enough to pay for them and short enough that a simulation
# sent here does not wait long for this rank to look.
BATCH_SLICE = 0.0002
# A compiled turn (engine/mpi/native.py) goes on receiving, running and sending this long before Python looks
# at the time (ticks every TICK_EVERY) and the CONTROL protocol
TURN_BUDGET = 0.0005
# An idle rank moves its records into the trace once this many wait: a collection costs ~15 us before its
# first record, and a rank that is idle between every two packages (leaf's playout ranks) would otherwise
# pay that for each one, as late answers to the next request (traced runs were ~30% slower at 9x9)
IDLE_COLLECT_MIN = 256
EXIT_INTERRUPTED = 130
ABORT_GRACE = 0.3  # seconds between a fatal error's message and MPI Abort (see RankRuntime.abort)


class Interrupted(Exception):
    """SIGINT or SIGTERM reached the rank."""


class WorkerFailed(Exception):
    """A worker thread raised; carries the worker's traceback."""

    def __init__(self, message: str, details: str):
        super().__init__(message)
        self.details = details


def warm_stamp(cfg: DistributedConfig) -> Path | None:
    """The file that says the kernels a rank of this kind of run loads are in numba's cache (None: no cache)."""
    d = os.environ.get("NUMBA_CACHE_DIR")
    if not d:
        return None
    import platform

    import numba
    from llvmlite import binding

    # numba's cache entries are valid for one numba, Python and CPU: a stamp left by another is no stamp
    kind = (f"{cfg.algo}-{cfg.game}-w{cfg.workers}-t{int(bool(cfg.trace))}-r{min(cfg.ranks, 2)}-{cfg.role_factory}"
            f"-{numba.__version__}-{platform.python_version()}-{binding.get_host_cpu_name()}")
    return Path(d) / ("warm-" + "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in kind))


_FROZEN = False  # this process has frozen its long-lived objects (see RankRuntime._run)


class RankRuntime:
    def __init__(self, config: DistributedConfig, comm, cache: dict | None = None):
        """cache: kept by a session across its searches (the rank's transposition table, warm kernels)."""
        self.config = config
        self.cache = cache
        self.comm = comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.host: Host | None = None
        self.pool: WorkerPool | None = None
        self.rec: Recorder | None = None
        self.local: deque = deque()  # messages to self: (kind, sim_id, payload)
        self.inline: deque = deque()  # packages the IO thread runs itself
        self.io_busy = 0.0
        # The role lock: role callbacks run under it, on the IO thread (messages, timers, CONTROL) or on a
        # worker (a finished package), never two at once. `outstanding`, `local` and `outbox` change under it.
        self.lock = threading.Lock()
        self.outstanding = 0  # packages handed out and not yet finished
        self.outbox: deque = deque()  # messages for other ranks: (dst, kind, payload, sim_id, t_send)
        self.heartbeat = time.monotonic()
        self.native_net = None  # the compiled loop's endpoint (engine/mpi/native.py), when it runs
        self.aborting = False
        self.ended = threading.Event()  # the watchdog's wake-up: a sleeping watchdog kept the runtime alive
        self.meta = None

    # --- entry ------------------------------------------------------------------------------------------------
    def run(self) -> dict[str, Any] | None:
        """Run the search; rank 0 returns the result dict, the others None."""
        cfg = self.config
        if self.size != cfg.world_size:
            raise ConfigError(f"the MPI job has {self.size} ranks but the search needs {cfg.world_size} "
                              f"({cfg.ranks} search + {cfg.resolved_bcast_ranks()} broadcast)")
        import faulthandler

        if hasattr(signal, "SIGUSR1"):
            faulthandler.register(signal.SIGUSR1, all_threads=True)
        restore = self._install_signals()
        try:
            return self._run()
        except Interrupted:
            self._interrupted()
            raise
        except UserError as e:
            self.abort(str(e))
        except WorkerFailed as e:
            self.abort(str(e), e.details)
        except Exception as e:
            self.abort(f"{type(e).__name__}: {e}", traceback.format_exc())
        finally:
            self.ended.set()
            restore()
        return None  # not reached: abort() ends the process

    def _build_host(self) -> Host:
        """Every rank's host, loading the numba kernels from the cache all at once where an earlier run of this
        kind (stamp file in the cache) put them there; else rank 0 first, which compiles and caches them (after
        a code change), then the others, which load them instead of all compiling at once."""
        cfg = self.config
        stamp = warm_stamp(cfg)
        warm = np.array([self.rank == 0 and stamp is not None and stamp.exists()], dtype=np.int32)
        self.comm.Bcast(warm, root=0)
        if warm[0]:
            return make_host(cfg, self.rank, self.size, self.cache)
        if self.rank == 0:
            host = make_host(cfg, self.rank, self.size, self.cache)
            if stamp is not None:
                try:
                    stamp.touch()
                except OSError:
                    pass
            self.comm.Barrier()
            return host
        self.comm.Barrier()
        return make_host(cfg, self.rank, self.size, self.cache)

    def _run(self) -> dict[str, Any] | None:
        cfg = self.config
        self.host = host = self._build_host()
        # before the clock starts: rank 0's meta.json costs imports and file writes
        self.rec = Recorder(self.rank, cfg.trace, self._meta() if self.rank == 0 else None,
                            cfg.trace_sample_rate, cfg.telemetry)
        if hasattr(host, "record_parts"):  # a role_factory host may not have it
            host.record_parts(self.rec.recording)  # one record per part: see engine.mpi.recorder.run_recorded
        # The start-up's objects (numba's dispatchers, the game tables, pyarrow) never die: out of the
        # collector's way, a full collection walks only what the search allocates. A traced rank allocates
        # ~60,000 record tuples a second, which trigger full collections (traced root 2x1 9x9: 10% of its
        # time in them before). Frozen once per process: a frozen search's objects are never collected, and
        # the runtime's callbacks tie them in cycles (a session's ranks kept each game's table);
        # engine/mpi/session.py re-freezes between searches, when only the long-lived objects remain
        gc.collect()
        global _FROZEN
        if not _FROZEN:  # not gc.get_freeze_count(): it walks the frozen objects, ~15 ms a search
            gc.freeze()
            _FROZEN = True
        clock = synchronise(self.comm, self.cache)
        self.clock, self.now = clock, clock.now
        self.wake = threading.Event()
        workers = 0 if host.inline else cfg.workers
        if workers:
            self.pool = WorkerPool(workers, host.execute, host.describe, self._complete, clock.now,
                                   self.wake.set, record=self.rec.recording)
            self.pool.start()
        self.ep = Endpoint(self.comm, clock.now)
        self.control = ctl.Control(self.rank, self.size, cfg.sims, cfg.seconds, self._send_control,
                                   self._sims_done, self._rank_state, lambda: self._apply(host.stop()),
                                   lambda: self._apply(host.final_sync()), self._report)
        threading.Thread(target=self._watchdog, name="watchdog", daemon=True).start()
        try:
            profile = os.environ.get("TREESPLIT_PROFILE")  # DIR: write each rank's IO-thread profile there
            if profile:
                import cProfile

                cProfile.runctx("self._main_loop()", globals(), {"self": self}, f"{profile}/rank{self.rank}.prof")
            else:
                self._main_loop()
        finally:
            if self.pool is not None:
                self.pool.stop()
        if not self.ep.drain(cfg.stall_timeout, lambda: time.sleep(IDLE_WAIT)):
            raise RuntimeError("final messages could not be delivered")
        t_end = self.now()
        self._collect(t_end)
        if cfg.trace:  # the final snapshot is for the trace only (~10 ms of a 0.1 s GTP move otherwise)
            tree = host.tree(self.control.reports if self.rank == 0 else {})
            if tree:
                tree["t"] = [t_end] * len(tree["hash"])
            self.rec.tree(tree)
        self.rec.close()
        self.comm.Barrier()  # every part is closed before rank 0 merges them
        if self.rank != 0:
            return None
        from engine.mpi.summary import summarise

        result = summarise(cfg, self.control, host.result(self.control.reports), t_end)
        self.rec.finish(result, t_end)
        if cfg.trace:
            self._finish_trace(result, t_end)
        return result

    # --- the IO loop ------------------------------------------------------------------------------------------
    def _tick(self, t: float, next_tick: float) -> float:
        """Every TICK_EVERY (and at every turn once the coordinator ends the search: no tick lag), tick the
        role and CONTROL under the lock and take a sample when one is due; returns the next tick's time."""
        control = self.control
        if t < next_tick and (control.phase == ctl.RUN or not control.coordinator):
            return next_tick
        self.heartbeat = time.monotonic()
        with self.lock:
            self._apply(self.host.tick(t))
            control.tick(t)
        if t >= self.rec.next_sample:
            self._sample(t)
        return t + TICK_EVERY

    def _main_loop(self) -> None:
        if not getattr(self.host, "batch", False):
            self._loop()
            return
        from engine.mpi import native

        if native.available():
            self._loop_native(native)
        else:
            self._loop_batch()

    def _loop_native(self, native) -> None:
        """The IO loop of a batch rank (see _loop_batch) with each turn one compiled call, MPI included
        (engine/mpi/native.py); Python keeps time, speaks CONTROL and grows buffers."""
        from mpi4py import MPI

        host, control, rec, ep = self.host, self.control, self.rec, self.ep
        role = host.role
        now = self.now
        self.cpu0 = time.process_time()
        with self.lock:
            self._apply(host.start())
        tps = ticks_per_second()
        slice_ticks = int(BATCH_SLICE * tps)
        budget_ticks = int(TURN_BUDGET * tps)
        net = native.new_net(self.comm.handle, MPI.BYTE.handle, self.size)
        self.native_net = net
        turn = Bound(native.turn)
        next_tick = 0.0
        last_work = now()
        busy_cycles = 0
        while not control.done:
            logging = rec.active
            sc = role.batch_scratch(logging)
            t0 = now()
            r = turn(role.core, sc, net, slice_ticks, budget_ticks, logging, t0, tps)
            t = now()
            if logging:
                c0, c1 = int(net.net[native.N_RUN_C0]), int(net.net[native.N_RUN_C1])
                host.record_turn(rec, t0, t, c0, c1)
            run_cycles = int(net.net[native.N_RUN_CYCLES])
            if run_cycles != busy_cycles:
                self.io_busy += (run_cycles - busy_cycles) / tps if tps else t - t0
                busy_cycles = run_cycles
            if r == native.T_WORKED:
                last_work = t
            elif r == native.T_CONTROL:
                last_work = t
                for src, tag, buf in ep.poll(limit=1):
                    if tag == wire.TAG_CONTROL:
                        self._on_control(src, buf, t)
                    else:  # a batch came in after the CONTROL message was seen: the next turn takes it
                        raise RuntimeError(f"rank {self.rank}: a batch where a CONTROL message was probed")
            elif r == native.T_GROW_CORE:
                role.grow()
            elif r == native.T_GROW_RECV:
                net = self.native_net = net._replace(rbuf=np.zeros(2 * int(net.net[native.N_NEED]), np.uint8))
            elif r == native.T_CORRUPT:
                role.refuse(int(net.net[native.N_BAD]), int(net.net[native.N_PEND_N]))
            next_tick = self._tick(t, next_tick)
            while self.outbox:
                ep.post(*self.outbox.popleft())
            ep.flush()
            ep.reap()
            if r == native.T_IDLE and t - last_work >= SPIN_FOR:
                self.wake.wait(IDLE_WAIT)
                self.wake.clear()

    def _loop_batch(self) -> None:
        """The IO loop of a search rank whose role takes its input in batches and runs its own packages
        (engine.mpi.roles_host.RolesHost.batch, --threads 1): per turn, every arrived batch of records goes to
        the role in one call, the role runs its queued packages for one slice in another, and what it wrote
        for each rank leaves in one MPI message. No Python object per logical message or package."""
        host, ep, control, rec = self.host, self.ep, self.control, self.rec
        now = self.now
        self.cpu0 = time.process_time()
        with self.lock:
            self._apply(host.start())
        slice_ticks = int(BATCH_SLICE * ticks_per_second())  # 0 (no counter): the queue empties each turn
        next_tick = 0.0
        last_work = now()
        sched_yield = getattr(os, "sched_yield", None) or (lambda: time.sleep(0))
        while not control.done:
            worked = False
            arrived = ep.poll()
            logging = rec.active
            if arrived:
                worked = True
                t_recv = now()
                with self.lock:
                    for src, tag, buf in arrived:
                        if tag == wire.TAG_CONTROL:
                            self._on_control(src, buf, t_recv)
                            continue
                        t_send = wire.header(buf)[1]
                        body = buf[wire.BATCH.size:]
                        host.receive_batch(body, len(body), logging, src, t_send)
                        if logging:
                            host.record_received(rec, src, t_send, t_recv)
            if host.queued():
                worked = True
                with self.lock:
                    t0 = now()
                    c0 = cycles()
                    host.run_batch(slice_ticks, logging)
                    c1 = cycles()
                    t1 = now()
                self.io_busy += t1 - t0
                if logging:
                    host.record_parts_run(rec, t0, t1, c0, c1)
            t = now()
            next_tick = self._tick(t, next_tick)
            for dst, records, count in host.take_outbox():  # the batch's records and what a tick added
                ep.post_records(dst, records, count)
            while self.outbox:
                ep.post(*self.outbox.popleft())
            ep.flush()
            ep.reap()
            if worked:
                last_work = t
            elif t - last_work < SPIN_FOR:
                sched_yield()
            else:
                self.wake.wait(IDLE_WAIT)
                self.wake.clear()


    def _loop(self) -> None:
        host, ep, pool, control, lock = self.host, self.ep, self.pool, self.control, self.lock
        now, rec, local, inline, outbox = self.now, self.rec, self.local, self.inline, self.outbox
        apply, writing, rank = self._apply, self.rec.writer is not None, self.rank
        messages = rec.messages
        self.cpu0 = time.process_time()
        with lock:
            apply(host.start())
        next_tick = 0.0
        spin = pool is None and not host.inline
        tidy = rec.recording
        last_work = now()
        sched_yield = getattr(os, "sched_yield", None) or (lambda: time.sleep(0))
        while not control.done:
            worked = False
            arrived = ep.poll()
            if arrived:
                worked = True
                t_recv = now()
                with lock:
                    for src, tag, buf in arrived:
                        if tag == wire.TAG_CONTROL:
                            self._on_control(src, buf, t_recv)
                            continue
                        t_send = wire.header(buf)[1]
                        for kind, sim_id, payload in wire.split(buf):
                            if writing and rec.active:
                                messages.append((t_send, t_recv, src, rank, kind, len(payload), sim_id))
                            apply(host.on_message(src, kind, sim_id, payload))
                if rec.active:  # the IO thread's own work, on its lane of the trace
                    rec.io_packages.append((t_recv, now(), IO_WORKER, IO, -1, NO_STEPS))
            if local:
                worked = True
                with lock:
                    while local:
                        kind, sim_id, payload = local.popleft()
                        apply(host.on_message(rank, kind, sim_id, payload))
            while outbox:
                ep.post(*outbox.popleft())
            if pool is not None and pool.error is not None:
                raise WorkerFailed(pool.error_text, pool.error_details)
            if inline:  # run packages for a slice of time, then look at the network again
                worked = True
                slice_end = now() + INLINE_SLICE
                # a package that sends ends the slice: its message leaves now, not after the slice (the
                # simulation it carries waits on the other rank meanwhile)
                while inline and self._run_inline(inline.popleft()) < slice_end and not outbox:
                    pass
            t = now()
            next_tick = self._tick(t, next_tick)
            while outbox:
                ep.post(*outbox.popleft())
            ep.flush()
            ep.reap()
            if worked:
                last_work = t
            elif tidy and (len(rec.io_packages) + len(rec.messages) + (
                    sum(map(len, pool.records)) if pool is not None else 0)) >= IDLE_COLLECT_MIN:
                # idle: move the records into the trace now; in one block at the next sample they would
                # hold up this rank (~1 ms per 2,000 records) while the other ranks wait for its messages
                rec.collect(pool.take_records() if pool is not None else [])
            elif spin and t - last_work < SPIN_FOR:
                sched_yield()
            else:
                self.wake.wait(IDLE_WAIT)
                self.wake.clear()

    def _record(self, on: bool) -> None:
        """Record packages and messages from now on, or pause (a probing trace's windows)."""
        if on == self.rec.active:
            return
        self.rec.active = on
        if self.pool is not None:
            self.pool.record = on
        if hasattr(self.host, "record_parts"):
            self.host.record_parts(on)

    def _apply(self, out, worker: int = -1) -> None:
        """Carry out a role's answer (the caller holds the role lock): packages to the workers (or to the IO
        thread's own queue), messages to the outbox, or straight back to the role if sent to this rank."""
        if not out:
            return
        pkgs, msgs = out
        if pkgs:
            self.outstanding += len(pkgs)
            if self.pool is not None:
                for p in pkgs:
                    self.pool.submit(p, worker)
            else:
                self.inline.extend(pkgs)
        if msgs:
            t = self.now()
            for dst, kind, payload, sim_id in msgs:
                if dst == self.rank:
                    self.local.append((kind, sim_id, payload))
                else:
                    self.outbox.append((dst, kind, payload, sim_id, t))
            if worker >= 0:  # from a worker: the IO thread may be asleep
                self.wake.set()

    def _complete(self, pkg: Any, result: Any, worker: int = -1) -> None:
        """A package finished (on a worker, or on the IO thread): the role takes it from here."""
        with self.lock:
            self.outstanding -= 1
            self._apply(self.host.on_work_done(pkg, result), worker)

    def _run_inline(self, pkg: Any) -> float:
        """Run one package on the IO thread; returns the time it ended."""
        now, execute = self.now, self.host.execute
        if self.rec.active:
            result, start, t1 = run_recorded(pkg, execute, self.host.describe, now, IO_WORKER, self.rec.io_packages)
        else:
            start = now()
            result = execute(pkg)
            while result is CONTINUE:  # the package goes on with its next part
                result = execute(pkg)
            t1 = now()
        self.io_busy += t1 - start
        self._complete(pkg, result)
        return t1

    def _on_control(self, src: int, buf, t_recv: float) -> None:
        t_send, payload = wire.control_parts(buf)
        if self.rec.writer is not None and self.rec.active:
            self.rec.messages.append((t_send, t_recv, src, self.rank, CONTROL, len(payload), -1))
        self.control.on_message(src, payload, t_recv)

    def _send_control(self, dst: int, obj: dict) -> None:
        self.ep.post(dst, CONTROL, ctl.encode(obj))  # rank 0 never sends itself CONTROL messages

    def _sims_done(self) -> int:
        """Simulations completed here (the caller holds the role lock)."""
        return int(self.host.sims_done())

    def _rank_state(self) -> tuple[bool, int, int]:
        """(idle, sent, received); the caller holds the role lock, so the view is consistent."""
        idle = (self.outstanding == 0 and not self.local and not self.outbox and self.host.quiescent())
        sent, received = self.ep.app_sent, self.ep.app_received
        net = self.native_net
        if net is not None:  # what the compiled loop sent and received itself
            from engine.mpi import native

            sent += int(net.net[native.N_APP_TX])
            received += int(net.net[native.N_APP_RX])
            idle = bool(idle and not net.used.any() and net.net[native.N_PEND_OFF] < 0)
        return idle, sent, received

    # --- measurements -----------------------------------------------------------------------------------------
    @property
    def workers(self) -> int:
        return self.pool.n if self.pool is not None else 1

    def busy_time(self) -> float:
        return (sum(self.pool.busy_time) if self.pool is not None else 0.0) + self.io_busy

    def queue_len(self) -> int:
        return (self.pool.queued if self.pool is not None else 0) + len(self.inline)

    def _collect(self, t: float) -> None:
        self.rec.collect(self.pool.take_records() if self.pool is not None else [])
        # on a grid of the (synchronised) clock, so that every rank's windows are the same
        self.rec.next_sample = (math.floor(t / SAMPLE_EVERY) + 1) * SAMPLE_EVERY

    def _sample(self, t: float) -> None:
        self._collect(t)
        if self.config.trace_probe:
            # the collection belongs to the window whose records it moved, and the next window records
            # only if its index is even (sim/calibrate.probe_factor reads the windows back the same way)
            self._record(math.floor(t / SAMPLE_EVERY) % 2 == 0)
            t = self.now()
        counters = self.host.counters()
        busy = self.rec.sample(t, self.busy_time(), self.workers, self.queue_len(), counters)
        self.rec.push_telemetry(t, busy, counters, self)

    def sent_totals(self) -> dict[tuple[int, str], list[int]]:
        """(dst, kind) -> [messages, bytes] sent: one by one through the endpoint, or by a batch host."""
        sent = {k: list(v) for k, v in self.ep.sent.items()}
        for d, k, c, b in getattr(self.host, "sent_counts", lambda: [])():
            cell = sent.setdefault((d, k), [0, 0])
            cell[0] += c
            cell[1] += b
        return sent

    def _report(self) -> dict[str, Any]:
        t = self.now()
        _, sent, received = self._rank_state()
        rep = {
            "rank": self.rank, "t": t, "workers": self.workers, "inline": self.pool is None,
            "busy_time": self.busy_time(), "cpu_time": time.process_time() - self.cpu0,
            "counters": {k: int(v) for k, v in self.host.counters().items()},
            "sent": [[d, k, c, b] for (d, k), (c, b) in sorted(self.sent_totals().items())],
            "app_sent": sent, "app_received": received,
            "mpi_sends": self.ep.mpi_sends, "mpi_receives": self.ep.mpi_receives,
            "clock_offset": self.clock.offset, "clock_rtt": self.clock.rtt,
            "host": self.host.report(),
        }
        if self.native_net is not None:  # where the compiled loop's time went (seconds)
            from engine.mpi import native

            rep["mpi_sends"] += int(self.native_net.net[native.N_TX_BATCHES])
            rep["mpi_receives"] += int(self.native_net.net[native.N_RX_BATCHES])
            rep["loop"] = native.loop_report(self.native_net, ticks_per_second())
        return rep

    # --- trace metadata ---------------------------------------------------------------------------------------
    def _ranks(self) -> dict[str, int]:
        return {"search": self.config.ranks, "broadcast": self.config.resolved_bcast_ranks()}

    def _meta(self):
        from model.game import trace_board
        from model.trace import Meta

        cfg = self.config
        self.meta = Meta(runtime="engine", algo=cfg.algo, game=cfg.game, board=trace_board(cfg.game, cfg.board),
                         params=dict(cfg.params), ranks=self._ranks(), threads=cfg.threads, seed=cfg.seed,
                         sample_rate=cfg.trace_sample_rate,
                         extra={"komi": cfg.komi, "moves": list(cfg.moves), "sims": cfg.sims,
                                "seconds": cfg.seconds, "complete": False,
                                # how long a search rank without workers keeps polling after its last work
                                # before it naps (sim/calibrate.py: such ranks show no nap lattice)
                                "idle_spin": SPIN_FOR if cfg.threads == 1 else 0.0,
                                # packages and messages recorded only in even-numbered sample windows
                                "trace_probe": SAMPLE_EVERY if cfg.trace_probe else 0.0})
        return self.meta

    def _finish_trace(self, result: dict[str, Any], t_end: float) -> None:
        from engine.trace_files import finalize, write_meta

        finalize(self.config.trace)
        self.meta.t_end = t_end
        self.meta.extra.update(complete=True, summary={k: v for k, v in result.items() if k != "per_rank"},
                               messages_sent=[[r["rank"], *s] for r in self.control.reports.values()
                                              for s in r["sent"]],
                               clock={str(r["rank"]): {"offset": r["clock_offset"], "rtt": r["clock_rtt"]}
                                      for r in self.control.reports.values()},
                               phases=self.control.times)
        write_meta(self.config.trace, self.meta)

    def _interrupted(self) -> None:
        """Leave a readable partial trace: mark it interrupted (rank 0), stop the workers, write what was
        recorded, close the part, and mark it again with the later end time."""
        try:
            mark = self.rec is not None and self.rank == 0 and self.meta is not None
            if mark:  # first, so that a second signal (mpiexec's kill) during the close still leaves the mark
                self._mark_interrupted()
            if self.pool is not None:
                self.pool.stop(1.0)
            if self.rec is not None:
                self._collect(self.now())
                self.rec.close()
                if mark:
                    self._mark_interrupted()
        except Exception as e:  # the trace is best effort here; the exit code says what happened
            print(f"treesplit: rank {self.rank}: could not close the trace: {e}", file=sys.stderr, flush=True)

    def _mark_interrupted(self) -> None:
        from engine.trace_files import write_meta

        self.meta.t_end = self.now()
        self.meta.extra.update(complete=False, interrupted=True)
        write_meta(self.config.trace, self.meta)

    # --- failure handling -------------------------------------------------------------------------------------
    def _install_signals(self):
        if threading.current_thread() is not threading.main_thread():
            return lambda: None

        def handler(signum, frame):
            if not self.aborting:
                raise Interrupted(signal.Signals(signum).name)

        old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
        return lambda: [signal.signal(s, h) for s, h in old.items()]

    def abort(self, message: str, details: str = "") -> None:
        """Print one clear line (and details), then bring the whole MPI job down."""
        if self.aborting:
            return
        self.aborting = True
        print(f"treesplit: rank {self.rank}: error: {message}", file=sys.stderr, flush=True)
        if details:
            print(details, file=sys.stderr, flush=True)
        # mpiexec forwards a rank's stderr through its proxy, which Abort kills: on a loaded machine the line
        # above was lost (CI saw only "see the rank's error above"); give the proxy a moment to pass it on
        time.sleep(ABORT_GRACE)
        try:
            self.comm.Abort(1)
        finally:
            os._exit(1)

    def _watchdog(self) -> None:
        limit = self.config.stall_timeout
        last_sims, last_sims_t = -1, time.monotonic()
        while not self.control.done and not self.aborting:
            if self.ended.wait(min(1.0, limit / 4)):
                return
            t = time.monotonic()
            if t - self.heartbeat > limit:
                self.abort(f"the IO loop made no progress for {limit:g} s (a role call or package never returned)")
            c = self.control
            if self.rank != 0:
                continue
            if c.phase == ctl.RUN:
                total = sum(c.progress)
                if total != last_sims:
                    last_sims, last_sims_t = total, t
                elif t - last_sims_t > limit:
                    self.abort(f"no simulation completed for {limit:g} s")
            elif self.now() - c.phase_since > limit:
                self.abort(f"shutdown stalled in phase {c.phase!r} for {limit:g} s; "
                           f"no answer from ranks {c.waiting_for()}")
