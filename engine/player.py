"""The Go player behind GTP and `treesplit match`: a searcher from the algorithm registry plus a clock.

    player = Player(PlayerConfig(algo="sequential", sims=10000, seed=1))
    player.new_game(9, 7.0)
    action = player.genmove(game, color=0, time_left=None)   # game: model.go.game.GoGame; None = resign

The search tree lives across moves (the table is keyed by position hash, so the subtree of the moves
actually played is found again); new_game and undo start afresh. Budget per move: fixed --sims and/or
--seconds when given (capped so a known clock is never overrun), otherwise the clock's allocation
(engine/timecontrol.py) with the think-longer heuristics, otherwise DEFAULT_SIMS.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, fields

import numpy as np

from engine import algorithms
from engine.sequential import Position, SearchConfig
from engine.timecontrol import Allocation, Budget, ClockState, OverheadEstimate, ThinkPlan, TimeConfig, allocate
from model.config import check, with_overrides
from model.go import board
from model.uct import RootChild

DEFAULT_SIMS = 10_000


@dataclass
class PlayerConfig(SearchConfig, TimeConfig):
    """Everything the player can be told; every field is a --param key (or its own flag)."""

    algo: str = "sequential"
    # the in-tree policy settings whose default differs by algorithm (model.roles.params.UCT_DEFAULTS: dfuct's
    # c and rave): None takes the algorithm's own, a value set here overrides it
    c: float | None = None
    rave: bool | None = None
    sims: int | None = None          # simulations per move (fixed)
    seconds: float | None = None     # seconds per move (fixed)
    ranks: int | None = None         # MPI algorithms
    threads: int | None = None       # None: the algorithm's default (1; MPI ranks: the fast count for the cores)
    policy: str = "light"            # Go playout policy: random | light
    # the algorithm's own settings that the player does not share (e.g. {"n_dup": 2048} for treesplit,
    # {"s_par": 16} for inflight), applied over the shared ones; an unknown key is a ConfigError
    algo_params: dict = field(default_factory=dict)

    def validate(self) -> None:
        self.part(SearchConfig).validate()
        TimeConfig.validate(self)
        check(self.sims is None or self.sims >= 1, "sims", "must be >= 1")
        check(self.seconds is None or self.seconds > 0, "seconds", "must be > 0")
        check(self.policy in ("random", "light"), "policy", "random or light")

        algorithms.get(self.algo)  # an unknown or unavailable algorithm is an error now, not at genmove
        check(isinstance(self.algo_params, dict), "algo_params", "must be a table of key = value")
        self.algo_config().validate()  # a setting the algorithm can't run with, too (dfuct with rave on)

    def algo_config(self):
        """The algorithm's config: the shared fields it has, then algo_params."""
        cfg = self.part(algorithms.get(self.algo).config_cls)
        return with_overrides(cfg, self.algo_params) if self.algo_params else cfg

    def part(self, cls):
        """The fields of this config that `cls` (a config dataclass) has, as a `cls`; fields left unset (None:
        threads, c, rave) take `cls`'s default."""
        names = {f.name for f in fields(cls)} - {"algo_params"}
        return cls(**{k: v for k, v in asdict(self).items() if k in names and v is not None})


def merge_children(a: list[RootChild], b: list[RootChild]) -> list[RootChild]:
    """Root children of two searches of one position as one: visits added, values weighted by visits."""
    out: dict[int, list[float]] = {}
    for c in (*a, *b):
        if c.visits > 0:
            n, v = out.setdefault(c.action, [0, 0.0])
            out[c.action] = [n + c.visits, v + c.visits * c.value]
    merged = [RootChild(act, int(n), v / n, 0, float("nan")) for act, (n, v) in out.items()]
    return sorted(merged, key=lambda c: -c.visits)


