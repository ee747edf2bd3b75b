"""The SimPy runtime: its IO cores, workers and network with a tiny stand-in role, then hosting the real
roles (functional fidelity): the trace it writes, and conservation after the drain."""

import dataclasses

import numpy as np
import pytest

from model.roles.base import Actions, Package, Role, RoleStats
from model.roles.messages import CONTROL, Message
from engine.trace_files import read_trace
from sim.profile import load_profile
from sim.runtime import Cluster, World
from sim.simulate import SimConfig, prepare, run


class _Blob:
    def __init__(self, nbytes):
        self.nbytes = nbytes


class PingRole(Role):
    """Rank 0 sends one message to rank 1, which runs a package of known cost and answers."""

    def __init__(self, rank, log):
        self.rank, self.log, self.st = rank, log, RoleStats()

    def start(self):
        a = Actions()
        if self.rank == 0:
            a.msgs.append(Message(CONTROL, 0, 1, _Blob(100), sim_id=7))
        return a

    def on_message(self, msg):
        self.log.append((self.rank, "msg", msg.kind))
        a = Actions()
        if self.rank == 1:
            a.pkgs.append(Package("select", 7, None, cost=5e-6))
        else:
            self.st.sims_done += 1
        return a

    def execute(self, pkg):
        return 42

    def on_work_done(self, pkg, result):
        self.log.append((self.rank, "done", result))
        a = Actions()
        a.msgs.append(Message(CONTROL, 1, 0, _Blob(50), sim_id=7))
        return a

    def stats(self):
        return self.st


def _quiet_profile():
    p = load_profile("oculus")
    return dataclasses.replace(p, io=dataclasses.replace(p.io, poll_base=0.0, poll_per_peer=0.0))


def test_runtime_round_trip_timing_with_a_stand_in_role():
    prof = _quiet_profile()
    log = []
    world = World(prof, Cluster(2, 0, 1), lambda r: PingRole(r, log))  # one rank per node: via the NIC
    world.run(1e-3)
    assert log == [(1, "msg", CONTROL), (1, "done", 42), (0, "msg", CONTROL)]
    n, io = prof.network, prof.io
    # rank 0's IO sends (o + dispatch + bytes), the wire, rank 1's IO receives, the worker runs 5 us,
    # rank 1's IO sends the answer, the wire, rank 0's IO receives it
    send0 = n.overhead + io.per_message + 100 * io.per_byte
    recv1 = n.overhead + io.per_message + 100 * io.per_byte
    send1 = n.overhead + io.per_message + 50 * io.per_byte
    expect = send0 + n.latency + 100 * n.gap_per_byte + recv1 + 5e-6 + send1 + n.latency + 50 * n.gap_per_byte
    t_back = world.ranks[0].stats.io_loop_time  # rank 0's IO: the send, then the receive
    assert world.ranks[1].stats.busy == pytest.approx(5e-6)
    assert world.ranks[0].stats.msgs_out == {CONTROL: 1} and world.ranks[1].stats.msgs_in == 1
    assert t_back > 0 and world.ranks[0].role.st.sims_done == 1
    # the answer was handled after exactly the modelled chain (no polling cost in this profile)
    w2 = World(prof, Cluster(2, 0, 1), lambda r: PingRole(r, []))
    w2.run(expect * 0.999, chunks=1)
    assert w2.ranks[0].role.st.sims_done == 0
    w3 = World(prof, Cluster(2, 0, 1), lambda r: PingRole(r, []))
    w3.run(expect + send0 + 1e-9, chunks=1)  # + the receive's own handling on rank 0
    assert w3.ranks[0].role.st.sims_done == 1


def test_polling_cost_grows_with_peers():
    prof = load_profile("oculus")
    small = World(prof, Cluster(4, 0, 2), lambda r: PingRole(r, []))
    big = World(prof, Cluster(64, 0, 2), lambda r: PingRole(r, []))
    assert big.ranks[0].loop_time - small.ranks[0].loop_time == pytest.approx(60 * prof.io.poll_per_peer)


@pytest.fixture(scope="module")
def functional_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("simtrace")
    cfg = SimConfig(algo="treesplit", nodes=2, seconds=0.01, warmup=0.002, fidelity="functional",
                    trace=str(d), sample_interval=0.002, drain=True, params={"table_mb": 2})
    p = prepare(cfg)
    summary = run(p)
    return p, summary, read_trace(d)


def test_trace_is_readable_and_consistent(functional_run):
    p, summary, tr = functional_run
    assert tr.meta["runtime"] == "sim" and tr.meta["ranks"] == {"search": 4, "broadcast": 1}
    pk, ms, sm = tr.packages, tr.messages, tr.samples
    assert len(pk) and len(ms)
    assert (ms["t_recv"] >= ms["t_send"]).all()
    assert (pk["t_end"] >= pk["t_start"]).all()
    assert set(pk["kind"].astype(str)) <= {"select", "expand", "playout", "update", "sync", "bcast", "io"}
    # one worker runs one package at a time
    for (rank, worker), g in pk[pk["worker"] >= 0].groupby(["rank", "worker"]):
        g = g.sort_values("t_start")
        assert (g["t_start"].to_numpy()[1:] >= g["t_end"].to_numpy()[:-1] - 1e-12).all(), (rank, worker)
    # samples: every rank at every tick, counters exact and non-decreasing
    ticks = sm["t"].nunique()
    assert ticks >= 5 and len(sm) == ticks * 5
    for _, g in sm.groupby("rank"):
        assert g["sims_done"].is_monotonic_increasing
    assert 0 <= sm["busy_frac"].min() and sm["busy_frac"].max() <= 1.0 + 1e-9
    last = sm[sm["t"] == sm["t"].max()]
    assert last["sims_done"].sum() <= summary["drain"]["sims_done"]


