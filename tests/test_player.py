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


class _Overshooting:
    """A searcher stand-in that takes `extra` seconds beyond the time it is given (a search that stops late),
    and records what it was given."""

    keeps_root_visits = True

    def __init__(self, inner, extra):
        self.inner, self.extra, self.given = inner, extra, []

    def search(self, pos, budget, plan=None):
        import time

        self.given.append(budget.seconds)
        t0 = time.perf_counter()
        r = self.inner.search(pos, type(budget)(sims=50), plan)
        time.sleep(max(0.0, budget.seconds + self.extra - (time.perf_counter() - t0)))
        return r

    def reset(self):
        self.inner.reset()

    def close(self):
        self.inner.close()


def test_a_fixed_time_per_move_subtracts_the_measured_overhead():
    import time

    from engine.timecontrol import OverheadEstimate

    est = OverheadEstimate(window=4)
    est.note(0.1, 1.5)  # the first move pays for start-up: not counted
    assert est.value == 0.0 and est.search_seconds(0.1) == 0.1
    for elapsed in (0.13, 0.12, 0.14, 0.13, 0.90):  # median of the last 4: robust to one slow move
        est.note(0.1, elapsed)
    assert est.value == pytest.approx(0.035) and est.search_seconds(0.1) == pytest.approx(0.065)
    assert est.search_seconds(0.01) == pytest.approx(0.0025)  # never below a quarter of the budget

    budget, extra = 0.12, 0.04
    p = Player(PlayerConfig(seconds=budget, seed=1, tt_mb=16))
    p.searcher = _Overshooting(p.searcher, extra)
    p.new_game(9, 7.0)
    game, took = GoGame(9, 7.0), []
    for _ in range(7):
        t0 = time.perf_counter()
        a = p.genmove(game, game.to_move)
        took.append(time.perf_counter() - t0)
        game.play(a, game.to_move)
    assert p.searcher.given[0] == budget and p.searcher.given[1] == budget  # nothing measured yet
    assert all(g == pytest.approx(budget - extra, abs=0.012) for g in p.searcher.given[3:])
    # the moves now take the budget (they took budget + extra before)
    assert took[1] > budget + 0.8 * extra and abs(sum(took[3:]) / 4 - budget) < 0.3 * extra
    # switched off, the player searches the whole budget
    q = Player(PlayerConfig(seconds=budget, seed=1, tt_mb=16, subtract_overhead=False))
    q.searcher = _Overshooting(q.searcher, extra)
    for _ in range(3):
        q.genmove(game, game.to_move)
    assert q.searcher.given == [budget] * 3
