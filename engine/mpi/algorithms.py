"""The MPI algorithms' table (DISTRIBUTED), which engine/algorithms.py looks distributed algorithms up in.

Each algorithm of model/roles (treesplit, tds, root, leaf, dfuct, hybrid) has
  - a config class whose fields are the job layout (ranks, bcast_ranks, threads), seed and table size,
    the in-tree policy's (model.uct.UctParams) and the algorithm's own parameters (model/roles/params.py),
    so `--param n_dup=2048` and the Player's shared settings (c, rave, seed, threads, ranks, tt_mb) all land;
  - `run(args)`: `treesplit search` hands over its parsed arguments; the search runs as an MPI job
    (started here, or this process is one rank of a job the user started) and rank 0 prints the result;
  - `make_searcher(config)`: a searcher for the GTP Player, one MPI job per search.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import time
from typing import Any

from engine import algorithms
from engine.mpi import session
from engine.mpi.config import DistributedConfig
from engine.mpi.host import check_config
from engine.mpi.launch import inside_mpi, run_distributed
from engine.mpi.session import SessionClient
from engine.mpi.summary import format_text
from engine.sequential import COUNTER_NAMES, WARM_UP_SIMS, SearchConfig, SearchResult, wants_resign
from engine.timecontrol import Budget
from model import algorithms as model_algorithms
from model.config import check, parse_overrides
from model.game import GO, GameSpec, game_name
from model.go.board import G_SIZE
from model.roles.params import ALGO_DEFAULTS, ALGO_PARAMS, UCT_DEFAULTS, split_params
from model.uct import RootChild, UctParams

DEFAULT_RANKS = 2
# the job's layout and the player's resign rule (engine.sequential.wants_resign): not sent to the roles
_LAYOUT = [("ranks", int | None, None), ("bcast_ranks", int | None, None), ("threads", int | None, None),
           ("seed", int, 1), ("tt_mb", float | None, None),
           ("resign", float, SearchConfig.resign), ("resign_min_visits", int, SearchConfig.resign_min_visits)]


def _param_names(algo: str) -> list[str]:
    names = [f.name for f in dataclasses.fields(UctParams)]
    names += [f.name for f in dataclasses.fields(ALGO_PARAMS[algo]) if f.name not in names]
    return names


def _defaults(algo: str) -> dict[str, Any]:
    return {**{f.name: f.default for f in dataclasses.fields(UctParams)}, **UCT_DEFAULTS.get(algo, {}),
            **{f.name: f.default for f in dataclasses.fields(ALGO_PARAMS[algo])}, **ALGO_DEFAULTS.get(algo, {})}


def algo_params(algo: str, cfg) -> dict[str, Any]:
    """The --param values of a config that differ from the defaults (what the roles get)."""
    defaults = _defaults(algo)
    out = {n: getattr(cfg, n) for n in _param_names(algo) if getattr(cfg, n) != defaults.get(n)}
    if cfg.tt_mb is not None:
        out["table_mb"] = cfg.tt_mb
    return {k: (str(v) if isinstance(v, float) and math.isinf(v) else v) for k, v in out.items()}


def _config_class(algo: str) -> type:
    uct = {f.name: f for f in dataclasses.fields(UctParams)}
    own = {f.name: f for f in dataclasses.fields(ALGO_PARAMS[algo])}
    defaults = _defaults(algo)
    fields = list(_LAYOUT)
    for name in _param_names(algo):
        f = uct.get(name) or own[name]
        fields.append((name, f.type, dataclasses.field(default=defaults[name])))

    def validate(self) -> None:
        check(self.ranks is None or self.ranks >= 1, "ranks", "need at least 1 search rank")
        check(self.bcast_ranks is None or self.bcast_ranks >= 0, "bcast_ranks", "must be >= 0")
        check(self.threads is None or self.threads >= 1, "threads", "must be >= 1")
        check(self.tt_mb is None or self.tt_mb > 0, "tt_mb", "must be > 0")
        check(0 <= self.resign < 1, "resign", "must be in [0, 1)")
        check(self.resign_min_visits >= 0, "resign_min_visits", "must be >= 0")
        own = split_params(algo, algo_params(algo, self))[1]
        model_algorithms.resolve_layout(algo, self.ranks or DEFAULT_RANKS, self.bcast_ranks, own)

    return dataclasses.make_dataclass(f"{algo.capitalize()}Config", fields, namespace={"validate": validate})


def distributed_config(algo: str, cfg, **kw) -> DistributedConfig:
    """A DistributedConfig for one search with the registry config `cfg`; kw: game, budget, trace, ..."""
    return DistributedConfig(algo=algo, ranks=cfg.ranks or DEFAULT_RANKS, bcast_ranks=cfg.bcast_ranks,
                             threads=cfg.threads, seed=cfg.seed,
                             params=algo_params(algo, cfg), **kw)


def run_search(args) -> int:
    """`treesplit search --algo NAME ...` for an MPI algorithm."""
    cfg = algorithms.make_config(args.algo, parse_overrides(args.param), seed=args.seed, ranks=args.ranks,
                                 bcast_ranks=args.bcast_ranks, threads=args.threads, tt_mb=args.tt_mb)

    game_params = GameSpec(name=args.game, policy=args.policy, branching=args.branching, depth=args.depth,
                           seed=args.game_seed, cost=args.playout_cost).options()
    dc = distributed_config(args.algo, cfg, game=args.game, board=args.board, komi=args.komi,
                            game_params=game_params, sims=args.sims, seconds=args.seconds, trace=args.trace,
                            trace_probe=bool(getattr(args, "trace_probe", False)), telemetry=args.telemetry)
    hint = layout_hint(dc)
    if hint and not args.json:
        print(hint, file=sys.stderr, flush=True)
    res = run_distributed(dc)
    if res is None:  # a rank other than 0 of a job the user started: rank 0 prints
        return 0
    print(json.dumps(res, default=float) if args.json else format_text(res), flush=True)
    return 0


def layout_hint(dc) -> str | None:
    """A note when --threads puts more threads on the machine than it has cores and ranks have worker threads:
    every hop then waits for thread wake-ups (engine.mpi.config.fast_threads, the default, never does)."""

    cores = os.cpu_count() or 1
    threads = dc.world_size * dc.threads
    if inside_mpi() or dc.threads <= 1 or threads <= cores:
        return None
    return (f"note: {dc.world_size} ranks x {dc.threads} threads on {cores} cores; with fewer cores than threads "
            f"--threads 1 (each rank's IO thread runs its own packages) is usually several times faster")


class DistributedSearcher:
    """The Player's searcher for an MPI algorithm. Its searches run in one MPI session (engine.mpi.session)
    that lives as long as the searcher, so each rank keeps its part of the tree from move to move. Inside an
    MPI job the user started, rank 0 leads the session and the other ranks serve it from here on: for them
    the constructor returns only when rank 0 closes the session, and then ends the process.
    A search starts from the statistics an earlier one left at its root where the algorithm keeps them (the
    root's owner in treesplit, tds, dfuct and leaf; root parallelisation and hybrid start afresh), so whether
    a search's root visits include earlier ones is said per search (keeps_root_visits)."""

    def __init__(self, algo: str, config):
        config.validate()
        self.name, self.config = algo, config
        self.session = None
        self._overheads: list[float] = []  # wall seconds of recent searches beyond their search phase
        # the game and board of the session's last search: its first search on a board also pays for starting
        # the ranks and loading the kernels, or for the table of a new board size, and is no overhead sample
        self._searched_on: tuple | None = None
        self._kept_root = False  # the last search's root statistics include earlier searches'
        self._check = distributed_config(algo, config, sims=1)
        self._check.validate()
        if inside_mpi():
            if session._comm().Get_rank() != 0:
                session.follow()
                raise SystemExit(0)
            self.session = session.Leader()

    def _session(self):
        if self.session is None:
            check_config(self._check)
            self.session = SessionClient(self._check.world_size)
        return self.session

    def search(self, pos, budget, plan=None):
        g = pos.g
        go = int(g[0]) == GO
        dc = distributed_config(self.name, self.config, game=game_name(g),
                                board=int(g[G_SIZE]) if go else 9, g=g.tolist(), state=pos.s.tolist(),
                                history=[int(h) for h in pos.history], sims=budget.sims,
                                seconds=self._search_seconds(budget.seconds))
        dc.validate()
        self._drop_ended()
        started = self._searched_on == (dc.game, dc.board)
        t0 = time.monotonic()
        res = self._session().command({"op": "search", "config": dataclasses.asdict(dc)})["result"]
        self._searched_on = (dc.game, dc.board)
        self._kept_root = int(res["root_visits"]) > int(res["sims"])
        if budget.seconds is not None and started:
            self._note_overhead(time.monotonic() - t0 - float(res["seconds"]))
        nan = float("nan")
        children = [RootChild(a, n, v, 0, nan) for a, n, v in res["children"]]
        counters = {k: 0 for k in COUNTER_NAMES}
        counters.update(sims=res["sims"], playouts=res["playouts"], new_nodes=res["nodes"])
        resign = wants_resign(self.config, int(res["root_visits"]),
                              float(res["move_value"]) if res["move"] >= 0 and res.get("move_visits") else None)
        return SearchResult(action=res["move"], resign=resign, sims=res["sims"], playouts=res["playouts"],
                            new_nodes=res["nodes"], seconds=res["seconds"], root_visits=res["root_visits"],
                            root_value=res["root_value"], children=children, pv=res["pv"], extensions=[],
                            counters=counters)

    def warm_up(self, pos) -> None:
        """Start the session's ranks and load their kernels with a search of WARM_UP_SIMS simulations from
        `pos`, whose tree the ranks then forget (a session's searches all take the config's seed: nothing
        else of it is left)."""
        self.search(pos, Budget(sims=WARM_UP_SIMS))
        self.reset()

    @property
    def keeps_root_visits(self) -> bool:
        """Whether the last search's root statistics count the earlier searches' too (Player.analyze adds
        them up where not)."""
        return self._kept_root

    # A distributed search costs more wall time than its search phase: setting up the ranks' roles, the
    # final sync and gathering the reports (~0.1-0.2 s on 2 ranks). A player given S seconds must answer
    # within S, so the search phase gets S minus what that has cost so far (an upper quantile, never
    # less than a fifth of S).
    _OVERHEAD_WINDOW = 16

    def _search_seconds(self, seconds: float | None) -> float | None:
        if seconds is None or not self._overheads:
            return seconds
        recent = sorted(self._overheads)
        overhead = recent[min(len(recent) - 1, int(0.8 * len(recent)))]
        return max(seconds - overhead, 0.2 * seconds)

    def _note_overhead(self, seconds: float) -> None:
        self._overheads = (self._overheads + [max(seconds, 0.0)])[-self._OVERHEAD_WINDOW:]

    def _drop_ended(self) -> None:
        """A session job that has ended (a rank died; the failed search said so) took its trees with it: the
        next search starts a new one, so a GTP player or a match side goes on after one lost move."""
        if isinstance(self.session, SessionClient) and self.session.ended() is not None:
            print(f"treesplit: the MPI session had ended (exit code {self.session.ended()}); the next search "
                  f"starts new ranks", file=sys.stderr, flush=True)
            self.session.close()
            self.session = None
            self._searched_on = None

    def reset(self) -> None:
        """Forget the trees (new game, undo)."""
        self._drop_ended()
        if self.session is not None:
            self.session.command({"op": "reset"})

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None


# the distributed algorithms of model/algorithms.py, as the engine runs them (engine/algorithms.py looks them up)
DISTRIBUTED: dict[str, algorithms.Algorithm] = {
    algo: algorithms.Algorithm(algo, model_algorithms.get(algo).description, _config_class(algo),
                               make_searcher=lambda cfg, a=algo: DistributedSearcher(a, cfg), run=run_search,
                               needs_mpi=True)
    for algo in model_algorithms.DISTRIBUTED}
