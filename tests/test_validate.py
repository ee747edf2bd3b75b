"""treesplit validate: the table and error logic (fast), and a quick real run against the simulator (mpi)."""

import json
import math

import pytest

from experiments.validate import (FIGURES, GOAL, Case, ValidateConfig, _spread, cases, format_table, paired_error,
                                  rel_error, row, worst)
from model.errors import ConfigError
from validate_helpers import fake_runs


def test_rel_error_cases():
    assert rel_error(110.0, 100.0) == pytest.approx(0.10)
    assert rel_error(90.0, 100.0) == pytest.approx(-0.10)
    assert rel_error(0.0, 0.0) == 0.0
    assert math.isinf(rel_error(1.0, 0.0))
    assert rel_error(None, 1.0) is None and rel_error(1.0, float("nan")) is None


def test_row_compares_only_the_figures_asked_for():
    meas = {"sims_per_s": 1000.0, "messages_per_sim": 2.0, "bytes_per_sim": 300.0, "hops_per_sim": 1.0,
            "busy_frac": 0.5}
    pred = {"sims_per_s": 1200.0, "messages_per_sim": 2.0, "bytes_per_sim": 270.0, "hops_per_sim": 1.1,
            "busy_frac": 0.4}
    r = row(Case("treesplit", 9, 2, 1), meas, pred)
    assert r["config"] == "treesplit 2x1 9x9"
    assert r["sims_per_s_error"] == pytest.approx(0.2) and r["bytes_per_sim_error"] == pytest.approx(-0.1)
    assert worst([r]) == (pytest.approx(0.2), "treesplit 2x1 9x9 sims_per_s")
    seq = row(Case("sequential", 9), meas, pred, ("sims_per_s",))
    assert all(seq[f"{f}_error"] is None for f in FIGURES if f != "sims_per_s")
    text = format_table([r, seq])
    assert "+20%*" in text and "-10% " in text and "2 of 5 counted figures" in text  # sequential: fixed
    assert "treesplit 2x1 9x9" in text.splitlines()[3]
    assert r["in_sample"] and r["calibrated_on"] == "treesplit 2x1 9x9" and "sims_per_s" in seq["fixed"]
    assert "within the spread" not in text
    # the measured runs lay 25% apart: a 20% error is within what the measurements themselves disagree by
    r["sims_per_s_spread"] = _spread([900.0, 1000.0, 1150.0])
    assert r["sims_per_s_spread"] == pytest.approx(0.25)
    assert "within the spread of its own measured runs: treesplit 2x1 9x9" in format_table([r, seq])
    r["sims_per_s_spread"] = 0.1
    assert "within the spread" not in format_table([r, seq])
    assert _spread([1000.0]) is None
    # any figure: hops a simulation 12% off where the engine's own runs read 1.5, 1.65 and 2.05
    r["hops_per_sim_error"], r["hops_per_sim_spread"] = 0.12, _spread([1.5, 1.65, 2.05])
    held = {**r, "in_sample": False}
    assert "within the spread of its own measured runs: treesplit 2x1 9x9 hops/sim" in format_table([held])
    assert "within the spread" not in format_table([{**held, "hops_per_sim_spread": 0.05}])


def test_paired_error_judges_each_prediction_against_the_run_of_its_minute():
    # the machine ran at 1000, then 700, then 1300 sims/s; each calibration saw its minute's speed, +5%
    runs = [{"sims_per_s": 1000.0}, {"sims_per_s": 700.0}, {"sims_per_s": 1300.0}]
    preds = [{"sims_per_s": 1050.0}, {"sims_per_s": 735.0}, {"sims_per_s": 1365.0}]
    assert paired_error(preds, runs) == pytest.approx(0.05)
    # the medians of two such series from different minutes disagree by the drift, not by the model
    assert rel_error(1365.0, 1000.0) == pytest.approx(0.365)
    assert paired_error(preds, [{"sims_per_s": 0.0}] * 3) == math.inf  # nothing measured: not "right"
    assert paired_error([{}], [{"sims_per_s": 1.0}]) is None


