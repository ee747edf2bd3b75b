"""The statistical fidelity: its trace, its agreement with the functional fidelity, and the shape of the
oculus scaling curve (a smoke test with short spans)."""

import dataclasses

import pytest

from engine.trace_files import read_trace
from model.roles.params import thesis_rules
from sim.predict import sweep
from sim.simulate import SimConfig, prepare, simulate
from sim.workload import fit_workload, hot_rank, workload_from_dict


def test_statistical_trace_is_consistent(tmp_path):
    s = simulate(SimConfig(algo="treesplit", nodes=4, seconds=0.02, fidelity="statistical", trace=str(tmp_path),
                           sample_interval=0.005, sample_rate=0.5))
    tr = read_trace(tmp_path)
    assert tr.meta["runtime"] == "sim" and tr.meta["sample_rate"] == 0.5
    assert tr.meta["extra"]["fidelity"] == "statistical"
    assert (tr.messages["t_recv"] >= tr.messages["t_send"]).all()
    assert (tr.packages["t_end"] >= tr.packages["t_start"]).all()
    sampled = tr.packages.loc[tr.packages["sim_id"] >= 0, "sim_id"].nunique()
    assert 0 < sampled < s["sims"] * 1.5  # about half of the simulations kept, whole
    sm = tr.samples
    assert len(sm) == sm["t"].nunique() * (8 + 2)  # every rank at every tick
    assert s["hops_per_sim"] > 1 and 0.5 < s["busy_frac"] <= 1.0


def test_statistical_agrees_roughly_with_functional(tmp_path):
    base = SimConfig(algo="treesplit", nodes=2, seconds=0.04, warmup=0.01, params={"table_mb": 2})
    fun = simulate(dataclasses.replace(base, fidelity="functional", trace=str(tmp_path)))
    w = fit_workload(read_trace(tmp_path))
    assert w.remote_steps.mean > 0
    stat = simulate(dataclasses.replace(base, fidelity="statistical", workload=str(tmp_path)))
    for key, tol in (("sims_per_s", 0.2), ("busy_frac", 0.15), ("hops_per_sim", 0.3)):
        assert stat[key] == pytest.approx(fun[key], rel=tol), key
    # and it is much cheaper per simulation
    assert stat["wall_s"] / stat["sims"] < fun["wall_s"] / fun["sims"]


def test_statistical_agrees_with_functional_at_4_nodes(tmp_path):
    """4(+1) oculus nodes with the default warm-up, under the thesis's rules (Gomorra's, for which oculus
    stands): the statistical fidelity, with the built-in workload and with one fitted on the functional
    run's own trace, gives the functional fidelity's figures."""
    base = SimConfig(algo="treesplit", nodes=4, seconds=0.02, params=thesis_rules("treesplit"))
    fun = simulate(dataclasses.replace(base, fidelity="functional", trace=str(tmp_path)))
    for workload in (None, str(tmp_path)):
        stat = simulate(dataclasses.replace(base, fidelity="statistical", workload=workload))
        for key, tol in (("sims_per_s", 0.15), ("busy_frac", 0.15), ("hops_per_sim", 0.2), ("messages_per_sim", 0.25)):
            assert stat[key] == pytest.approx(fun[key], rel=tol), (workload, key)


def test_default_warmup_outlasts_the_start():
    """All S_par simulations start at once; the default warm-up lasts at least two of their lifetimes."""
    from model.roles.params import SearchParams

    p = prepare(SimConfig(nodes=1, seconds=0.01, fidelity="statistical"))
    seq = sum(p.profile.costs[k].mean for k in ("select", "playout", "update"))
    assert p.cfg.warmup >= 2 * SearchParams().overload * seq > 0.1 * 0.01
    assert prepare(SimConfig(nodes=1, seconds=1.0, fidelity="statistical")).cfg.warmup == pytest.approx(0.1)
    assert prepare(SimConfig(nodes=1, seconds=0.01, warmup=0.0, fidelity="statistical")).cfg.warmup == 0.0


