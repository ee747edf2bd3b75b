"""The `inflight` algorithm (S_par simulations in flight on one core) and the Player's algo_params."""

import argparse

import pytest

from engine import algorithms
from engine.player import Player, PlayerConfig
from engine.sequential import Position
from engine.timecontrol import Budget
from model.config import from_dict
from model.errors import ConfigError
from model.go import board


def _search(s_par, sims=600, seed=3):
    g = board.make_params(9, 7.0, "light")
    searcher = algorithms.make_searcher("inflight", algorithms.make_config("inflight", {"s_par": s_par}, seed=seed))
    return searcher, searcher.search(Position.initial(g, board.new_state(g)), Budget(sims=sims))


def _visits(r):
    return sorted((c.action, c.visits) for c in r.children)


def test_inflight_runs_exactly_the_budget_and_is_deterministic():
    s1, a = _search(16)
    _, b = _search(16)
    assert a.sims == a.root_visits == 600 and a.playouts > 0
    assert _visits(a) == _visits(b) and a.action == b.action  # the loopback's event order is seeded


def test_more_simulations_in_flight_change_the_tree():
    _, seq = _search(1)
    _, par = _search(64)
    assert seq.root_visits == par.root_visits == 600
    assert _visits(seq) != _visits(par)
    # virtual loss spreads the first simulations: S_par in flight visit more distinct root children
    assert sum(v > 0 for _, v in _visits(par)) >= sum(v > 0 for _, v in _visits(seq))


def test_inflight_keeps_its_tree_for_the_next_search_and_obeys_time():
    searcher, first = _search(8, sims=300)
    g = board.make_params(9, 7.0, "light")
    again = searcher.search(Position.initial(g, board.new_state(g)), Budget(sims=300))
    assert again.root_visits == 600  # the same position: its node kept its visits
    timed = searcher.search(Position.initial(g, board.new_state(g)), Budget(seconds=0.2))
    assert timed.sims >= 64 and timed.seconds < 2.0


def test_player_passes_algorithm_parameters():
    p = Player(PlayerConfig(algo="inflight", sims=50, algo_params={"s_par": 8}))
    assert p.searcher.config.s_par == 8
    with pytest.raises(ConfigError, match="bogus"):
        PlayerConfig(algo="inflight", algo_params={"bogus": 1}).validate()
    with pytest.raises(ConfigError, match="s_par"):
        PlayerConfig(algo="inflight", algo_params={"s_par": 0}).validate()


def test_gtp_flags_route_algorithm_settings_to_algo_params():
    from engine.commands.gtp import player_config

    args = argparse.Namespace(algo="inflight", sims=100, seconds=None, threads=None, ranks=None, seed=2,
                              param=["s_par=4", "c=0.5"])
    cfg = player_config(args)
    assert cfg.algo_params == {"s_par": "4"} and cfg.c == 0.5
    assert Player(cfg).searcher.config.s_par == 4
    args.param = ["nonsense=1"]
    with pytest.raises(ConfigError, match="nonsense"):
        player_config(args)


def test_player_config_from_a_table():
    cfg = from_dict(PlayerConfig, {"algo": "inflight", "algo_params": {"s_par": 2}})
    assert cfg.algo_config().s_par == 2
