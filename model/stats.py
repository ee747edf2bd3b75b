"""Match statistics: win rate, its 95% Wilson score interval, and the Elo difference it implies.

One definition each (docs/ARCHITECTURE.md, "Metrics"): a draw counts as half a win; the Elo difference of a win
rate p is 400 * log10(p / (1 - p)), and its interval is the Wilson interval mapped through that same
(monotone) function. Wilson rather than the normal approximation because match win rates are often
near 0 or 1 with few games, where the normal interval leaves [0, 1] or collapses to a point.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

Z95 = 1.959963984540054  # two-sided 95% quantile of the standard normal


def win_rate(wins: float, games: int, draws: int = 0) -> float:
    """Share of points scored: (wins + draws / 2) / games; NaN when no game was played."""
    if games <= 0:
        return math.nan
    return (wins + 0.5 * draws) / games


def wilson_interval(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion; (0, 1) when n is 0 (nothing is known)."""
    if n <= 0:
        return (0.0, 1.0)
    if not 0 <= successes <= n:
        raise ValueError(f"successes {successes} not in [0, {n}]")
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    # Clamp rounding noise so that p = 0 gives exactly 0 (and p = 1 exactly 1).
    return (max(0.0, centre - half), min(1.0, centre + half))


def scores_p_value(p1: float, n1: int, p2: float, n2: int) -> float:
    """Two-sided p-value of the pooled two-proportion z-test that two match scores (shares of points over n1
    and n2 games) are the same; 1.0 when it cannot tell (no games, or both at 0 or 1)."""
    if n1 <= 0 or n2 <= 0:
        return 1.0
    pooled = (p1 * n1 + p2 * n2) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    return math.erfc(abs(p1 - p2) / se / math.sqrt(2)) if se > 0 else 1.0


def scores_differ(p1: float, n1: int, p2: float, n2: int, z: float = Z95) -> bool:
    """Whether two match scores differ at the level z gives, by the pooled two-proportion z-test. Two 95%
    intervals that overlap can still differ: the test is the one to ask."""
    return scores_p_value(p1, n1, p2, n2) < math.erfc(z / math.sqrt(2))


def elo_diff(p: float) -> float:
    """Elo difference implied by win rate p: 400 * log10(p / (1 - p)); +-inf at p = 1 / 0."""
    if math.isnan(p):
        return math.nan
    if p <= 0.0:
        return -math.inf
    if p >= 1.0:
        return math.inf
    return 400.0 * math.log10(p / (1.0 - p))


def elo_interval(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson interval of the win rate mapped to Elo differences."""
    lo, hi = wilson_interval(successes, n, z)
    return (elo_diff(lo), elo_diff(hi))


@dataclass(frozen=True)
class MatchStats:
    games: int
    wins: int
    losses: int
    draws: int
    win_rate: float
    ci_low: float
    ci_high: float
    elo: float
    elo_low: float
    elo_high: float

    def as_dict(self) -> dict:
        """Plain dict for JSON; infinities become None (JSON has no infinity)."""
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in asdict(self).items()}


def match_stats(wins: int, losses: int, draws: int = 0, z: float = Z95) -> MatchStats:
    """Summary of a match from one side's view."""
    n = wins + losses + draws
    points = wins + 0.5 * draws
    p = win_rate(wins, n, draws)
    lo, hi = wilson_interval(points, n, z)
    return MatchStats(games=n, wins=wins, losses=losses, draws=draws, win_rate=p, ci_low=lo, ci_high=hi,
                      elo=elo_diff(p), elo_low=elo_diff(lo), elo_high=elo_diff(hi))
