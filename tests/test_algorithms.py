"""model/algorithms.py: what an algorithm is, said once, and every runtime reading it alike. A layout an algorithm
can't run is refused before any rank starts, naming layouts that can; threads per rank default to the fast
count for the cores present."""

import subprocess

import pytest

from engine import algorithms as engine_algorithms
from engine.mpi.config import DistributedConfig, fast_threads
from model import algorithms
from model.errors import ConfigError


def test_one_table_names_every_algorithm_the_runtimes_know():
    from model.roles import ALGORITHMS, ROLES
    from model.roles.params import ALGO_PARAMS

    assert set(ROLES) == set(ALGO_PARAMS) == set(ALGORITHMS) == set(algorithms.DISTRIBUTED)
    assert set(engine_algorithms.names()) == set(algorithms.ALGORITHMS)
    for name in algorithms.ALGORITHMS:
        algo = engine_algorithms.get(name)
        assert algo.needs_mpi == algorithms.get(name).distributed
        assert algo.description == algorithms.get(name).description


@pytest.mark.parametrize("algo,M,B,params", [
    ("treesplit", 8, None, {}), ("treesplit", 3, None, {}), ("treesplit", 8, None, {"bcast_ratio": "2"}),
    ("hybrid", 12, None, {}), ("hybrid", 6, None, {}), ("hybrid", 16, None, {"groups": "4"}),
    ("hybrid", 4, 2, {}), ("tds", 8, None, {}), ("root", 4, None, {}),
])
def test_engine_and_simulator_lay_out_the_same_ranks(algo, M, B, params):
    """The engine's config and the simulator's world read one rule (on main the simulator gave hybrid
    M // 4 broadcast ranks, the engine 2 * ((M / 2) // 4): 3 against 2 for 12 search ranks)."""
    from sim.simulate import SimConfig, prepare

    engine = DistributedConfig(algo=algo, ranks=M, bcast_ranks=B, params=params, sims=1).resolved_layout()
    prep = prepare(SimConfig(algo=algo, profile="local", nodes=M, bcast_nodes=B, fidelity="statistical",
                             seconds=0.001, params={**params, "node.ranks_per_node": 1}))
    assert (prep.layout.search_ranks, prep.layout.bcast_ranks) == engine == algorithms.resolve_layout(algo, M, B,
                                                                                                       params)


@pytest.mark.parametrize("algo,M,B,params,words", [
    ("hybrid", 4, 1, {}, ["2 groups do not divide 1 broadcast rank", "4 search + 0 broadcast ranks",
                          "4 search + 2 broadcast ranks", "groups=1"]),
    ("hybrid", 3, None, {}, ["2 groups do not divide 3 search ranks", "2 search + 0 broadcast ranks"]),
    ("hybrid", 8, 2, {"groups": "4"}, ["4 groups do not divide 2 broadcast ranks", "8 search + 4 broadcast ranks"]),
    ("tds", 2, 1, {}, ["tds has no broadcast ranks", "0 broadcast ranks"]),
    ("treesplit", 2, 3, {}, ["at most one per search rank", "2 search + 0 broadcast ranks"]),
])
def test_a_layout_that_cannot_run_names_layouts_that_can(algo, M, B, params, words):
    from model.roles import Layout, Setup, make_role
    from model.game import make_game

    for refuse in (lambda: algorithms.resolve_layout(algo, M, B, params),
                   lambda: DistributedConfig(algo=algo, ranks=M, bcast_ranks=B, params=params, sims=1).validate()):
        with pytest.raises(ConfigError) as e:
            refuse()
        for w in words:
            assert w in str(e.value), (w, str(e.value))
    if B is not None and B <= M:  # the roles refuse it too (the loopback runtime and the simulator build them)
        g, s = make_game("pgame", branching=4, depth=4)
        with pytest.raises(ConfigError):
            make_role(algo, 0, Layout(M, B), Setup(g, s, sims=10), params)
    # and every layout the message names does run
    if algo == "hybrid":
        for text in str(e.value).split("; ")[1:]:
            if "with groups=" not in text:
                m, b = (int(x.split()[0]) for x in text.replace("layouts that run: ", "").split(" + "))
                assert algorithms.resolve_layout(algo, m, b, params) == (m, b)


def test_search_refuses_a_hybrid_layout_before_any_rank_starts(monkeypatch, capsys):
    from treesplit.cli import main

    def no_ranks(*a, **k):
        raise AssertionError("a process was started")

    monkeypatch.setattr(subprocess, "Popen", no_ranks)
    assert main(["search", "--algo", "hybrid", "--ranks", "4", "--bcast-ranks", "1", "--board", "9",
                 "--sims", "3000"]) == 2
    err = capsys.readouterr().err
    assert "treesplit: error: groups: 2 groups do not divide 1 broadcast rank" in err
    assert "4 search + 2 broadcast ranks" in err and "Traceback" not in err


def test_mpi_ranks_default_to_the_fast_thread_count(monkeypatch):
    for var in ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE"):
        monkeypatch.delenv(var, raising=False)
    assert fast_threads(2, cores=2) == 1 and fast_threads(3, cores=2) == 1 and fast_threads(1, cores=2) == 2
    assert fast_threads(4, cores=16) == 4 and fast_threads(20, cores=16) == 1
    monkeypatch.setenv("MPI_LOCALNRANKS", "2")  # a job across nodes: the ranks on this node share its cores
    assert fast_threads(32, cores=16) == 8
    monkeypatch.delenv("MPI_LOCALNRANKS")
    import os

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    # what `treesplit search --algo treesplit` runs with when no --threads is given (on main: 2 threads a rank)
    cfg = engine_algorithms.make_config("treesplit", {}, ranks=2)
    from engine.mpi.algorithms import distributed_config

    assert distributed_config("treesplit", cfg, sims=10).threads == 1
    assert DistributedConfig(algo="treesplit", ranks=1, sims=1).threads == 2
    assert DistributedConfig(algo="treesplit", ranks=2, threads=3, sims=1).threads == 3  # as asked
