"""The tests behind the experiments' words: a claim about a trend or a difference is one of these, with its
interval or p-value, and a report says "not significant" where it is not.

  - slope(x, y):              ordinary least squares slope, its t interval (n - 2 degrees of freedom) and p;
  - kendall(x, y):            Kendall's tau-b across all points and its two-sided p (exact permutation test up to
                              EXACT_MAX points, else the normal approximation with the ties' variance);
  - holm(ps):                 Holm's step-down adjustment of p-values for several comparisons at once;
  - elo_difference(points, games): the Elo difference of a match score, its 95% interval (model/stats.py: the
                              Wilson interval mapped to Elo) and the likelihood-ratio p against an even match;
  - elo_per_doubling(d, points, games): the slope s of P(win) = 1 / (1 + 10^(-(a + s d) / 400)) over all games at
                              once (d: doublings of ranks, threads, S_par ...), by maximum likelihood, with its
                              profile-likelihood interval and the likelihood-ratio p of s = 0. anchored=True fixes
                              a = 0 (self-play against the configuration at d = 0).
Only numpy and the standard library: Student's t comes from the regularised incomplete beta function.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from model.stats import elo_diff, elo_interval, win_rate

ALPHA = 0.05
EXACT_MAX = 8          # Kendall: every permutation up to this many points (8! = 40320)
ELO_SCALE = math.log(10) / 400  # d log-odds / d Elo
_BOUND = 4000.0        # Elo (per doubling): a fit that runs past this is unbounded (every game went one way)


@dataclass(frozen=True)
class Estimate:
    """A fitted value with its two-sided interval at `level` and the p-value of "it is zero" (or even)."""

    value: float
    low: float
    high: float
    p: float
    n: int                 # points (slope, kendall) or games (Elo)
    level: float = 0.95

    @property
    def significant(self) -> bool:
        return self.p < 1 - self.level

    def text(self, unit: str = "", fmt: str = "+.0f", p: float | None = None) -> str:
        """'+120 Elo per doubling (95% [+40, +200], p = 0.004)', 'not significant' added where it is not. `p`:
        the p-value to show and judge by instead of the estimate's own (one adjusted for several comparisons)."""
        def f(v: float) -> str:
            return "n/a" if math.isnan(v) else format(v, fmt) if math.isfinite(v) else ("+inf" if v > 0 else "-inf")
        p = self.p if p is None else p
        u = f" {unit}" if unit else ""
        tail = "" if p < 1 - self.level else ", not significant"
        edge = "" if math.isfinite(self.value) or math.isnan(self.value) else "unbounded: every game of a point went one way; "
        return f"{f(self.value)}{u} ({edge}{self.level:.0%} [{f(self.low)}, {f(self.high)}], {p_text(p)}{tail})"


def p_text(p: float) -> str:
    """'p = 0.022', 'p < 0.001' or 'p n/a'."""
    return "p n/a" if not math.isfinite(p) else ("p < 0.001" if p < 0.001 else f"p = {p:.2g}")


# -- Student's t -----------------------------------------------------------------------------------------------

def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        for aa in (m * (b - m) * x / ((a - 1 + 2 * m) * (a + 2 * m)),
                   -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1 + 2 * m))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with df degrees of freedom."""
    if not math.isfinite(t):
        return 0.0
    return betainc(df / 2, 0.5, df / (df + t * t))


@functools.lru_cache(maxsize=256)
def t_quantile(q: float, df: float) -> float:
    """The q-quantile (q > 0.5) of Student's t with df degrees of freedom."""
    target = 2 * (1 - q)
    lo, hi = 0.0, 1.0
    while t_two_sided_p(hi, df) > target:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_two_sided_p(mid, df) > target else (lo, mid)
    return (lo + hi) / 2


# -- trends ----------------------------------------------------------------------------------------------------

def slope(x, y, level: float = 0.95) -> Estimate:
    """The OLS slope of y on x with its t interval and the p-value of a zero slope (needs 3 points or more
    for an interval; fewer give an unbounded one and p = NaN)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    n = len(x)
    if n < 2 or np.ptp(x) == 0:
        return Estimate(math.nan, -math.inf, math.inf, math.nan, n, level)
    xc = x - x.mean()
    b = float((xc * (y - y.mean())).sum() / (xc * xc).sum())
    if n < 3:
        return Estimate(b, -math.inf, math.inf, math.nan, n, level)
    resid = y - y.mean() - b * xc
    se = math.sqrt(float((resid * resid).sum()) / (n - 2) / float((xc * xc).sum()))
    if se == 0:  # an exact line: no noise to test against
        return Estimate(b, b, b, 0.0 if b != 0 else 1.0, n, level)
    half = t_quantile(1 - (1 - level) / 2, n - 2) * se
    return Estimate(b, b - half, b + half, t_two_sided_p(b / se, n - 2), n, level)


def _pair_signs(v: np.ndarray) -> np.ndarray:
    i, j = np.triu_indices(v.shape[-1], 1)
    return np.sign(v[..., j] - v[..., i])


def _ties(v: np.ndarray) -> np.ndarray:
    return np.unique(v, return_counts=True)[1].astype(float)


def kendall(x, y) -> Estimate:
    """Kendall's tau-b of y against x across all points, with the two-sided p of "no monotone trend". The
    interval is not computed (low, high = -1, 1)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    n = len(x)
    if n < 2:
        return Estimate(math.nan, -1.0, 1.0, math.nan, n)
    sx = _pair_signs(x)
    s = float(sx @ _pair_signs(y))
    pairs = n * (n - 1) / 2
    tx, ty = _ties(x), _ties(y)
    denom = math.sqrt((pairs - (tx * (tx - 1) / 2).sum()) * (pairs - (ty * (ty - 1) / 2).sum()))
    if denom == 0:  # one of them is constant: no order to test
        return Estimate(0.0, -1.0, 1.0, 1.0, n)
    tau = s / denom
    if n <= EXACT_MAX:
        perms = np.array(list(itertools.permutations(range(n))))
        null = _pair_signs(y[perms]) @ sx
        p = float(np.mean(np.abs(null) >= abs(s) - 1e-9))
    else:
        def v0(t):
            return (t * (t - 1) * (2 * t + 5)).sum()
        var = ((n * (n - 1) * (2 * n + 5) - v0(tx) - v0(ty)) / 18
               + (tx * (tx - 1) * (tx - 2)).sum() * (ty * (ty - 1) * (ty - 2)).sum() / (9 * n * (n - 1) * (n - 2))
               + (tx * (tx - 1)).sum() * (ty * (ty - 1)).sum() / (2 * n * (n - 1)))
        p = math.erfc(abs(s) / math.sqrt(var) / math.sqrt(2)) if var > 0 else 1.0
    return Estimate(tau, -1.0, 1.0, p, n)


