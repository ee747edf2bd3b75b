"""`treesplit validate`: the simulator's predictions against the real engine on this machine."""

from __future__ import annotations

import argparse

from model.results import add_output_flags

# `treesplit --help` imports this module: the handlers import what they run (numba kernels, pandas, MPI, Bokeh)
# when they are called, which keeps --help fast.

DESCRIPTION = """\
Run the real engine (sequential, tree, treesplit/tds/root/leaf/dfuct/hybrid on 1-4 ranks, other boards and
parameters, Lines of Action) and the simulator, and print predicted vs measured figures with relative errors,
in two tables. Held out (the headline): one profile, calibrated on the reference run (treesplit 2x1 on the
first board, its trace, and the MPI ping-pong), predicts every other configuration without refitting; a row
that misses says which modelled cost its own calibration shows differently. In sample: each configuration
calibrated on traced runs of its own. Every row says calibrated_on and in_sample; figures fixed by
construction are listed apart and not counted. Writes results/validate[-quick].json and .csv (or --out DIR;
--update-reference refreshes experiments/results/).

examples:
  treesplit validate --quick                        # 9x9, ~8 min on 2 cores: results/validate-quick.json and .csv
  treesplit validate --board 19 --seconds 3 --repeats 5
  treesplit validate --traces traces/ --bench results/bench_parallel_scaling.json --json --no-save
"""


def register(sub) -> None:
    p = sub.add_parser("validate", help="simulator vs real engine on this machine: sims/s, messages, bytes, hops, "
                                        "busy fraction, with relative errors",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="a small subset: 5 held-out configurations (9x9 unless --board is given; ~8 min on 2 "
                        "cores; the full run, 12 or more held out, ~45 min with --repeats 3)")
    p.add_argument("--board", type=int, action="append", default=None, metavar="N",
                   help="board size, may repeat (default: 9 and 19; --quick: 9)")
    p.add_argument("--seconds", type=float, default=None, help="seconds per real run (default 1.5 quick, 3)")
    p.add_argument("--repeats", type=int, default=None,
                   help="per MPI configuration, N traced runs that calibrate and N untraced runs that are measured "
                        "(seeds 1..N, interleaved); the medians are compared, and the measured runs' spread "
                        "((max - min) / median) is shown (default 5; --quick: 3)")
    p.add_argument("--profile", default=None, help="one profile for every configuration instead of calibrating "
                                                    "(a shipped name or a TOML file): one held-out table")
    p.add_argument("--no-pingpong", action="store_true", help="keep the base profile's network (no MPI sweep)")
    p.add_argument("--warmup", type=float, default=None, metavar="SECONDS",
                   help="seconds of the reference's run, measured nowhere, before anything is (default 15: a VM "
                        "after an idle spell runs slow at first; 0: none)")
    p.add_argument("--per-step", action="store_true",
                   help="calibrate each part's cost per tree step too (treesplit calibrate --per-step): the "
                        "simulator charges root's whole paths more than the reference's shares of them")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="algorithm parameter for the MPI runs and their simulations")
    t = p.add_argument_group("measured traces instead of running the engine here")
    t.add_argument("--traces", action="append", default=None, metavar="DIR",
                   help="an engine trace directory, or a directory of them (may repeat): each run is predicted "
                        "by the simulator calibrated on its own trace (reproduce) and on --base (predict)")
    t.add_argument("--base", default=None, metavar="NAME",
                   help="the trace (directory name or path) the predictions are calibrated on (default: the "
                        "smallest one with 2 or more ranks)")
    t.add_argument("--mode", choices=("both", "reproduce", "predict"), default="both",
                   help="which rows to make (default both)")
    t.add_argument("--bench", default=None, metavar="JSON",
                   help="a `treesplit bench parallel` result: its untraced figures go beside the traced ones")
    t.add_argument("--network", default="local", metavar="PROFILE",
                   help="profile whose network and IO poll costs are used (the traces hold no ping-pong; "
                        "default local)")
    t.add_argument("--name", default="validate-traces", help="results file name (default validate-traces)")
    add_output_flags(p)
    p.set_defaults(func=main)


def _log(args):
    """Progress to stderr, or nothing with --quiet."""
    import sys

    return (lambda s: None) if args.quiet else (lambda s: print(s, file=sys.stderr, flush=True))


def main(args) -> int:
    from experiments.validate import ValidateConfig, validate
    from model.config import parse_overrides
    from model.results import output_dir

    output_dir(args)  # contradictory output flags stop here, before minutes of runs
    if args.traces:
        return main_traces(args)
    boards = tuple(args.board) if args.board else ((9,) if args.quick else (9, 19))
    cfg = ValidateConfig(boards=boards, quick=args.quick, seconds=args.seconds, repeats=args.repeats,
                         profile=args.profile, per_step=args.per_step,
                         pingpong=not args.no_pingpong, params=parse_overrides(args.param),
                         **({} if args.warmup is None else {"warmup": args.warmup}))
    cfg.validate()
    res = validate(cfg, log=_log(args))
    return _emit(res, args, "validate-quick" if args.quick else "validate")


def main_traces(args) -> int:
    from experiments.validate import TraceValidateConfig, validate_traces

    modes = ("reproduce", "predict") if args.mode == "both" else (args.mode,)
    cfg = TraceValidateConfig(traces=tuple(args.traces), base=args.base, network=args.network, bench=args.bench,
                              seconds=args.seconds, modes=modes)
    res = validate_traces(cfg, log=_log(args))
    return _emit(res, args, args.name)


def _emit(res: dict, args, name: str) -> int:
    """Save the table (unless --no-save) and print it, as JSON with --json."""
    import json
    import sys

    from experiments.validate import format_table, save
    from model.results import output_dir

    from experiments.validate import REFERENCE_PROFILE

    directory = output_dir(args)
    ref = res.pop(REFERENCE_PROFILE, None)
    if directory is not None:
        js, cs = save(res, name, directory)
        _log(args)(f"wrote {js} and {cs.name}")
        if ref is not None:
            # this engine's node costs, for `treesplit predict --profile CLUSTER --costs` on another cluster
            tp = ref.save(directory / f"{name}-reference.toml")
            _log(args)(f"wrote {tp.name} (the reference calibration: treesplit predict --costs {tp})")
    print(json.dumps(res, indent=2, default=float) if args.json else format_table(res["rows"]))
    for f in res.get("failed") or []:
        print(f"{f['config']}: not compared, its engine run failed ({f['error']})", file=sys.stderr)
    return 0
