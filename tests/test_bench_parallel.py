"""`treesplit bench parallel`'s table arithmetic (engine/benchmarks/parallel.py): speed-ups against the
sequential search of the same run, and CPU per remote hop in all and without the ranks' waiting for work."""

import pytest

from engine.benchmarks.parallel import METRICS, _rows


def _run(sims_per_s, cpu, wait=0.0, hops=0.0):
    return {**{k: 0.0 for k in METRICS}, "sims_per_s": sims_per_s, "cpu_us_per_sim": cpu, "wait_us_per_sim": wait,
            "hops_per_sim": hops}


def test_hop_cost_is_counted_with_and_without_the_ranks_waiting_for_work():
    runs = {"sequential": [_run(100.0, 50.0), _run(120.0, 40.0), _run(110.0, 45.0)],
            "treesplit 1x1": [_run(100.0, 50.0, wait=1.0)],
            # 20 us more CPU a simulation than on one rank over 0.5 hops, of which 8 us spent spinning idle
            "treesplit 2x1": [_run(165.0, 70.0, wait=9.0, hops=0.5)]}
    rows = _rows(runs)
    two = rows["treesplit 2x1"]
    assert two["speedup"] == pytest.approx(1.5)  # against the median sequential rate, 110
    assert two["cpu_us_per_hop"] == pytest.approx(40.0)
    assert two["work_us_per_hop"] == pytest.approx(24.0)
    assert "cpu_us_per_hop" not in rows["treesplit 1x1"] and "work_us_per_hop" not in rows["sequential"]


def test_hop_cost_against_two_one_rank_runs_at_once_leaves_out_what_the_cores_slow_each_other_by():
    runs = {"sequential": [_run(100.0, 50.0)],
            "treesplit 1x1": [_run(100.0, 50.0, wait=1.0)],
            # beside another search, one rank's simulation costs 6 us more, 1 of them spinning
            "treesplit 1x1 pair": [_run(95.0, 56.0, wait=2.0)],
            "treesplit 2x1": [_run(165.0, 70.0, wait=9.0, hops=0.5)]}
    rows = _rows(runs)
    assert rows["treesplit 2x1"]["work_us_per_hop"] == pytest.approx(24.0)
    assert rows["treesplit 2x1"]["pair_us_per_hop"] == pytest.approx((61.0 - 54.0) / 0.5)
    assert "pair_us_per_hop" not in rows["treesplit 1x1 pair"] and "cpu_us_per_hop" not in rows["treesplit 1x1 pair"]


def test_pairs_are_run_for_the_one_rank_layouts_of_two_rank_ones(monkeypatch):
    import argparse

    from engine.benchmarks.parallel import _configs, _label

    monkeypatch.setattr("os.cpu_count", lambda: 2)
    args = argparse.Namespace(scaling=False, algos="tree,treesplit,root", layouts="1x1,2x1,1x3", tree_threads=2,
                              pairs=True, trace_cost=False)
    labels = [_label(c) for c in _configs(args)]
    assert [lbl for lbl in labels if lbl.endswith("pair")] == ["treesplit 1x1 pair", "root 1x1 pair"]
    assert not any(lbl.endswith("pair") for lbl in map(_label, _configs(argparse.Namespace(**{**vars(args),
                                                                                              "pairs": False}))))


def test_a_pair_is_two_runs_at_once_its_cpu_per_simulation_over_both(monkeypatch):
    import threading

    from engine.benchmarks import parallel

    seen, both_started = [], threading.Barrier(2, timeout=10)

    def fake(c, board, seconds, policy, params, keep=None, seed=1):
        seen.append((c, seed))
        both_started.wait()  # the two run at once: neither returns before the other has started
        return {**_run(1000.0 * seed, 40.0 + 20.0 * (seed - 1), wait=1.0), "sims": 1000.0 * seed}

    monkeypatch.setattr(parallel, "_run_mpi", fake)
    out = parallel._run_pair({"algo": "tds", "ranks": 1, "threads": 1}, 9, 1.0, "random", {})
    assert sorted(s for _, s in seen) == [1, 2] and all("pair" not in c for c, _ in seen)
    assert out["sims_per_s"] == pytest.approx(1500.0)
    assert out["cpu_us_per_sim"] == pytest.approx((40.0 * 1000 + 60.0 * 2000) / 3000)
