"""Equal time means equal time: each side's wall time per move in a match, from asking for the move to getting
it, against the budget per move it was given. A side whose mean time per move exceeds its budget by more than
TOLERANCE is flagged wherever a match is reported (`treesplit match`, the experiments' tables and words).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

TOLERANCE = 0.05  # a side over its budget by more than this share, on average, played with more time


@dataclass
class MoveTimes:
    """One side's moves: how many, their total and their longest wall time (seconds)."""

    moves: int = 0
    total: float = 0.0
    longest: float = 0.0

    def add(self, seconds: float) -> None:
        self.moves += 1
        self.total += seconds
        self.longest = max(self.longest, seconds)

    def merge(self, other: MoveTimes) -> MoveTimes:
        return MoveTimes(self.moves + other.moves, self.total + other.total, max(self.longest, other.longest))

    @property
    def mean(self) -> float | None:
        return self.total / self.moves if self.moves else None


def over_budget(mean: float | None, budget: float | None, tolerance: float = TOLERANCE) -> bool:
    """Whether a mean time per move exceeds its budget (seconds; None or 0: none known) by more than
    `tolerance`."""
    if mean is None or not budget or (isinstance(mean, float) and math.isnan(mean)):
        return False
    return mean > budget * (1 + tolerance)


def summary(t: MoveTimes, budget: float | None) -> dict:
    """One side's times as plain JSON: moves, mean_s, max_s, budget_s (None: not known) and over_budget."""
    return {"moves": t.moves, "mean_s": None if t.mean is None else round(t.mean, 4),
            "max_s": round(t.longest, 4) if t.moves else None, "budget_s": budget or None,
            "over_budget": over_budget(t.mean, budget)}


def flag_text(who: str, mean: float | None, budget: float | None) -> str:
    """'' when `who` kept to its budget, else one sentence saying by how much it did not."""
    if not over_budget(mean, budget):
        return ""
    return (f"{who} used {mean:.3f} s a move on average against a budget of {budget:g} s "
            f"(+{mean / budget - 1:.0%}, more than the {TOLERANCE:.0%} allowed): the sides did not play at equal time.")