def test_cases_quick_is_a_subset_and_full_covers_the_issue():
    quick, full = cases([9], True, cores=16), cases([9, 19], False, cores=16)
    assert set(quick) <= set(full) and len(quick) < len(full)
    algos = {c.algo for c in full}
    assert {"sequential", "tree", "treesplit", "tds", "root", "leaf"} <= algos
    assert {9, 13, 19} <= {c.board for c in full} and max(c.ranks for c in full) == 4
    assert {c.game for c in full} == {"go", "loa"} and {"dfuct", "hybrid"} <= algos
    # the reference configuration first; the rest are what it predicts held out: 4 or more in the quick run,
    # 12 or more in the full one, on this 2-core machine too
    ref = Case("treesplit", 9, 2, 1)
    assert quick[0] == ref and full[0] == ref and cases([9], False, cores=2)[0] == ref
    assert len(cases([9], True, cores=2)) - 1 >= 4 and len(cases([9, 19], False, cores=2)) - 1 >= 12
    assert any(c.params for c in quick) and len(set(quick)) == len(quick)
    small = cases([9], False, cores=2)  # only what fits: no 4x1, no 2x2
    assert small and all(c.ranks * c.threads <= 2 for c in small) and len(small) < len(cases([9], False, cores=16))
    assert {"sequential", "tree", "treesplit", "tds", "root", "leaf"} <= {c.algo for c in small}


def test_held_out_rows_are_never_calibrated_on_their_own_runs(monkeypatch):
    from experiments.validate import ValidateConfig, validate

    used = fake_runs(monkeypatch)
    res = validate(ValidateConfig(boards=(9,), quick=True, repeats=2, pingpong=False), log=lambda s: None)
    held = [r for r in res["rows"] if not r["in_sample"]]
    own = [r for r in res["rows"] if r["in_sample"]]
    ref = "treesplit 2x1 9x9"
    assert res["calibrated_on"] == ref and len(held) >= 4 and ref not in {r["config"] for r in held}
    assert all(r["calibrated_on"] == ref for r in held) and all(r["calibrated_on"] == r["config"] for r in own)
    # the traces of the i-th configuration are t{i}-{k}: the reference is configuration 0
    order = [r["config"] for r in own if r["algo"] != "sequential"]
    assert order[0] == ref
    by_case: dict = {}
    for label, trace in used:
        by_case.setdefault(label, set()).add(trace.rsplit("/", 1)[-1].split("-")[0])
    for i, label in enumerate(order):
        assert f"t{i}" in by_case[label]  # its own trace: the in-sample prediction
        if label != ref:
            assert by_case[label] == {f"t{i}", "t0"}  # and the reference's, never another configuration's
    assert by_case["sequential 9x9"] == {"t0"}
    assert res["held_out"]["configurations"] == len(held) and res["in_sample"]["configurations"] == len(own)
    # each calibration's recorded-window factor (the stand-in's 0.9), its median reported on the in-sample row
    assert all(r["record_factor"] == pytest.approx(0.9) for r in own if r["algo"] != "sequential")