def holm(ps) -> list[float]:
    """Holm's adjusted p-values, in the order given: the k-th smallest of m is multiplied by m - k + 1, and
    an adjusted value is never below that of a smaller raw p (a claim holds at level alpha where its adjusted
    p is below alpha, for all m claims together)."""
    ps = [float(p) for p in ps]
    m = len(ps)
    adjusted = [1.0] * m
    running = 0.0
    for k, i in enumerate(sorted(range(m), key=lambda i: ps[i])):
        running = max(running, min(1.0, (m - k) * ps[i]))
        adjusted[i] = running
    return adjusted


# -- Elo -------------------------------------------------------------------------------------------------------

def _loglik(x: np.ndarray, w: np.ndarray, n: np.ndarray, a: float, s: float) -> float:
    z = ELO_SCALE * (a + s * x)
    # log p = -log(1 + e^-z), log(1 - p) = -log(1 + e^z), written to stay finite for large |z|
    return float(-(w * np.logaddexp(0, -z) + (n - w) * np.logaddexp(0, z)).sum())


def _root(f, lo: float, hi: float) -> float:
    """The root of the monotone function f in [lo, hi], by bisection; where f keeps one sign there, the end
    nearer to a root (the fit or bound lies beyond it)."""
    f_lo, f_hi = f(lo), f(hi)
    if f_lo == 0 or f_hi == 0 or (f_lo > 0) == (f_hi > 0):
        return lo if abs(f_lo) <= abs(f_hi) else hi
    for _ in range(60):  # 8000 / 2^60: far below an Elo
        mid = (lo + hi) / 2
        f_mid = f(mid)
        lo, f_lo, hi = (mid, f_mid, hi) if (f_mid > 0) == (f_lo > 0) else (lo, f_lo, mid)
    return (lo + hi) / 2


def _expected(x, a, s):
    return 1 / (1 + np.exp(-ELO_SCALE * (a + s * x)))


def elo_per_doubling(doublings, points, games, anchored: bool = True, level: float = 0.95) -> Estimate:
    """Elo per doubling: the slope s of P(win at d doublings) = 1 / (1 + 10^(-(a + s d) / 400)), fitted by
    maximum likelihood over every game (points: wins + draws / 2 at each d); its interval is where the profile
    log-likelihood is within chi2_1(level) / 2 of the best, and p is the likelihood-ratio test of s = 0.
    anchored=True: a = 0 (each d plays the configuration at d = 0, which is 0 Elo by definition); else a is
    fitted too (all points against one fixed opponent). A bound at +-inf: every game went one way."""
    x, w, n = (np.asarray(v, float) for v in (doublings, points, games))
    keep = n > 0
    x, w, n = x[keep], w[keep], n[keep]
    if len(x) == 0 or (not anchored and np.ptp(x) == 0):
        return Estimate(math.nan, -math.inf, math.inf, math.nan, int(n.sum()), level)

    def best_a(s: float) -> float:
        if anchored:
            return 0.0
        return _root(lambda a: float((w - n * _expected(x, a, s)).sum()), -_BOUND * 4, _BOUND * 4)

    def profile(s: float) -> float:
        return _loglik(x, w, n, best_a(s), s)

    s_hat = _root(lambda s: float((x * (w - n * _expected(x, best_a(s), s))).sum()), -_BOUND, _BOUND)
    top = profile(s_hat)
    cut = NormalDist().inv_cdf(1 - (1 - level) / 2) ** 2 / 2
    low = _root(lambda s: cut - (top - profile(s)), -_BOUND, s_hat)
    high = _root(lambda s: (top - profile(s)) - cut, s_hat, _BOUND)
    stat = max(0.0, 2 * (top - profile(0.0)))
    p = math.erfc(math.sqrt(stat / 2))

    def unbounded(v: float) -> float:
        return math.copysign(math.inf, v) if abs(v) >= _BOUND * (1 - 1e-9) else v
    return Estimate(unbounded(s_hat), unbounded(low), unbounded(high), p, int(n.sum()), level)


def elo_difference(points: float, games: int) -> Estimate:
    """The Elo difference of scoring `points` (wins + draws / 2) in `games`, its 95% interval (Wilson, mapped
    to Elo: model/stats.py) and the likelihood-ratio p of an even match."""

    p_hat = win_rate(points, games)
    lo, hi = elo_interval(points, games)
    if games <= 0:
        return Estimate(math.nan, lo, hi, math.nan, 0)
    stat = 0.0
    for k in (points, games - points):
        if k > 0:
            stat += 2 * k * math.log(k / (games / 2))
    return Estimate(elo_diff(p_hat), lo, hi, math.erfc(math.sqrt(max(stat, 0.0) / 2)), int(games))
