"""`treesplit experiment NAME`: rerun one of the studies of experiments/ (CSV + HTML report)."""

from __future__ import annotations

import argparse

from model.results import add_output_flags

# `treesplit --help` imports this module: the handlers import what they run (numba kernels, pandas, MPI, Bokeh)
# when they are called, which keeps --help fast.

DESCRIPTION = """\
Run one experiment with its configuration (experiments/configs/NAME.toml) and write its tables (CSV),
summary.json and a report.html that puts our figure beside the reference's, to results/experiments/NAME/
(or --out DIR). --update-reference refreshes the committed run under experiments/results/NAME/ that
experiments/README.md indexes. --list shows them all.

examples:
  treesplit experiment --list
  treesplit experiment broadcast-topology --quick      # a smoke run of seconds
  treesplit experiment scaling-oculus --param nodes=1,8,32 --json --no-save
"""


def register(sub) -> None:
    p = sub.add_parser("experiment", help="run a named experiment (CSV + HTML report under results/experiments/)",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", nargs="?", help="the experiment (see --list)")
    p.add_argument("--list", action="store_true", help="list the experiments and the question each answers")
    p.add_argument("--quick", action="store_true", help="a smoke run of seconds (the config's [quick] settings)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="override a setting of the configuration, repeatable (lists: a,b,c)")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="games played at once in worker processes (experiments that play games; default 1)")
    p.add_argument("--report-only", action="store_true",
                   help="rebuild report.html from the kept run in the output directory (its CSVs and "
                        "summary.json), running nothing")
    p.add_argument("--inline", action="store_true",
                   help="inline Bokeh's JavaScript in report.html (~2 MB; for reading offline) instead of its CDN")
    add_output_flags(p, "experiments")
    p.set_defaults(func=main)


def main(args) -> int:
    import contextlib
    import json
    import os
    import sys
    import tempfile

    from experiments import registry
    from model.errors import UserError
    from model.results import output_dir

    if args.list:
        if args.json:
            print(json.dumps({e.name: {"question": e.question, "built": e.module is not None}
                              for e in registry.EXPERIMENTS.values()}))
            return 0
        for e in registry.EXPERIMENTS.values():
            print(f"{e.name:<20}{'' if e.module else '(not built yet) '}{e.question}")
        return 0
    if not args.name:
        raise UserError("name an experiment (treesplit experiment --list shows them)")
    from experiments.runner import run_experiment

    if args.jobs is not None and args.jobs < 1:
        raise UserError("--jobs: need at least 1")
    if args.update_reference and args.quick:
        raise UserError("--update-reference: the committed results come from full runs, not --quick ones")
    out = output_dir(args, args.name)
    if out is None and args.report_only:
        raise UserError("--report-only: rebuilds a kept run's report, which --no-save would not write")
    with contextlib.ExitStack() as stack:
        if out is None:  # --no-save: the run's files live in a directory that goes away
            out = stack.enter_context(tempfile.TemporaryDirectory(prefix="treesplit-experiment-"))
        # progress goes to stderr when stdout carries the JSON, and nowhere with --quiet
        sink = stack.enter_context(open(os.devnull, "w")) if args.quiet else sys.stderr
        if args.json or args.quiet:
            stack.enter_context(contextlib.redirect_stdout(sink))
        report, summary = run_experiment(args.name, out, quick=args.quick, params=args.param, inline=args.inline,
                                         report_only=args.report_only, jobs=args.jobs)
    if args.json:
        print(json.dumps({**summary, "report": None if args.no_save else str(report)}, default=float))
    return 0
