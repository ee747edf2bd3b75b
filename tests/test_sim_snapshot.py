"""Functional simulator traces carry tree snapshots (model/roles/snapshot.py), as engine traces do."""

from engine.trace_files import read_trace
from sim.simulate import SNAPSHOTS, SimConfig, simulate


def test_functional_trace_has_tree_snapshots(tmp_path):
    cfg = SimConfig(algo="treesplit", profile="oculus", nodes=1, seconds=0.01, warmup=0.0,
                    params={"table_mb": 4, "game.branching": 4, "game.depth": 8}, trace=str(tmp_path / "t"))
    s = simulate(cfg)
    tree = read_trace(tmp_path / "t").tree
    times = sorted(tree["t"].unique())
    assert 2 <= len(times) <= SNAPSHOTS + 1
    last = tree[tree["t"] == times[-1]]
    root = last[last["depth"] == 0]
    assert len(root) == 1 and int(root["visits"].iloc[0]) > 0
    assert (last["depth"] > 0).any() and set(last["owner"]) <= set(range(s["search_ranks"]))
    # the tree grows: the last snapshot's root has more visits than the first's
    first = tree[(tree["t"] == times[0]) & (tree["depth"] == 0)]
    assert int(root["visits"].iloc[0]) > int(first["visits"].iloc[0])
