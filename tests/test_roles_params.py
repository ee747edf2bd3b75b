"""Parameters of the distributed algorithms: thesis defaults, one flat --param namespace, clear errors."""

import math

import pytest

from model.errors import ConfigError
from model.roles import Layout, Setup, make_role
from model.algorithms import default_bcast_ranks
from model.roles.params import split_params


def test_thesis_defaults():
    uct, ts = split_params("treesplit", {})
    assert (ts.n_dup, ts.n_sync_min, ts.n_sync_max, ts.alpha, ts.overload, ts.balance_k, ts.peers,
            ts.bcast_ratio) == (8192, 8, 16, 0.02, 5, 1.2, 12, 4)
    assert ts.share_root
    _, tds = split_params("tds", {})
    assert math.isinf(tds.n_dup) and not tds.share_root
    assert default_bcast_ranks("treesplit", 16) == 4 and default_bcast_ranks("treesplit", 2) == 0


def test_one_namespace_for_policy_and_algorithm():
    uct, ts = split_params("treesplit", {"c": "0.7", "n_dup": "2048", "rave": "off"})
    assert uct.c == 0.7 and not uct.rave and ts.n_dup == 2048
    _, tds = split_params("tds", {"n_dup": "inf"})
    assert math.isinf(tds.n_dup)


@pytest.mark.parametrize("algo,values,field", [
    ("treesplit", {"n_dupp": 3}, "n_dupp"),
    ("treesplit", {"n_sync_max": 4}, "n_sync_max"),
    ("treesplit", {"balance_k": 1.0}, "balance_k"),
    ("treesplit", {"alpha": -1}, "alpha"),
    ("root", {"merge_every": 0}, "merge_every"),
    ("leaf", {"variant": "xlmp"}, "variant"),
    ("leaf", {"n_dup": 5}, "n_dup"),
    ("nosuch", {}, "algo"),
])
def test_bad_values_name_the_field(algo, values, field):
    with pytest.raises(ConfigError, match=field):
        split_params(algo, values)


def test_layout_and_roles_refuse_impossible_setups():
    from model.game import make_game

    g, s = make_game("pgame")
    with pytest.raises(ConfigError):
        Layout(0)
    with pytest.raises(ConfigError):
        Layout(2, 3)
    with pytest.raises(ConfigError):
        make_role("root", 0, Layout(4, 1), Setup(g, s, sims=10), {})
    lay = Layout(8, 2)
    assert [lay.partner(r) for r in range(8)] == [8, 8, 8, 8, 9, 9, 9, 9]
    assert lay.clients(9) == [4, 5, 6, 7]
    assert Setup(g, s, sims=10).quota(0, 3) + Setup(g, s, sims=10).quota(2, 3) + Setup(g, s, sims=10).quota(1, 3) == 10


def test_min_in_flight_raises_s_par_only_where_simulations_hop():
    """S_par / M is O per worker (thesis) unless min_in_flight asks for more on ranks that simulations hop
    between; the role and the statistical fidelity read the same figure."""
    from model.game import make_game
    from sim.simulate import SimConfig, prepare

    _, ts = split_params("treesplit", {"min_in_flight": "40"})
    assert ts.in_flight(1, 2) == 40 and ts.in_flight(1, 1) == 5 and ts.in_flight(15, 4) == 75
    assert split_params("treesplit", {"min_in_flight": "1"})[1].in_flight(1, 8) == 5  # the thesis's S_par
    assert split_params("treesplit", {})[1].in_flight(1, 8) == 80  # the default floor
    assert split_params("tds", {})[1].in_flight(1, 2) == 80 and split_params("dfuct", {})[1].in_flight(1, 2) == 40
    g, s = make_game("go", size=9, komi=7.0)
    setup = Setup(g, s, sims=100, seed=1)
    role = lambda algo, M, params: make_role(algo, 0, Layout(M, 0, workers=1), setup, params)  # noqa: E731
    assert role("tds", 2, {"min_in_flight": 40}).target == 40
    assert role("tds", 2, {"min_in_flight": 1}).target == 5
    assert role("treesplit", 1, {"min_in_flight": 40}).target == 5  # nothing hops on one rank
    assert role("root", 2, {}).target == 5
    assert role("dfuct", 2, {"min_in_flight": 20}).target == 20
    with pytest.raises(ConfigError, match="min_in_flight"):
        split_params("root", {"min_in_flight": "40"})
    with pytest.raises(ConfigError, match="min_in_flight"):
        split_params("treesplit", {"min_in_flight": "0"})
    for floor, per_rank in ((1, 7 * 5), (40, 40)):  # oculus: 7 workers per rank, 4 ranks on 2 nodes
        w = prepare(SimConfig(algo="treesplit", nodes=2, seconds=0.01, warmup=0.0, fidelity="statistical",
                              params={"min_in_flight": floor})).world
        assert (w.workers_per_rank, w.M, w.per_rank, w.s_par) == (7, 4, per_rank, 4 * per_rank)
