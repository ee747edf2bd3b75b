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