class Player:
    def __init__(self, config: PlayerConfig | None = None):
        self.config = config or PlayerConfig()
        self.config.validate()
        self.searcher = algorithms.make_searcher(self.config.algo, self.config.algo_config())
        self.time = self.config.part(TimeConfig)
        self.size, self.komi = 19, 7.5
        self.time_settings: tuple[float, float, int] | None = None
        self.last_result = None
        self._g = None
        self.overhead = OverheadEstimate()

    # -- game lifecycle ----------------------------------------------------------------------------------
    def new_game(self, size: int, komi: float) -> None:
        self.size, self.komi = int(size), float(komi)
        self._g = None
        self.searcher.reset()

    def play(self, action: int) -> None:
        """A move was played (either colour). Nothing to do: the next search finds its subtree by hash."""

    def undo(self) -> None:
        self.searcher.reset()

    def set_time_settings(self, main: float, byo_time: float, byo_stones: int) -> None:
        self.time_settings = (float(main), float(byo_time), int(byo_stones))

    def close(self) -> None:
        self.searcher.close()

    # -- moves ---------------------------------------------------------------------------------------------
    def _params(self, game) -> np.ndarray:
        if self._g is None or int(self._g[board.G_SIZE]) != game.size or self._g[board.G_KOMI2] != int(game.komi * 2):
            self._g = board.make_params(game.size, game.komi, self.config.policy)
        return self._g

    def _budget(self, ply: int, points: int, time_left: float | None, stones_left: int) -> tuple[Budget, ThinkPlan | None]:
        cfg = self.config
        alloc: Allocation | None = None
        if time_left is not None and self.time_settings is not None:
            main, byo, stones = self.time_settings
            alloc = allocate(self.time, ClockState(time_left, stones_left, byo, stones), ply, points)
        elif time_left is not None:
            alloc = allocate(self.time, ClockState(time_left), ply, points)
        if cfg.sims is not None or cfg.seconds is not None:
            seconds = cfg.seconds
            if seconds is not None and self.time.subtract_overhead:
                seconds = self.overhead.search_seconds(seconds)
            b = Budget(cfg.sims, seconds)
            if alloc is not None:  # a fixed budget still must not lose on time
                b = Budget(cfg.sims, min(seconds or alloc.hard_limit, alloc.hard_limit))
            return b, None
        if alloc is not None:
            return alloc.budget, ThinkPlan(self.time, alloc.budget, alloc.hard_limit)
        return Budget(sims=DEFAULT_SIMS), None

    def _position(self, game, color: int):
        """The search's start: `game`'s position with `color` to move."""
        s = game.state.copy()
        board.set_to_move(s, color)
        return Position(self._params(game), s, game.superko_array())

    def analyze(self, game, color: int, seconds: float, so_far: list[RootChild] | None = None, lines: int = 10):
        """Search `game`'s position with `color` to move for `seconds` more: (root children, {root action: its
        principal variation}). The children's statistics cover this stretch and the earlier ones whose
        children are `so_far` (a searcher that keeps the root's visits from one search to the next already
        counts them; for the others they are added here). Every algorithm's searcher does it; the variations
        of the `lines` most visited candidates where the searcher can tell them (sequential, tree:
        `variations`), else of the best move alone."""
        pos = self._position(game, color)
        result = self.searcher.search(pos, Budget(seconds=seconds))
        variations = getattr(self.searcher, "variations", None)
        top = sorted((c for c in result.children if c.visits), key=lambda c: -c.visits)[:lines]
        pvs = variations(pos, [c.action for c in top]) if variations else {}
        if result.pv and result.pv[0] == result.action:
            pvs.setdefault(result.action, list(result.pv))
        children = result.children
        if so_far and not getattr(self.searcher, "keeps_root_visits", True):
            children = merge_children(so_far, children)
        return children, pvs

    def warm_up(self, game) -> None:
        """Load the search's compiled kernels (and start its MPI ranks) now, not in the first genmove: a
        controller or a referee that starts the engine for every game times its first move, which would
        otherwise carry seconds of start-up (engines that load a network do it at start-up too). Leaves the
        player as it was: the next search is the one it would have run."""
        self.searcher.warm_up(self._position(game, game.to_move))

    def genmove(self, game, color: int, cleanup: bool = False, time_left: float | None = None,
                stones_left: int = 0) -> int | None:
        """The action to play for `color` (0 Black, 1 White) in `game` (a GoGame), or None to resign."""
        t0 = time.perf_counter()
        n = game.size * game.size
        pos = self._position(game, color)
        budget, plan = self._budget(board.move_count(pos.s), n, time_left, stones_left)
        result = self.searcher.search(pos, budget, plan)
        action = self._choose(game, color, pos, result, cleanup)
        if budget.seconds is not None and plan is None and result.sims != budget.sims:  # the clock stopped it
            self.overhead.note(budget.seconds, time.perf_counter() - t0)
        return action

    def _choose(self, game, color: int, pos: Position, result, cleanup: bool) -> int | None:
        """The move of a finished search: its best legal one, with the pass and clean-up rules below."""
        n = game.size * game.size
        g, s = pos.g, pos.s
        self.last_result = result
        if result.resign and not cleanup:
            return None
        best_first = [c for c in result.children if c.action == result.action] + result.children
        # Passing after the opponent's pass ends the game on the board as it stands (Tromp-Taylor, dead stones
        # count as alive): never do that while it loses, as long as another searched move is playable.
        ends_lost = bool(game.moves) and game.moves[-1][1] == n and (game.score() < 0 if color == 0
                                                                      else game.score() > 0)
        for child in best_first:
            a = child.action
            if child.visits == 0 or game.illegal_reason(a, color) is not None:
                continue
            if cleanup and (a == n or board.go_is_eye(g, s, a, color)):
                continue  # cleanup phase: capture dead stones rather than pass
            if a == n and ends_lost and any(c.visits and c.action != n and game.illegal_reason(c.action, color)
                                            is None and not board.go_is_eye(g, s, c.action, color)
                                            for c in result.children):
                continue
            return a
        if cleanup:  # nothing searched qualifies: any legal non-eye point, else pass
            for a in range(n):
                if game.illegal_reason(a, color) is None and not board.go_is_eye(g, s, a, color):
                    return a
        return n  # pass
