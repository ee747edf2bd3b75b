"""The Player behind GTP: legal moves for either colour, resigning, cleanup, clocks, configuration."""

import pytest

from engine.player import Player, PlayerConfig
from model.config import from_dict
from model.errors import UserError
from model.go.game import GoGame


def test_genmove_gives_legal_moves_for_both_colours_and_reuses_the_tree():
    p = Player(PlayerConfig(sims=300, seed=1, tt_mb=16))
    p.new_game(9, 7.0)
    game = GoGame(9, 7.0)
    for _ in range(6):
        c = game.to_move
        a = p.genmove(game, c)
        assert a is not None and game.illegal_reason(a, c) is None
        game.play(a, c)
    # out of turn (GTP allows `genmove` for the side not to move)
    a = p.genmove(game, 1 - game.to_move)
    assert game.illegal_reason(a, 1 - game.to_move) is None
    assert p.last_result.sims == 300


def test_resigns_a_hopeless_position_but_not_in_cleanup():
    game = GoGame(9, 7.0)
    white = [r * 9 + c for r in range(9) for c in range(9) if c >= 2 and (r, c) not in ((4, 5), (6, 6), (2, 7))]
    game.set_setup([0, 9], white, to_move=0)
    p = Player(PlayerConfig(sims=400, seed=1, tt_mb=16, resign=0.2, resign_min_visits=50))
    p.new_game(9, 7.0)
    assert p.genmove(game, 0) is None
    a = p.genmove(game, 0, cleanup=True)
    assert a is not None and a != 81 and game.illegal_reason(a, 0) is None


def test_clock_budget_is_respected():
    p = Player(PlayerConfig(seed=1, tt_mb=16))
    p.new_game(9, 7.0)
    p.set_time_settings(60, 0, 0)
    game = GoGame(9, 7.0)
    a = p.genmove(game, 0, time_left=3.0)
    assert game.illegal_reason(a, 0) is None
    assert p.last_result.seconds < 1.5 and p.last_result.sims > 0
    # a fixed budget is capped by the clock too
    q = Player(PlayerConfig(seconds=30.0, seed=1, tt_mb=16))
    q.genmove(game, 0, time_left=2.0)
    assert q.last_result.seconds < 1.5


def test_config_from_flags_and_errors():
    cfg = from_dict(PlayerConfig, {"algo": "tree", "threads": "2", "c": "0.5", "unstable": "false", "sims": 10})
    assert cfg.threads == 2 and cfg.c == 0.5 and cfg.unstable is False
    p = Player(cfg)
    assert p.searcher.name == "tree" and p.searcher.config.threads == 2
    with pytest.raises(UserError, match="nosuch"):
        Player(PlayerConfig(algo="nosuch"))
    with pytest.raises(UserError, match="no_such"):
        from_dict(PlayerConfig, {"no_such": 1})
