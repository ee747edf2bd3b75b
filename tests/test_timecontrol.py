"""Time management: the formulas of Huang 2011, clock allocation, and the think-longer heuristics."""

import pytest

from engine.timecontrol import (Budget, ClockState, RootSummary, ThinkPlan, TimeConfig, allocate, basic_time,
                                enhanced_time, summarize)
from model.errors import ConfigError


class Kid:
    def __init__(self, action, visits, value):
        self.action, self.visits, self.value = action, visits, value


def test_formulas():
    assert basic_time(800, 80) == 10
    # enhanced: Remaining / (C + max(MaxPly - Ply, 0))
    assert enhanced_time(1200, 0, 80, 160) == pytest.approx(1200 / 240)
    assert enhanced_time(1200, 2, 80, 160) == pytest.approx(1200 / 238)
    assert enhanced_time(1200, 160, 80, 160) == enhanced_time(1200, 400, 80, 160) == pytest.approx(1200 / 80)
    assert enhanced_time(-5, 0, 80, 160) == 0


def test_defaults_scale_with_the_board():
    cfg = TimeConfig()
    assert cfg.c_for(361) == 80 and cfg.max_ply_for(361) == 160
    assert cfg.c_for(81) == pytest.approx(80 * 81 / 361) and cfg.max_ply_for(81) == 36
    assert TimeConfig(formula_c=50, max_ply=10).c_for(81) == 50


def test_sudden_death_allocation():
    cfg = TimeConfig(safety=0.0)
    a = allocate(cfg, ClockState(remaining=600), ply=10, points=361)
    assert a.budget.seconds == pytest.approx(600 / (80 + 150)) and a.budget.sims is None
    assert a.hard_limit == pytest.approx(300)
    basic = allocate(TimeConfig(safety=0.0, enhanced=False), ClockState(remaining=600), ply=10, points=361)
    assert basic.budget.seconds == pytest.approx(600 / 80)
    # the safety margin is kept back, and a nearly empty clock still gives the floor
    assert allocate(TimeConfig(safety=1.0), ClockState(remaining=601), 10, 361).budget.seconds == \
        pytest.approx(600 / 230)
    assert allocate(TimeConfig(), ClockState(remaining=0.01), 10, 361).budget.seconds == TimeConfig().min_seconds


def test_byo_yomi_allocation():
    cfg = TimeConfig(safety=0.0)
    # in byo-yomi: the period's time shared by its stones
    a = allocate(cfg, ClockState(remaining=30, stones=5, byo_time=30, byo_stones=5), ply=100, points=361)
    assert a.budget.seconds == pytest.approx(6)
    assert a.hard_limit == pytest.approx(30 - 4 * 6 * 0.5)
    last = allocate(cfg, ClockState(remaining=5, stones=1, byo_time=30, byo_stones=5), ply=100, points=361)
    assert last.budget.seconds == pytest.approx(5) and last.hard_limit == pytest.approx(5)
    # in main time with byo-yomi to come: at least one stone's share
    m = allocate(cfg, ClockState(remaining=10, byo_time=30, byo_stones=5), ply=10, points=361)
    assert m.budget.seconds == pytest.approx(6)


def test_summarize_ignores_thin_children():
    kids = [Kid(1, 100, 0.5), Kid(2, 40, 0.6), Kid(3, 2, 0.99)]
    s = summarize(kids, 0.55, min_share=0.1)
    assert s == RootSummary(0.55, 1, 2)
    assert summarize([], 0.5, 0.1) is None


def test_think_plan_behind_then_unstable_each_once():
    base = Budget(seconds=4.0)
    plan = ThinkPlan(TimeConfig(), base)
    behind_unstable = RootSummary(mean=0.3, most_visited=1, best_valued=2)
    assert plan.next(behind_unstable) == Budget(seconds=4.0)           # P x T with P = 1
    assert plan.next(behind_unstable) == Budget(seconds=2.0)           # T / 2
    assert plan.next(behind_unstable) is None
    assert plan.extensions == ["behind", "unstable"]


def test_think_plan_switches_and_stable_lead():
    base = Budget(sims=1000)
    stable = RootSummary(mean=0.6, most_visited=1, best_valued=1)
    assert ThinkPlan(TimeConfig(), base).next(stable) is None
    off = TimeConfig(behind=False, unstable=False)
    assert ThinkPlan(off, base).next(RootSummary(0.1, 1, 2)) is None
    only_unstable = ThinkPlan(TimeConfig(behind=False), base)
    assert only_unstable.next(RootSummary(0.1, 1, 2)) == Budget(sims=500)
    assert only_unstable.extensions == ["unstable"]


def test_think_plan_respects_the_hard_limit():
    plan = ThinkPlan(TimeConfig(), Budget(seconds=4.0), hard_limit=6.0)
    assert plan.next(RootSummary(0.1, 1, 2), elapsed=4.0) == Budget(seconds=2.0)
    assert plan.next(RootSummary(0.1, 1, 2), elapsed=6.0) is None


def test_validation():
    with pytest.raises(ConfigError, match="behind_threshold"):
        TimeConfig(behind_threshold=2).validate()
    with pytest.raises(ConfigError, match="max_share"):
        TimeConfig(max_share=0).validate()
