from engine.mpi.config import DistributedConfig


def test_default_broadcast_ranks_follow_the_ratio_and_the_groups():
    assert DistributedConfig(algo="treesplit", ranks=8, sims=1).resolved_bcast_ranks() == 2
    assert DistributedConfig(algo="treesplit", ranks=8, sims=1, params={"bcast_ratio": "2"}).resolved_bcast_ranks() == 4
    # hybrid: each group its own share, so the groups always divide the broadcast ranks
    assert DistributedConfig(algo="hybrid", ranks=4, sims=1, params={"groups": "2"}).resolved_bcast_ranks() == 0
    assert DistributedConfig(algo="hybrid", ranks=16, sims=1, params={"groups": 2}).resolved_bcast_ranks() == 4
    assert DistributedConfig(algo="tds", ranks=8, sims=1).resolved_bcast_ranks() == 0
    assert DistributedConfig(algo="treesplit", ranks=8, bcast_ranks=3, sims=1).resolved_bcast_ranks() == 3
