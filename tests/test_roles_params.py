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
