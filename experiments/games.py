"""Matches the experiments play, through engine/match.py: our Player against another Player in the same
process (self-play, no process start per game) or against a GTP program (GNU Go), with --jobs games at once.

`play(player, opponent, games, ...)` returns one row: games, wins, losses, draws, win rate with its 95%
Wilson interval and the Elo difference with its interval (model/stats.py), seconds per move of each side.
Each worker process offsets both sides' seeds by its number, so games in different workers differ (a
deterministic searcher with the same seed would replay the same game); with jobs = 1 the searchers' own
progression across moves and games keeps every game different.
"""

from __future__ import annotations

import dataclasses
import functools
import multiprocessing
from pathlib import Path

from engine.player import PlayerConfig

WORKER_SEED_STRIDE = 7919


def _worker_number() -> int:
    ident = multiprocessing.current_process()._identity  # (k,) in the k-th pool worker, () in the main process
    return int(ident[0]) if ident else 0


def endpoint(config: PlayerConfig, size: int, komi: float, name: str):
    """An in-process GTP endpoint around a Player (module-level, so match workers can build it)."""
    from engine.gtp import GtpEngine
    from engine.gtp_client import GtpLocal
    from engine.player import Player

    cfg = dataclasses.replace(config, seed=config.seed + WORKER_SEED_STRIDE * _worker_number())
    return GtpLocal(GtpEngine(Player(cfg), size=size, komi=komi), name=name)


def describe(config: PlayerConfig) -> str:
    budget = f"{config.sims} sims" if config.sims is not None else f"{config.seconds:g} s"
    extra = "".join(f" {k}={v}" for k, v in config.algo_params.items())
    ranks = f" ranks={config.ranks}" if config.ranks else ""
    return f"{config.algo}{ranks}{extra} ({budget}/move)"


def play(player: PlayerConfig, opponent: PlayerConfig | str, games: int, out: Path, board: int = 9,
         komi: float = 7.0, jobs: int = 1, move_timeout: float = 600.0) -> dict:
    """Play `games` games (colours alternate) of `player` against `opponent` (a PlayerConfig: in-process;
    a string: a GTP command line). Returns the row of statistics for our side."""
    from engine.match import MatchConfig, run_match
    from model.config import from_dict

    in_process = isinstance(opponent, PlayerConfig)
    label = describe(opponent) if in_process else opponent
    mc = from_dict(MatchConfig, {"opponent": label, "games": games, "board": board, "komi": komi,
                                 "jobs": max(1, min(jobs, games)), "move_timeout": move_timeout},
                   where="match: ")
    make_opp = functools.partial(endpoint, opponent, board, komi, "opponent") if in_process else None
    summary = run_match(mc, functools.partial(endpoint, player, board, komi, "treesplit"), out,
                        engine_info=dataclasses.asdict(player), progress=False, make_opponent=make_opp)
    st = summary["stats"]
    return {"games": st["games"], "wins": st["wins"], "losses": st["losses"], "draws": st["draws"],
            "void": summary["void"], "win_rate": st["win_rate"], "ci_low": st["ci_low"], "ci_high": st["ci_high"],
            "elo": st["elo"], "elo_low": st["elo_low"], "elo_high": st["elo_high"],
            "our_faults": len(summary["our_faults"]), "mean_moves": round(summary["mean_moves"], 1),
            "seconds_per_move": summary["our_seconds_per_move"], "mean_game_seconds": summary["mean_game_seconds"]}
