"""Matches the experiments play, through engine/match.py: our Player against another Player in the same
process (self-play, no process start per game) or against a GTP program (GNU Go), with --jobs games at once.

`play(player, opponent, games, ...)` returns one row: games, wins, losses, draws, win rate with its 95%
Wilson interval and the Elo difference with its interval (model/stats.py), and each side's wall time per move
(mean, max, its budget, and whether it went over: engine/move_times.py).
Each worker process offsets both sides' seeds by its number, so games in different workers differ (a
deterministic searcher with the same seed would replay the same game); with jobs = 1 the searchers' own
progression across moves and games keeps every game different.
"""

from __future__ import annotations

import dataclasses
import functools
import multiprocessing
import statistics
import time
from pathlib import Path

import pandas as pd

from engine import algorithms
from engine.gtp import GtpEngine
from engine.gtp_client import GtpLocal
from engine.match import MatchConfig, run_match
from engine.player import Player, PlayerConfig
from engine.sequential import Position
from engine.move_times import TOLERANCE, MoveTimes, over_budget, summary as time_summary
from engine.timecontrol import Budget, OverheadEstimate
from model import uct
from model.config import from_dict
from model.loa.game import LoaGame
from model.stats import match_stats

WORKER_SEED_STRIDE = 7919


def _worker_number() -> int:
    ident = multiprocessing.current_process()._identity  # (k,) in the k-th pool worker, () in the main process
    return int(ident[0]) if ident else 0


def endpoint(config: PlayerConfig, size: int, komi: float, name: str):
    """An in-process GTP endpoint around a Player (module-level, so match workers can build it)."""
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
    in_process = isinstance(opponent, PlayerConfig)
    label = describe(opponent) if in_process else opponent
    mc = from_dict(MatchConfig, {"opponent": label, "games": games, "board": board, "komi": komi,
                                 "jobs": max(1, min(jobs, games)), "move_timeout": move_timeout,
                                 "budget": player.seconds or 0.0,
                                 "opponent_budget": (opponent.seconds or 0.0) if in_process else 0.0},
                   where="match: ")
    make_opp = functools.partial(endpoint, opponent, board, komi, "opponent") if in_process else None
    summary = run_match(mc, functools.partial(endpoint, player, board, komi, "treesplit"), out,
                        engine_info=dataclasses.asdict(player), progress=False, make_opponent=make_opp)
    return _row(summary["stats"], void=summary["void"], our_faults=len(summary["our_faults"]),
                mean_moves=summary["mean_moves"], times=summary["time"],
                mean_game_seconds=summary["mean_game_seconds"])


def _row(st: dict, void: int, our_faults: int, mean_moves: float, times: dict, mean_game_seconds: float | None) -> dict:
    """One match's result row (`st`: model.stats.match_stats(...).as_dict(); `times`: each side's
    engine.move_times.summary, under "ours" and "opponent"), the same for every game."""
    row = {"games": st["games"], "wins": st["wins"], "losses": st["losses"], "draws": st["draws"], "void": void,
           **{k: st[k] for k in ("win_rate", "ci_low", "ci_high", "elo", "elo_low", "elo_high")},
           "our_faults": our_faults, "mean_moves": round(mean_moves, 1), "mean_game_seconds": mean_game_seconds}
    for prefix, key in (("", "ours"), ("opponent_", "opponent")):
        t = times[key]
        row.update({f"{prefix}seconds_per_move": t["mean_s"], f"{prefix}max_seconds_per_move": t["max_s"],
                    f"{prefix}budget_seconds": t["budget_s"], f"{prefix}over_budget": t["over_budget"]})
    return row


