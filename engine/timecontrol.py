"""How long to think for one move: fixed budgets, game clocks, and the root-statistics heuristics.

Pure functions and small classes, no clock of their own (the searcher passes times in), so every rule is
testable without sleeping. From Huang 2011, chapter 5:
  - basic formula:     ThinkingTime = Remaining / C
  - enhanced formula:  ThinkingTime = Remaining / (C + max(MaxPly - Ply, 0))   (5.4; C = 80, MaxPly = 160
    for 19x19; scaled by board points / 361 for other sizes unless set)
  - unstable evaluation: when the most visited root move is not the best valued one, think another
    ThinkingTime / 2 (5.5.2);
  - think longer when behind: when the root's mean reward is below T (0.4), think another P x ThinkingTime
    (5.5.3, P = 1). Algorithm 1 applies "behind" first, then "unstable", each at most once per move.
Clocks follow GTP: main time, then Canadian byo-yomi (`byo_stones` stones in `byo_time` seconds).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from model.config import check

FULL_BOARD_POINTS = 361


@dataclass(frozen=True)
class Budget:
    """What one search (or one extension of it) may spend: simulations, seconds, or both (first hit stops)."""

    sims: int | None = None
    seconds: float | None = None

    def scaled(self, factor: float) -> Budget:
        return Budget(None if self.sims is None else max(1, int(round(self.sims * factor))),
                      None if self.seconds is None else self.seconds * factor)

    def capped(self, seconds: float | None) -> Budget:
        if seconds is None or self.seconds is None:
            return self
        return Budget(self.sims, min(self.seconds, seconds))


@dataclass
class TimeConfig:
    """Time management switches (all settable with --param)."""

    formula_c: float | None = None      # C of the formulas; None: 80 x points / 361
    max_ply: int | None = None           # MaxPly of the enhanced formula; None: 160 x points / 361
    enhanced: bool = True                # enhanced formula (else the basic one)
    unstable: bool = True                # unstable-evaluation heuristic
    unstable_factor: float = 0.5         # extra time as a share of the thinking time
    unstable_min_share: float = 0.1      # children below this share of the top visits are not "best valued"
    behind: bool = True                  # think-longer-when-behind heuristic
    behind_threshold: float = 0.4        # T: root mean reward below which we are behind
    behind_factor: float = 1.0           # P
    safety: float = 0.3                  # seconds kept back per move for lag and overhead
    max_share: float = 0.5               # never spend more than this share of the remaining main time
    min_seconds: float = 0.05            # floor of any timed search
    subtract_overhead: bool = True       # a fixed --seconds per move searches for that less the measured overhead

    def validate(self) -> None:
        check(self.formula_c is None or self.formula_c > 0, "formula_c", "must be > 0")
        check(self.max_ply is None or self.max_ply >= 0, "max_ply", "must be >= 0")
        check(self.unstable_factor >= 0, "unstable_factor", "must be >= 0")
        check(0 <= self.unstable_min_share <= 1, "unstable_min_share", "must be in [0, 1]")
        check(0 <= self.behind_threshold <= 1, "behind_threshold", "must be in [0, 1]")
        check(self.behind_factor >= 0, "behind_factor", "must be >= 0")
        check(self.safety >= 0, "safety", "must be >= 0")
        check(0 < self.max_share <= 1, "max_share", "must be in (0, 1]")
        check(self.min_seconds > 0, "min_seconds", "must be > 0")

    def c_for(self, points: int) -> float:
        return self.formula_c if self.formula_c is not None else 80.0 * points / FULL_BOARD_POINTS

    def max_ply_for(self, points: int) -> int:
        return self.max_ply if self.max_ply is not None else int(round(160 * points / FULL_BOARD_POINTS))


def basic_time(remaining: float, c: float) -> float:
    return max(remaining, 0.0) / c


def enhanced_time(remaining: float, ply: int, c: float, max_ply: int) -> float:
    """Remaining / (C + max(MaxPly - Ply, 0)), Ply counted from 0 (Huang 2011, 5.4)."""
    return max(remaining, 0.0) / (c + max(max_ply - ply, 0))


@dataclass(frozen=True)
class ClockState:
    """Our side of the game clock as GTP tells it: `remaining` seconds in the current period, and
    `stones` to play in it (0: main time). byo_time / byo_stones describe the byo-yomi periods."""

    remaining: float
    stones: int = 0
    byo_time: float = 0.0
    byo_stones: int = 0


@dataclass(frozen=True)
class Allocation:
    """The main budget of a move, and the hard ceiling (seconds) that extensions may not pass."""

    budget: Budget
    hard_limit: float | None


def allocate(cfg: TimeConfig, clock: ClockState, ply: int, points: int) -> Allocation:
    """Thinking time for the move at `ply` (0-based, both colours counted) on a board of `points` points."""
    c, max_ply = cfg.c_for(points), cfg.max_ply_for(points)
    if clock.stones > 0:  # in byo-yomi: share the period's time among its stones
        per_stone = max(clock.remaining - cfg.safety, 0.0) / clock.stones
        t = max(per_stone, cfg.min_seconds)
        # extensions may borrow from the later stones of the period, but leave them half their share
        hard = max(clock.remaining - cfg.safety - (clock.stones - 1) * per_stone * 0.5, cfg.min_seconds)
        return Allocation(Budget(seconds=min(t, hard)), hard)
    main = max(clock.remaining - cfg.safety, 0.0)
    t = enhanced_time(main, ply, c, max_ply) if cfg.enhanced else basic_time(main, c)
    hard = main * cfg.max_share
    if clock.byo_stones > 0 and clock.byo_time > 0:
        # byo-yomi follows: a move may always use one stone's share of a period
        per_stone = max(clock.byo_time - cfg.safety, 0.0) / clock.byo_stones
        t = max(t, per_stone)
        hard = max(hard, per_stone + main)
    t = max(min(t, hard), cfg.min_seconds)
    return Allocation(Budget(seconds=t), max(hard, cfg.min_seconds))


@dataclass(frozen=True)
class RootSummary:
    """What the heuristics read from the root after a search step."""

    mean: float              # root mean reward for the player to move
    most_visited: int        # action
    best_valued: int         # action with the best mean among well-visited children


def summarize(children, mean: float, min_share: float) -> RootSummary | None:
    """RootSummary from root children (objects with action, visits, value), most visited first."""
    kids = [k for k in children if k.visits > 0]
    if not kids:
        return None
    top = max(kids, key=lambda k: k.visits)
    floor = max(1, top.visits * min_share)
    best = max((k for k in kids if k.visits >= floor), key=lambda k: k.value)
    return RootSummary(mean=mean, most_visited=top.action, best_valued=best.action)


class ThinkPlan:
    """Algorithm 1 of Huang 2011 for one move: after the main budget, maybe think P x T more when behind,
    then T / 2 more when the evaluation is unstable. `next(summary)` gives the next extension or None."""

    def __init__(self, cfg: TimeConfig, base: Budget, hard_limit: float | None = None):
        self.cfg, self.base, self.hard_limit = cfg, base, hard_limit
        self.stage = 0
        self.used_seconds = 0.0
        self.extensions: list[str] = []

    def next(self, summary: RootSummary | None, elapsed: float = 0.0) -> Budget | None:
        """The next extension after `elapsed` seconds spent on this move so far, or None: stop."""
        if summary is None:
            return None
        left = None if self.hard_limit is None else self.hard_limit - elapsed
        if left is not None and left <= self.cfg.min_seconds:
            return None
        while self.stage < 2:
            stage = self.stage
            self.stage += 1
            if stage == 0 and self.cfg.behind and summary.mean < self.cfg.behind_threshold \
                    and self.cfg.behind_factor > 0:
                self.extensions.append("behind")
                return self.base.scaled(self.cfg.behind_factor).capped(left)
            if stage == 1 and self.cfg.unstable and summary.most_visited != summary.best_valued \
                    and self.cfg.unstable_factor > 0:
                self.extensions.append("unstable")
                return self.base.scaled(self.cfg.unstable_factor).capped(left)
        return None


class OverheadEstimate:
    """What a move costs beyond its search's own time budget (stopping the search, collecting the ranks'
    answers, choosing the move), as the median of the last `window` moves' elapsed-minus-requested seconds.
    A player given B seconds a move searches for B less this, so that the measured move takes B. The first
    move is not counted: it pays for starting the searcher (MPI ranks, compiled kernels)."""

    MIN_SHARE = 0.25  # never search less than this share of the budget

    def __init__(self, window: int = 8):
        self.window = window
        self.samples: list[float] = []
        self.seen = 0

    def note(self, requested: float, elapsed: float) -> None:
        self.seen += 1
        if self.seen > 1:
            self.samples = (self.samples + [max(0.0, elapsed - requested)])[-self.window:]

    @property
    def value(self) -> float:
        if not self.samples:
            return 0.0
        s = sorted(self.samples)
        return 0.5 * (s[(len(s) - 1) // 2] + s[len(s) // 2])

    def search_seconds(self, budget: float) -> float:
        return max(budget - self.value, budget * self.MIN_SHARE)


def is_finite_budget(b: Budget) -> bool:
    return (b.sims is not None and b.sims > 0) or (b.seconds is not None and math.isfinite(b.seconds))
