"""`treesplit predict`: the scaling curve of an algorithm on a machine profile, one simulation per node count."""

from __future__ import annotations

import argparse
import json
import sys

from model.results import add_output_flags
from sim.commands.simulate import add_run_options

# `treesplit --help` imports this module: the handlers import what they run (numba kernels, pandas, MPI, Bokeh)
# when they are called, which keeps --help fast.

DESCRIPTION = """\
Simulate an algorithm at several node counts of a machine profile and print the scaling curve: sims/s,
speedup and efficiency against the smallest count, worker busy fraction, hops, bandwidth per rank, IO loop
turnaround, and the band the profile's uncertain values span (each assumed value's range and each measured
one's spread, all at their low ends and all at their high ends: [sources] in the profile). Writes the curve
to results/predict/ALGO-PROFILE.csv and .html (or --out DIR).

examples:
  treesplit predict --profile oculus --nodes 1,8,32,128
  treesplit predict --profile oculus --costs results/validate-quick-reference.toml --nodes 1,8,32,128
  treesplit predict --profile oculus --nodes 1,8,32,128 --sweep io.poll_per_peer=0.5e-6,1.5e-6,2.5e-6
  treesplit predict --profile my-machine.toml --nodes 1,2,4,8 --param network.latency=5e-6 --json --no-save
"""


def register(sub) -> None:
    p = sub.add_parser("predict", help="scaling curve: simulate several node counts (sims/s, efficiency, ...)",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_options(p, "node counts, comma-separated (e.g. 1,2,4,8,16,32,64,128)")
    p.add_argument("--sweep", default=None, metavar="KEY=A,B,C",
                   help="one curve per value of KEY (an algorithm parameter, game.FIELD or profile value such as "
                        "io.poll_per_peer), each with its own band")
    p.add_argument("--no-band", action="store_true",
                   help="one simulation per node count: skip the two corners of the uncertain values")
    add_output_flags(p, "predict", reference=False)
    p.set_defaults(func=main)


def main(args) -> int:
    from pathlib import Path

    from model.results import output_dir
    from sim.commands.simulate import config_from_args, format_estimate, parse_nodes
    from sim.predict import banded, format_table, parse_sweep, sweep, swept, write_output
    from sim.simulate import estimate_wall, prepare, resolve_profile

    directory = output_dir(args)
    nodes = parse_nodes(args.nodes)
    swept_key = parse_sweep(args.sweep) if args.sweep else None
    base = config_from_args(args, nodes[0], 0.02, "statistical")
    # check the settings on the smallest configuration before running any, and say how long it will take
    import dataclasses

    for v in (swept_key[1] if swept_key else [None]):
        trial = base if v is None else dataclasses.replace(base, params={**base.params, swept_key[0]: v})
        prepare(dataclasses.replace(trial, nodes=nodes[0], seconds=1e-6, warmup=0.0))
    prof = resolve_profile(base)
    from sim.uncertainty import uncertain

    runs = (1 if args.no_band or not uncertain(prof) else 3) * (len(swept_key[1]) if swept_key else 1)
    if base.warmup is None:  # the default warm-up depends on the profile: say the one every point will use
        from model.roles import split_params
        from sim.simulate import default_warmup, split_keys

        own = split_params(base.algo, split_keys(base.params)[0])[1]
        base = dataclasses.replace(base, warmup=default_warmup(base, prof, own))
    est = runs * sum(estimate_wall(dataclasses.replace(base, nodes=n), prof) for n in nodes)
    log = (lambda *a, **k: None) if args.quiet else print
    band = "" if runs == (len(swept_key[1]) if swept_key else 1) else (
        f", with the band of {len(uncertain(prof))} uncertain values ({', '.join(k for k, _ in uncertain(prof))})")
    log(f"predicting {base.algo} on {prof.name} at nodes {','.join(map(str, nodes))} ({base.fidelity}, "
        f"{base.warmup_s + base.seconds:.3g} simulated s each{band}); estimated wall time {format_estimate(est)}",
        file=sys.stderr, flush=True)

    def point(row):
        if not args.json:
            log(f"  {row['nodes']} nodes: {row['sims_per_s']:.4g} sims/s, busy {row['busy_frac']:.2f} "
                f"({row['wall_s']:.1f} s wall)", file=sys.stderr, flush=True)

    if swept_key:
        rows = swept(base, nodes, *swept_key, on_point=point) if not args.no_band else [
            {**r, "curve": f"{swept_key[0]}={v}"} for v in swept_key[1]
            for r in sweep(dataclasses.replace(base, params={**base.params, swept_key[0]: v}), nodes, point)]
    elif args.no_band:
        rows = [{**r, "curve": prof.name} for r in sweep(base, nodes, point)]
    else:
        rows = banded(base, nodes, point)
    written = []
    if directory is not None:
        directory.mkdir(parents=True, exist_ok=True)
        stem = f"{base.algo}-{Path(base.profile).stem}" + (f"+{Path(base.costs).stem}-costs" if base.costs else "")
        for suffix in (".csv", ".html"):
            written.append(str(write_output(rows, directory / f"{stem}{suffix}",
                                            f"{base.algo} on {base.profile}: predicted scaling")))
        log(f"wrote {' and '.join(written)}", file=sys.stderr)
    if args.json:
        print(json.dumps({"algo": base.algo, "profile": prof.name, "costs": base.costs, "fidelity": base.fidelity,
                          "uncertain": {k: v.to_toml() for k, v in uncertain(prof)}, "points": rows,
                          "saved_to": written}, indent=2, default=float))
    else:
        print(format_table(rows))
    return 0
