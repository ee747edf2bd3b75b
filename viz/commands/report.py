"""`treesplit report`: one standalone HTML file of a trace's dashboard views (no server needed)."""

from __future__ import annotations

import argparse
from pathlib import Path

# `treesplit --help` imports this module: the handlers import what they run (numba kernels, pandas, MPI, Bokeh)
# when they are called, which keeps --help fast.

DESCRIPTION = """\
Write the dashboard's overview, load, traffic and tree views of a trace into one HTML file with everything
inlined (opens offline, no server).

examples:
  treesplit report runs/t1 -o runs/t1.html
  treesplit report runs/t1 --compare runs/sim1 -o runs/both.html
  treesplit report runs/t1 --scaling results/predict/treesplit-oculus.csv -o runs/t1-and-prediction.html
"""


def register(sub) -> None:
    p = sub.add_parser("report", help="standalone HTML report of a trace (or two, side by side)",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", metavar="DIR", type=Path, help="trace directory")
    p.add_argument("--compare", metavar="DIR2", type=Path, help="a second trace, side by side on shared axes")
    p.add_argument("--scaling", metavar="CSV", type=Path, action="append", default=None,
                   help="a scaling curve from `treesplit predict` (results/predict/ALGO-PROFILE.csv), shown in a "
                        "Prediction tab with its band; repeat to draw several curves together")
    p.add_argument("--note", action="append", default=[], metavar="TEXT",
                   help="a paragraph to put at the top of the report, repeatable (`treesplit demo` says there how "
                        "far the simulated replay's rate is from the real run's)")
    p.add_argument("-o", "--output", type=Path, default=Path("report.html"), help="output file (default report.html)")
    p.set_defaults(func=run)


def run(args) -> int:
    from viz.report import build_report

    dirs = [args.trace] + ([args.compare] if args.compare else [])
    out = build_report(dirs, args.output, scaling=args.scaling, notes=args.note)
    print(f"treesplit report: wrote {out} ({out.stat().st_size / 1e6:.1f} MB)")
    return 0
