"""`treesplit experiment`: the registry, config errors, and each built experiment's --quick run writing its
CSV, summary.json and a self-contained HTML report with sane content."""

import json

import pandas as pd
import pytest

from experiments import registry


def _report_ok(out, name):
    html = (out / "report.html").read_text()
    assert registry.get(name).question.split()[0] in html
    assert "reference (seed)" in html and "Where we agree and where not" in html
    assert 'src="https://cdn.bokeh.org/' in html  # Bokeh from its CDN by default: a small file in git
    summary = json.loads((out / "summary.json").read_text())
    assert summary["experiment"] == name and summary["quick"] is True
    assert summary["machine"] and summary["date"] and summary["agreement"]
    assert summary["commit"] and summary["samples"]  # where it was measured, at which commit, on how much
    return summary


def test_list_names_all_eight_with_their_question(run_cli):
    r = run_cli("experiment", "--list", timeout=60)
    assert r.returncode == 0
    for name in registry.EXPERIMENTS:
        assert name in r.stdout
    assert r.stdout.count("(not built yet)") == sum(e.module is None for e in registry.EXPERIMENTS.values())
    assert all(e.module for e in registry.EXPERIMENTS.values())  # all eight are built


@pytest.mark.parametrize("args,words", [
    (["no-such-thing"], ["unknown experiment", "broadcast-topology"]),
    (["parallel-degree", "--quick", "--param", "s_par=0"], ["s_par"]),
    (["broadcast-topology", "--quick", "--jobs", "2"], ["--jobs", "plays no games"]),
    (["parallel-degree", "--report-only", "--out", "/nonexistent-treesplit"], ["no kept run"]),
    (["broadcast-topology", "--quick", "--param", "peers=0"], ["peers"]),
    (["broadcast-topology", "--quick", "--param", "nonsense=1"], ["nonsense", "unknown setting"]),
    (["scaling-oculus", "--quick", "--param", "nodes=4"], ["nodes"]),
    ([], ["name an experiment"]),
])
def test_bad_names_and_settings_are_one_clear_error(capsys, tmp_path, args, words):
    """In this process, through the console command's own entry point: each case would otherwise pay a
    process start and the experiment modules' imports for an error raised before any work; an exception
    escaping main() fails the test as a traceback would."""
    from treesplit.cli import main

    try:
        rc = main(["experiment", *args, "--out", str(tmp_path)])
    except SystemExit as e:  # argparse's own errors
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    assert err.count("treesplit: error:") == 1
    for w in words:
        assert w in err


