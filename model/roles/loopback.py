"""The loopback runtime: all ranks' roles in one process, driven by an event queue, no clock, no threads.

Deterministic for a given seed. Each rank has `workers` package slots; a package's execute() runs when it
takes a slot and its completion becomes an event. Pending events (message deliveries, package completions,
timers) are taken in random order (seeded) unless shuffle=False (FIFO), so messages between two ranks
overtake each other: the roles must not rely on per-channel order. serialize=True sends every message
through encode()/decode(), as the engine does; keep=True keeps every Message sent (run.sent).

The run follows the runtimes' termination protocol (model/roles/__init__.py):
    RUN     until nothing is pending (the budget is spent), or stop() on every role after `stop_after`
            events (a stop request in the middle of the search)
    DRAIN   stop() on every role; run until quiescent
    SYNC    final_sync() on every role; run until quiescent; then every role must be idle
"""

from __future__ import annotations

import random
from collections import Counter, deque
from dataclasses import dataclass, field

from model.roles.base import CONTINUE, PART_KINDS, Actions, Role
from model.roles.messages import Message, decode


@dataclass
class LoopbackRun:
    roles: list
    events: int = 0
    messages: list = field(default_factory=list)  # (kind, src, dst, nbytes, sim_id) per message sent
    sent: list = field(default_factory=list)      # the Message objects sent (keep=True)
    packages: Counter = field(default_factory=Counter)  # (rank, kind) -> packages run
    timers: int = 0
    phase_events: dict = field(default_factory=dict)  # phase -> events processed when it ended

    def message_counts(self) -> Counter:
        return Counter(m[0] for m in self.messages)


class Loopback:
    def __init__(self, roles: list[Role], workers: int | list[int] = 1, seed: int = 0, shuffle: bool = True,
                 serialize: bool = False, keep: bool = False, max_events: int = 5_000_000):
        self.roles = roles
        n = len(roles)
        self.workers = [workers] * n if isinstance(workers, int) else list(workers)
        if len(self.workers) != n or min(self.workers) < 1:
            raise ValueError("workers: one count >= 1 per rank")
        self.rng = random.Random(seed)
        self.shuffle = shuffle
        self.serialize = serialize
        self.keep = keep
        self.max_events = max_events
        self.queues: list[deque] = [deque() for _ in range(n)]
        self.running = [0] * n
        self.pending: list = []
        self.fifo: deque = deque()
        self.run_info = LoopbackRun(roles)

    # --- plumbing -------------------------------------------------------------------------------------------
    def _push(self, ev) -> None:
        if self.shuffle:
            self.pending.append(ev)
        else:
            self.fifo.append(ev)

    def _pop(self):
        if not self.shuffle:
            return self.fifo.popleft() if self.fifo else None
        if not self.pending:
            return None
        i = self.rng.randrange(len(self.pending))
        ev = self.pending[i]
        self.pending[i] = self.pending[-1]
        self.pending.pop()
        return ev

    def _apply(self, rank: int, acts: Actions) -> None:
        if not acts:
            return
        for pkg in acts.pkgs:
            if pkg.front:
                self.queues[rank].appendleft(pkg)
            else:
                self.queues[rank].append(pkg)
        for msg in acts.msgs:
            if msg.src != rank:
                raise AssertionError(f"rank {rank} sent a message claiming src {msg.src}")
            if not 0 <= msg.dst < len(self.roles) or msg.dst == rank:
                raise AssertionError(f"rank {rank} sent {msg.kind} to bad destination {msg.dst}")
            self.run_info.messages.append((msg.kind, msg.src, msg.dst, msg.nbytes, msg.sim_id))
            if self.keep:
                self.run_info.sent.append(msg)
            if self.serialize:
                data = msg.encode()
                assert len(data) == msg.nbytes, f"{msg.kind}: nbytes {msg.nbytes} but {len(data)} B encoded"
                msg = decode(msg.kind, msg.src, msg.dst, msg.sim_id, data)
            self._push(("msg", msg.dst, msg))
        for delay, token in acts.timers:
            self.run_info.timers += 1
            self._push(("timer", rank, token))
        self._dispatch(rank)

    def _dispatch(self, rank: int) -> None:
        q = self.queues[rank]
        role = self.roles[rank]
        while q and self.running[rank] < self.workers[rank]:
            pkg = q.popleft()
            self.running[rank] += 1
            self._push(("done", rank, (pkg, self._execute(rank, role, pkg))))

    def _execute(self, rank: int, role: Role, pkg):
        """Run a package, all of its parts (base.CONTINUE), counting each part under its kind."""
        counts = self.run_info.packages
        while True:
            kind = pkg.kind
            result = role.execute(pkg)
            if pkg.parts is None:
                counts[(rank, kind)] += 1
            else:  # several parts in one call
                for k, n in zip(PART_KINDS, pkg.parts.tolist()):
                    counts[(rank, k)] += n
                pkg.parts = None
            if result is not CONTINUE:
                return result

    def _quiescent(self) -> bool:
        return not self.pending and not self.fifo and not any(self.queues) and not any(self.running)

    def _drain(self, stop_after: int | None = None) -> None:
        info = self.run_info
        while True:
            ev = self._pop()
            if ev is None:
                return
            info.events += 1
            if info.events > self.max_events:
                raise RuntimeError(f"loopback: more than {self.max_events} events; the roles never quiesce")
            what, rank, obj = ev
            role = self.roles[rank]
            if what == "msg":
                acts = role.on_message(obj)
            elif what == "done":
                self.running[rank] -= 1
                acts = role.on_work_done(*obj)
            else:
                acts = role.on_timer(obj)
            self._apply(rank, acts)
            self._dispatch(rank)
            if stop_after is not None and info.events == stop_after:
                self._everyone("stop")

    def _everyone(self, method: str) -> None:
        for rank, role in enumerate(self.roles):
            self._apply(rank, getattr(role, method)())

    # --- the protocol ---------------------------------------------------------------------------------------
    def run(self, stop_after: int | None = None) -> LoopbackRun:
        info = self.run_info
        self._everyone("start")
        self._drain(stop_after)
        info.phase_events["run"] = info.events
        self._everyone("stop")
        self._drain()
        info.phase_events["drain"] = info.events
        busy = [r for r, role in enumerate(self.roles) if not role.idle()]
        if busy:
            raise AssertionError(f"loopback: ranks {busy} not idle after the drain")
        self._everyone("final_sync")
        self._drain()
        info.phase_events["sync"] = info.events
        busy = [r for r, role in enumerate(self.roles) if not role.idle()]
        if busy or not self._quiescent():
            raise AssertionError(f"loopback: ranks {busy} not idle after the final synchronisation")
        return info