def test_each_run_is_predicted_with_its_own_seed(monkeypatch):
    """The search's seed decides which ranks own a tree's hot paths and so its hops/sim, alike in both
    runtimes: every prediction of an MPI configuration, in sample or held out, draws the seed of the run it
    is compared with, and the runs of a configuration differ in seed."""
    import experiments.validate as v
    from experiments.validate import FIGURES, ValidateConfig, validate

    fake_runs(monkeypatch)
    run_seeds, pred_seeds = {}, {}

    def measure_mpi(case, secs, trace, *a, seed=1, **k):
        if trace is None:
            run_seeds.setdefault(case.label, []).append(seed)
        return {f: 1.0 for f in FIGURES} | {"seconds": secs, "bcast_ranks": 0, "sims": 10}

    def predict(case, prof, secs, bcast, params, seed=0):
        pred_seeds.setdefault(case.label, []).append(seed)
        return {f: 1.0 for f in FIGURES} | {"wall_s": 0.0}

    monkeypatch.setattr(v, "measure_mpi", measure_mpi)
    monkeypatch.setattr(v, "predict", predict)
    validate(ValidateConfig(boards=(9,), quick=True, repeats=3, pingpong=False), log=lambda s: None)
    ref = "treesplit 2x1 9x9"
    assert run_seeds[ref][-3:] == [1, 2, 3] and pred_seeds[ref] == [1, 2, 3]  # (a warm-up run first)
    held = [label for label in run_seeds if label != ref]
    assert held
    for label in held:  # the in-sample predictions, then the held-out ones, each run's seed
        assert sorted(pred_seeds[label]) == sorted(run_seeds[label] * 2) and len(set(run_seeds[label])) == 3


def test_a_failed_engine_run_costs_its_row_not_the_table(monkeypatch):
    import experiments.validate as v
    from model.errors import UserError

    fake_runs(monkeypatch)
    measure = v.measure_mpi

    def stalls(case, *a, **k):
        if case.algo == "root":
            raise UserError("the MPI job (2 ranks) failed")
        return measure(case, *a, **k)

    monkeypatch.setattr(v, "measure_mpi", stalls)
    res = v.validate(v.ValidateConfig(boards=(9,), quick=True, repeats=1, pingpong=False), log=lambda s: None)
    assert res["failed"] == [{"config": "root 2x1 9x9", "error": "the MPI job (2 ranks) failed"}]
    assert "root 2x1 9x9" not in {r["config"] for r in res["rows"]} and len(res["rows"]) >= 8
    monkeypatch.setattr(v, "measure_mpi", lambda case, *a, **k: stalls(Case("root", 9), *a, **k))
    with pytest.raises(UserError):  # the reference's own failure: nothing to predict with
        v.validate(v.ValidateConfig(boards=(9,), quick=True, repeats=1, pingpong=False), log=lambda s: None)


def test_sim_validation_report_leads_with_the_held_out_table(monkeypatch):
    import pandas as pd

    from experiments import sim_validation as sv
    from experiments.validate import ValidateConfig, validate

    fake_runs(monkeypatch)
    res = validate(ValidateConfig(boards=(9,), quick=True, repeats=1, pingpong=False), log=lambda s: None)
    cfg = sv.Config(boards=[9], subset=True)
    table = pd.DataFrame([{**r, "fixed": " ".join(r["fixed"])} for r in res["rows"]])
    out = sv.outcome(cfg, {"validate": table, "history": pd.DataFrame([sv.history_row(res, cfg)])})
    assert out.sections[0].title.startswith("Held out")
    assert out.summary["held_out_configurations"] == res["held_out"]["configurations"] >= 4
    assert out.agreement.startswith("Held out (calibrated on treesplit 2x1 9x9 only)")


def test_fixed_figures_are_listed_apart_and_not_counted():
    from experiments.validate import summary

    meas = {"sims_per_s": 1000.0, "messages_per_sim": 2.0, "bytes_per_sim": 300.0, "hops_per_sim": 1.0,
            "busy_frac": 0.5}
    pred = {**meas, "messages_per_sim": 3.0, "hops_per_sim": 1.5}
    leaf = row(Case("leaf", 9, 2, 1, params=(("master_playouts", "false"),)), meas, pred, in_sample=False,
               calibrated_on="treesplit 2x1 9x9")
    assert set(leaf["fixed"]) == {"messages_per_sim", "hops_per_sim"} and not leaf["in_sample"]
    # a master that plays leaves out itself sends fewer jobs the idler it is: its messages can miss
    assert set(row(Case("leaf", 9, 2, 1), meas, pred)["fixed"]) == {"hops_per_sim"}
    one = row(Case("treesplit", 9, 1, 2), {**meas, "messages_per_sim": 0.0}, {**meas, "messages_per_sim": 0.0})
    assert "messages_per_sim" in one["fixed"]
    s = summary([leaf, one])
    assert s["fixed_by_construction"] == 3 and s["beyond_goal"] == 0 and s["worst_error"] == 0.0
    assert "fixed by construction" in format_table([leaf, one])