def test_hot_steps_load_their_ranks_and_fit_back(tmp_path):
    """workload.hot_steps sends that share of first steps to one rank; a trace of it fits back to the same
    share and to the remote steps it was drawn with (not fewer: long simulations still in flight count)."""
    base = SimConfig(nodes=8, seconds=0.01, fidelity="statistical")
    even = simulate(base)
    # the thesis's overload rule alone (balance_load 0): with the load rule any rank sends playouts to a lighter one
    hot = simulate(dataclasses.replace(base, trace=str(tmp_path), params={"workload.hot_steps": "[[0.5]]",
                                                                          "balance_load": 0}))
    assert hot["sims_per_s"] < even["sims_per_s"] and hot["busy_frac"] < even["busy_frac"]
    tr = read_trace(tmp_path)
    mv = tr.messages[tr.messages["kind"] == "MOVE"].sort_values(["sim_id", "t_send"])
    first = mv.groupby("sim_id").first()
    M = tr.meta["ranks"]["search"]
    share = (first["dst"] == hot_rank(0, 0, 0, M)).mean()
    assert share == pytest.approx(0.5 + 0.5 / M, abs=0.06)
    # the hot rank is overloaded: it forwards most of the playouts that are forwarded (4.2.5)
    fwd = tr.messages[tr.messages["kind"] == "PLAYOUT_FWD"]
    assert len(fwd) > 20 and (fwd["src"] == hot_rank(0, 0, 0, M)).mean() > 0.5
    w = fit_workload(tr)
    assert w.hot_steps and w.hot_steps[0][0] == pytest.approx(0.5, abs=0.08)
    # the fit's rate is MOVEs per simulation ended within the run's measured window, not counting the work the
    # kernel booked past the run's end: the overloaded hot rank's backlog does not bias it
    assert w.remote_steps.mean == pytest.approx(prepare(base).workload.remote_steps.mean, rel=0.1)


def test_workload_overrides_and_validation():
    from model.errors import ConfigError

    s1 = simulate(SimConfig(nodes=2, seconds=0.01, fidelity="statistical", params={"workload.remote_steps": "0"}))
    s2 = simulate(SimConfig(nodes=2, seconds=0.01, fidelity="statistical", params={"workload.remote_steps": "6"}))
    assert s1["hops_per_sim"] < 0.5 < 2.5 < s2["hops_per_sim"]
    with pytest.raises(ConfigError, match="workload.syncs_per_sim"):
        workload_from_dict({"remote_steps": 1, "syncs_per_sim": -1})
    with pytest.raises(ConfigError, match="workload.hot_steps"):
        workload_from_dict({"remote_steps": 1, "hot_steps": [[0.7, 0.6]]})
    with pytest.raises(ConfigError, match="workload.hot_steps"):
        workload_from_dict({"remote_steps": 1, "hot_steps": "hot"})
    with pytest.raises(ConfigError, match="workload.sync_gap_cv"):
        workload_from_dict({"remote_steps": 1, "sync_gap_cv": -0.5})
    # a workload file from before the SYNC gaps' spread was fitted: evenly spaced SYNCs, as it was run then
    assert workload_from_dict({"remote_steps": 1, "syncs_per_sim": 0.1}).sync_gap_shape == 0.0
    with pytest.raises(ConfigError, match="drain"):
        prepare(SimConfig(fidelity="statistical", drain=True))


@pytest.mark.parametrize("algo", ["tds", "root", "leaf"])
def test_other_algorithms(algo):
    params = {"merge_every": 16} if algo == "root" else {}
    s = simulate(SimConfig(algo=algo, nodes=2, seconds=0.01, fidelity="statistical", params=params))
    assert s["sims_per_s"] > 0 and s["bcast_ranks"] == 0
    kinds = s["messages_by_kind_per_s"]
    expect = {"tds": "MOVE", "root": "MERGE", "leaf": "JOB"}[algo]
    assert kinds.get(expect, 0) > 0


