"""The simulator's commands as a user runs them: simulate, predict, calibrate, bench sim; bad input."""

import csv
import json

import pytest

from engine.trace_files import TraceWriter, read_trace
from model.trace import Meta


def test_simulate_json_and_trace(run_cli, tmp_path):
    r = run_cli("simulate", "--algo", "treesplit", "--profile", "oculus", "--nodes", "2", "--seconds", "0.01",
                "--fidelity", "statistical", "--trace", str(tmp_path / "t"), "--json", timeout=120)
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    for key in ("sims_per_s", "pps", "nps", "busy_frac", "msgs_per_rank_s", "bytes_per_rank_s", "hops_per_sim"):
        assert s[key] > 0, key
    assert "estimated wall time" in r.stderr
    assert read_trace(tmp_path / "t").meta["algo"] == "treesplit"


def test_simulate_text_summary_functional(run_cli):
    r = run_cli("simulate", "--nodes", "1", "--seconds", "0.005", "--param", "table_mb=2",
                "--param", "game.branching=6", "--drain", timeout=300)
    assert r.returncode == 0, r.stderr
    for word in ("sims/s", "PPS", "NPS", "worker busy", "hops/sim", "per search rank", "drained"):
        assert word in r.stdout


@pytest.mark.parametrize("args,message", [
    (["--nodes", "0"], "--nodes"),
    (["--nodes", "2", "--profile", "nosuch"], "no such file or shipped profile"),
    (["--nodes", "2", "--param", "n_dup=-3"], "n_dup"),
    (["--nodes", "2", "--param", "network.latency=-1"], "network.latency"),
    (["--nodes", "1", "--bcast-nodes", "3"], "bcast"),
    (["--nodes", "2", "--algo", "root", "--bcast-nodes", "1"], "no broadcast ranks"),
    (["--nodes", "2", "--seconds", "0"], "seconds"),
])
def test_simulate_bad_input_is_one_clear_error(capsys, args, message):
    from treesplit.cli import main

    assert main(["simulate", "--fidelity", "statistical", *args]) == 2
    err = capsys.readouterr().err
    assert "treesplit: error:" in err and message in err


def test_bad_profile_file_names_the_field(run_cli, tmp_path):
    from sim.profile import load_profile

    d = load_profile("oculus").to_toml()
    del d["io"]["poll_base"]
    import tomli_w

    p = tmp_path / "bad.toml"
    p.write_text(tomli_w.dumps(d))
    r = run_cli("simulate", "--nodes", "1", "--profile", str(p), "--fidelity", "statistical", timeout=120)
    assert r.returncode == 2 and "io.poll_base: missing" in r.stderr