def test_broadcast_topology_quick(run_cli, tmp_path):
    r = run_cli("experiment", "broadcast-topology", "--quick", "--out", str(tmp_path), timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    t = pd.read_csv(tmp_path / "table_4_1.csv")
    assert t.verified.all() and t.matches_table.all()
    assert (t.max_hops <= t.hop_bound).all()
    # every origin reaches all B - 1 other broadcast ranks with one BCAST message each (a spanning tree)
    assert (t.bcast_msgs_per_broadcast == t.bcast_ranks - 1).all()
    hops = pd.read_csv(tmp_path / "figure_4_5_hops.csv")
    assert hops.groupby("origin")["rank"].nunique().eq(16).all() and hops.hops.max() == 3
    assert pd.read_csv(tmp_path / "sweep.csv").all_once.all()
    s = _report_ok(tmp_path, "broadcast-topology")
    assert s["results"]["all_verified"] and s["results"]["figure_4_5_matches"]


def test_scaling_oculus_quick(run_cli, tmp_path):
    r = run_cli("experiment", "scaling-oculus", "--quick", "--out", str(tmp_path), timeout=240)
    assert r.returncode == 0, r.stderr[-2000:]
    t = pd.read_csv(tmp_path / "scaling.csv")
    for move, d in t.groupby("move"):
        d = d.sort_values("nodes")
        assert d.sims_per_s.is_monotonic_increasing  # more nodes, more simulations
        assert ((d.busy_frac > 0) & (d.busy_frac <= 1.0001)).all()
        assert (d.out_gbit_per_rank > 0).all() and (d.out_gbit_per_rank < 16).all()
    # later game phases have shorter playouts: more simulations per second on one node
    one = t[t.nodes == t.nodes.min()].sort_values("move")
    assert one.sims_per_s.iloc[-1] > one.sims_per_s.iloc[0]
    _report_ok(tmp_path, "scaling-oculus")


@pytest.mark.slow
def test_parameters_quick(run_cli, tmp_path):
    r = run_cli("experiment", "parameters", "--quick", "--out", str(tmp_path), timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    t = pd.read_csv(tmp_path / "sweeps.csv")
    assert set(t.sweep) == {"n_dup", "n_sync"}
    assert (t.sims_per_s > 0).all() and (t.load_imbalance >= 1).all()
    nd = t[t.sweep == "n_dup"].sort_values("n_dup")
    assert nd.nodes_duplicated.iloc[0] >= nd.nodes_duplicated.iloc[-1]  # a lower threshold shares more nodes
    _report_ok(tmp_path, "parameters")


@pytest.mark.mpi
@pytest.mark.gnugo
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_overheads_quick(run_cli, tmp_path):
    r = run_cli("experiment", "overheads", "--quick", "--out", str(tmp_path), timeout=560)
    assert r.returncode == 0, r.stderr[-2000:]
    t = pd.read_csv(tmp_path / "overheads.csv")
    assert set(t["mode"]) == {"sequential", "parallel"}
    for (mode, move), d in t.groupby(["mode", "move"]):
        d = d.set_index("kind")
        assert d.loc["playout", "per_sim"] == 1.0  # one playout per simulation (fuse = false in the config)
        assert d.loc["select", "per_sim"] >= 1.0 and d.loc["update", "per_sim"] >= 1.0
        assert (d.seconds >= 0).all() and d.loc["playout", "seconds"] > 0
        if mode == "sequential":  # nothing to synchronise on one rank
            assert d.loc["sync", "packages"] == 0 and d.loc["bcast", "packages"] == 0
        else:  # a simulation visits more than one rank, and shared nodes are synchronised
            assert d.loc["update", "per_sim"] > 1.0 and d.loc["sync", "packages"] > 0
    assert len(pd.read_csv(tmp_path / "game.csv")) >= max(t.move)
    _report_ok(tmp_path, "overheads")


def test_report_only_rebuilds_from_csv_and_inline_is_optional(run_cli, tmp_path):
    r = run_cli("experiment", "broadcast-topology", "--quick", "--out", str(tmp_path), timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    before = json.loads((tmp_path / "summary.json").read_text())
    (tmp_path / "report.html").unlink()
    r = run_cli("experiment", "broadcast-topology", "--report-only", "--inline", "--out", str(tmp_path), timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    html = (tmp_path / "report.html").read_text()
    assert 'src="https://cdn.bokeh.org/' not in html and len(html) > 500_000  # Bokeh inlined for offline use
    assert before["agreement"][:60].replace("'", "&#x27;") in html or json.dumps(before["agreement"][:60])[1:-1] in html
    assert json.loads((tmp_path / "summary.json").read_text()) == before  # nothing rerun, nothing rewritten


def test_parallel_degree_quick(run_cli, tmp_path):
    r = run_cli("experiment", "parallel-degree", "--quick", "--param", "games=2", "--param", "s_par=1,8",
                "--out", str(tmp_path), timeout=240)
    assert r.returncode == 0, r.stderr[-2000:]
    t = pd.read_csv(tmp_path / "points.csv")
    assert list(t.s_par) == [1, 8] and (t.games + t.void == 2).all()
    assert ((t.wins + t.losses + t.draws) == t.games).all() and (t.mean_moves > 10).all()
    assert ((t.ci_low <= t.win_rate) & (t.win_rate <= t.ci_high)).all()
    s = _report_ok(tmp_path, "parallel-degree")
    assert s["results"]["points"] == 2
    # a second run of the same points pools with the first: games add up, statistics follow the sums
    from experiments.parallel_degree import main as pd_main, pool
    from model.stats import match_stats

    runs = tmp_path / "runs"
    runs.mkdir()
    t.to_csv(runs / "a.csv", index=False)
    u = t.assign(wins=t.wins + 3, games=t.games + 3)
    u.to_csv(runs / "b.csv", index=False)
    assert pd_main(["pool", "--dir", str(tmp_path)]) == 0
    p = pd.read_csv(tmp_path / "points.csv")
    assert list(p.games) == list(t.games + u.games) and list(p.wins) == list(t.wins + u.wins)
    want = match_stats(int(p.wins[0]), int(p.losses[0]), int(p.draws[0]))
    assert p.win_rate[0] == pytest.approx(want.win_rate) and p.ci_low[0] == pytest.approx(want.ci_low)
    s = json.loads((tmp_path / "summary.json").read_text())
    assert [r["run"] for r in s["pooled_from"]] == ["a.csv", "b.csv"] and "wall_s" not in s
    assert pool([t]).games.tolist() == t.games.tolist()
    assert pd_main(["pool", "--dir", str(tmp_path / "nothing")]) == 2  # no runs: one clear message
    with pytest.raises(SystemExit) as e:  # the committed result is pooled only with --update-reference
        pd_main(["pool"])
    assert e.value.code == 2


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.timeout(700)
def test_algorithms_quick(run_cli, tmp_path):
    r = run_cli("experiment", "algorithms", "--quick", "--out", str(tmp_path), timeout=360)
    assert r.returncode == 0, r.stderr[-2000:]
    m = pd.read_csv(tmp_path / "measured.csv")
    assert {"sequential", "root", "treesplit"} <= set(m.algo) and (m.pps > 0).all() and (m.nps > 0).all()
    p = pd.read_csv(tmp_path / "predicted.csv")
    root = p[p.algo == "root"].sort_values("nodes")
    assert root.pps.iloc[-1] > 2 * root.pps.iloc[0]  # independent trees: PPS grows with the nodes
    assert len(pd.read_csv(tmp_path / "bench16.csv")) > 0  # the 16-core measurements are shown
    _report_ok(tmp_path, "algorithms")
    # predicting again keeps the measured rows; dfuct (not in the statistical fidelity) runs functionally
    m.loc[m.algo == "root", "pps"] = 12345.0
    m.to_csv(tmp_path / "measured.csv", index=False)
    # ... and plays the strength games asked for: each algorithm on 2 ranks against the sequential search
    r = run_cli("experiment", "algorithms", "--quick", "--out", str(tmp_path), "--param", "reuse_measured=true",
                "--param", "algos=root,dfuct", "--param", "strength_games=1", "--param", "strength_seconds=0.05",
                timeout=360)
    assert r.returncode == 0, r.stderr[-2000:]
    kept_rows = pd.read_csv(tmp_path / "measured.csv")
    assert (kept_rows.query("algo == 'root'").pps == 12345.0).all()
    assert kept_rows[["date", "machine", "commit"]].equals(m[["date", "machine", "commit"]])  # their own stamps
    p = pd.read_csv(tmp_path / "predicted.csv")
    assert set(p.algo) == {"root", "dfuct"} and (p[p.algo == "dfuct"].pps > 0).all()
    st = pd.read_csv(tmp_path / "strength.csv")
    assert st.algo.tolist() == ["root", "dfuct"] and (st.games == 1).all() and (st.ranks == 2).all()
    assert ((st.wins + st.losses + st.draws) == 1).all() and (st.our_faults == 0).all()
    assert (st.budget_seconds == 0.05).all() and (st.opponent_budget_seconds == 0.05).all()
    assert (st.seconds_per_move > 0).all() and (st.opponent_seconds_per_move > 0).all()  # both sides timed
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary["results"]["strength_win_rate_vs_sequential"]) == {"root", "dfuct"}
    assert "strength against the sequential search" in (tmp_path / "report.html").read_text()
    # Lines of Action games (refereed by its own rules) join the Go rows, which stay
    r = run_cli("experiment", "algorithms", "--quick", "--out", str(tmp_path), "--param", "reuse_measured=true",
                "--param", "algos=root", "--param", "strength_games=1", "--param", "strength_seconds=0.05",
                "--param", "strength_on=loa", timeout=360)
    assert r.returncode == 0, r.stderr[-2000:]
    st = pd.read_csv(tmp_path / "strength.csv")
    assert list(zip(st.game, st.algo)) == [("go", "root"), ("go", "dfuct"), ("loa", "root")]
    loa = st.iloc[-1]
    assert loa.games == 1 and loa.wins + loa.losses + loa.draws == 1 and loa.mean_moves > 0 and not loa.rave
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary["results"]["strength_win_rate_vs_sequential_loa"]) == {"root"}
    assert "Win rate against the sequential search (Lines of Action)" in (tmp_path / "report.html").read_text()
    # without new games the kept strength rows stay in the report
    r = run_cli("experiment", "algorithms", "--quick", "--out", str(tmp_path), "--param", "reuse_measured=true",
                "--param", "algos=root", timeout=360)
    assert r.returncode == 0, r.stderr[-2000:]
    assert pd.read_csv(tmp_path / "strength.csv").algo.tolist() == ["root", "dfuct", "root"]
    r = run_cli("experiment", "algorithms", "--quick", "--out", str(tmp_path / "empty"), "--param",
                "reuse_measured=true", timeout=120)
    assert r.returncode == 2 and "no " in r.stderr and "measured.csv" in r.stderr


@pytest.mark.mpi
@pytest.mark.gnugo
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_strength_scaling_quick(run_cli, tmp_path):
    r = run_cli("experiment", "strength-scaling", "--quick", "--out", str(tmp_path), timeout=560)
    assert r.returncode == 0, r.stderr[-2000:]
    t = pd.read_csv(tmp_path / "games.csv")
    assert set(t.kind) == {"gnugo", "selfplay"} and sorted(t[t.kind == "gnugo"].ranks) == [1, 2]
    assert (t.games + t.void == 1).all() and (t.probe_sims > 0).all()
    _report_ok(tmp_path, "strength-scaling")


def test_sim_validation_quick_keeps_a_history(monkeypatch, tmp_path):
    """Two quick runs append two rows to the history. The engine runs and simulations are stand-ins
    (validate_helpers.fake_runs): the real quick validation runs once in the suite, as README's command
    (test_readme.py); this is the experiment around it: its quick settings, history, table and report."""
    from experiments.runner import run_experiment
    from validate_helpers import fake_runs

    fake_runs(monkeypatch)
    for _ in range(2):
        run_experiment("sim-validation", tmp_path, quick=True)
    h = pd.read_csv(tmp_path / "history.csv")
    assert len(h) == 2 and h.commit.notna().all() and h.machine.notna().all()
    assert (h.configurations == 6).all() and (h.figures_compared > 0).all()
    assert (h.held_out_configurations == 5).all() and (h.calibrated_on == "treesplit 2x1 9x9").all()
    assert (h.seconds == 0.5).all() and (h.boards.astype(str) == "9").all()  # the [quick] settings reached validate
    v = pd.read_csv(tmp_path / "validate.csv")
    assert (v.sims_per_s_measured > 0).all() and (v.sims_per_s_predicted > 0).all()
    assert "[sources]" in (tmp_path / "reference-profile.toml").read_text()
    s = _report_ok(tmp_path, "sim-validation")
    assert s["results"]["runs_in_history"] == 2


def test_index_is_generated_from_the_kept_runs_stamps():
    """experiments/README.md's index: every kept run with its samples, machine, date and commit, as
    `python -m experiments.index` writes them (the committed README is that output)."""
    from experiments.index import BEGIN, END, README, index_table
    from model.results import REFERENCE_DIR

    table = index_table()
    text = README.read_text()
    assert text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip() == table
    for name in registry.EXPERIMENTS:
        s = json.loads((REFERENCE_DIR / name / "summary.json").read_text())
        line = next(x for x in table.splitlines() if x.startswith(f"| `{name}` |"))
        assert s["samples"] in line and s["machine"] in line and s["date"][:10] in line
        assert (f"`{s['commit']}`" in line) if s.get("commit") else ("tables committed in `" in line)


def test_parameters_words_test_the_n_sync_strength_points_apart_from_n_dup(tmp_path):
    """Strength rows of both sweeps: each sweep's pairs are compared among themselves; a kept table from before
    N_sync had games (no `sweep` column) reads as N_dup rows."""
    from experiments import parameters

    rows = []
    for sweep, values in (("n_dup", [64, 1024, 16384]), ("n_sync", [1, 8, 32])):
        for i, v in enumerate(values):
            rows.append({"sweep": sweep, "n_dup": v if sweep == "n_dup" else 8192,
                         "n_sync_min": 8 if sweep == "n_dup" else v, "n_sync_max": 16 if sweep == "n_dup" else 2 * v,
                         "sync_msgs_per_sim": 0.3 - 0.02 * i, "hops_per_sim": 2.0 + i, "load_imbalance": 1.05,
                         "nodes_duplicated": 40 // (i + 1), "bcast_ranks": 2, "sims": 50000})
    sweeps = pd.DataFrame(rows)

    def games(wins):
        return {"games": 40, "wins": wins, "win_rate": wins / 40, "ci_low": wins / 40 - 0.15,
                "ci_high": wins / 40 + 0.15}

    strength = pd.DataFrame([{"sweep": "n_dup", "n_dup": 32, "n_sync_min": 8, **games(10)},
                             {"sweep": "n_dup", "n_dup": 8192, "n_sync_min": 8, **games(35)},
                             {"sweep": "n_sync", "n_dup": 256, "n_sync_min": 1, **games(20)},
                             {"sweep": "n_sync", "n_dup": 256, "n_sync_min": 32, **games(21)}])
    cfg = parameters.Config(strength_n_sync_min=[1, 32], strength_ref_n_dup=256)
    out = parameters.outcome(cfg, {"sweeps": sweeps, "strength": strength})
    assert out.summary["strength"] == {"32": [10, 40], "8192": [35, 40]}
    assert out.summary["strength_n_sync_min"] == {"1": [20, 40], "32": [21, 40]}
    words = out.agreement
    assert "separate N_dup 8192 above 32" in words  # 35 of 40 against 10 of 40
    assert "The engine games at N_dup 256 (N_sync_min 1" in words and "do not separate the N_sync_min values" in words
    assert "N_sync has no strength run" not in words
    old = parameters.outcome(cfg, {"sweeps": sweeps, "strength": strength[strength.sweep == "n_dup"].drop(
        columns=["sweep", "n_sync_min"])})
    assert old.summary["strength"] == {"32": [10, 40], "8192": [35, 40]} and "strength_n_sync_min" not in old.summary
    assert "N_sync has no strength run" in old.agreement


def test_algorithms_predictions_carry_the_costs_profiles_node_costs_on_the_clusters_network():
    from experiments import algorithms
    from sim.profile import load_profile

    lengau = load_profile("lengau")
    engine = load_profile(algorithms.REPO_DIR / algorithms.COSTS)
    mixed = algorithms.cost_profile(algorithms.Config())
    assert mixed.costs == engine.costs and mixed.costs != lengau.costs
    assert mixed.network == lengau.network and mixed.node.cores == lengau.node.cores
    assert algorithms.cost_profile(algorithms.Config(costs="")).costs == lengau.costs


def test_algorithms_strength_table_mixing_kept_old_rows_with_new_ones_reads_as_one():
    """A run that plays one game's strength games keeps the other game's rows; older rows have the budget in
    seconds_per_move and the measured mean in our_seconds_per_move, and no stamp."""
    from experiments import algorithms

    old = {"game": "loa", "algo": "root", "seconds_per_move": 0.25, "our_seconds_per_move": 0.34}
    new = {"game": "go", "algo": "root", "seconds_per_move": 0.255, "budget_seconds": 0.25,
           "date": "2026-11-28T04:00:00+00:00", "machine": "vm", "commit": "abc"}
    t = algorithms._legacy_times(pd.DataFrame([old, new, {**new, "date": "2026-11-28T04:09:00+00:00"}]))
    assert list(t.columns).count("budget_seconds") == 1 and "our_seconds_per_move" not in t
    assert t.budget_seconds.tolist() == [0.25, 0.25, 0.25] and t.seconds_per_move.tolist() == [0.34, 0.255, 0.255]
    words = algorithms._stamps(t, "Strength rows")
    assert words == ("Strength rows: some not stamped (measured before rows carried their date, machine and "
                     "commit); 2026-11-28 on vm at abc")


def test_algorithms_words_on_the_16_core_scaling_follow_the_measured_speed_ups():
    from experiments import algorithms

    def table(pps):  # algo -> PPS at 1, 2, 4, 8, 16 ranks; the sequential search makes 100
        rows = [{"algo": "sequential", "ranks": 1, "pps": 100.0}]
        rows += [{"algo": a, "ranks": r, "pps": v} for a, vs in pps.items() for r, v in zip((1, 2, 4, 8, 16), vs)]
        return pd.DataFrame([{**r, "machine": "m16", "date": "2026-11-28T07:00:00+00:00"} for r in rows])

    words, sp = algorithms._bench16_words(table({"root": [100, 200, 400, 800, 1500], "treesplit": [100, 180, 300, 500, 600],
                                                 "tds": [100, 150, 200, 250, 260], "leaf": [90, 180, 300, 400, 350]}))
    assert sp == {"root": 15.0, "treesplit": 6.0, "leaf": 3.5, "tds": 2.6}
    assert words.startswith("Measured on 16 cores (m16, 2026-11-28;") and "leaf x3.5 (best x4.0 at 8)" in words
    assert "root parallelisation scales near-linearly and best" in words
    assert "TDS scales worst of the tree-sharing methods;" in words and "tapers off (here past 8 ranks" in words
    words, _ = algorithms._bench16_words(table({"root": [100, 150, 200, 250, 300], "tds": [100, 150, 200, 280, 300],
                                                "dfuct": [100, 150, 200, 250, 280]}))
    assert "near-linearly" not in words and "tds and dfuct scale alike, within 15%" in words
    words, _ = algorithms._bench16_words(table({"root": [100, 200, 400, 800, 1500], "tds": [100, 150, 200, 280, 300],
                                                "dfuct": [100, 150, 200, 250, 280], "treesplit": [100, 180, 300, 500, 600]}))
    assert "tds and dfuct scale worst of the tree-sharing methods, alike within 15%" in words
    words, _ = algorithms._bench16_words(table({"tds": [100, 150, 200, 280, 900], "dfuct": [100, 150, 200, 250, 280]}))
    assert "dfuct, not TDS, scales worst" in words
    assert algorithms._bench16_words(pd.DataFrame()) == ("", {})


def test_parallel_degree_tests_the_newest_pooled_run_against_the_earlier_ones():
    from experiments import parallel_degree

    def run(name, wins_at_64):
        return pd.DataFrame({"sims": [128, 128], "s_par": [1, 64], "games": [200, 200], "wins": [100, wins_at_64],
                             "losses": [100, 200 - wins_at_64], "draws": [0, 0], "run": [name, name]})

    same = pd.concat([run("2026-11-26-a", 20), run("2026-11-28-b", 24)])
    words, p = parallel_degree._newest_run_agrees(same)
    assert "the newest (2026-11-28-b)" in words and "no point differs" in words and set(p) == {"N128/S1", "N128/S64"}
    moved = pd.concat([run("2026-11-26-a", 20), run("2026-11-28-b", 80)])  # 10% against 40% of the games won
    words, p = parallel_degree._newest_run_agrees(moved)
    assert "N128/S64 differs" in words and p["N128/S64"] < 0.05 and p["N128/S1"] == 1.0
