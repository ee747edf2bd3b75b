"""One tree snapshot for both runtimes (model/roles/snapshot.py): the engine's rank 0, linking what the ranks
reported, and the simulator, reading the roles' tables, build the same rows from the same role state."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine.mpi import roles_host
from engine.mpi.config import DistributedConfig
from model.game import make_game, trace_board
from model.roles import Layout, Setup, make_roles
from model.roles.loopback import Loopback
from model.roles.snapshot import COLUMNS, tree_rows

RUNS = {
    # name: (game, game args, algo, search ranks, broadcast ranks, params)
    "pgame-treesplit": ("pgame", {"branching": 4, "depth": 8}, "treesplit", 4, 1, {"n_dup": 64}),
    "go-treesplit": ("go", {"size": 7}, "treesplit", 2, 1, {"n_dup": 16}),
    "go-root": ("go", {"size": 7}, "root", 2, 0, {}),
}


def _searched(name: str, sims: int = 1200):
    game, kw, algo, M, B, params = RUNS[name]
    g, s = make_game(game, **kw)
    layout = Layout(M, B, workers=2)
    setup = Setup(g, s, sims=sims, seed=5)
    roles = make_roles(algo, layout, setup, {**params, "table_mb": 1})
    Loopback(roles, workers=[2] * M + [1] * B, seed=5).run()
    return roles[:M], layout, setup, DistributedConfig(algo=algo, ranks=M, sims=sims, game=game,
                                                  trace="traced")  # snapshots are reported for a trace only


def _engine_tree(search, layout, setup, config):
    """What rank 0 of the engine writes: every rank's final report (as plain values, as it travels), linked."""
    reports = {}
    for role in search:
        host = roles_host.RolesHost(role, config, layout, setup)
        reports[role.rank] = {"host": json.loads(json.dumps(host.report()))}
    return roles_host.RolesHost(search[0], config, layout, setup).tree(reports)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_engine_and_simulator_build_the_same_snapshot(name, monkeypatch):
    search, layout, setup, config = _searched(name)
    monkeypatch.setattr(roles_host, "TREE_NODES", 10**6)  # every node reported: nothing left for rank 0 to miss
    eng = _engine_tree(search, layout, setup, config)
    sim = tree_rows(search, max_depth=roles_host.TREE_DEPTH, max_nodes=roles_host.TREE_ROWS * layout.search_ranks)
    assert len(sim["hash"]) > 20 and sim["depth"].max() >= 3
    for c in COLUMNS:
        assert eng[c].dtype == sim[c].dtype and np.array_equal(eng[c], sim[c]), c


@pytest.mark.parametrize("name", ["pgame-treesplit", "go-treesplit"])
def test_engine_snapshot_counts_the_moves_into_each_node(name):
    """With the real report limit: each row's visits and wins are the same edge's (wins <= visits), the
    root's children account for every simulation, and hashes keep all 64 bits."""
    search, layout, setup, config = _searched(name, sims=3000)
    tree = _engine_tree(search, layout, setup, config)
    assert tree["visits"][0] == 3000 and tree["visits"][tree["depth"] == 1].sum() == 3000
    assert (tree["wins"] <= tree["visits"] + 1e-9).all() and (tree["wins"] >= 0).all()
    stored = {int(h) for r in search for h in r.t.key[r.t.visits > 0]}
    best = np.flatnonzero(tree["depth"] == 1)[np.argmax(tree["visits"][tree["depth"] == 1])]
    assert {int(tree["hash"][0]), int(tree["hash"][best])} <= stored  # not rounded through float64
    assert len(set(tree["hash"].tolist())) == len(tree["hash"])  # each node once


def test_traces_record_the_games_board():
    assert trace_board("go", 9) == 9 and trace_board("go", "13") == 13
    assert trace_board("loa", 9) == 8  # the runtimes' Go size placeholder says nothing about LOA's board
    assert trace_board("pgame", 9) is None and trace_board("go", None) is None


@pytest.mark.parametrize("game,board", [("loa", 8), ("pgame", None)])
def test_simulator_trace_meta_names_the_board(game, board, tmp_path):
    from engine.trace_files import read_trace
    from sim.simulate import SimConfig, simulate

    simulate(SimConfig(algo="tds", nodes=1, seconds=0.001, warmup=0.0, fidelity="functional", game=game,
                       trace=str(tmp_path / "t"), params={"table_mb": 1}))
    assert read_trace(tmp_path / "t").meta["board"] == board