def test_predict_writes_csv_and_html(run_cli, tmp_path):
    r = run_cli("predict", "--nodes", "1,2,4", "--seconds", "0.005", "--out", str(tmp_path), timeout=120)
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader((tmp_path / "treesplit-oculus.csv").open()))
    assert [int(x["nodes"]) for x in rows] == [1, 2, 4]
    assert float(rows[0]["efficiency"]) == pytest.approx(1.0)
    assert "sims/s" in r.stdout and "speedup" in r.stdout
    assert "Bokeh" in (tmp_path / "treesplit-oculus.html").read_text()
    r = run_cli("predict", "--nodes", "1,2", "--seconds", "0.005", "--json", "--no-save", "--quiet", timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["points"][1]["nodes"] == 2 and out["saved_to"] == [] and not r.stderr.strip()


def _engine_like_trace(d):
    """A small trace as the engine would write it (written with TraceWriter, as the brief asks)."""
    import numpy as np

    rng = np.random.default_rng(0)
    meta = Meta(runtime="engine", algo="treesplit", game="go", board=9, ranks={"search": 2, "broadcast": 0},
                threads=2)
    with TraceWriter(d, meta) as w:
        t = 0.0
        for sim in range(400):
            r = sim % 2
            for kind, mean in (("select", 1e-5), ("playout", 4e-5), ("update", 5e-6)):
                dt = rng.exponential(mean)
                w.package(t, t + dt, r, 0, kind, sim)
                t += dt
            if sim % 3 == 0:
                w.message(t, t + 2e-6, r, 1 - r, "MOVE", 40, sim)
                w.message(t, t + 2e-6, r, 1 - r, "UPDATE", 150, sim)
        w.sample(t, 0, 0, 0.9, 200, 200, 90, 1)
        w.sample(t, 1, 0, 0.9, 200, 200, 90, 1)
        w.close(t_end=t)


def test_calibrate_from_a_trace(run_cli, tmp_path):
    tr = tmp_path / "trace"
    _engine_like_trace(tr)
    out = tmp_path / "mine.toml"
    r = run_cli("calibrate", str(tr), "-o", str(out), "--no-pingpong", timeout=120)
    assert r.returncode == 0, r.stderr
    from sim.profile import load_profile

    p = load_profile(out)
    # the engine's workers run the role callback for their own package: its cost is the gap between packages;
    # its endpoint sends records in batches
    assert p.name == "mine" and not p.io.handles_completions and p.io.per_package > 0 and p.io.batched
    assert p.costs["playout"].mean == pytest.approx(4e-5, rel=0.2)
    assert p.costs["select"].mean == pytest.approx(1e-5, rel=0.2)
    assert p.messages["MOVE"] == 40 and p.messages["UPDATE"] == 150
    assert p.costs["expand"] == load_profile("oculus").costs["expand"]  # not in the trace: from the base
    w = p.workloads["treesplit"]
    assert w.remote_steps.mean == pytest.approx(2 / 3, rel=0.3)  # 1/3 of simulations hop once, M = 2
    assert "expand cost from oculus" in p.source
    assert p.node.tree_share == 0.0  # oculus's
    r = run_cli("calibrate", str(tr), "-o", str(out), "--no-pingpong", "--tree-share", "1.5", timeout=120)
    assert r.returncode == 2 and "--tree-share 1.5: expected a fraction" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("calibrate", str(tr), "-o", str(out), "--no-pingpong", "--tree-share", "0.05", timeout=120)
    assert r.returncode == 0 and load_profile(out).node.tree_share == 0.05
    # --per-step on a trace whose packages do not say their steps: nothing to fit, and no [steps]
    r = run_cli("calibrate", str(tr), "-o", str(out), "--no-pingpong", "--per-step", timeout=120)
    assert r.returncode == 0 and load_profile(out).steps == {} and "per tree step" not in r.stdout
    # the calibrated profile drives a simulation
    r = run_cli("simulate", "--profile", str(out), "--nodes", "2", "--seconds", "0.005", "--fidelity",
                "statistical", "--json", timeout=120)
    assert r.returncode == 0, r.stderr


def test_calibrate_refuses_what_is_not_a_trace(run_cli, tmp_path):
    r = run_cli("calibrate", str(tmp_path), "-o", str(tmp_path / "p.toml"), "--no-pingpong", timeout=60)
    assert r.returncode == 2 and "not a trace directory" in r.stderr
    r = run_cli("calibrate", str(tmp_path / "nope"), "-o", str(tmp_path / "p.toml"), timeout=60)
    assert r.returncode == 2 and "no such directory" in r.stderr


@pytest.mark.mpi
def test_pingpong_measures_a_network():
    from sim.calibrate import run_pingpong

    pp = run_pingpong(budget=1.0, timeout=60)
    assert pp["overhead"] > 0 and pp["gap_per_byte"] >= 0 and pp["latency"] >= 0
    assert pp["one_way"]["1048576"] > pp["one_way"]["8"]


def test_bench_sim_smoke(run_cli):
    r = run_cli("bench", "sim", "--nodes", "1,2", "--fidelity", "statistical", "--repeats", "1",
                "--scale", "0.1", "--no-save", timeout=120)
    assert r.returncode == 0, r.stderr
    assert "events/s" in r.stdout and "wall s/sim s" in r.stdout
