"""README's main job, end to end: a live-watched MPI run, calibration, simulated replay, prediction, report."""

import pandas as pd
import pytest

from model.trace import read_trace


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_demo_writes_the_report_with_real_run_replay_and_prediction(run_cli, tmp_path):
    out = tmp_path / "demo"
    r = run_cli("demo", "--out", str(out), "--seconds", "2", "--no-pingpong", timeout=1150)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "[6/6] report" in r.stdout and "http://127.0.0.1:" in r.stdout
    engine, sim = read_trace(out / "engine-trace"), read_trace(out / "sim-trace")
    assert engine.meta["runtime"] == "engine" and sim.meta["runtime"] == "sim"
    assert len(engine.packages) > 0 and len(sim.packages) > 0
    curve = pd.read_csv(out / "scaling.csv")
    assert list(curve["nodes"]) == [1, 2, 4, 8, 16, 32, 64, 128]
    assert (curve["sims_per_s"] > 0).all()
    html = (out / "report.html").read_text()
    assert "Prediction" in html and (out / "local.toml").exists()


def test_demo_rejects_bad_settings(run_cli, tmp_path):
    r = run_cli("demo", "--out", str(tmp_path), "--seconds", "0", timeout=120)
    assert r.returncode == 2 and "seconds" in r.stderr and "Traceback" not in r.stderr
