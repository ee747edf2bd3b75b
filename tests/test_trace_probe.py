"""A probing trace (DistributedConfig.trace_probe): the engine records packages and messages only in every other
sample window, and calibration reads from the samples what recording cost the run (sim.calibrate.probe_factor).
Recording slows a rank between its packages, so calibration keeps the package costs the trace shows and fits the
bookkeeping on gaps too short to hold a collection of records."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from model.errors import ConfigError


def _probing_trace(rate_on: float, rate_off: float, seconds: float = 3.0, period: float = 0.1, ranks: int = 2,
                   probe: float | None = 0.1):
    """Samples as the engine writes them: each rank on the grid k * period (plus a little lag), its sims_done
    growing at rate_on in windows of even k and at rate_off in the others."""
    rows = []
    rng = np.random.default_rng(0)
    for r in range(ranks):
        done = 0.0
        t_prev = 0.0
        for k in range(int(seconds / period) + 1):
            t = k * period + float(rng.uniform(0, 2e-4))
            if k:
                done += (rate_on if (k - 1) % 2 == 0 else rate_off) * (t - t_prev)
            rows.append({"t": t, "rank": r, "sims_done": int(done)})
            t_prev = t
    extra = {"trace_probe": probe} if probe is not None else {}
    return SimpleNamespace(meta={"ranks": {"search": ranks}, "extra": extra}, samples=pd.DataFrame(rows))


def test_probe_factor_compares_recorded_and_unrecorded_windows():
    from sim.calibrate import probe_factor

    f, windows = probe_factor(_probing_trace(8000.0, 10000.0))
    assert f == pytest.approx(0.8, rel=0.01) and windows >= 10
    # no probe in the trace, or too few windows of each kind: no factor
    assert probe_factor(_probing_trace(8000.0, 10000.0, probe=None)) is None
    assert probe_factor(_probing_trace(8000.0, 10000.0, seconds=0.4)) is None


def test_trace_probe_needs_a_trace():
    from engine.mpi import DistributedConfig

    with pytest.raises(ConfigError, match="trace_probe"):
        DistributedConfig(algo="treesplit", ranks=2, seconds=1.0, trace_probe=True).validate()


def test_cli_trace_probe_needs_a_trace(run_cli):
    r = run_cli("search", "--algo", "treesplit", "--ranks", "2", "--seconds", "0.5", "--trace-probe", timeout=60)
    assert r.returncode == 2 and "trace_probe: needs a trace directory" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.mpi
@pytest.mark.timeout(240)
def test_engine_records_every_other_window_and_calibration_keeps_the_package_costs(run_cli, tmp_path):
    from engine.trace_files import read_trace
    from sim.calibrate import probe_factor
    from sim.distributions import fit_distribution
    from sim.profile import load_profile

    trace = tmp_path / "t"
    r = run_cli("search", "--algo", "treesplit", "--ranks", "2", "--bcast-ranks", "0", "--threads", "1", "--board",
                "9", "--seconds", "1.5", "--seed", "1", "--trace", str(trace), "--trace-probe", "--json", timeout=200)
    assert r.returncode == 0, r.stderr[-2000:]
    tr = read_trace(trace)
    assert tr.meta["extra"]["trace_probe"] == pytest.approx(0.1)
    window = np.floor(tr.packages["t_start"].to_numpy() / 0.1).astype(int)
    # recorded in even windows only (a package may start in the few microseconds before a rank's flip)
    assert len(window) > 100 and (window % 2 == 0).mean() > 0.97
    assert (np.floor(tr.messages["t_recv"].to_numpy() / 0.1).astype(int) % 2 == 0).mean() > 0.97
    assert tr.samples.groupby("rank").size().min() >= 12  # the samples cover every window
    f, windows = probe_factor(tr)
    assert 0.2 < f < 3.0 and windows >= 4
    out = tmp_path / "p.toml"
    r = run_cli("calibrate", str(trace), "-o", str(out), "--no-pingpong", timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    prof = load_profile(str(out))
    assert "recorded windows ran at" in prof.source
    # the trace's playout costs as it shows them: recording does not lengthen a package
    pk = tr.packages[tr.packages["kind"].astype(str) == "playout"]
    seen = fit_distribution((pk["t_end"] - pk["t_start"]).to_numpy()).mean
    assert prof.costs["playout"].mean == pytest.approx(seen, rel=1e-3)


def test_bookkeeping_is_fitted_on_gaps_too_short_to_hold_a_collection_of_records():
    """One rank runs packages 10 us long with 1.5 us between them, and every 50th gap holds a 60 us collection
    of trace records: the per-package fit sees the 1.5 us (with the collections it was 2.7 us)."""
    from sim.calibrate import COLLECT_GAP, inline_costs

    rows, t = [], 0.0
    for i in range(4000):
        rows.append({"rank": 0, "worker": 0, "kind": "playout", "t_start": t, "t_end": t + 1e-5})
        t += 1e-5 + (6e-5 if i % 50 == 49 else 1.5e-6)
    tr = SimpleNamespace(meta={"ranks": {"search": 1}}, packages=pd.DataFrame(rows),
                         messages=pd.DataFrame(columns=["src", "dst", "kind", "bytes", "t_send", "t_recv"]))
    assert inline_costs(tr, COLLECT_GAP)[0] == pytest.approx(1.5e-6, rel=1e-3)
    assert inline_costs(tr, 1e-4)[0] > 2.5e-6


def test_bookkeeping_is_fitted_on_every_hand_over_between_packages():
    """The compiled engine starts most packages within a microsecond of the last one: the per-package fit takes
    every hand-over (the next part is another simulation's), however short, and none of the steps within one
    fused package (fitting only the longer gaps charged each package their 4 us instead of the 0.4 us mean)."""
    from sim.calibrate import COLLECT_GAP, inline_costs

    rows, t = [], 0.0
    for i in range(4000):
        for kind, d in (("select", 1e-6), ("playout", 1e-5), ("update", 1e-6)):  # one fused package, no gaps
            rows.append({"rank": 0, "worker": -1, "kind": kind, "sim_id": i, "t_start": t, "t_end": t + d})
            t += d
        t += 4e-6 if i % 10 == 9 else 0.0  # every tenth hand-over takes 4 us, the others none
    tr = SimpleNamespace(meta={"ranks": {"search": 1}}, packages=pd.DataFrame(rows),
                         messages=pd.DataFrame(columns=["src", "dst", "kind", "bytes", "t_send", "t_recv"]))
    assert inline_costs(tr, COLLECT_GAP)[0] == pytest.approx(4e-7, rel=1e-2)


def test_a_workers_bookkeeping_is_fitted_on_hand_overs_too():
    """Ranks with worker threads: package_gap tells hand-overs from the steps of one fused package by the
    simulation id, as the IO thread's fit does: two workers whose fused steps are 2 us apart and whose
    hand-overs take 0.5 us give 0.5 us (the gap-length rule took the steps' 2 us)."""
    from sim.calibrate import package_gap

    rows = []
    for w in (0, 1):
        t = w * 1e-7
        for i in range(1000):
            for kind, d in (("select", 1e-6), ("playout", 1e-5), ("update", 1e-6)):
                rows.append({"rank": 0, "worker": w, "kind": kind, "sim_id": 2 * i + w, "t_start": t,
                             "t_end": t + d})
                t += d + 2e-6
            t += 5e-7 - 2e-6
    assert package_gap(pd.DataFrame(rows)) == pytest.approx(5e-7, rel=1e-3)
