"""The statistical fidelity's numba kernel (sim/statistical_kernel.py) against the plain-Python reference
(sim/statistical.py's ReferenceStatWorld): the same model, different random streams, so the figures agree
within noise; and the kernel's growing buffers change nothing."""

import dataclasses
import statistics

import pytest

import sim.statistical as st
from model.topology import Topology
from sim.simulate import SimConfig, prepare, run, simulate


def _summary(cfg: SimConfig, reference: bool) -> dict:
    kernel = st.StatWorld
    if reference:  # sim/simulate.py builds whatever sim.statistical.StatWorld is
        st.StatWorld = st.ReferenceStatWorld
    try:
        return simulate(cfg)
    finally:
        st.StatWorld = kernel


def _means(cfg: SimConfig, reference: bool, seeds: int, keys) -> dict:
    runs = [_summary(dataclasses.replace(cfg, seed=s), reference) for s in range(seeds)]
    return {k: statistics.mean(r[k] for r in runs) for k in keys}


@pytest.mark.parametrize("algo,nodes,params", [
    ("treesplit", 4, {}),
    ("treesplit", 4, {"workload.hot_steps": "[[0.4, 0.2], [0.1]]"}),
    ("tds", 2, {}),
    ("root", 2, {"merge_every": 16}),
    ("leaf", 2, {}),
])
def test_kernel_agrees_with_the_reference(algo, nodes, params):
    cfg = SimConfig(algo=algo, nodes=nodes, seconds=0.03, warmup=0.01, fidelity="statistical", params=params)
    tols = {"sims_per_s": 0.05, "busy_frac": 0.05, "hops_per_sim": 0.1, "messages_per_sim": 0.1, "bytes_per_sim": 0.1}
    fast, ref = _means(cfg, False, 2, tols), _means(cfg, True, 2, tols)
    for key, tol in tols.items():
        assert fast[key] == pytest.approx(ref[key], rel=tol, abs=1e-9), key


def test_kernel_agrees_with_the_reference_on_a_big_cluster():
    """32(+8) oculus nodes: the broadcast network with several dimensions, the IO loop stretched by load."""
    cfg = SimConfig(algo="treesplit", nodes=32, seconds=0.006, warmup=0.004, fidelity="statistical")
    fast, ref = _summary(cfg, False), _summary(cfg, True)
    for key, tol in (("sims_per_s", 0.05), ("busy_frac", 0.05), ("hops_per_sim", 0.05),
                     ("messages_per_sim", 0.05), ("bytes_per_sim", 0.05), ("bcast_msgs_per_rank_s", 0.1)):
        assert fast[key] == pytest.approx(ref[key], rel=tol), key
    assert fast["wall_s"] < ref["wall_s"]


def test_message_counts_are_consistent():
    """Every message sent is received; each simulation plays out once and moves ~hops times."""
    p = prepare(SimConfig(algo="treesplit", nodes=4, seconds=0.02, warmup=0.0, fidelity="statistical"))
    s = run(p)
    snap = p.world.stats_snapshot()
    sent = sum(sum(x["msgs_out"].values()) for x in snap)
    assert sent == sum(x["msgs_in"] for x in snap) > 0
    counters = p.world.counters()
    done = sum(c[0] for c in counters)
    playouts = sum(c[1] for c in counters)
    assert done <= playouts <= done + p.world.s_par  # the ones in flight have played out or not
    assert s["messages_by_kind_per_s"]["MOVE"] == pytest.approx(s["hops_per_sim"] * s["sims_per_s"])


