"""The runtime's pieces that need no MPI: the wire format and the CONTROL protocol (run over a simulated
network with random delays, where termination must never be declared while work is in flight)."""

from __future__ import annotations

import random

import pytest

from engine.mpi import control as ctl
from engine.mpi import wire


def test_batch_round_trip():
    """A batch carries records of any kind to one rank, and opaque payloads of hosts with their own bytes;
    a truncated or miscounted batch is an error, not garbage."""
    import numpy as np

    from model.roles.messages import STEP, Message, Steps

    steps = np.zeros(3, STEP)
    steps["hash"] = [5, 6, 7]
    recs = [Message("MOVE", 0, 1, Steps(steps), sim_id=9).record(), wire.opaque("UPDATE", 1 << 40, b"abc"),
            wire.opaque("SYNC", -1, bytes(range(256)) * 3)]
    buf = wire.batch(recs, 3, 2.25)
    assert wire.header(buf) == (3, 2.25)
    got = wire.split(buf)
    assert [(k, s) for k, s, _ in got] == [("MOVE", 9), ("UPDATE", 1 << 40), ("SYNC", -1)]
    assert got[0][2].view(np.uint8).tobytes() == recs[0].tobytes()
    assert got[1][2] == b"abc" and got[2][2] == bytes(range(256)) * 3
    with pytest.raises(ValueError):
        wire.split(buf[:-8])
    bad = buf.copy()
    bad[0] = 4  # four records announced, three there
    with pytest.raises(ValueError):
        wire.split(bad)


def test_records_and_control_have_their_own_tags():
    assert wire.TAG_RECORDS != wire.TAG_CONTROL and min(wire.TAG_RECORDS, wire.TAG_CONTROL) >= wire.TAG_BASE


