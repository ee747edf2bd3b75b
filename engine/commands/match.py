"""`treesplit match`: play N games against another GTP engine, write SGFs, a CSV and a summary."""

from __future__ import annotations

import argparse
import functools
from pathlib import Path

# `treesplit --help` imports this module: the handlers import what they run (numba kernels, pandas, MPI, Bokeh)
# when they are called, which keeps --help fast.


DESCRIPTION = """\
Play N games against another GTP engine with alternating colours. Writes OUT/games/game-NNNN.sgf,
OUT/games.csv (one row per game) and OUT/summary.json (win rate, 95% Wilson interval, Elo difference);
OUT is results/match-DATE unless --out says otherwise.

examples:
  treesplit match --games 20 --sims 5000                          # against GNU Go level 10 on 9x9
  treesplit match --algo tree --threads 2 --seconds 0.5 --games 10 --jobs 2 --out results/match-tree
  treesplit match --opponent "treesplit gtp --algo sequential --seconds 0.5" --opponent-seconds 0.5 \\
      --algo root --ranks 2 --seconds 0.5

Each side's wall time per move (genmove sent to reply) is kept per game and in the summary (mean, max,
budget); a side more than 5% over its budget on average is flagged. So are the simulations per move of
each side whose engine reports them (treesplit's GTP command treesplit-last_search; GNU Go does not).
"""


def register(sub) -> None:
    from engine.commands.gtp import add_player_arguments

    p = sub.add_parser("match", help="play a match against another GTP engine (e.g. GNU Go)",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--opponent", default="gnugo --mode gtp --level 10 --chinese-rules",
                   help="the opponent's GTP command line (default: %(default)s)")
    p.add_argument("--games", type=int, default=10, help="games to play (default 10)")
    p.add_argument("--board", type=int, default=9, help="board size (default 9)")
    p.add_argument("--komi", type=float, default=7.0, help="komi (default 7)")
    p.add_argument("--max-moves", type=int, default=0, help="move cap, then the game is scored (0: 3 x points)")
    p.add_argument("--move-timeout", type=float, default=600.0,
                   help="seconds an engine may take for one command before it forfeits (default 600)")
    p.add_argument("--no-cleanup", action="store_true",
                   help="score at the first two passes even if the opponent's count names the other winner")
    p.add_argument("--first-color", choices=("black", "white"), default="black", help="our colour in game 1")
    p.add_argument("--opponent-seconds", type=float, default=0.0, metavar="S",
                   help="the opponent's seconds per move, for the time check only (default: not known)")
    p.add_argument("--jobs", type=int, default=1, help="games played at once, in worker processes (default 1)")
    p.add_argument("--out", default=None, metavar="DIR", help="directory for SGFs and tables (default "
                                                             "results/match-DATE)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_player_arguments(p)
    p.set_defaults(func=run)


def _local_engine(config, size: int, komi: float):
    from engine.commands.gtp import make_gtp_engine
    from engine.gtp_client import GtpLocal

    return GtpLocal(make_gtp_engine(config, size=size, komi=komi), name="treesplit")


def time_line(who: str, t: dict) -> str:
    """'ours 0.26 s (max 0.31 s, budget 0.25 s)' from one side's entry of the summary's "time"."""
    if not t["moves"]:
        return f"{who}: no moves"
    budget = f", budget {t['budget_s']:g} s" if t["budget_s"] else ""
    return f"{who} {t['mean_s']:.3f} s (max {t['max_s']:.3f} s{budget})"


def run(args: argparse.Namespace) -> int:
    import dataclasses
    import json
    from datetime import datetime

    from engine.commands.gtp import player_config
    from engine.match import MatchConfig, run_match
    from engine.move_times import flag_text
    from model.config import from_dict
    from model.results import USER_DIR

    player = player_config(args)
    cfg = from_dict(MatchConfig, {
        "opponent": args.opponent, "games": args.games, "board": args.board, "komi": args.komi,
        "max_moves": args.max_moves, "move_timeout": args.move_timeout, "cleanup": not args.no_cleanup,
        "jobs": args.jobs, "first_color": args.first_color, "budget": player.seconds or 0.0,
        "opponent_budget": args.opponent_seconds}, where="match: ")
    from engine.gtp_client import resolve_command

    resolve_command(cfg.opponent)  # fail now, with one clear message, if the opponent is not installed
    out = Path(args.out) if args.out else USER_DIR / f"match-{datetime.now():%Y%m%d-%H%M%S}"
    summary = run_match(cfg, functools.partial(_local_engine, player, cfg.board, cfg.komi), out,
                        engine_info=dataclasses.asdict(player), progress=not args.quiet)
    st = summary["stats"]

    def elo(x, default):  # the summary holds None for an infinite Elo difference (JSON has no infinity)
        return default if x is None else f"{x:+.0f}"

    sign = "n/a" if not st["games"] else "+inf" if st["win_rate"] > 0.5 else "-inf"
    print(f"{st['games']} games (+{summary['void']} void): {st['wins']} won, {st['losses']} lost, "
          f"{st['draws']} drawn; win rate {st['win_rate']:.3f} [95% CI {st['ci_low']:.3f}, {st['ci_high']:.3f}]; "
          f"Elo {elo(st['elo'], sign)} [{elo(st['elo_low'], '-inf')}, {elo(st['elo_high'], '+inf')}]")
    print(f"mean game {summary['mean_game_seconds']:.1f} s, {summary['mean_moves']:.0f} moves; "
          f"clean-ups {summary['cleanups']}, score checks {summary['scores_checked']}, "
          f"winner disagreements {summary['winner_disagreements']}")
    print("time per move: " + "; ".join(time_line(who, summary["time"][key])
                                        for who, key in (("ours", "ours"), ("opponent's", "opponent"))))
    sims = summary["sims_per_move"]
    if sims["ours"] is not None or sims["opponent"] is not None:
        print("simulations per move: " + "; ".join(f"{who} {'not reported' if x is None else f'{x:.0f}'}"
                                                  for who, x in (("ours", sims["ours"]),
                                                                 ("opponent's", sims["opponent"]))))
    for who, key in (("We", "ours"), ("The opponent", "opponent")):
        t = summary["time"][key]
        if t["over_budget"]:
            print("warning: " + flag_text(who, t["mean_s"], t["budget_s"]))
    for key in ("our_faults", "opponent_faults", "score_disagreements"):
        if summary[key]:
            print(f"{key.replace('_', ' ')}: " + json.dumps(summary[key]))
    print(f"results in {out}")
    return 0