def test_a_held_out_miss_names_the_cost_that_differs():
    import dataclasses

    from experiments.held_out import wrong_cost
    from sim.profile import load_profile

    ref = load_profile("local")
    use = {"select": 1.0, "playout": 1.0, "update": 1.0, "packages": 3.0, "messages": 1.0}
    own = dataclasses.replace(ref, costs={**ref.costs, "playout": ref.costs["playout"].scaled(2.0)})
    meas = {"sims_per_s": 1000.0, "messages_per_sim": 2.0, "bytes_per_sim": 300.0, "hops_per_sim": 1.0,
            "busy_frac": 0.5}
    miss = row(Case("tds", 9, 2, 1), meas, {**meas, "sims_per_s": 1500.0}, in_sample=False, calibrated_on="x")
    assert wrong_cost(miss, use, own, ref).startswith("playout package cost")
    assert "no calibrated cost" in wrong_cost(miss, use, ref, ref)
    fine = row(Case("tds", 9, 2, 1), meas, meas, in_sample=False, calibrated_on="x")
    assert wrong_cost(fine, use, own, ref) == ""
    hops = row(Case("tds", 9, 2, 1), meas, {**meas, "hops_per_sim": 1.5}, in_sample=False, calibrated_on="x")
    assert "roles" in wrong_cost(hops, use, own, ref)


@pytest.mark.parametrize("warmup", [0.0, 7.5])
def test_the_warm_up_runs_the_reference_first_for_as_long_as_asked(monkeypatch, warmup):
    import experiments.validate as v

    fake_runs(monkeypatch)
    runs = []
    measured = v.measure_mpi
    monkeypatch.setattr(v, "measure_mpi", lambda case, secs, trace, *a, **k: (
        runs.append((case.label, secs, trace)), measured(case, secs, trace, *a, **k))[1])
    v.validate(v.ValidateConfig(boards=(9,), quick=True, repeats=1, pingpong=False, seconds=1.0, warmup=warmup),
               log=lambda s: None)
    warm = [r for r in runs if r[1] == warmup and r[2] is None]
    assert len(warm) == (1 if warmup else 0)
    if warmup:
        assert runs[0] == ("treesplit 2x1 9x9", warmup, None)  # before anything is measured
    assert all(secs == 1.0 for _, secs, _ in runs[1 if warmup else 0:])


def test_bad_config_is_a_clear_error():
    with pytest.raises(ConfigError, match="board"):
        ValidateConfig(boards=(7,)).validate()
    with pytest.raises(ConfigError, match="seconds"):
        ValidateConfig(seconds=-1).validate()
    with pytest.raises(ConfigError, match="repeats"):
        ValidateConfig(repeats=0).validate()
    with pytest.raises(ConfigError, match="warmup"):
        ValidateConfig(warmup=-1).validate()
    assert ValidateConfig(quick=True).run_repeats == 3 and ValidateConfig().run_repeats == 5


def test_cli_bad_input(run_cli):
    r = run_cli("validate", "--board", "8", "--no-save", timeout=60)
    assert r.returncode != 0 and "board" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("validate", "--profile", "/nonexistent.toml", "--no-save", "--board", "9", timeout=60)
    assert r.returncode != 0 and "profile" in r.stderr and "Traceback" not in r.stderr