def play_loa(player: PlayerConfig, opponent: PlayerConfig, games: int, out: Path, max_plies: int = 300,
             policy: str = "knowledge", knowledge: str = "mc") -> dict:
    """Lines of Action: `player` against `opponent`, both searchers of this process (an MPI algorithm's ranks
    run in its own session), colours alternating, each side's budget its config's sims/seconds per move. GTP
    and the match referee are Go's; here the game's own rules (model/loa) referee. A game longer than
    `max_plies` is a draw (Christoph 2020's agents, like ours, can shuffle pieces for long); nobody resigns. Writes
    games.csv into `out` after each game; returns the same row as `play`."""
    out.mkdir(parents=True, exist_ok=True)
    sides = [algorithms.make_searcher(c.algo, c.algo_config()) for c in (player, opponent)]
    configs = (player, opponent)
    overheads = [OverheadEstimate(), OverheadEstimate()]  # each side searches its budget less its overhead
    times = [MoveTimes(), MoveTimes()]
    records = []
    try:
        for k in range(games):
            ours = k % 2  # our colour: Black (0) in even games
            gm = LoaGame(policy, knowledge)
            hashes = [gm.hash()]
            for s in sides:
                s.reset()
            t0, result, reason = time.perf_counter(), 0.0, "cap"
            while not gm.is_over and gm.ply < max_plies:
                p = gm.to_move
                side = 0 if p == ours else 1
                c = configs[side]
                seconds = c.seconds
                if seconds is not None and c.subtract_overhead:
                    seconds = overheads[side].search_seconds(seconds)
                t = time.perf_counter()
                r = sides[side].search(Position(gm.g, gm.state, uct.history_array(hashes)), Budget(c.sims, seconds))
                elapsed = time.perf_counter() - t
                times[side].add(elapsed)
                if seconds is not None and r.sims != c.sims:  # the clock stopped it
                    overheads[side].note(seconds, elapsed)
                # no resigning on LOA: every game is played out (or to the cap), as Christoph 2020's games were
                if r.action < 0:
                    result, reason = (-1.0 if p == 0 else 1.0), "no move"
                    break
                gm.play(r.action)
                hashes.append(gm.hash())
            if gm.is_over:
                result, reason = gm.result(), "end"
            ours_won = result * (1 if ours == 0 else -1)
            records.append({"game": k + 1, "our_color": "black" if ours == 0 else "white",
                            "outcome": "win" if ours_won > 0 else "loss" if ours_won < 0 else "draw",
                            "reason": reason, "plies": gm.ply, "seconds": round(time.perf_counter() - t0, 3),
                            "moves": " ".join(gm.action_name(a) for _, a in gm.moves)})
            pd.DataFrame(records).to_csv(out / "games.csv", index=False)
    finally:
        for s in sides:
            s.close()
    n = {o: sum(r["outcome"] == o for r in records) for o in ("win", "loss", "draw")}
    return _row(match_stats(n["win"], n["loss"], n["draw"]).as_dict(), void=0, our_faults=0,
                mean_moves=statistics.fmean(r["plies"] for r in records) if records else 0,
                times={"ours": time_summary(times[0], player.seconds), "opponent": time_summary(times[1], opponent.seconds)},
                mean_game_seconds=statistics.fmean(r["seconds"] for r in records) if records else None)


def games_range(games: pd.Series) -> str:
    """'20' when every row played 20 games, else '20-40'."""
    lo, hi = int(games.min()), int(games.max())
    return str(lo) if lo == hi else f"{lo}-{hi}"


def time_check(t: pd.DataFrame, label, budget: float | None = None) -> str:
    """The words on equal time for a table of match rows (play's, or an older run's with fewer columns): each
    side that went over its budget per move by more than engine.move_times.TOLERANCE on average, named by
    `label(row)`, and whether the opponent's time was recorded at all. `budget`: ours where the table has no
    budget_seconds column."""
    if "seconds_per_move" not in t or not len(t):
        return ""
    flags, worst = [], []
    sides = [("", "our side")] + ([("opponent_", "the opponent")] if "opponent_seconds_per_move" in t else [])
    for r in t.to_dict("records"):
        for prefix, who in sides:
            mean, b = r.get(f"{prefix}seconds_per_move"), r.get(f"{prefix}budget_seconds", budget if not prefix else None)
            b = None if b is None or b != b else float(b)
            if b and mean == mean and mean is not None:
                worst.append(float(mean) / b)
                if over_budget(float(mean), b):
                    flags.append(f"{label(r)}: {who} {float(mean):.3f} s a move against {b:g} s (+{float(mean) / b - 1:.0%})")
    if not worst:
        return ""
    parts = []
    if flags:
        parts.append(f"Over the time budget by more than {TOLERANCE:.0%} on average (so not at equal time): "
                     + "; ".join(flags) + ".")
    else:
        parts.append(f"Every side kept within {TOLERANCE:.0%} of its time budget per move on average "
                     f"(at most {max(worst) - 1:+.0%}).")
    if len(sides) == 1:
        parts.append("The opponent's time per move was not recorded in this run.")
    return " ".join(parts)