class BatchLoopback:
    """The engine's batch path in one process: every search rank's role in batch mode (records in, a slice
    of packages run, records out), the others (broadcast ranks) through the contract as in Loopback, in
    rounds; the same termination protocol. Rounds visit the ranks in a seeded random order and deliver each
    rank's outbox as one batch, so records of different ranks interleave as they do between MPI ranks."""

    def __init__(self, roles: list[Role], seed: int = 0, max_rounds: int = 1_000_000):
        self.roles = roles
        self.rng = random.Random(seed)
        self.max_rounds = max_rounds
        self.batched = [getattr(r, "batchable", lambda: False)() and hasattr(r, "run_batch") for r in roles]
        for r, b in zip(roles, self.batched):
            if b:
                r.batch = True
        self.inbox: list[list] = [[] for _ in roles]  # record arrays (or Messages) waiting for each rank
        self.rounds = 0

    def _deliver(self, src: int, dst: int, records) -> None:
        if self.batched[dst]:
            self.inbox[dst].append((src, records.copy()))
            return
        from model.roles.messages import split_records

        for rec in split_records(records.copy()):
            self.inbox[dst].append(Message(rec.kind, src, dst, rec, rec.sim_id))

    def _acts(self, rank: int, acts: Actions) -> None:
        for m in acts.msgs:
            self._deliver(rank, m.dst, m.record())
        self._queue[rank].extend(acts.pkgs)
        self._timers[rank].extend(token for _, token in acts.timers)  # due at the rank's next turn

    def _turn(self, rank: int) -> bool:
        role = self.roles[rank]
        worked = False
        if self.batched[rank]:
            for src, recs in self.inbox[rank]:
                role.receive_batch(recs, len(recs), False, src, 0.0)
                worked = True
            self.inbox[rank] = []
            if role.queued():
                role.run_batch(0, False)
                worked = True
            for dst, records, _ in role.take_outbox():
                self._deliver(rank, dst, records)
                worked = True
            return worked
        for m in self.inbox[rank]:
            self._acts(rank, role.on_message(m))
            worked = True
        self.inbox[rank] = []
        timers, self._timers[rank] = self._timers[rank], []
        for token in timers:
            self._acts(rank, role.on_timer(token))
            worked = True
        q = self._queue[rank]
        while q:
            pkg = q.popleft()
            result = role.execute(pkg)
            self._acts(rank, role.on_work_done(pkg, result))
            worked = True
        return worked

    def _drain(self) -> None:
        while True:
            self.rounds += 1
            if self.rounds > self.max_rounds:
                raise RuntimeError("batch loopback: the roles never quiesce")
            order = list(range(len(self.roles)))
            self.rng.shuffle(order)
            if not any([self._turn(r) for r in order]):
                return

    def _everyone(self, method: str) -> None:
        for rank, role in enumerate(self.roles):
            acts = getattr(role, method)()
            if not self.batched[rank]:
                self._acts(rank, acts)

    def run(self) -> None:
        self._queue = [deque() for _ in self.roles]
        self._timers: list[list] = [[] for _ in self.roles]
        self._everyone("start")
        self._drain()
        self._everyone("stop")
        self._drain()
        self._everyone("final_sync")
        self._drain()
        busy = [r for r, role in enumerate(self.roles) if not role.idle()]
        if busy:
            raise AssertionError(f"batch loopback: ranks {busy} not idle after the final synchronisation")