def test_oculus_curve_shape():
    """Schaefers 2014, 4.3.2: the simulation rate scales uniformly up to 32(+8) nodes, then degrades; worker
    workload drops past 32(+8); outgoing bandwidth per rank stays far below 16 Gbit/s. Under the thesis's
    rules: this engine's floor of simulations in flight hides the latency longer."""
    base = SimConfig(algo="treesplit", profile="oculus", seconds=0.012, warmup=0.006, fidelity="statistical",
                     params=thesis_rules("treesplit"))
    rows = {r["nodes"]: r for r in sweep(base, [1, 8, 32, 128])}
    rate = [rows[n]["sims_per_s"] for n in (1, 8, 32, 128)]
    assert rate == sorted(rate)                      # more nodes, more simulations
    assert rows[32]["efficiency"] > 0.85             # near-linear up to 32(+8)
    assert rows[128]["efficiency"] < rows[32]["efficiency"] - 0.08  # degrading past it
    assert rows[128]["busy_frac"] < rows[32]["busy_frac"] - 0.08
    assert max(r["out_gbit_per_rank"] for r in rows.values()) < 16 / 4
    assert max(r["bcast_out_gbit_per_rank"] for r in rows.values()) < 16 / 4
    assert rows[128]["io_turnaround_s"] > rows[8]["io_turnaround_s"]  # MPI_Testsome over more peers


def test_bundles_are_cheaper_and_roughly_alike():
    base = SimConfig(algo="treesplit", nodes=8, seconds=0.02, warmup=0.01, fidelity="statistical")
    one = simulate(base)
    four = simulate(dataclasses.replace(base, bundle=4))
    assert four["events"] < one["events"] / 2
    assert four["sims_per_s"] == pytest.approx(one["sims_per_s"], rel=0.25)
    assert four["hops_per_sim"] == pytest.approx(one["hops_per_sim"], rel=0.1)


def test_idle_nap_slows_the_statistical_fidelity_like_the_functional():
    """io.idle_nap: an idle IO core sees input only at the end of its nap, so lightly loaded ranks wait
    for moves and updates; both fidelities lose worker time to it."""
    def run(fid, nap):
        # the statistical fidelity's runs are cheap, and long enough that the nap's few percent stand out of
        # their noise
        extra = {"table_mb": 2} if fid == "functional" else {}
        # the thesis's S_par / M = W O: this engine's floor of simulations in flight keeps a rank busy through a nap
        return simulate(SimConfig(algo="treesplit", nodes=2, seconds=0.03 if fid == "functional" else 0.1,
                                  warmup=0.01, fidelity=fid,
                                  params={"io.idle_nap": nap, **thesis_rules("treesplit"), **extra}))

    stat0, stat1 = run("statistical", "0"), run("statistical", "1e-3")
    assert stat1["busy_frac"] < stat0["busy_frac"] - 0.02
    assert stat1["sims_per_s"] < stat0["sims_per_s"]
    fun1 = run("functional", "1e-3")
    assert stat1["busy_frac"] == pytest.approx(fun1["busy_frac"], rel=0.2)


def test_batched_records_share_the_mpi_overhead_like_the_functional():
    """io.batched: records leave in one MPI message per destination, which pays o once. With an o far above
    the rest of a message's handling, both fidelities' IO cores get through the same traffic for less, so
    the ranks run more simulations for the same messages per simulation."""
    def run(fid, batched):
        extra = {"table_mb": 2} if fid == "functional" else {}
        return simulate(SimConfig(algo="treesplit", nodes=2, seconds=0.03 if fid == "functional" else 0.1,
                                  warmup=0.01, fidelity=fid,
                                  params={"network.overhead": "3e-5", "io.batched": batched, **extra}))

    for fid in ("statistical", "functional"):
        each, batched = run(fid, "false"), run(fid, "true")
        assert batched["sims_per_s"] > 1.15 * each["sims_per_s"], fid
        assert batched["busy_frac"] > each["busy_frac"], fid
        assert batched["messages_per_sim"] == pytest.approx(each["messages_per_sim"], rel=0.25), fid
