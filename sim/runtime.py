"""The virtual runtime: ranks of hosted roles as processes on modelled cores and a modelled network.

The processes run on SimPy's environment (sim/clock.py): each is a small state machine whose waits are
plain-callback heap entries, at the places (and with the ids) a SimPy process's Timeout or Event would
take, which saves the generator, event and callback objects of every step of the hot paths.

Per search rank (Schaefers 2014, 4.2.4, Figure 4.3):
  - an IO-core process: waits for received messages, finished packages or timers; each loop iteration
    costs poll_base + poll_per_peer * peers (one MPI_Testsome over every peer's buffers) plus, per message
    sent or received, the LogGP overhead o, the dispatch cost and a per-byte copy cost (statistics messages
    also pay io.stats_per_byte). With io.batched an iteration's records for one destination leave as one
    message, which pays o (and the NIC's gap) once, and its records per_message and per_byte each.
    Received messages go to the role; its packages go to the rank's queue and its messages leave when the
    iteration ends. Input that arrives while the IO core idles is noticed at a random phase of its polling
    loop, or, with io.idle_nap, at the end of the nap it is in (the engine's idle IO thread sleeps and is
    not woken by the network).
  - C-1 worker processes sharing the rank's package queue (workers may take work from each other's
    buffers, 4.2.4): each takes a package, calls role.execute, charges the service time (the package's
    own cost, or a draw from the profile for its kind) and then either calls role.on_work_done itself
    (Gomorra: a worker carries its simulation on) or, with io.handles_completions, hands the package back
    to the IO core, which calls it (the treesplit engine: roles are driven from the IO thread).
Per broadcast rank: one core; its IO loop also runs the role's packages (delay, merge, forward).
The network is sim/network.py (closed-form LogGP, shared NIC per node); a message costs one event, its
delivery.

Roles are model/roles' (the contract in model/roles/__init__.py), the very code the engine runs. The
statistical fidelity (sim/statistical.py) does not run roles: it draws each simulation's path from a
workload fitted to a trace and replays its messages in one numba kernel.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from heapq import heappush
from typing import Any, Callable

import numpy as np

from model.roles.base import CONTINUE, PART_KINDS, Actions, Package
from sim.clock import NORMAL, URGENT, Clock
from sim.distributions import Sampler
from sim.network import Network
from sim.profile import Profile

# Messages that carry shared-node statistics (the IO core pays io.stats_per_byte to take them in).
STATS_KINDS = frozenset(("SYNC", "BCAST", "DUP", "MERGE"))
_GOLDEN = 0x9E3779B97F4A7C15
_MASK = (1 << 64) - 1


def run_parts(pkg, execute, samplers) -> tuple[list[tuple[str, float, int, int]], object]:
    """Run a package and every further part it asks for (model.roles.CONTINUE): ([(kind, cost, sim_id,
    steps)], result). Each part is charged as a package of its kind (the package's own cost if it has one)."""
    parts = []
    while True:
        k = pkg.kind
        result = execute(pkg)
        parts.extend(charge(pkg, k, samplers))
        if result is not CONTINUE:
            return parts, result


def charge(pkg, kind: str, samplers) -> list[tuple[str, float, int, int]]:
    """[(kind, cost, sim_id, steps)] of the execute() call that just ran `pkg` (started as `kind`): one part,
    or each of the parts it ran in one call (Package.parts; in the order they ran, under their own
    simulations and with the tree steps each covered where the role logged them, Package.log), each charged
    as a package of its kind (for its steps: the profile's [steps]; -1 where they are not known)."""
    ran = pkg.parts
    if ran is None:
        c = pkg.cost
        return [(kind, samplers[kind].next() if c is None else c, pkg.sim_id, -1)]
    pkg.parts = None
    log = pkg.log
    if log is not None:
        pkg.log = None
        kinds, sims, _, labels, steps = log
        out = []
        for k, i, n in zip(kinds.tolist(), sims.tolist(), steps.tolist()):
            name = PART_KINDS[k]
            out.append((name, samplers[name].at(n), labels[i], n))
        return out
    sim = pkg.sim_id
    return [(k, samplers[k].next(), sim, -1) for k, count in zip(PART_KINDS, ran.tolist()) for _ in range(count)]


@dataclass
class Cluster:
    """Which rank is on which node: M search ranks, then B broadcast ranks on nodes of their own,
    ranks_per_node to a node (the ranks of a node share its NIC)."""

    M: int
    B: int
    ranks_per_node: int

    @property
    def search_nodes(self) -> int:
        return -(-self.M // self.ranks_per_node)

    @property
    def bcast_nodes(self) -> int:
        return -(-self.B // self.ranks_per_node)

    def node_of(self) -> list[int]:
        rpn = self.ranks_per_node
        return [r // rpn for r in range(self.M)] + [self.search_nodes + b // rpn for b in range(self.B)]


class RankStats:
    """Exact counters of one rank (messages and bytes out by kind, busy time)."""

    __slots__ = ("msgs_out", "bytes_out", "msgs_in", "busy", "io_busy", "io_loops", "io_loop_time", "pkgs")

    def __init__(self) -> None:
        self.msgs_out: dict[str, int] = {}
        self.bytes_out = 0
        self.msgs_in = 0
        self.busy = 0.0      # worker-seconds of completed packages
        self.io_busy = 0.0   # IO-core seconds in loop iterations that had work
        self.io_loops = 0
        self.io_loop_time = 0.0
        self.pkgs: dict[str, int] = {}

    def snapshot(self) -> dict[str, Any]:
        return {"msgs_out": dict(self.msgs_out), "bytes_out": self.bytes_out, "msgs_in": self.msgs_in,
                "busy": self.busy, "io_busy": self.io_busy, "io_loops": self.io_loops,
                "io_loop_time": self.io_loop_time, "pkgs": dict(self.pkgs)}


class TraceSink:
    """Writes packages/messages, sampled by simulation as the engine does (engine/mpi/recorder.py: Fibonacci
    hashing of sim_id, so a sampled simulation is complete), and the samples table (always exact).
    Messages without a simulation are all kept; packages without one are sampled by count."""

    def __init__(self, writer, sample_rate: float):
        self.w = writer
        self.rate = sample_rate
        self.all = sample_rate >= 1.0
        self.count = 0

    def keep(self, sim_id: int) -> bool:
        if self.all:
            return True
        if sim_id < 0:
            self.count += 1
            return (((self.count * _GOLDEN) & _MASK) >> 11) / 9007199254740992.0 < self.rate
        return (((sim_id * _GOLDEN) & _MASK) >> 11) / 9007199254740992.0 < self.rate

    def keep_msg(self, sim_id: int) -> bool:
        return sim_id < 0 or self.keep(sim_id)


class Rank:
    """One simulated MPI rank: its IO core, its workers (none for a broadcast rank), its role.

    Its cores are state machines on the world's clock (sim/clock.py) rather than generator processes: every
    wait (a package's service time, an IO iteration, a wake-up) is one heap entry where the SimPy process
    would have waited for one Timeout or Event, so events keep their order and count."""

    def __init__(self, world: "World", rid: int, role: Any, workers: int, peers: int, bcast: bool):
        self.world, self.rid, self.role, self.n_workers, self.bcast = world, rid, role, workers, bcast
        self.queue: deque[Package] = deque()
        self.idle: list[int] = []   # parked workers (each gets a wake-up when a package comes)
        self.inbox: list = []  # (message, its size in bytes)
        self.batches_in = 0    # MPI messages the inbox's records came in (each pays o once)
        self.outbox: list = []
        self.timers_due: list[Any] = []
        self.done: list[tuple[Package, Any]] = []  # finished packages for the IO core (handles_completions)
        self.io_waiting = False  # the IO core waits for input: the next input schedules its wake-up
        self.t_idle = 0.0        # when the IO core's current wait began
        self.peers = peers
        self.loop_time = world.profile.io.loop_time(peers)
        self.running: dict[int, float] = {}  # worker -> start of its current package
        self.current: list[Any] = [None] * workers  # worker -> (package, parts, result, cost, start)
        self.io_pending: Any = None  # an IO iteration's (start, sends, packages, timers) until it ends
        self.stats = RankStats()
        # hot-path copies
        env = world.env
        self.env = env
        self.heap = env.heap
        self.eid = env.ids
        self.execute = role.execute
        self.samplers = world.samplers
        self.trace = world.trace
        if hasattr(role, "record_parts"):  # as the engine: a trace gets each part under its own simulation,
            # and a profile that charges per tree step needs each part's steps
            role.record_parts(self.trace is not None or bool(world.profile.steps))
        prof = world.profile
        self.via_io = prof.io.handles_completions
        self.worker_per_pkg = 0.0 if self.via_io else prof.io.per_package

    # --- inputs -------------------------------------------------------------------------------------
    def deliver_batch(self, items: list) -> None:
        """One MPI message arrives: its records [(message, nbytes), ...], one unless io.batched."""
        self.inbox.extend(items)
        self.batches_in += 1
        self._wake_io()

    def _wake_io(self) -> None:
        if self.io_waiting:
            self.io_waiting = False
            heappush(self.heap, (self.env.now, NORMAL, next(self.eid), self._io_woken, None))

    def timer_due(self, token) -> None:
        self.timers_due.append(token)
        self._wake_io()

    def push(self, pkgs: list[Package]) -> None:
        q = self.queue
        for p in pkgs:
            if p.front:
                q.appendleft(p)
            else:
                q.append(p)
        self._wake_workers(len(pkgs))

    def _wake_workers(self, n: int) -> None:
        idle = self.idle
        if idle:
            heap, eid, now, take = self.heap, self.eid, self.env.now, self._worker_take
            for _ in range(min(len(idle), n)):
                heappush(heap, (now, NORMAL, next(eid), take, idle.pop()))

    def apply(self, acts: Actions) -> None:
        """Route a role's answer: packages to the queue, messages to the IO core's send list, timers."""
        if acts.pkgs:
            self.push(acts.pkgs)
        if acts.msgs:
            self.outbox.extend(acts.msgs)
            self._wake_io()
        if acts.timers:
            self.world.add_timers(self, acts.timers)

    # --- workers ------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the cores, as SimPy starts processes: the IO core, then the workers, at once (urgent)."""
        env = self.env
        env.at(0.0, self._io_loop, None, URGENT)
        for w in range(self.n_workers):
            env.at(0.0, self._worker_take, w, URGENT)

    def _worker_take(self, w: int) -> None:
        """A worker is free: it takes the next package and runs it, or parks until one comes."""
        q = self.queue
        if not q:
            self.idle.append(w)
            return
        pkg = q.popleft()
        # run_parts, with the one-part package (most of them) first
        k = pkg.kind
        result = self.execute(pkg)
        if result is not CONTINUE and pkg.parts is None:
            cost = pkg.cost
            if cost is None:
                cost = self.samplers[k].next()
            parts = ((k, cost, pkg.sim_id, -1),)
        else:
            parts = charge(pkg, k, self.samplers)
            if result is CONTINUE:
                more, result = run_parts(pkg, self.execute, self.samplers)
                parts += more
            cost = sum(p[1] for p in parts)
        t0 = self.env.now
        self.running[w] = t0
        self.current[w] = (pkg, parts, result, cost, t0)
        per_pkg = self.worker_per_pkg
        heappush(self.heap, (t0 + (cost + per_pkg if per_pkg else cost), NORMAL, next(self.eid),
                             self._worker_done, w))

    def _worker_done(self, w: int) -> None:
        pkg, parts, result, cost, t = self.current[w]
        del self.running[w]
        stats = self.stats
        stats.busy += cost
        counts = stats.pkgs
        trace = self.trace
        for k, c, sim, steps in parts:
            counts[k] = counts.get(k, 0) + 1
            if trace is not None and trace.keep(sim):
                trace.w.package(t, t + c, self.rid, w, k, sim, steps)
            t += c
        if self.via_io:
            self.done.append((pkg, result))
            self._wake_io()
        else:
            acts = self.role.on_work_done(pkg, result)
            if acts is not None:
                self.apply(acts)
        self._worker_take(w)

    # --- the IO core --------------------------------------------------------------------------------
    def _has_input(self) -> bool:
        return bool(self.inbox or self.outbox or self.timers_due or self.done or (self.n_workers == 0 and self.queue))

    def _io_loop(self, _=None) -> None:
        """The top of the IO core's loop: an iteration if there is input, else wait for some."""
        self.t_idle = self.env.now
        if self._has_input():
            self._io_iteration(False)
        else:
            self.io_waiting = True

    def _io_woken(self, _) -> None:
        if not self._has_input():
            self.io_waiting = True
            return
        nap = self.world.profile.io.idle_nap
        if nap > 0 and not (self.outbox or self.done):  # a worker's hand-over does wake it
            # a napping core is not woken: it polls again at the end of its current nap, and whatever
            # arrived by then is taken in that iteration (one event, not one per nap)
            now = self.env.now
            wait = max(1, math.ceil((now - self.t_idle) / nap - 1e-9)) * nap - (now - self.t_idle)
            if wait > 0:
                heappush(self.heap, (now + wait, NORMAL, next(self.eid), self._io_iteration, False))
                return
            self._io_iteration(False)
            return
        self._io_iteration(True)

    def _io_iteration(self, woke: bool) -> None:
        """One iteration of the IO loop. A rank without workers (a broadcast rank) runs its packages here,
        between polls."""
        world = self.world
        env = self.env
        prof = world.profile
        role = self.role
        stats = self.stats
        trace = world.trace
        inline = self.n_workers == 0
        inbox, self.inbox = self.inbox, []
        batches_in, self.batches_in = self.batches_in, 0
        sends, self.outbox = self.outbox, []
        timers, self.timers_due = self.timers_due, []
        done, self.done = self.done, []
        cost = self.loop_time
        # an idle IO core spins in its loop; new input is seen at a random point of an iteration
        phase = world.phase_rng.random() * self.loop_time if woke else 0.0
        nbytes = 0
        pkgs: list[Package] = []
        new_timers: list = []
        if inbox:
            stats_per_byte = prof.io.stats_per_byte
            for m, nb in inbox:
                nbytes += nb
                if m.kind in STATS_KINDS:
                    cost += nb * stats_per_byte
                acts = role.on_message(m)
                if acts:
                    pkgs.extend(acts.pkgs)
                    sends.extend(acts.msgs)
                    new_timers.extend(acts.timers)
        for tok in timers:
            acts = role.on_timer(tok)
            if acts:
                pkgs.extend(acts.pkgs)
                sends.extend(acts.msgs)
                new_timers.extend(acts.timers)
        for pkg, result in done:
            acts = role.on_work_done(pkg, result)
            if acts:
                pkgs.extend(acts.pkgs)
                sends.extend(acts.msgs)
                new_timers.extend(acts.timers)
        per_pkg = prof.io.per_package
        if inline:
            # run what is queued plus what this iteration produced, until nothing is left
            q = self.queue
            execute, samplers = self.execute, self.samplers
            search_inline = not self.bcast  # the engine's --threads 1: packages count as busy
            rid = self.rid
            slice_ = prof.io.inline_slice
            for p in pkgs:
                if p.front:
                    q.appendleft(p)
                else:
                    q.append(p)
            pkgs = []
            t_pkg = env.now + phase + cost
            # a time slice (the engine's); without one, what was queued when the iteration began (a
            # simulation that never leaves the rank must still let the loop poll)
            t_slice = t_pkg + slice_ if slice_ > 0 else float("inf")
            n_left = len(q) if slice_ <= 0 else -1
            while q and t_pkg < t_slice and n_left != 0:
                n_left -= 1
                pkg = q.popleft()
                parts, result = run_parts(pkg, execute, samplers)
                for k, c, sim, steps in parts:
                    stats.pkgs[k] = stats.pkgs.get(k, 0) + 1
                    if trace is not None and trace.keep(sim):
                        trace.w.package(t_pkg, t_pkg + c, rid, -1, k, sim, steps)
                    t_pkg += c
                    cost += c
                    if search_inline:
                        stats.busy += c
                t_pkg += per_pkg
                cost += per_pkg
                if search_inline:  # the engine's run time holds each package's bookkeeping too
                    stats.busy += per_pkg
                acts = role.on_work_done(pkg, result)
                if acts:
                    for p in acts.pkgs:
                        if p.front:
                            q.appendleft(p)
                        else:
                            q.append(p)
                    sends.extend(acts.msgs)
                    new_timers.extend(acts.timers)
        out = world.batches(sends)
        nbytes += sum(b for _, _, b in out)
        cost += ((batches_in + len(out)) * prof.network.overhead + (len(inbox) + len(sends)) * prof.io.per_message
                 + len(done) * (prof.io.per_message + per_pkg) + nbytes * prof.io.per_byte)
        stats.msgs_in += len(inbox)
        stats.io_loops += 1
        stats.io_loop_time += cost
        stats.io_busy += cost
        now = env.now
        self.io_pending = (now + phase, out, pkgs, new_timers)
        heappush(self.heap, (now + (phase + cost), NORMAL, next(self.eid), self._io_iteration_end, None))

    def _io_iteration_end(self, _) -> None:
        t0, out, pkgs, new_timers = self.io_pending
        self.io_pending = None
        world = self.world
        now = self.env.now
        trace = world.trace
        if trace is not None and trace.keep(-1):
            trace.w.package(t0, now, self.rid, -1, "io", -1)
        if out:
            world.send(self, out, now)
        if pkgs:
            self.push(pkgs)
        if new_timers:
            world.add_timers(self, new_timers)
        self._io_loop()


@dataclass
class RunResult:
    """Exact counters of a run, the measurement window and per-rank stats (sim/summary.py reads it)."""

    cluster: Cluster
    workers_per_rank: int
    t_start: float
    t_end: float
    counters_start: list[tuple]
    counters_end: list[tuple]
    stats_start: list[dict]
    stats_end: list[dict]
    events: int
    wall_s: float
    extra: dict[str, Any] = field(default_factory=dict)


class World:
    """A simulated cluster hosting one role per rank. `run(seconds)` advances simulated time."""

    def __init__(self, profile: Profile, cluster: Cluster, make_role: Callable[[int], Any],
                 seed: int = 0, trace_writer=None, sample_rate: float = 1.0, sample_interval: float = 0.01,
                 bcast_peers: Callable[[int], int] | None = None):
        self.profile = profile
        self.cluster = cluster
        self.env = Clock()
        self.rng = np.random.default_rng(seed)
        self.phase_rng = np.random.default_rng(seed + 1)
        self.samplers = {k: Sampler(d, np.random.default_rng([seed, i]),
                                    per_step=profile.steps[k].coefficients() if k in profile.steps else (1.0, 0.0))
                         for i, (k, d) in enumerate(sorted(profile.costs.items()))}
        self.network = Network(profile.network, cluster.node_of())
        self.trace = TraceSink(trace_writer, sample_rate) if trace_writer is not None else None
        self.sample_interval = sample_interval
        M, B = cluster.M, cluster.B
        workers = profile.node.workers_per_rank
        self.workers_per_rank = workers
        self.ranks: list[Rank] = []
        for r in range(M + B):
            is_b = r >= M
            if is_b:
                peers = (bcast_peers(r - M) if bcast_peers else 0) + math.ceil(M / max(B, 1))
            else:
                peers = (M - 1) + (1 if B else 0)
            role = make_role(r)
            self.ranks.append(Rank(self, r, role, 0 if is_b else workers, peers, is_b))
        self.n_msgs = 0
        self._started = False
        self._draining = False
        self._busy_mark = [0.0] * (M + B)

    # --- network ------------------------------------------------------------------------------------
    def batches(self, msgs: list) -> list[tuple[int, list, int]]:
        """What msgs leave a rank as: MPI messages (destination, [(message, nbytes), ...], nbytes), one per
        destination of all its records with io.batched, else one per record."""
        if not self.profile.io.batched:
            return [(m.dst, [(m, m.nbytes)], m.nbytes) for m in msgs]
        by_dst: dict[int, list] = {}
        for m in msgs:
            by_dst.setdefault(m.dst, []).append((m, m.nbytes))
        return [(dst, items, sum(nb for _, nb in items)) for dst, items in by_dst.items()]

    def send(self, rank: Rank, batches: list[tuple[int, list, int]], now: float) -> None:
        """Hand a rank's MPI messages (World.batches) to the network at `now` and schedule their delivery."""
        net, heap, eid, t_env = self.network, self.env.heap, self.env.ids, self.env.now
        stats, trace, src, ranks = rank.stats, self.trace, rank.rid, self.ranks
        mo = stats.msgs_out
        for dst, items, nbytes in batches:
            t_arr = net.transfer(now, src, dst, nbytes)
            for m, nb in items:
                k = m.kind
                mo[k] = mo.get(k, 0) + 1
                if trace is not None and trace.keep_msg(m.sim_id):
                    trace.w.message(now, t_arr, src, dst, k, nb, m.sim_id)
            stats.bytes_out += nbytes
            self.n_msgs += len(items)
            # the delivery, where a Timeout(t_arr - now) would be
            heappush(heap, (t_env + (t_arr - now), NORMAL, next(eid), ranks[dst].deliver_batch, items))

    def add_timers(self, rank: Rank, timers: list) -> None:
        at = self.env.at
        for delay, token in timers:
            at(delay, rank.timer_due, token)

    # --- running ------------------------------------------------------------------------------------
    def _start(self) -> None:
        env = self.env
        for rank in self.ranks:
            rank.start()
        for rank in self.ranks:
            acts = rank.role.start()
            if acts:
                rank.apply(acts)
        if self.trace is not None:
            env.process(self._sampler())
        self._started = True

    def _busy_until(self, rank: Rank, t: float) -> float:
        b = rank.stats.busy
        for t0 in rank.running.values():
            b += t - t0
        return b

    def _sampler(self):
        env = self.env
        dt = self.sample_interval
        w = self.trace.w
        while not self._draining:
            yield env.timeout(dt)
            t = env.now
            for rank in self.ranks:
                cores = rank.n_workers
                if cores:
                    b = self._busy_until(rank, t)
                    busy = (b - self._busy_mark[rank.rid]) / (cores * dt)
                    self._busy_mark[rank.rid] = b
                    qlen = len(rank.queue)
                else:
                    b = rank.stats.io_busy
                    busy = min(1.0, (b - self._busy_mark[rank.rid]) / dt)
                    self._busy_mark[rank.rid] = b
                    qlen = len(rank.inbox)
                st = rank.role.stats()
                w.sample(t, rank.rid, qlen, busy, st.sims_done, st.playouts, st.nodes_stored, st.nodes_duplicated)

    def counters(self) -> list[tuple]:
        """(sims_done, playouts, nodes_stored, nodes_duplicated) per rank, from the roles."""
        out = []
        for r in self.ranks:
            st = r.role.stats()
            out.append((st.sims_done, st.playouts, st.nodes_stored, st.nodes_duplicated))
        return out

    def stats_snapshot(self) -> list[dict]:
        t = self.env.now
        out = []
        for r in self.ranks:
            s = r.stats.snapshot()
            s["busy"] = self._busy_until(r, t)
            out.append(s)
        return out

    def run(self, seconds: float, warmup: float = 0.0, progress: Callable[[float], None] | None = None,
            chunks: int = 100) -> RunResult:
        """Simulate `seconds` (plus `warmup` first, not measured); `progress(t)` is called as time passes."""
        import time

        if not self._started:
            self._start()
        wall0 = time.perf_counter()
        env = self.env
        t_begin = env.now
        total = warmup + seconds
        step = total / chunks
        t0_stats = None
        c0 = None
        t_meas = t_begin + warmup
        if warmup <= 0:
            c0, t0_stats = self.counters(), self.stats_snapshot()
        for i in range(1, chunks + 1):
            target = t_begin + step * i
            if c0 is None and target >= t_meas:
                if t_meas > env.now:
                    env.run_to(t_meas)
                c0, t0_stats = self.counters(), self.stats_snapshot()
            if target > env.now:
                env.run_to(target)
            if progress:
                progress(env.now - t_begin)
        wall = time.perf_counter() - wall0
        ev_count = env.events()
        return RunResult(self.cluster, self.workers_per_rank, t_meas, env.now, c0, self.counters(), t0_stats,
                         self.stats_snapshot(), ev_count, wall)

    def _quiesce(self, max_events: int) -> int:
        env = self.env
        n = 0
        while env.peek() < math.inf:
            env.step()
            n += 1
            if n > max_events:
                raise RuntimeError(f"simulator: no quiescence after {max_events} events")
        return n

    def _everyone(self, method: str) -> None:
        for rank in self.ranks:
            acts = getattr(rank.role, method)()
            if acts:
                rank.apply(acts)

    def drain(self, max_events: int = 50_000_000) -> dict[str, Any]:
        """The termination protocol (model/roles/__init__.py): stop every role, run until nothing is left,
        final_sync every role, run until quiescent again. Returns counts for the invariants."""
        self._draining = True
        t0 = self.env.now
        self._everyone("stop")
        n1 = self._quiesce(max_events)
        busy = [r.rid for r in self.ranks if not r.role.idle()]
        if busy:
            raise RuntimeError(f"simulator: ranks {busy[:8]} not idle after the drain")
        self._everyone("final_sync")
        n2 = self._quiesce(max_events)
        sent: dict[str, int] = {}
        for r in self.ranks:
            for k, v in r.stats.msgs_out.items():
                sent[k] = sent.get(k, 0) + v
        return {"t_drain": t0, "t_quiet": self.env.now, "events": n1 + n2,
                "messages_sent": sum(sent.values()), "messages_received": sum(r.stats.msgs_in for r in self.ranks),
                "sims_done": sum(r.role.stats().sims_done for r in self.ranks[: self.cluster.M])}
