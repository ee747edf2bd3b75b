"""The sequential searcher: UCT on one core, the reference every parallel algorithm is measured against.

Python around model/uct.py's fused kernel: it keeps one transposition table across searches (a new
search only bumps the time stamp, so the subtree of the move actually played is reused and the rest ages
out), runs simulations in chunks until the budget is spent, applies the time heuristics, and reads the
answer from the root: the most visited child (never one that would repeat a position of the game).
Reproducible: with a sims budget, the same seed and the same sequence of searches give the same moves.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field, fields
from typing import Callable

import numpy as np

from engine.timecontrol import Budget, ThinkPlan, summarize
from model import game, tt, uct
from model.config import check
from model.errors import ConfigError
from model.rng import new_rng

CHUNK_SECONDS = 0.02   # a timed search looks at the clock about this often
MAX_CHUNK = 4096       # and never runs more simulations than this between two looks
# a player's search at start-up that loads the kernels (warm_up): enough simulations to call every kernel a
# search calls, MPI ranks' messages included, in milliseconds
WARM_UP_SIMS = 64


@dataclass
class SearchConfig:
    """Settings of the shared-memory searchers (sequential, tree). Every field is a --param key."""

    # in-tree policy: model/uct.py UctParams (its defaults, its documentation)
    c: float = uct.UctParams.c
    rave: bool = uct.UctParams.rave
    rave_schedule: str = uct.UctParams.rave_schedule
    rave_k: float = uct.UctParams.rave_k
    rave_bias: float = uct.UctParams.rave_bias
    fpu: float = uct.UctParams.fpu
    vloss: float = uct.UctParams.vloss
    expand_visits: int = uct.UctParams.expand_visits
    pb: float = uct.UctParams.pb
    pb_unvisited: bool = uct.UctParams.pb_unvisited
    unprune_u0: int = uct.UctParams.unprune_u0
    unprune_mu: float = uct.UctParams.unprune_mu
    expand_node_visits: int = uct.UctParams.expand_node_visits
    max_depth: int = uct.UctParams.max_depth
    superko: bool = uct.UctParams.superko
    # table and run
    tt_mb: float = tt.BUDGET_MB   # transposition table memory (MiB)
    seed: int = 1
    threads: int = 1
    resign: float = 0.1           # resign when the best move's mean reward is below this (0: never)
    resign_min_visits: int = 2000  # ... and the root has at least this many visits

    def validate(self) -> None:
        self.uct_params().validate()
        check(self.tt_mb > 0, "tt_mb", "must be > 0")
        check(self.threads >= 1, "threads", "must be >= 1")
        check(0 <= self.resign < 1, "resign", "must be in [0, 1)")
        check(self.resign_min_visits >= 0, "resign_min_visits", "must be >= 0")

    def uct_params(self) -> uct.UctParams:
        names = {f.name for f in fields(uct.UctParams)}
        return uct.UctParams(**{k: v for k, v in asdict(self).items() if k in names})


@dataclass
class Position:
    """What a search starts from: game params g, state s, and the game's position hashes so far."""

    g: np.ndarray
    s: np.ndarray
    history: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))  # sorted uint64

    @classmethod
    def initial(cls, g: np.ndarray, s: np.ndarray) -> Position:
        return cls(g, s, uct.history_array([game.position_hash(g, s)]))


def wants_resign(cfg, root_visits: int, best_value: float | None) -> bool:
    """Resign when the chosen move's mean reward is below cfg.resign (0: never) after at least
    cfg.resign_min_visits root visits. When every move loses, visits spread thin: the root's count, not the
    best child's, says whether the search looked long enough. Every searcher the Player drives uses this."""
    return bool(best_value is not None and cfg.resign > 0 and root_visits >= cfg.resign_min_visits
                and best_value < cfg.resign)


@dataclass
class SearchResult:
    action: int                 # most visited root child, -1 if the root has none
    resign: bool
    sims: int                   # simulations run by this search
    playouts: int
    new_nodes: int              # tree nodes created by this search (NPS counts these)
    seconds: float
    root_visits: int            # includes visits kept from earlier searches (tree reuse)
    root_value: float           # root mean reward for the player to move
    children: list[uct.RootChild]
    pv: list[int]
    extensions: list[str]
    counters: dict[str, int]

    @property
    def sims_per_s(self) -> float:
        return self.sims / self.seconds if self.seconds > 0 else math.nan

    @property
    def pps(self) -> float:
        return self.playouts / self.seconds if self.seconds > 0 else math.nan

    @property
    def nps(self) -> float:
        return self.new_nodes / self.seconds if self.seconds > 0 else math.nan

    def as_dict(self, top: int = 10) -> dict:
        """JSON-ready (no NaN: a mean without samples is None)."""
        def num(x: float) -> float | None:
            return None if isinstance(x, float) and math.isnan(x) else x

        return {"action": self.action, "resign": self.resign, "sims": self.sims, "playouts": self.playouts,
                "new_nodes": self.new_nodes, "seconds": self.seconds, "sims_per_s": num(self.sims_per_s),
                "pps": num(self.pps), "nps": num(self.nps), "root_visits": self.root_visits,
                "root_value": num(self.root_value),
                "children": [{k: num(v) for k, v in asdict(c).items()} for c in self.children[:top]],
                "pv": self.pv, "extensions": self.extensions, "counters": self.counters}


COUNTER_NAMES = ("sims", "playouts", "new_nodes", "superko", "depth_sum", "max_depth", "no_room", "expands")