def test_readme_runs_the_quick_validation_and_checks_it():
    """The real quick run (engine and simulator) is README's command, which test_readme.py runs and checks with
    validate_helpers.check_quick_validation: one run of it in the suite, not one per test."""
    from test_readme import CHECKS, readme_commands

    assert any(c.startswith(".venv/bin/treesplit validate --quick") for c in readme_commands())
    assert ".venv/bin/treesplit validate" in CHECKS


# --- validate --traces: measured traces instead of running the engine --------------------------------------------
def _tiny_engine_trace(directory, ranks=2, seconds=0.02):
    """A small trace in the engine's format: the simulator writes it (local profile, 9x9), then meta.json is
    made to look like an engine run's (runtime engine, the run's summary), as a measured trace would be."""
    from sim.simulate import SimConfig, simulate

    s = simulate(SimConfig(algo="treesplit", profile="local", nodes=ranks, seconds=seconds, warmup=0.0,
                           game="go", board=9, trace=str(directory), seed=3,
                           # 2 x 80 in flight would be all start-up in 0.02 s; and a load rule fed by start-up's
                           # load figures swings such a run's messages per simulation by 40% between two runs
                           params={"min_in_flight": 1, "balance_load": 0}))
    meta_file = directory / "meta.json"
    meta = json.loads(meta_file.read_text())
    meta["runtime"] = "engine"
    meta["threads"] = 1  # calibrated as the engine's --threads 1 ranks (packages on the IO thread)
    meta["extra"] = {"komi": 7.0, "summary": {**{f: float(s[f]) for f in FIGURES}, "seconds": seconds}}
    meta_file.write_text(json.dumps(meta))
    return s


