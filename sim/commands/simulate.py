"""`treesplit simulate`: one simulated run on a modelled cluster; prints the run's figures."""

from __future__ import annotations

import argparse
import json
import sys

# `treesplit --help` imports this module: the handlers import what they run (numba kernels, pandas, MPI, Bokeh)
# when they are called, which keeps --help fast.


def add_run_options(p: argparse.ArgumentParser, nodes_help: str) -> None:
    """Options shared by simulate and predict."""
    p.add_argument("--algo", default="treesplit",
                   help="treesplit, tds, root, leaf, dfuct or hybrid (statistical: all but dfuct; default treesplit)")
    p.add_argument("--profile", default="oculus",
                   help="machine profile: a shipped name (oculus, local) or a TOML file (default oculus)")
    p.add_argument("--costs", default=None, metavar="PROFILE",
                   help="take the node costs (packages, messages, the engine's per-message and per-package CPU) "
                        "from this profile, e.g. one `treesplit calibrate` or `treesplit validate` made here, and "
                        "the network and node layout from --profile: this engine on that cluster")
    p.add_argument("--nodes", required=True, help=nodes_help)
    p.add_argument("--bcast-nodes", type=int, default=None,
                   help="broadcast nodes (default: 1 broadcast rank per 4 search ranks for treesplit and hybrid, "
                        "hybrid's per group; else 0)")
    p.add_argument("--seconds", type=float, default=None,
                   help="simulated seconds to measure (default: 0.1 for simulate, 0.02 per point for predict)")
    p.add_argument("--warmup", type=float, default=None,
                   help="simulated seconds before measuring (default: 10%%, at least two simulation lifetimes)")
    p.add_argument("--fidelity", choices=("functional", "statistical"), default=None,
                   help="functional: model/'s roles run for real; statistical: drawn from a fitted workload, "
                        "~25x cheaper at 128 nodes (default: functional for simulate, statistical for predict)")
    p.add_argument("--bundle", type=int, default=1, metavar="G",
                   help="statistical: model simulations in bundles of G that share a path (G x faster; default 1)")
    p.add_argument("--workload", metavar="TRACE_DIR", default=None,
                   help="statistical: fit the workload from this trace (default: the profile's, else built-in)")
    p.add_argument("--game", choices=("pgame", "go", "loa"), default="pgame",
                   help="game of the functional roles (pgame: branching 16, depth 40; change with game.branching=..; "
                        "loa: Lines of Action, game.policy=knowledge, game.knowledge=ef)")
    p.add_argument("--board", type=int, default=19, help="Go board size (default 19)")
    p.add_argument("--param", action="append", metavar="KEY=VALUE", default=[],
                   help="algorithm parameter (n_dup=2048), game.FIELD=V, or profile field (network.latency=2e-6)")
    p.add_argument("--seed", type=int, default=0)


DESCRIPTION = """\
Simulate an algorithm on N nodes of a machine profile and print sims/s, PPS, NPS, worker busy fraction,
messages and bytes per rank per second and hops per simulation. Writes the engine's trace format with --trace.

examples:
  treesplit simulate --nodes 8
  treesplit simulate --algo tds --profile local --nodes 2 --game go --board 9 --seconds 0.5 --trace runs/sim1
  treesplit simulate --nodes 128 --fidelity statistical --bundle 4 --json
"""


def register(sub) -> None:
    p = sub.add_parser("simulate", help="simulate a distributed search on a modelled cluster (SimPy)",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_options(p, "search nodes (each runs the profile's ranks_per_node search ranks)")
    p.add_argument("--trace", metavar="DIR", default=None, help="write a trace directory")
    p.add_argument("--sample-rate", type=float, default=1.0,
                   help="fraction of simulations whose packages and messages the trace keeps (samples stay exact)")
    p.add_argument("--sample-interval", type=float, default=0.01, help="simulated seconds between samples")
    p.add_argument("--drain", action="store_true",
                   help="after the run, stop, drain and synchronise (checks that nothing is lost)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.set_defaults(func=main)


def parse_nodes(text: str) -> list[int]:
    from model.errors import UserError

    try:
        vals = [int(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise UserError(f"--nodes: expected whole numbers separated by commas, got {text!r}") from None
    if not vals or min(vals) < 1:
        raise UserError(f"--nodes: need node counts >= 1, got {text!r}")
    return vals


def config_from_args(args, nodes: int, default_seconds: float, default_fidelity: str):
    from model.config import parse_overrides
    from sim.simulate import SimConfig

    return SimConfig(algo=args.algo, profile=args.profile, nodes=nodes, bcast_nodes=args.bcast_nodes,
                     seconds=args.seconds if args.seconds is not None else default_seconds, warmup=args.warmup,
                     fidelity=args.fidelity or default_fidelity, game=args.game, board=args.board,
                     params=parse_overrides(args.param), workload=args.workload, seed=args.seed,
                     trace=getattr(args, "trace", None), sample_rate=getattr(args, "sample_rate", 1.0),
                     sample_interval=getattr(args, "sample_interval", 0.01), drain=getattr(args, "drain", False),
                     bundle=args.bundle, costs=args.costs)


def format_estimate(seconds: float) -> str:
    if seconds < 1:
        return "under a second"
    if seconds < 120:
        return f"~{seconds:.0f} s"
    return f"~{seconds / 60:.0f} min"


def progress_bar(total: float, desc: str):
    """A tqdm bar in simulated seconds (on stderr, only when it is a terminal)."""
    from tqdm import tqdm

    bar = tqdm(total=total, desc=desc, unit="sim s", file=sys.stderr, disable=None, leave=False,
               bar_format="{l_bar}{bar}| {n:.3g}/{total:.3g} sim s [{elapsed}<{remaining}]")

    def update(t: float) -> None:
        bar.update(t - bar.n)

    return bar, update


def main(args) -> int:
    from model.errors import UserError
    from sim.simulate import estimate_wall, prepare, run
    from sim.summary import format_summary

    nodes = parse_nodes(args.nodes)
    if len(nodes) != 1:
        raise UserError("--nodes: simulate takes one node count (treesplit predict sweeps several)")
    cfg = config_from_args(args, nodes[0], 0.1, "functional")
    prep = prepare(cfg)
    cfg = prep.cfg  # with the default warm-up filled in
    est = estimate_wall(cfg, prep.profile)
    print(f"simulating {cfg.warmup_s + cfg.seconds:.3g} s of {cfg.algo} on {cfg.nodes} nodes "
          f"({prep.layout.search_ranks}+{prep.layout.bcast_ranks} ranks, profile {prep.profile.name}, "
          f"{cfg.fidelity}); estimated wall time {format_estimate(est)}", file=sys.stderr, flush=True)
    bar, update = progress_bar(cfg.warmup_s + cfg.seconds, "simulated")
    try:
        summary = run(prep, progress=update)
    finally:
        bar.close()
    if args.json:
        print(json.dumps(summary, indent=2, default=float))
    else:
        print(format_summary(summary, f"{cfg.algo} on {cfg.nodes} nodes of {prep.profile.name} ({cfg.fidelity})"))
        if "drain" in summary:
            d = summary["drain"]
            print(f"  drained             {d['messages_sent']} messages sent, {d['messages_received']} received, "
                  f"{d['sims_done']} simulations done")
        if "trace" in summary:
            print(f"  trace               {summary['trace']}")
    return 0