def test_growing_rings_and_draining_the_trace_change_nothing(tmp_path, monkeypatch):
    """Pools, broadcast windows and trace buffers start tiny and grow (or drain) as the run needs: the
    same seed gives the same run as with roomy ones."""
    cfg = SimConfig(algo="treesplit", nodes=8, seconds=0.01, warmup=0.002, fidelity="statistical",
                    trace=str(tmp_path / "a"), sample_interval=0.003)
    roomy = simulate(cfg)
    monkeypatch.setattr(st.StatWorld, "RING", 2)
    monkeypatch.setattr(st.StatWorld, "WINDOWS", 1)
    monkeypatch.setattr(st.StatWorld, "TRACE_ROWS", 600)
    monkeypatch.setattr(st.StatWorld, "TRACE_MARGIN", 300)
    tight = simulate(dataclasses.replace(cfg, trace=str(tmp_path / "b")))
    for key in ("sims", "busy_frac", "messages_per_sim", "bytes_per_sim", "bcast_msgs_per_rank_s"):
        assert tight[key] == roomy[key], key
    from model.trace import read_trace

    a, b = read_trace(tmp_path / "a"), read_trace(tmp_path / "b")
    for table in ("packages", "messages", "samples"):
        assert len(getattr(a, table)) == len(getattr(b, table)) > 0, table


@pytest.mark.parametrize("bcast", [2, 8, 16, 64])
def test_kernel_forwards_like_the_topology(bcast):
    import numpy as np

    from sim.statistical_kernel import forwards

    t = Topology(bcast, 12)
    dst, dim = np.empty(t.m + t.n + 1, np.int64), np.empty(t.m + t.n + 1, np.int64)
    for origin in range(bcast):
        for at in range(bcast):
            for d in range(-1, t.n + 1):
                n = forwards(t.k, t.n, t.m, origin, at, d, dst, dim)
                assert list(zip(dst[:n].tolist(), dim[:n].tolist())) == t.forwards(origin, at, d)


def test_hybrid_with_one_group_is_treesplit():
    base = SimConfig(algo="treesplit", nodes=8, seconds=0.01, warmup=0.002, fidelity="statistical")
    one = simulate(dataclasses.replace(base, algo="hybrid", params={"groups": 1}))
    ts = simulate(base)
    for key in ("sims", "busy_frac", "hops_per_sim", "messages_per_sim", "bytes_per_sim", "messages_by_kind_per_s"):
        assert one[key] == ts[key], key


def test_hybrid_keeps_simulations_in_their_group_and_merges_across(tmp_path):
    base = SimConfig(algo="hybrid", nodes=8, seconds=0.01, warmup=0.002, fidelity="statistical",
                     params={"groups": 4, "merge_every": 16})
    s = simulate(dataclasses.replace(base, trace=str(tmp_path)))
    M, B, G = s["search_ranks"], s["bcast_ranks"], 4
    from model.trace import read_trace

    ms = read_trace(tmp_path).messages
    group = lambda r: (r // (M // G)).where(r < M, (r - M) // (B // G))  # noqa: E731
    same = group(ms["src"]) == group(ms["dst"])
    assert same[ms["kind"].isin(["MOVE", "UPDATE", "PLAYOUT_FWD", "SYNC", "BCAST"])].all()
    merges = ms[ms["kind"] == "MERGE"]
    assert len(merges) > 0 and not same[merges.index].any()
    # a step lands on another rank of the group of M/G with probability (M/G - 1)/(M/G), not (M-1)/M
    one = simulate(dataclasses.replace(base, params={"groups": 1}))
    ratio = ((M // G - 1) / (M // G)) / ((M - 1) / M)
    assert s["hops_per_sim"] / one["hops_per_sim"] == pytest.approx(ratio, rel=0.08)


def test_hybrid_agrees_roughly_with_functional(tmp_path):
    from model.trace import read_trace

    base = SimConfig(algo="hybrid", nodes=4, seconds=0.04, warmup=0.01,
                     params={"table_mb": 2, "groups": 2, "merge_every": 32})
    fun = simulate(dataclasses.replace(base, fidelity="functional", trace=str(tmp_path)))
    assert read_trace(tmp_path).meta["algo"] == "hybrid"
    stat = simulate(dataclasses.replace(base, fidelity="statistical", workload=str(tmp_path)))
    for key, tol in (("sims_per_s", 0.2), ("busy_frac", 0.15), ("hops_per_sim", 0.3)):
        assert stat[key] == pytest.approx(fun[key], rel=tol), key
    assert stat["messages_by_kind_per_s"]["MERGE"] == pytest.approx(fun["messages_by_kind_per_s"]["MERGE"], rel=0.3)
