"""`treesplit experiment NAME`: rerun one of the studies of experiments/ (CSV + HTML report)."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("experiment", help="run a named experiment (CSV + HTML report under experiments/results/)",
                       description="Run one experiment with its configuration (experiments/configs/NAME.toml) and "
                                   "write its tables (CSV), summary.json and a report.html that "
                                   "puts our figure beside the reference's. --list shows them all.")
    p.add_argument("name", nargs="?", help="the experiment (see --list)")
    p.add_argument("--list", action="store_true", help="list the experiments and the question each answers")
    p.add_argument("--quick", action="store_true",
                   help="a smoke run of seconds (the config's [quick] settings; default out results/experiments/NAME)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="output directory (default experiments/results/NAME, results/experiments/NAME for --quick)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="override a setting of the configuration, repeatable (lists: a,b,c)")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="games played at once in worker processes (experiments that play games; default 1)")
    p.add_argument("--report-only", action="store_true",
                   help="rebuild report.html from the kept run in OUT (its CSVs and summary.json), running nothing")
    p.add_argument("--inline", action="store_true",
                   help="inline Bokeh's JavaScript in report.html (~2 MB; for reading offline) instead of its CDN")
    p.set_defaults(func=main)


def main(args) -> int:
    from experiments import registry
    from model.errors import UserError

    if args.list:
        for e in registry.EXPERIMENTS.values():
            print(f"{e.name:<20}{'' if e.module else '(not built yet) '}{e.question}")
        return 0
    if not args.name:
        raise UserError("name an experiment (treesplit experiment --list shows them)")
    from experiments.runner import run_experiment

    if args.jobs is not None and args.jobs < 1:
        raise UserError("--jobs: need at least 1")
    run_experiment(args.name, quick=args.quick, out=args.out, params=args.param, inline=args.inline,
                   report_only=args.report_only, jobs=args.jobs)
    return 0
