"""experiments/significance.py on synthetic data with known answers: the slope and its interval, the rank-trend
test, Holm's correction, Elo differences and Elo per doubling."""

import math

import numpy as np
import pytest

from experiments.significance import (elo_difference, elo_per_doubling, holm, kendall, slope, t_quantile,
                                      t_two_sided_p)
from model.stats import elo_diff, elo_interval


@pytest.mark.parametrize("df, q975", [(1, 12.706), (2, 4.303), (5, 2.571), (10, 2.228), (30, 2.042)])
def test_t_quantiles_match_the_printed_table(df, q975):
    assert t_quantile(0.975, df) == pytest.approx(q975, abs=5e-4)
    assert t_two_sided_p(q975, df) == pytest.approx(0.05, abs=1e-4)


def test_slope_recovers_a_known_line_and_its_interval_covers_it():
    x = np.arange(10.0)
    est = slope(x, 3.0 * x + 1.0 + np.random.default_rng(1).normal(0, 1.0, 10))
    assert est.low < 3.0 < est.high and est.significant and abs(est.value - 3.0) < 0.3
    # coverage: the 95% interval holds the true slope in about 95% of repeated noisy samples
    rng = np.random.default_rng(2)
    covered = 0
    for _ in range(400):
        e = slope(x, -0.5 * x + rng.normal(0, 2.0, 10))
        covered += e.low <= -0.5 <= e.high
    assert 0.92 <= covered / 400 <= 0.98


def test_flat_series_has_no_significant_trend():
    rng = np.random.default_rng(3)
    x = np.arange(12.0)
    y = 5.0 + rng.normal(0, 1.0, 12)
    assert not slope(x, y).significant and slope(x, y).low < 0 < slope(x, y).high
    assert not kendall(x, y).significant
    # a constant series (the N_dup rows that duplicate only the root): no trend at all
    assert kendall([1, 2, 3, 4], [7, 7, 7, 7]).p == 1.0 and slope([1, 2, 3], [7, 7, 7]).p == 1.0
    assert "not significant" in slope(x, y).text()


def test_kendall_exact_and_approximate_p_values():
    # n = 4, a perfect order: 2 of the 24 orderings are as extreme, two-sided p = 1/12
    k = kendall([1, 2, 3, 4], [10, 20, 30, 40])
    assert k.value == 1.0 and k.p == pytest.approx(2 / 24)
    assert not k.significant  # four points can never show a trend at 5%
    k = kendall(range(8), range(8, 0, -1))
    assert k.value == -1.0 and k.p == pytest.approx(2 / math.factorial(8))
    # above the exact range the normal approximation; a perfect order of 20 points is far below 0.001
    assert kendall(range(20), range(20)).p < 1e-6
    # ties: tau-b of an order with a tied pair
    assert kendall([1, 2, 3, 4], [1, 2, 2, 3]).value == pytest.approx(5 / math.sqrt(6 * 5))


def test_holm_on_the_textbook_example():
    # R: p.adjust(c(0.01, 0.02, 0.03, 0.04, 0.05), "holm") = 0.05 0.08 0.09 0.09 0.09
    assert holm([0.01, 0.02, 0.03, 0.04, 0.05]) == pytest.approx([0.05, 0.08, 0.09, 0.09, 0.09])
    # the order given is kept; adjusted values never exceed 1
    assert holm([0.04, 0.005, 0.5, 0.03]) == pytest.approx([0.09, 0.02, 0.5, 0.09])
    assert holm([0.6, 0.9]) == [1.0, 1.0] and holm([]) == []


def test_elo_difference_of_a_score():
    e = elo_difference(15, 20)
    assert e.value == pytest.approx(elo_diff(0.75)) and (e.low, e.high) == pytest.approx(elo_interval(15, 20))
    assert e.significant  # 15 of 20: likelihood-ratio p = 0.022
    assert e.p == pytest.approx(0.0217, abs=5e-4)
    assert not elo_difference(11, 20).significant and elo_difference(10, 20).p == pytest.approx(1.0)


def test_elo_per_doubling_recovers_a_known_slope():
    d = np.array([1.0, 2.0, 3.0, 4.0])
    games = np.full(4, 400.0)
    # points at their expected values under +60 Elo per doubling: the fit returns 60 exactly
    points = games / (1 + 10 ** (-60 * d / 400))
    e = elo_per_doubling(d, points, games)
    assert e.value == pytest.approx(60, abs=0.5) and e.low < 60 < e.high and e.significant
    # with a free intercept (every point against one fixed opponent at -100 + 60 d)
    d0 = np.array([0.0, 1.0, 2.0, 3.0])
    pts = games / (1 + 10 ** (-(-100 + 60 * d0) / 400))
    f = elo_per_doubling(d0, pts, games, anchored=False)
    assert f.value == pytest.approx(60, abs=0.5) and f.low < 60 < f.high
    # one doubling: the slope is that match's Elo difference
    one = elo_per_doubling([1], [15], [20])
    assert one.value == pytest.approx(elo_diff(0.75), abs=0.5) and one.low > 0
    # flat: not significant; every game lost: unbounded below, bounded above
    assert not elo_per_doubling(d, games / 2, games).significant
    lost = elo_per_doubling([1], [0], [20])
    assert lost.value == -math.inf and lost.low == -math.inf and math.isfinite(lost.high) and lost.high < 0


def test_elo_per_doubling_interval_covers_the_truth_in_repeated_matches():
    rng = np.random.default_rng(5)
    d = np.array([1.0, 2.0, 3.0])
    p = 1 / (1 + 10 ** (-40 * d / 400))
    covered = 0
    for _ in range(100):
        e = elo_per_doubling(d, rng.binomial(100, p), [100] * 3)
        covered += e.low <= 40 <= e.high
    assert covered >= 88