class _Rank:
    """A rank of the simulated network: tokens (application messages) bounce between ranks, each hop after
    some work, sometimes splitting in two, until their hop budget is spent."""

    def __init__(self, r, size, net, sims, rng):
        self.r, self.net, self.rng = r, net, rng
        self.work = []  # (ready_at, hops_left)
        self.sent = self.received = self.done_sims = 0
        self.stopped = self.synced = False
        self.control = ctl.Control(r, size, sims, None, self.send_control, lambda: self.done_sims, self.state,
                                   self.stop, self.sync, lambda: {"rank": r, "sent": []})

    def send_control(self, dst, obj):
        self.net.send(self.r, dst, "CONTROL", ctl.encode(obj))

    def state(self):
        return not self.work, self.sent, self.received

    def stop(self):
        self.stopped = True

    def sync(self):
        self.synced = True
        for dst in range(self.net.size):  # the final sync sends application messages too
            if dst != self.r:
                self.sent += 1
                self.net.send(self.r, dst, "APP", -1)  # statistics only: no work follows

    def step(self, now):
        ready = [w for w in self.work if w[0] <= now]
        self.work = [w for w in self.work if w[0] > now]
        for _, hops in ready:
            if hops == 0:
                self.done_sims += 1
                if not self.stopped:
                    self.work.append((now + self.rng.random() * 0.0003, self.rng.randrange(40)))
                continue
            # a token may fan out (as a playout's UPDATEs or a SYNC's broadcasts do)
            for _ in range(2 if self.rng.random() < 0.3 else 1):
                self.sent += 1
                self.net.send(self.r, self.rng.randrange(self.net.size), "APP", (hops - 1) // 2)
        self.control.tick(now)

    def deliver(self, src, kind, payload, now):
        if kind == "CONTROL":
            self.control.on_message(src, payload, now)
        else:
            self.received += 1
            if payload >= 0:
                self.work.append((now + self.rng.random() * 0.0003, payload))


class _Net:
    def __init__(self, size, rng):
        self.size, self.rng = size, rng
        self.links = {}  # (src, dst) -> FIFO of (arrival, kind, payload): MPI's non-overtaking order
        self.now = 0.0

    def send(self, src, dst, kind, payload):
        q = self.links.setdefault((src, dst), [])
        last = q[-1][0] if q else self.now
        q.append((max(last, self.now + self.rng.random() * 0.004), kind, payload))

    def in_flight(self, search_only=False):
        return sum(1 for q in self.links.values() for m in q if m[1] == "APP" and (m[2] >= 0 or not search_only))


@pytest.mark.parametrize("seed", range(30))
def test_termination_is_never_premature(seed):
    rng = random.Random(seed)
    size = rng.choice([1, 2, 3, 5, 8, 12])
    net = _Net(size, rng)
    ranks = [_Rank(r, size, net, sims=200, rng=random.Random(seed * 100 + r)) for r in range(size)]
    for rk in ranks:
        rk.work = [(0.0, rng.randrange(40)) for _ in range(16)]
    finished_at = None
    while net.now < 60:
        net.now += 0.0002
        for (src, dst), q in net.links.items():
            while q and q[0][0] <= net.now:
                _, kind, payload = q.pop(0)
                ranks[dst].deliver(src, kind, payload, net.now)
        for rk in ranks:
            if not rk.control.done:
                rk.step(net.now)
        c0 = ranks[0].control
        if c0.phase in (ctl.SYNC, ctl.FINISH, ctl.DONE):
            # the drain was declared over: nothing of the search may be left anywhere
            assert all(not rk.work for rk in ranks) and net.in_flight(search_only=True) == 0
        if c0.phase in (ctl.FINISH, ctl.DONE):
            assert net.in_flight() == 0 and all(not rk.work for rk in ranks)
            assert all(rk.synced for rk in ranks)
            assert sum(rk.sent for rk in ranks) == sum(rk.received for rk in ranks)
        if all(rk.control.done for rk in ranks):
            finished_at = net.now
            break
    assert finished_at is not None, "the protocol did not finish"
    assert sum(rk.done_sims for rk in ranks) >= 200
    assert set(ranks[0].control.reports) == set(range(size))


def test_a_wave_that_straddles_a_message_chain_does_not_end_the_drain():
    """The classic trap of counting termination tests: rank 0 answers idle, then receives m0 from rank 1
    (counted by rank 1, which answers after sending it) and sends m1 and m2 to rank 2, which answers after
    receiving m1. That wave's totals agree (1 sent, 1 received) and everyone answered idle, yet m2 is in
    flight. A second, identical wave is what the protocol must wait for."""
    outbox = []  # (src, dst, payload) CONTROL messages not yet delivered
    counts = {r: [0, 0] for r in range(3)}  # app messages sent, received

    def make(r):
        return ctl.Control(r, 3, sims=1, seconds=None, send=lambda dst, obj: outbox.append((r, dst, obj)),
                           sims_done=lambda: 1, rank_state=lambda: (True, counts[r][0], counts[r][1]),
                           stop_role=lambda: None,
                           final_sync=lambda: None, report=lambda: {"rank": r, "sent": []})

    c = [make(r) for r in range(3)]

    def deliver(dst, op=None):
        for i, (src, d, obj) in enumerate(outbox):
            if d == dst and (op is None or obj["op"] == op):
                outbox.pop(i)
                c[dst].on_message(src, ctl.encode(obj), 1.0)
                return obj
        raise AssertionError(f"nothing for rank {dst}")

    c[0].tick(0.5)  # budget reached: STOP
    deliver(1, "STOP"), deliver(2, "STOP")
    c[0].tick(0.6)  # wave 1: rank 0 answers itself (idle, 0 sent, 0 received)
    assert c[0].phase == ctl.DRAIN and c[0].wave == 1
    counts[1][0] += 1  # rank 1 sends m0 to rank 0 ...
    deliver(1, "PROBE")  # ... then answers (idle, 1, 0)
    counts[0][1] += 1  # rank 0 receives m0
    counts[0][0] += 2  # and sends m1, m2 to rank 2
    counts[2][1] += 1  # rank 2 receives m1 ...
    deliver(2, "PROBE")  # ... then answers (idle, 0, 1); m2 is still in flight
    deliver(0, "REPLY"), deliver(0, "REPLY")
    assert c[0].phase == ctl.DRAIN  # totals 1 == 1 and all idle, but not twice: keep draining
    c[0].tick(2.0)  # wave 2 sees 3 sent, 2 received
    deliver(1, "PROBE"), deliver(2, "PROBE"), deliver(0, "REPLY"), deliver(0, "REPLY")
    assert c[0].phase == ctl.DRAIN
    counts[2][1] += 1  # m2 arrives
    for t in (3.0, 4.0):
        c[0].tick(t)
        deliver(1, "PROBE"), deliver(2, "PROBE"), deliver(0, "REPLY"), deliver(0, "REPLY")
    assert c[0].phase == ctl.SYNC  # two identical quiet waves: now the drain is over


def test_a_session_reuses_its_clock_offsets_until_they_are_stale(monkeypatch):
    from mpi4py import MPI

    from engine.mpi import clock

    comm = MPI.COMM_SELF
    cache: dict = {}
    first = clock.synchronise(comm, cache)
    measured_at = cache["clock"][2]
    second = clock.synchronise(comm, cache)
    assert cache["clock"][2] == measured_at  # not measured again
    assert second.start > first.start and second.offset == first.offset
    assert 0.0 <= second.now() < 1.0
    monkeypatch.setattr(clock, "RESYNC_AFTER", -1.0)
    clock.synchronise(comm, cache)
    assert cache["clock"][2] > measured_at  # stale: measured again
    assert clock.synchronise(comm, None).offset == 0.0  # no session: always measured, nothing kept


def test_a_simulation_budget_is_seen_reached_within_a_few_milliseconds():
    """Under a sims budget the counts travel every SIMS_PROGRESS_EVERY, not every PROGRESS_EVERY: a search
    must not run on for tens of milliseconds past its budget."""
    sent = []
    done = {0: 0, 1: 0}

    def control(rank, sims, seconds=None):
        return ctl.Control(rank, 2, sims, seconds, send=lambda dst, obj: sent.append((rank, dst, obj)),
                           sims_done=lambda: done[rank], rank_state=lambda: (False, 0, 0), stop_role=lambda: None,
                           final_sync=lambda: None, report=lambda: {})

    c0, c1 = control(0, 100), control(1, 100)
    for c in (c0, c1):
        c.tick(0.0)
    done[0], done[1] = 40, 60
    t = ctl.SIMS_PROGRESS_EVERY
    assert t <= 0.005 < ctl.PROGRESS_EVERY
    c1.tick(t)
    progress = [obj for src, dst, obj in sent if src == 1 and obj["op"] == "PROGRESS"]
    assert progress[-1] == {"op": "PROGRESS", "sims": 60}
    c0.on_message(1, ctl.encode(progress[-1]), t)
    c0.tick(t)
    assert c0.phase == ctl.DRAIN and c0.stop_reason == "100 simulations reached"
    # a time budget keeps the slower cadence: no count is asked for before PROGRESS_EVERY
    t1 = control(1, None, seconds=1.0)
    t1.tick(0.0)
    sent.clear()
    done[1] = 70
    t1.tick(0.005)
    assert sent == []
    t1.tick(ctl.PROGRESS_EVERY)
    assert [obj for _, _, obj in sent] == [{"op": "PROGRESS", "sims": 70}]


def test_progress_counts_ask_only_for_the_simulations_done():
    """A progress count comes every few milliseconds under a sims budget; it reads sims_done() alone. The full
    rank state (whether the role is idle: a call into its compiled core) is for termination probes only."""
    state_calls = []

    def rank_state():
        state_calls.append(1)
        return True, 0, 0

    done = [0]
    c = ctl.Control(1, 2, 100, None, send=lambda dst, obj: None, sims_done=lambda: done[0], rank_state=rank_state,
                    stop_role=lambda: None, final_sync=lambda: None, report=lambda: {})
    for i in range(50):
        done[0] = i
        c.tick(i * ctl.SIMS_PROGRESS_EVERY)
    assert c.phase == ctl.RUN and state_calls == []
    c.on_message(0, ctl.encode({"op": "PROBE", "wave": 1}), 1.0)
    assert state_calls == [1]