def test_conservation_after_drain(functional_run):
    p, summary, _ = functional_run
    d = summary["drain"]
    M = p.layout.search_ranks
    # every message sent was received (applied) exactly once
    assert d["messages_sent"] == d["messages_received"] > 0
    # after the final synchronisation every rank's shared root holds every completed simulation
    done = sum(p.roles[r].stats().sims_done for r in range(M))
    assert done == d["sims_done"] > 0
    assert [p.roles[r].root_stats()["visits"] for r in range(M)] == [done] * M
    assert all(role.idle() for role in p.roles)


@pytest.mark.parametrize("algo,nodes", [("tds", 1), ("root", 1), ("leaf", 1), ("dfuct", 1), ("hybrid", 4)])
def test_other_algorithms_drain_cleanly(algo, nodes):
    cfg = SimConfig(algo=algo, nodes=nodes, seconds=0.005, fidelity="functional", drain=True,
                    params={"table_mb": 2})
    p = prepare(cfg)
    s = run(p)
    d = s["drain"]
    assert d["messages_sent"] == d["messages_received"]
    assert d["sims_done"] > 0 and s["sims_per_s"] > 0
    if algo == "leaf":
        assert s["messages_by_kind_per_s"].get("JOB", 0) > 0


def test_io_completions_go_through_the_io_core():
    base = load_profile("local")
    p_worker = dataclasses.replace(base, io=dataclasses.replace(base.io, handles_completions=False))
    # one package per step (fuse off): many completions, so the IO core's share of them shows
    cfg = SimConfig(algo="treesplit", nodes=2, seconds=0.02, fidelity="functional", game="pgame",
                    params={"table_mb": 2, "fuse": False})
    via_io = run(prepare(cfg, profile=base))
    direct = run(prepare(cfg, profile=p_worker))
    assert via_io["io_busy"] > direct["io_busy"]
    assert np.isfinite(via_io["sims_per_s"]) and via_io["sims_per_s"] > 0


def test_a_package_of_several_parts_is_charged_part_by_part():
    from model.roles.base import CONTINUE
    from sim.runtime import run_parts

    class Fixed:
        def __init__(self, c):
            self.c = c

        def next(self):
            return self.c

        def at(self, steps):
            return self.c

    seq = iter([("expand", CONTINUE), ("playout", CONTINUE), (None, "done")])

    def execute(pkg):
        nxt, res = next(seq)
        if nxt:
            pkg.kind = nxt
        return res

    pkg = Package("select", 7)
    parts, result = run_parts(pkg, execute, {"select": Fixed(1.0), "expand": Fixed(2.0), "playout": Fixed(5.0)})
    assert result == "done" and parts == [("select", 1.0, 7, -1), ("expand", 2.0, 7, -1), ("playout", 5.0, 7, -1)]


class BurstRole(Role):
    """Rank 0 sends `n` messages to rank 1 at once; rank 1 notes when each arrives."""

    def __init__(self, rank, n, log):
        self.rank, self.n, self.log, self.st = rank, n, log, RoleStats()

    def start(self):
        a = Actions()
        if self.rank == 0:
            a.msgs.extend(Message(CONTROL, 0, 1, _Blob(100), sim_id=i) for i in range(self.n))
        return a

    def on_message(self, msg):
        self.log.append(msg.sim_id)
        return Actions()

    def execute(self, pkg):
        return None

    def on_work_done(self, pkg, result):
        return Actions()

    def stats(self):
        return self.st


class _Recorder:
    """A trace writer that keeps the messages it is given."""

    def __init__(self):
        self.messages = []

    def message(self, t_send, t_recv, src, dst, kind, nbytes, sim_id):
        self.messages.append((t_send, t_recv, src, dst, kind, nbytes, sim_id))

    def package(self, *row):
        pass


@pytest.mark.parametrize("batched", [False, True])
def test_batched_records_pay_the_mpi_overhead_and_the_nic_gap_once_a_batch(batched):
    """io.batched (the engine's endpoint): an iteration's 10 records for one rank leave as one MPI message,
    which pays o once on each side and the NIC's gap once; per_message and per_byte stay per record."""
    prof = _quiet_profile()
    prof = dataclasses.replace(prof, io=dataclasses.replace(prof.io, batched=batched),
                               network=dataclasses.replace(prof.network, overhead=20e-6, gap=30e-6))
    n, io, k = prof.network, prof.io, 10
    log, rec = [], _Recorder()
    world = World(prof, Cluster(2, 0, 1), lambda r: BurstRole(r, k, log), trace_writer=rec)
    world.run(2e-3)
    assert sorted(log) == list(range(k))
    per_record = io.per_message + 100 * io.per_byte
    o_paid = n.overhead * (1 if batched else k)
    # each side: o for each MPI message, per_message and per_byte for each record
    assert world.ranks[0].stats.io_loop_time == pytest.approx(o_paid + k * per_record)
    assert world.ranks[1].stats.io_loop_time == pytest.approx(o_paid + k * per_record)
    assert world.ranks[0].stats.msgs_out == {CONTROL: k} and world.ranks[1].stats.msgs_in == k
    assert world.ranks[0].stats.bytes_out == 100 * k
    arrivals = np.array(sorted(m[1] for m in rec.messages))
    assert len(arrivals) == k and {m[5] for m in rec.messages} == {100}
    if batched:  # one transfer: every record arrives with its batch
        assert arrivals[-1] == pytest.approx(arrivals[0], abs=1e-12)
    else:  # the NIC takes one message a gap
        assert np.diff(arrivals) == pytest.approx(np.full(k - 1, n.gap))
