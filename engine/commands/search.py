"""`treesplit search`: one search from the initial position with any algorithm; prints the move and rates."""

from __future__ import annotations

import argparse
import json

from model.algorithms import ALGORITHMS, DISTRIBUTED
from model.tt import BUDGET_MB

# `treesplit --help` imports this module: the handlers import what they run (numba kernels, pandas, MPI, Bokeh)
# when they are called, which keeps --help fast.

DESCRIPTION = f"""\
Run one search from the empty board (Go), the start position (Lines of Action) or the root (P-game) and
print the chosen move, simulations/s, playouts/s (PPS), new tree nodes/s (NPS) and root visits.

algorithms:
""" + "".join(f"  {a.name:11s}{a.description}\n" for a in ALGORITHMS.values()) + """
examples:
  treesplit search --algo treesplit --ranks 4 --board 19 --seconds 5 --trace runs/t1   # real MPI ranks
  treesplit search --algo tree --threads 2 --board 9 --sims 20000 --json
  treesplit search --algo hybrid --ranks 4 --bcast-ranks 2 --param groups=2 --sims 3000
"""


def register(sub) -> None:
    p = sub.add_parser("search", help="run one search with any algorithm and print the move, sims/s, PPS, NPS",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--algo", default="sequential", metavar="ALGO",
                   help=f"algorithm (default sequential; on MPI ranks: {', '.join(DISTRIBUTED)})")
    p.add_argument("--game", choices=("go", "pgame", "loa"), default="go",
                   help="Go (default), the synthetic P-game tree, or Lines of Action")
    p.add_argument("--board", type=int, default=9, help="Go board size (default 9)")
    p.add_argument("--komi", type=float, default=7.0)
    p.add_argument("--policy", choices=("random", "light", "knowledge"), default="random",
                   help="playout policy: Go random | light; LOA random | knowledge")
    p.add_argument("--branching", type=int, default=4, help="P-game branching factor")
    p.add_argument("--depth", type=int, default=8, help="P-game depth")
    p.add_argument("--playout-cost", type=int, default=0, help="P-game busy-loop iterations per playout step")
    p.add_argument("--game-seed", type=int, default=1, help="P-game tree seed")
    budget = p.add_mutually_exclusive_group(required=True)
    budget.add_argument("--sims", type=int, help="simulations")
    budget.add_argument("--seconds", type=float, help="seconds")
    p.add_argument("--threads", type=int, default=None,
                   help="threads (tree; per rank for MPI algorithms, the IO thread counted; default: what is fast "
                        "for this machine's cores, an equal share per rank, 1 when ranks >= cores)")
    p.add_argument("--ranks", type=int, default=None, help="MPI search ranks (MPI algorithms; default 2)")
    p.add_argument("--bcast-ranks", type=int, default=None,
                   help="MPI broadcast ranks (treesplit, hybrid; default 1 per 4 search ranks, hybrid: per group)")
    p.add_argument("--trace", default=None, metavar="DIR", help="record a trace directory (MPI algorithms)")
    p.add_argument("--trace-probe", action="store_true",
                   help="with --trace: record packages and messages only in every other 0.1 s, so that `treesplit "
                        "calibrate` measures what recording costs and fits a profile of the untraced engine (the "
                        "dashboards then show the gaps)")
    p.add_argument("--telemetry", default=None, metavar="HOST:PORT", help="push live telemetry (MPI algorithms)")
    p.add_argument("--tt-mb", type=float, default=None,
                   help=f"transposition table memory in MiB, per MPI rank (default {BUDGET_MB:g})")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="algorithm parameter, repeatable (e.g. c=0.5, rave=false, vloss=3)")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def action_name(game: str, size: int, action: int) -> str:
    """The action as its game names it (model/game.py); "none" when no move was chosen."""
    from model.game import action_label

    return "none" if action < 0 else action_label(game, size, action)


def run(args: argparse.Namespace) -> int:
    from engine import algorithms
    from model.config import parse_overrides
    from model.errors import UserError

    algo = algorithms.get(args.algo)
    if args.sims is not None and args.sims < 1:
        raise UserError("--sims: must be >= 1")
    if args.seconds is not None and args.seconds <= 0:
        raise UserError("--seconds: must be > 0")
    if algo.needs_mpi:
        return algo.run(args)
    if args.ranks not in (None, 1) or args.bcast_ranks:
        raise UserError(f"--ranks/--bcast-ranks: algorithm {args.algo!r} runs in one process "
                        f"(MPI algorithms: {', '.join(algorithms.MPI_ALGORITHMS)})")
    if args.trace or args.telemetry:
        raise UserError(f"--trace/--telemetry: not recorded by algorithm {args.algo!r} yet")

    from engine.sequential import Position
    from engine.timecontrol import Budget
    from model import tt
    from model.game import GameSpec

    config = algorithms.make_config(args.algo, parse_overrides(args.param), seed=args.seed, threads=args.threads,
                                    tt_mb=args.tt_mb)
    spec = GameSpec(name=args.game, size=args.board, komi=args.komi, policy=args.policy,
                    branching=args.branching, depth=args.depth, seed=args.game_seed, cost=args.playout_cost)
    g, s = spec.make()
    pos = Position.initial(g, s)
    searcher = algorithms.make_searcher(args.algo, config)
    # Outside the timed search: allocate and page in the table (an engine does it once), compile or load the
    # kernels with one simulation, then empty the table again.
    tt.prefault(searcher.table_for(g))
    searcher.search(pos, Budget(sims=1))
    tt.clear(searcher.table)
    res = searcher.search(pos, Budget(sims=args.sims, seconds=args.seconds))
    searcher.close()
    move = action_name(args.game, args.board, res.action)
    if args.json:
        out = {"algo": args.algo, "game": args.game, "board": args.board if args.game == "go" else None,
               "move": move, "threads": config.threads, **res.as_dict(),
               "pv_names": [action_name(args.game, args.board, a) for a in res.pv]}
        print(json.dumps(out, default=float))
        return 0
    where = {"go": f"{args.board}x{args.board} Go", "loa": "Lines of Action"}.get(
        args.game, f"P-game b={args.branching} d={args.depth} cost={args.playout_cost}")
    print(f"{args.algo} on {where}: move {move}{' (would resign)' if res.resign else ''}")
    print(f"  sims {res.sims} in {res.seconds:.3f} s: {res.sims_per_s:,.0f} sims/s, PPS {res.pps:,.0f}, "
          f"NPS {res.nps:,.0f}")
    print(f"  root visits {res.root_visits}, value {res.root_value:.3f}, "
          f"max depth {res.counters['max_depth']}, mean depth {res.counters['depth_sum'] / max(res.sims, 1):.1f}")
    print("  pv " + " ".join(action_name(args.game, args.board, a) for a in res.pv))
    for c in res.children[:5]:
        print(f"    {action_name(args.game, args.board, c.action):>5}  visits {c.visits:>8}  value {c.value:.3f}")
    return 0
