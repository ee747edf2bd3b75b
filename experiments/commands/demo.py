"""`treesplit demo`: the main job (README's first command)."""

from __future__ import annotations

import argparse

# `treesplit --help` imports this module: the handlers import what they run (numba kernels, pandas, MPI, Bokeh)
# when they are called, which keeps --help fast.

DESCRIPTION = """\
Run UCT-Treesplit on local MPI ranks (9x9, a short search) with the live dashboard open on 127.0.0.1,
calibrate the simulator on that run, replay it for as long as it ran (the report says how far the two rates
are apart, and why where it is more than 15%), predict scaling to 128(+32) nodes, and write
results/demo/report.html.

examples:
  treesplit demo
  treesplit demo --seconds 20 --out results/demo-20s
  treesplit demo --no-dashboard --no-pingpong          # no browser tab, no MPI ping-pong sweep
"""


def register(sub) -> None:
    p = sub.add_parser("demo", help="the demo: a live-watched MPI run, its simulated replay, a scaling prediction",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="results/demo", help="output directory (default results/demo)")
    p.add_argument("--seconds", type=float, default=8.0, help="seconds of real search (default 8)")
    p.add_argument("--ranks", type=int, default=2, help="search ranks (default 2)")
    p.add_argument("--bcast-ranks", type=int, default=1, help="broadcast ranks (default 1)")
    p.add_argument("--board", type=int, default=9, help="board size (default 9)")
    p.add_argument("--no-dashboard", action="store_true", help="do not start the live dashboard")
    p.add_argument("--no-pingpong", action="store_true", help="calibrate without the MPI ping-pong sweep")
    p.set_defaults(func=main)


def main(args) -> int:
    from experiments.demo import DemoConfig, run_demo

    run_demo(DemoConfig(out=args.out, seconds=args.seconds, ranks=args.ranks, bcast_ranks=args.bcast_ranks,
                        board=args.board, dashboard=not args.no_dashboard, pingpong=not args.no_pingpong))
    return 0
