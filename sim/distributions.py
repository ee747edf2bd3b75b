"""Service-time distributions of a machine profile, and fast batched sampling from them.

A profile names one distribution per work-package kind, as a TOML table:

    { dist = "const", value = 5e-6 }
    { dist = "lognormal", median = 8e-4, sigma = 0.3 }      # median e^mu, shape sigma
    { dist = "empirical", quantiles = [q0, q1, ..., qk] }    # values at probabilities 0, 1/k, ..., 1
    { dist = "empirical", quantiles = [...], probs = [0, ..., 1] }  # or at these probabilities;
                                                             # sampled by linear interpolation

Sampling one value per call from numpy costs a microsecond or more; the simulator draws millions, so each
Sampler draws a block at a time and hands values out of it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from model.errors import ConfigError

KINDS = ("const", "lognormal", "empirical")


@dataclass(frozen=True)
class Distribution:
    """A non-negative distribution of seconds (or bytes). Build with `parse_distribution`."""

    dist: str
    value: float = 0.0
    median: float = 0.0
    sigma: float = 0.0
    quantiles: tuple[float, ...] = field(default_factory=tuple)
    probs: tuple[float, ...] = field(default_factory=tuple)  # empty: equally spaced from 0 to 1

    def _probs(self) -> np.ndarray:
        return np.asarray(self.probs) if self.probs else np.linspace(0.0, 1.0, len(self.quantiles))

    @property
    def mean(self) -> float:
        if self.dist == "const":
            return self.value
        if self.dist == "lognormal":
            return self.median * math.exp(0.5 * self.sigma**2)
        q, p = np.asarray(self.quantiles), self._probs()
        return float(((q[1:] + q[:-1]) / 2 * np.diff(p)).sum())  # mean of the piecewise-linear quantile fn

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if self.dist == "const":
            return np.full(n, self.value)
        if self.dist == "lognormal":
            return self.median * np.exp(self.sigma * rng.standard_normal(n))
        return np.interp(rng.random(n), self._probs(), np.asarray(self.quantiles))

    def scaled(self, factor: float) -> "Distribution":
        """The same shape with every value multiplied by `factor` (e.g. a slower CPU)."""
        return Distribution(self.dist, self.value * factor, self.median * factor, self.sigma,
                            tuple(x * factor for x in self.quantiles), self.probs)

    def to_toml(self) -> dict[str, Any]:
        if self.dist == "const":
            return {"dist": "const", "value": self.value}
        if self.dist == "lognormal":
            return {"dist": "lognormal", "median": self.median, "sigma": self.sigma}
        d = {"dist": "empirical", "quantiles": list(self.quantiles)}
        if self.probs:
            d["probs"] = list(self.probs)
        return d


def parse_distribution(name: str, spec: Any) -> Distribution:
    """A Distribution from a TOML value: a table as above, or a bare number meaning a constant."""
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        spec = {"dist": "const", "value": spec}
    if not isinstance(spec, dict):
        raise ConfigError(f"{name}: expected a number or a table with dist = {'/'.join(KINDS)}, got {spec!r}")
    kind = spec.get("dist")
    if kind not in KINDS:
        raise ConfigError(f"{name}.dist: expected one of {', '.join(KINDS)}, got {kind!r}")
    allowed = {"const": {"value"}, "lognormal": {"median", "sigma"}, "empirical": {"quantiles"}}[kind]
    extra = set(spec) - allowed - {"dist"} - ({"probs"} if kind == "empirical" else set())
    if extra:
        raise ConfigError(f"{name}: unknown setting(s) {sorted(extra)} for dist = {kind!r}")
    for key in sorted(allowed):
        if key not in spec:
            raise ConfigError(f"{name}.{key}: missing (needed by dist = {kind!r})")

    def number(key: str) -> float:
        v = spec[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ConfigError(f"{name}.{key}: expected a finite number, got {v!r}")
        if v < 0:
            raise ConfigError(f"{name}.{key}: must be >= 0, got {v!r}")
        return float(v)

    if kind == "const":
        return Distribution("const", value=number("value"))
    if kind == "lognormal":
        return Distribution("lognormal", median=number("median"), sigma=number("sigma"))
    q = spec["quantiles"]
    if not isinstance(q, list) or len(q) < 2:
        raise ConfigError(f"{name}.quantiles: expected a list of at least 2 numbers")
    try:
        vals = tuple(float(x) for x in q)
    except (TypeError, ValueError):
        raise ConfigError(f"{name}.quantiles: expected numbers, got {q!r}") from None
    if any(v < 0 or not math.isfinite(v) for v in vals):
        raise ConfigError(f"{name}.quantiles: values must be finite and >= 0")
    if any(b < a for a, b in zip(vals, vals[1:])):
        raise ConfigError(f"{name}.quantiles: values must be non-decreasing")
    probs: tuple[float, ...] = ()
    if "probs" in spec:
        pr = spec["probs"]
        try:
            probs = tuple(float(x) for x in pr)
        except (TypeError, ValueError):
            raise ConfigError(f"{name}.probs: expected numbers, got {pr!r}") from None
        if len(probs) != len(vals):
            raise ConfigError(f"{name}.probs: need one probability per quantile ({len(vals)}), got {len(probs)}")
        if probs[0] != 0.0 or probs[-1] != 1.0 or any(b <= a for a, b in zip(probs, probs[1:])):
            raise ConfigError(f"{name}.probs: must rise strictly from 0 to 1")
    return Distribution("empirical", quantiles=vals, probs=probs)


# Quantile levels of a fitted distribution: every 5 %, finer in the tail, so that a few very long
# measurements (a descheduled thread) keep their weight.
FIT_PROBS = tuple(np.round(np.concatenate([np.linspace(0.0, 0.95, 20), [0.98, 0.99, 0.995, 0.999, 1.0]]), 6))


def fit_distribution(samples: np.ndarray) -> Distribution:
    """An empirical distribution of measured values (quantiles at FIT_PROBS) with the samples' mean; const if
    all are equal.

    Interpolating linearly up to the maximum would spread the top 0.1 % evenly up to the one longest sample:
    a single 11 ms outlier among 170,000 updates of 4.5 us doubled the fitted mean. The top quantile is
    instead placed where the interpolated mean equals the measured one (between the 99.9 % quantile and the
    maximum), which keeps the simulated work per package what the trace measured."""
    x = np.asarray(samples, dtype=np.float64)
    x = x[np.isfinite(x) & (x >= 0)]
    if x.size == 0:
        raise ValueError("no samples")
    q = np.quantile(x, FIT_PROBS)
    if q[0] == q[-1]:
        return Distribution("const", value=float(q[0]))
    p = np.asarray(FIT_PROBS)
    body = float(((q[1:-1] + q[:-2]) / 2 * np.diff(p[:-1])).sum())  # every segment but the top one
    dp = p[-1] - p[-2]
    q[-1] = min(max(2 * (x.mean() - body) / dp - q[-2], q[-2]), q[-1])
    return Distribution("empirical", quantiles=tuple(float(v) for v in q), probs=tuple(float(v) for v in p))


class Sampler:
    """Draws from one Distribution a block at a time; `next()` is a list index and a counter. `at(steps)`
    draws for a part of that many tree steps: the draw times k0 + k1 * steps (sim.profile.StepCost's
    coefficients; 1 and 0 when the cost does not depend on steps)."""

    __slots__ = ("dist", "rng", "block", "buf", "i", "const", "k0", "k1")

    def __init__(self, dist: Distribution, rng: np.random.Generator, block: int = 4096,
                 per_step: tuple[float, float] = (1.0, 0.0)):
        self.dist, self.rng, self.block = dist, rng, block
        self.const = dist.value if dist.dist == "const" else None
        self.buf: list[float] = []
        self.i = 0
        self.k0, self.k1 = per_step

    def at(self, steps: int) -> float:
        """A draw for a part that covered `steps` tree steps (< 0: not known, a plain draw)."""
        v = self.next()
        return v * (self.k0 + self.k1 * steps) if self.k1 and steps >= 0 else v

    def next(self) -> float:
        if self.const is not None:
            return self.const
        i = self.i
        if i >= len(self.buf):
            self.buf = self.dist.draw(self.rng, self.block).tolist()
            i = 0
        self.i = i + 1
        return self.buf[i]