def test_load_trace_run_reads_meta_and_rejects_non_traces(tmp_path):
    from experiments.validate import find_trace_runs, load_trace_run
    from model.errors import UserError

    d = tmp_path / "runs" / "ts-2x1"
    d.parent.mkdir()
    s = _tiny_engine_trace(d)
    run = load_trace_run(d)
    assert run.case == Case("treesplit", 9, 2, 1) and run.name == "ts-2x1"
    assert run.measured["sims_per_s"] == pytest.approx(s["sims_per_s"]) and run.seconds == pytest.approx(0.02)
    assert [r.name for r in find_trace_runs([d.parent])] == ["ts-2x1"]  # a directory of traces
    with pytest.raises(UserError, match="not a trace directory"):
        load_trace_run(tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="holds none"):
        find_trace_runs([tmp_path / "empty"])
    meta = json.loads((d / "meta.json").read_text())
    del meta["extra"]["summary"]
    (d / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(UserError, match="no run summary"):
        load_trace_run(d)


@pytest.mark.timeout(300)
def test_cli_traces_mode_reproduces_and_predicts(run_cli, tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    _tiny_engine_trace(runs / "ts-1x1", ranks=1)
    # 0.2 s: in a run of 0.02 s (~170 simulations) a few nodes' owners decide the messages per simulation,
    # which ranged from 0.3 to 1.1 between seeds; over 0.2 s, from 1.4 to 1.5
    _tiny_engine_trace(runs / "ts-2x1", ranks=2, seconds=0.2)
    r = run_cli("validate", "--traces", str(runs), "--base", "ts-1x1", "--json", "--no-save", timeout=280)
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(r.stdout)
    assert res["base"] == "ts-1x1" and "no ping-pong" in res["network"]
    rows = {(x["trace"], x["mode"]): x for x in res["rows"]}
    assert set(rows) == {("ts-1x1", "reproduce"), ("ts-1x1", "predict"), ("ts-2x1", "reproduce"),
                         ("ts-2x1", "predict")}
    assert all(x["calibrated_on"] == "ts-1x1" for (_, m), x in rows.items() if m == "predict")
    two = rows[("ts-2x1", "reproduce")]
    assert all(x["seed"] == 3 for x in rows.values())  # each run simulated with its own trace's seed
    for f in FIGURES:
        assert two[f"{f}_measured"] > 0 and two[f"{f}_predicted"] > 0 and two[f"{f}_error"] is not None
    # the trace came from the simulator's own roles: calibrated on it, the message figures must come back
    for f in ("messages_per_sim", "hops_per_sim"):
        assert abs(two[f"{f}_error"]) <= 2 * GOAL, (f, two)
    assert rows[("ts-1x1", "reproduce")]["messages_per_sim_predicted"] == 0


def test_cli_traces_bad_input(run_cli, tmp_path):
    (tmp_path / "x.txt").write_text("not a trace")
    for bad in (tmp_path, tmp_path / "x.txt", tmp_path / "missing"):
        r = run_cli("validate", "--traces", str(bad), "--no-save", timeout=60)
        assert r.returncode == 2, (bad, r.stderr)
        assert "Traceback" not in r.stderr and "--traces" in r.stderr and "trace" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_held_out_row_on_another_board_scales_each_reference_cost_by_its_own_kernel_ratio(monkeypatch):
    """The reference profile's costs hold for its own board: another board's held-out row takes each kind of
    package cost scaled by that kind's probed cost there against the reference board's (a kind a probe lacks:
    the whole simulation's ratio), and the reference's own board is not probed at all."""
    import experiments.validate as v
    from sim.profile import SIM_KINDS, load_profile

    probes = {("go", 9): {"select": 2e-6, "expand": 1e-6, "playout": 10e-6, "update": 2e-6, "simulation": 15e-6},
              ("go", 19): {"select": 4e-6, "expand": 2e-6, "playout": 43e-6, "update": 6e-6, "simulation": 55e-6},
              ("loa", 8): {"select": 3e-6, "playout": 20e-6, "update": 2e-6, "simulation": 30e-6}}
    asked = []

    def probe(game, board, seconds=1.0, timeout=120.0):
        asked.append((game, board))
        return probes[(game, board)]

    monkeypatch.setattr(v, "kernel_probe", probe)
    ref = v.Case("treesplit", 9, 2, 1)
    assert v.board_scale(ref, v.Case("tds", 9, 2, 1)) == {} and asked == []
    go19 = v.board_scale(ref, v.Case("treesplit", 19, 2, 1))
    assert go19 == pytest.approx({"select": 2.0, "expand": 2.0, "playout": 4.3, "update": 3.0,
                                  "simulation": 55 / 15})
    assert asked == [("go", 9), ("go", 19)]
    loa = v.board_scale(ref, v.Case("treesplit", 8, 2, 1, game="loa"))
    assert loa["expand"] == pytest.approx(2.0) and loa["playout"] == pytest.approx(2.0)  # no expand: 30 / 15
    assert v.scale_columns(go19)["board_scale_playout"] == pytest.approx(4.3)
    assert v.scale_columns({})["board_scale"] == 1.0
    prof = load_profile("local")
    scaled = prof.sim_scaled(go19)
    for k, d in prof.costs.items():
        assert scaled.costs[k].mean == pytest.approx(d.mean * (go19[k] if k in SIM_KINDS else 1.0))
    assert scaled.network == prof.network and scaled.io == prof.io and prof.sim_scaled({}) is prof
    assert prof.sim_scaled(4.0).costs["playout"].mean == pytest.approx(4.0 * prof.costs["playout"].mean)


def test_a_held_out_prediction_takes_the_machines_drift_since_the_reference_was_calibrated(monkeypatch):
    """The reference board is probed as the reference is calibrated and again right before each held-out case:
    the reference's costs are scaled by how much more a simulation costs there now (drift), times the board's
    own ratio on another board; every held-out row says its drift, and the predictions use it."""
    import experiments.validate as v
    from tests.validate_helpers import fake_runs

    slow = {"select": 3e-6, "expand": 1e-6, "playout": 12e-6, "update": 2e-6, "simulation": 18e-6}
    go19 = {"select": 6e-6, "expand": 2e-6, "playout": 48e-6, "update": 6e-6, "simulation": 62e-6}
    calls = []

    def probe(game, board, seconds=1.0, timeout=120.0):
        calls.append(board)
        return go19 if board == 19 else slow
    monkeypatch.setattr(v, "kernel_probe", probe)
    ref = v.Case("treesplit", 9, 2, 1)
    at_cal = {"select": 2e-6, "expand": 1e-6, "playout": 10e-6, "update": 2e-6, "simulation": 15e-6}
    scale, drift = v.held_out_scale(ref, v.Case("tds", 9, 2, 1), at_cal)
    assert scale == {} and drift == pytest.approx(1.2) and calls == [9]
    assert v.cost_factors(scale, drift) == pytest.approx({k: 1.2 for k in ("select", "expand", "playout",
                                                                            "update")})
    scale, drift = v.held_out_scale(ref, v.Case("treesplit", 19, 2, 1), at_cal)
    assert calls == [9, 9, 19] and drift == pytest.approx(1.2)
    assert v.cost_factors(scale, drift)["playout"] == pytest.approx(4.0 * 1.2)
    assert v.scale_columns(scale, drift)["drift"] == pytest.approx(1.2)

    # in validate(): the median of the probes around the reference's runs (two before, one after) is what each
    # case's drift is against, and a case's drift is the mean of its probes before and after its runs
    assert v.median_probe([at_cal, slow, at_cal]) == at_cal
    fake_runs(monkeypatch)
    probes = iter([at_cal, at_cal] + [slow] * 50)
    events = []
    monkeypatch.setattr(v, "kernel_probe", lambda game, board, seconds=1.0, timeout=120.0: (
        events.append("probe"), next(probes))[1])
    run = v.measure_mpi
    monkeypatch.setattr(v, "measure_mpi", lambda case, secs, trace, *a, **k: (
        events.append((case.label, secs, trace)), run(case, secs, trace, *a, **k))[1])
    seen = []

    def predict(case, prof, *a, **k):
        seen.append((case.label, prof.name, prof.costs["playout"].mean))
        return {**{f: 1.0 for f in v.FIGURES}, "sims_per_s": 1100.0, "wall_s": 0.0}
    monkeypatch.setattr(v, "predict", predict)
    res = v.validate(v.ValidateConfig(boards=(9,), quick=True, repeats=1, pingpong=False), log=lambda s: None)
    held = [r for r in res["rows"] if not r["in_sample"]]
    assert held and all(r["drift"] == pytest.approx(1.2) for r in held)
    # before anything is probed or measured, the machine warms up on a run of the reference that nothing reads
    assert events[:3] == [("treesplit 2x1 9x9", v.WARMUP_S, None), "probe", "probe"]
    # the reference's trace (t0) calibrated its own in-sample prediction unscaled and every held-out one x 1.2
    # (the sequential row's in-sample prediction borrows the board's first calibration, unscaled)
    ref_playout = next(m for label, name, m in seen if label == "treesplit 2x1 9x9")
    for r in held:
        by_ref = {round(m / ref_playout, 6) for label, name, m in seen if label == r["config"] and "t0-" in name}
        assert 1.2 in by_ref and by_ref <= {1.0, 1.2}, (r["config"], by_ref)


@pytest.mark.mpi
@pytest.mark.timeout(180)
def test_a_kernel_probe_gives_each_kind_of_package_its_cost_on_that_board():
    """A kernel probe is a traced run of its own on the board: every kind of a simulation's package has a mean
    cost there, they add up to the simulation's, and a 19x19 playout costs more than a 9x9 one."""
    import experiments.validate as v
    from sim.profile import SIM_KINDS

    small, big = v.kernel_probe("go", 9, 0.3), v.kernel_probe("go", 19, 0.3)
    for p in (small, big):
        assert set(SIM_KINDS) <= set(p) and all(p[k] > 0 for k in p)
        assert p["simulation"] >= p["playout"]
    assert big["playout"] > 1.5 * small["playout"]
