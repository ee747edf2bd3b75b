from engine.mpi.config import DistributedConfig


def test_default_broadcast_ranks_follow_the_ratio_and_the_groups():
    assert DistributedConfig(algo="treesplit", ranks=8, sims=1).resolved_bcast_ranks() == 2
    assert DistributedConfig(algo="treesplit", ranks=8, sims=1, params={"bcast_ratio": "2"}).resolved_bcast_ranks() == 4
    # hybrid: each group its own share, so the groups always divide the broadcast ranks
    assert DistributedConfig(algo="hybrid", ranks=4, sims=1, params={"groups": "2"}).resolved_bcast_ranks() == 0
    assert DistributedConfig(algo="hybrid", ranks=16, sims=1, params={"groups": 2}).resolved_bcast_ranks() == 4
    assert DistributedConfig(algo="tds", ranks=8, sims=1).resolved_bcast_ranks() == 0
    assert DistributedConfig(algo="treesplit", ranks=8, bcast_ranks=3, sims=1).resolved_bcast_ranks() == 3


def test_a_local_run_with_more_threads_than_cores_gets_a_layout_note(monkeypatch):
    from engine.mpi import algorithms as mpi_algorithms
    from engine.mpi.config import DistributedConfig

    monkeypatch.setattr(mpi_algorithms.os, "cpu_count", lambda: 2)
    hint = mpi_algorithms.layout_hint(DistributedConfig(algo="treesplit", ranks=2, threads=2, bcast_ranks=0, sims=10))
    assert hint and "--threads 1" in hint and "2 ranks x 2 threads on 2 cores" in hint
    assert mpi_algorithms.layout_hint(DistributedConfig(algo="treesplit", ranks=2, threads=1, bcast_ranks=0,
                                                        sims=10)) is None
    monkeypatch.setattr(mpi_algorithms.os, "cpu_count", lambda: 16)
    assert mpi_algorithms.layout_hint(DistributedConfig(algo="treesplit", ranks=2, threads=2, bcast_ranks=0,
                                                        sims=10)) is None
