"""`treesplit calibrate TRACE_DIR -o profile.toml`: fit a machine profile from an engine trace."""

from __future__ import annotations

import argparse
import sys

# `treesplit --help` imports this module: the handlers import what they run (numba kernels, pandas, MPI, Bokeh)
# when they are called, which keeps --help fast.

DESCRIPTION = """\
Fit per-kind work-package service times, message sizes and the traced algorithm's workload from an engine
trace, and the LogGP network from an MPI ping-pong/bandwidth sweep run here (mpiexec -n 2, a few seconds).

examples:
  treesplit calibrate runs/t1 -o runs/my-machine.toml
  treesplit calibrate runs/t1 -o runs/quick.toml --no-pingpong --base local
  treesplit calibrate runs/t1 -o runs/shared.toml --tree-share 0.1 --pingpong-seconds 2
  treesplit calibrate runs/t1 -o runs/steps.toml --per-step --no-pingpong
"""


def register(sub) -> None:
    p = sub.add_parser("calibrate", help="fit a machine profile from an engine trace (+ an MPI ping-pong)",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", metavar="TRACE_DIR", help="a trace directory written by the engine")
    p.add_argument("-o", "--output", required=True, metavar="PROFILE.toml", help="where to write the profile")
    p.add_argument("--name", default=None, help="profile name (default: the output file's stem)")
    p.add_argument("--base", default="oculus", help="profile that fills what the trace lacks (default oculus)")
    p.add_argument("--no-pingpong", action="store_true", help="skip the MPI sweep; keep the base's network")
    p.add_argument("--pingpong-seconds", type=float, default=4.0, help="time budget of the sweep (default 4)")
    p.add_argument("--tree-share", type=float, default=None, metavar="F",
                   help="what one more worker on a rank's tree costs a simulation, as a fraction (node.tree_share; "
                        "default: the base's). `treesplit validate` measures it on this machine; the costs of a "
                        "trace with several workers per rank are divided by 1 + F * (workers - 1)")
    p.add_argument("--per-step", action="store_true",
                   help="also fit how a select's and an update's cost grows with the tree steps it covers ([steps]; "
                        "the functional fidelity then charges each part for its steps)")
    p.set_defaults(func=main)


def main(args) -> int:
    from pathlib import Path

    from model.errors import UserError
    from engine.trace_files import read_meta
    from sim.calibrate import calibrate, run_pingpong
    from sim.profile import load_profile

    read_meta(args.trace)  # not a trace: one clear message before anything runs
    out = Path(args.output)
    if out.suffix != ".toml":
        raise UserError(f"-o {out}: expected a .toml file name")
    base = load_profile(args.base)
    if args.tree_share is not None and not 0 <= args.tree_share <= 1:
        raise UserError(f"--tree-share {args.tree_share}: expected a fraction from 0 to 1")
    pp = None
    if not args.no_pingpong:
        print(f"running MPI ping-pong ({args.pingpong_seconds:.0f} s) ...", file=sys.stderr, flush=True)
        pp = run_pingpong(args.pingpong_seconds)
    prof = calibrate(args.trace, base, name=args.name or out.stem, pingpong=pp, tree_share=args.tree_share,
                     per_step=args.per_step)
    out.parent.mkdir(parents=True, exist_ok=True)
    prof.save(out)
    print(f"wrote {out}")
    for kind, d in prof.costs.items():
        st = prof.steps.get(kind)
        per = (f"  ({st.base * 1e6:.2f} + {st.slope * 1e6:.2f} us per tree step, {st.mean:.2f} steps a part)"
               if st else "")
        print(f"  {kind:8s} mean {d.mean * 1e6:10.2f} us{per}")
    n = prof.network
    print(f"  network  L {n.latency * 1e6:.2f} us, o {n.overhead * 1e6:.2f} us, g {n.gap * 1e6:.2f} us, "
          f"G {n.gap_per_byte * 1e9:.3f} ns/B")
    print(f"  source   {prof.source}")
    return 0
