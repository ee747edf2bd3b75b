import json
import math

import pytest

from model.stats import elo_diff, elo_interval, match_stats, wilson_interval, win_rate


# Newcombe (1998), "Two-sided confidence intervals for the single proportion", Table I, method 3 (Wilson
# score interval without continuity correction): published values, independent of our formula.
@pytest.mark.parametrize("s, n, lo, hi", [
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0000, 0.1611),
    (1, 29, 0.0061, 0.1718),
])
def test_wilson_matches_published_values(s, n, lo, hi):
    a, b = wilson_interval(s, n)
    assert a == pytest.approx(lo, abs=5e-5) and b == pytest.approx(hi, abs=5e-5)


def test_wilson_is_symmetric_and_bounded():
    a, b = wilson_interval(30, 100)
    c, d = wilson_interval(70, 100)
    assert a == pytest.approx(1 - d) and b == pytest.approx(1 - c)
    assert wilson_interval(0, 5)[0] == 0.0 and wilson_interval(5, 5)[1] == 1.0
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson_interval(6, 5)


def test_interval_narrows_with_more_games():
    w10 = wilson_interval(5, 10)
    w1000 = wilson_interval(500, 1000)
    assert (w1000[1] - w1000[0]) < (w10[1] - w10[0]) / 5


def test_elo_known_values():
    assert elo_diff(0.5) == 0.0
    assert elo_diff(0.75) == pytest.approx(400 * math.log10(3))  # 190.85
    assert elo_diff(10 / 11) == pytest.approx(400.0)
    assert elo_diff(1 / 11) == pytest.approx(-400.0)
    assert elo_diff(1.0) == math.inf and elo_diff(0.0) == -math.inf


def test_elo_interval_maps_wilson_bounds():
    lo, hi = elo_interval(50, 100)
    assert lo == pytest.approx(-hi) and hi == pytest.approx(elo_diff(0.5962), abs=0.5)
    assert elo_interval(0, 10)[0] == -math.inf


def test_draws_count_half_and_summary_is_json_safe():
    st = match_stats(wins=7, losses=2, draws=1)
    assert st.games == 10 and st.win_rate == pytest.approx(0.75) == win_rate(7, 10, draws=1)
    assert st.ci_low < 0.75 < st.ci_high
    assert st.elo_low < st.elo < st.elo_high
    d = match_stats(wins=3, losses=0).as_dict()
    assert d["elo"] is None and d["elo_high"] is None and d["elo_low"] is not None
    json.dumps(d, allow_nan=False)
    assert math.isnan(win_rate(0, 0))


def test_scores_differ_is_the_two_proportion_test():
    from model.stats import scores_differ

    # 17.5 of 20 against 10.5 of 20: the Wilson intervals overlap ([0.67, 0.96] and [0.32, 0.72]), z = 2.4
    assert scores_differ(0.875, 20, 0.525, 20)
    assert wilson_interval(17.5, 20)[0] < wilson_interval(10.5, 20)[1]
    assert not scores_differ(0.55, 20, 0.525, 20)
    assert not scores_differ(1.0, 20, 1.0, 20) and not scores_differ(0.5, 0, 0.9, 20)
    # at 80 games a side the same 10-point gap is still not enough; 35 points at 20 games is
    assert not scores_differ(0.6, 80, 0.5, 80) and scores_differ(0.85, 20, 0.5, 20)
