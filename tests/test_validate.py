"""treesplit validate: the table and error logic (fast), and a quick real run against the simulator (mpi)."""

import json
import math

import pytest

from experiments.validate import (FIGURES, GOAL, Case, ValidateConfig, _spread, cases, format_table, paired_error,
                                  rel_error, row, worst)
from model.errors import ConfigError


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
    assert "+20%*" in text and "-10% " in text and "3 of 6 figures" in text  # sequential compares sims/s only
    assert "treesplit 2x1 9x9" in text.splitlines()[2]
    assert "within the spread" not in text
    # the measured runs lay 25% apart: a 20% error is within what the measurements themselves disagree by
    r["sims_per_s_spread"] = _spread([900.0, 1000.0, 1150.0])
    assert r["sims_per_s_spread"] == pytest.approx(0.25)
    assert "within the spread of its own measured runs: treesplit 2x1 9x9" in format_table([r, seq])
    r["sims_per_s_spread"] = 0.1
    assert "within the spread" not in format_table([r, seq])
    assert _spread([1000.0]) is None


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
    assert {c.board for c in full} == {9, 19} and max(c.ranks for c in full) == 4
    small = cases([9], False, cores=2)  # only what fits: no 4x1, no 2x2
    assert small and all(c.ranks * c.threads <= 2 for c in small) and len(small) < len(full) // 2
    assert {"sequential", "tree", "treesplit", "tds", "root", "leaf"} <= {c.algo for c in small}


def test_bad_config_is_a_clear_error():
    with pytest.raises(ConfigError, match="board"):
        ValidateConfig(boards=(7,)).validate()
    with pytest.raises(ConfigError, match="seconds"):
        ValidateConfig(seconds=-1).validate()
    with pytest.raises(ConfigError, match="repeats"):
        ValidateConfig(repeats=0).validate()
    assert ValidateConfig(quick=True).run_repeats == 3 and ValidateConfig().run_repeats == 5


def test_cli_bad_input(run_cli):
    r = run_cli("validate", "--board", "8", "--no-save", timeout=60)
    assert r.returncode != 0 and "board" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("validate", "--profile", "/nonexistent.toml", "--no-save", "--board", "9", timeout=60)
    assert r.returncode != 0 and "profile" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.timeout(400)
def test_quick_validation_runs_engine_and_simulator(run_cli, tmp_path):
    r = run_cli("validate", "--quick", "--json", "--out", str(tmp_path), "--seconds", "1", "--repeats", "1",
                "--no-pingpong", timeout=380)
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(r.stdout)
    # the files: the JSON as printed, the CSV with every row's columns (speedup_predicted only some have)
    assert json.loads((tmp_path / "validate-quick.json").read_text())["rows"] == res["rows"]
    assert "speedup_predicted" in (tmp_path / "validate-quick.csv").read_text().splitlines()[0]
    rows = {x["config"]: x for x in res["rows"]}
    assert "treesplit 2x1 9x9" in rows and "sequential 9x9" in rows
    ts = rows["treesplit 2x1 9x9"]
    for f in FIGURES:
        assert ts[f"{f}_measured"] > 0 and ts[f"{f}_predicted"] > 0 and ts[f"{f}_error"] is not None
    assert ts["sims_per_s_traced"] > 0 and ts["trace_cost"] is not None  # the calibration run, reported
    assert 0 < ts["record_factor"] < 3  # its recorded windows' speed against its unrecorded ones
    # the model's own speed-up of the sequential search over itself, before the kernel calibration
    assert 0.8 < rows["sequential 9x9"]["speedup_predicted"] < 1.25
    # one repeat: the pair's error is the medians' error
    assert ts["sims_per_s_error"] == pytest.approx(ts["sims_per_s_error_of_medians"])
    # the message figures follow from the roles, which both runtimes share: they must agree closely
    # even on a loaded machine (sims/s and busy depend on the machine's load; see experiments/SIMULATOR.md)
    for f in ("messages_per_sim", "bytes_per_sim", "hops_per_sim"):
        assert abs(ts[f"{f}_error"]) <= 2 * GOAL, (f, ts)


# --- validate --traces: measured traces instead of running the engine --------------------------------------------
def _tiny_engine_trace(directory, ranks=2, seconds=0.02):
    """A small trace in the engine's format: the simulator writes it (local profile, 9x9), then meta.json is
    made to look like an engine run's (runtime engine, the run's summary), as a measured trace would be."""
    from sim.simulate import SimConfig, simulate

    s = simulate(SimConfig(algo="treesplit", profile="local", nodes=ranks, seconds=seconds, warmup=0.0,
                           game="go", board=9, trace=str(directory), seed=3))
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
    _tiny_engine_trace(runs / "ts-2x1", ranks=2)
    r = run_cli("validate", "--traces", str(runs), "--base", "ts-1x1", "--json", "--no-save", timeout=280)
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(r.stdout)
    assert res["base"] == "ts-1x1" and "no ping-pong" in res["network"]
    rows = {(x["trace"], x["mode"]): x for x in res["rows"]}
    assert set(rows) == {("ts-1x1", "reproduce"), ("ts-1x1", "predict"), ("ts-2x1", "reproduce"),
                         ("ts-2x1", "predict")}
    assert all(x["calibrated_on"] == "ts-1x1" for (_, m), x in rows.items() if m == "predict")
    two = rows[("ts-2x1", "reproduce")]
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