class SequentialSearcher:
    """UCT on one thread over a transposition table kept between searches."""

    name = "sequential"
    keeps_root_visits = True  # a search of the same position adds to the root's visits (analysis relies on it)

    def __init__(self, config: SearchConfig, clock: Callable[[], float] = time.perf_counter):
        config.validate()
        if type(self) is SequentialSearcher and config.threads != 1:
            raise ConfigError("threads: the sequential search runs one thread (use --algo tree for more)")
        self.config = config
        self.params = config.uct_params().to_array()
        self.clock = clock
        self.table: tt.Table | None = None
        self.n_searches = 0

    # -- table ---------------------------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget the tree (new game). The table is dropped, not emptied: a new one holds only the pages its
        game touches (an emptied one would keep every page any game has touched, up to tt_mb)."""
        self.table = None

    def table_for(self, g: np.ndarray) -> tt.Table:
        k = int(game.max_children(g))  # LOA: 96 of 4,097 actions are ever legal at once
        if self.table is None or self.table.child_move.shape[1] != k:
            self.table = tt.table_for_budget(self.config.tt_mb, k)
        return self.table

    def _rng(self, stream: int = 0) -> np.ndarray:
        return new_rng(self.config.seed * 1_000_003 + self.n_searches * 7919 + stream)

    # -- running simulations -------------------------------------------------------------------------------
    def _run(self, pos: Position, budget: Budget, counters: np.ndarray, rng: np.ndarray) -> int:
        """Run simulations until the budget is spent; returns how many ran."""
        t = self.table
        done = 0
        start = self.clock()
        chunk = 64
        while True:
            n = MAX_CHUNK if budget.sims is None else min(MAX_CHUNK, budget.sims - done)
            if budget.seconds is not None:
                n = min(n, chunk)
            if n <= 0:
                break
            t0 = self.clock()
            uct.run_simulations(t, pos.g, pos.s, pos.history, self.params, rng, n, counters)
            done += n
            now = self.clock()
            if budget.seconds is not None:
                if now - start >= budget.seconds:
                    break
                rate = n / max(now - t0, 1e-6)
                left = budget.seconds - (now - start)
                chunk = int(max(1, min(rate * CHUNK_SECONDS, rate * left, MAX_CHUNK)))
        return done

    # -- one search ----------------------------------------------------------------------------------------
    def search(self, pos: Position, budget: Budget, plan: ThinkPlan | None = None) -> SearchResult:
        if budget.sims is None and budget.seconds is None:
            raise ConfigError("search: needs a budget (sims or seconds)")
        t = self.table_for(pos.g)
        tt.new_search(t)
        self.n_searches += 1
        counters = np.zeros(uct.N_COUNTERS, np.int64)
        start = self.clock()
        self._run(pos, budget, counters, self._rng())
        extensions: list[str] = []
        if plan is not None:
            while True:
                slot = uct.find_node(t, pos.g, pos.s)
                kids = uct.root_children(t, slot)
                mean = t.value[slot] / t.visits[slot] if slot and t.visits[slot] else 0.5
                ext = plan.next(summarize(kids, float(mean), plan.cfg.unstable_min_share), self.clock() - start)
                if ext is None:
                    break
                self._run(pos, ext, counters, self._rng(len(plan.extensions)))
            extensions = list(plan.extensions)
        return self._result(pos, counters, self.clock() - start, extensions)

    def _result(self, pos: Position, counters: np.ndarray, seconds: float, extensions: list[str]) -> SearchResult:
        t = self.table
        slot = uct.find_node(t, pos.g, pos.s)
        kids = uct.root_children(t, slot)
        visits = int(t.visits[slot]) if slot else 0
        root_value = float(t.value[slot]) / visits if visits else math.nan
        action, best = -1, None
        for k in kids:  # most visited first; skip a move that would repeat a position (superko)
            if k.visits > 0 and not uct.repeats_history(pos.g, pos.s, k.action, pos.history):
                action, best = k.action, k
                break
        resign = wants_resign(self.config, visits, None if best is None else best.value)
        return SearchResult(
            action=action, resign=resign, sims=int(counters[uct.C_SIMS]), playouts=int(counters[uct.C_PLAYOUTS]),
            new_nodes=int(counters[uct.C_NEW]), seconds=seconds, root_visits=visits, root_value=root_value,
            children=kids, pv=uct.principal_variation(t, pos.g, pos.s), extensions=extensions,
            counters={name: int(counters[i]) for i, name in enumerate(COUNTER_NAMES)})

    def variations(self, pos: Position, actions: list[int], max_len: int = 12) -> dict[int, list[int]]:
        """Each root action's principal variation in the table (the action, then the most visited line from
        the position it makes), for analysis: a GUI shows one per candidate move."""
        out: dict[int, list[int]] = {}
        if self.table is None:
            return out
        for a in actions:
            s = pos.s.copy()
            out[a] = [a] + (uct.principal_variation(self.table, pos.g, s, max_len - 1) if game.play(pos.g, s, a)
                            else [])
        return out

    def warm_up(self, pos: Position) -> None:
        """Load every kernel a search calls (numba loads each from its cache at its first call) with a search of
        WARM_UP_SIMS simulations from `pos` by a searcher of its own: this one's tree and random streams stay
        as they were."""
        type(self)(self.config, clock=self.clock).search(pos, Budget(sims=WARM_UP_SIMS))

    def close(self) -> None:
        self.table = None
