"""`treesplit bench search`: simulations per second of the sequential UCT from the empty board, against the
bare playout rate (the tree's overhead), and optionally the `tree` algorithm's rate measured in the same run.

Every figure is the median of --repeats runs, after a warm-up, with the kinds of runs interleaved (playouts,
sequential, tree, then again) so that load from other processes treats them alike; each search starts from
an empty table. Two clocks: wall time (what a user sees; the tree's speedup) and the process's CPU time
(user + system, all threads), which gives the one-core rates undisturbed by other processes sharing the
cores, and the tree's CPU efficiency: its sims per CPU-second against the sequential search's (near 1 means
no parallel overhead, so T idle cores would give about T times the sequential rate).
Results go to results/bench-search-<board>-<policy>.json (as bench playouts names its files; or --out DIR;
--update-reference refreshes experiments/results/).

examples:
  treesplit bench search --board 9
  treesplit bench search --board 19 --threads 2 --repeats 3
  treesplit bench search --board 9 --sims 5000 --repeats 1 --json --no-save
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from model.results import add_output_flags, output_dir

# `treesplit --help` imports this module: the handlers import what they run (numba kernels, pandas, MPI, Bokeh)
# when they are called, which keeps --help fast.

DEFAULT_SIMS = {9: 20000, 13: 8000, 19: 4000}


def register(kinds) -> None:
    p = kinds.add_parser("search", help="sequential UCT sims/s vs bare playouts/s (tree overhead); "
                                        "with --algo tree also the shared-tree rate",
                         description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--board", type=int, choices=(9, 13, 19), default=9)
    p.add_argument("--policy", choices=("random", "light"), default="random", help="Go playout policy")
    p.add_argument("--algo", choices=("sequential", "tree"), default=None,
                   help="tree: also measure the shared-tree search (default: when --threads > 1)")
    p.add_argument("--threads", type=int, default=2, help="threads of the tree search (default 2)")
    p.add_argument("--sims", type=int, default=None, help="simulations per search (default by board)")
    p.add_argument("--repeats", type=int, default=5, help="runs of each kind (default 5)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="search parameter")
    add_output_flags(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from engine import algorithms
    from engine.sequential import Position
    from engine.timecontrol import Budget
    from model import game, tt
    from model.config import parse_overrides
    from model.errors import UserError
    from engine.results import write_json
    from model.rng import new_rng

    if args.repeats < 1 or args.threads < 1:
        raise UserError("--repeats and --threads: must be >= 1")
    directory = output_dir(args)
    with_tree = args.algo == "tree" or (args.algo is None and args.threads > 1)
    sims = args.sims or DEFAULT_SIMS[args.board]
    n_playouts = max(sims // 4, 200)
    params = parse_overrides(args.param)
    g, s = game.make_game("go", size=args.board, komi=7.0, policy=args.policy)
    pos = Position.initial(g, s)
    seq_cfg = algorithms.make_config("sequential", params, seed=1)
    tree_cfg = algorithms.make_config("tree", params, seed=1, threads=args.threads)

    def playouts() -> tuple[float, float]:
        rng = new_rng(7)
        t0, c0 = time.perf_counter(), time.process_time()
        game.run_playouts(g, s, rng, n_playouts)
        return n_playouts / (time.perf_counter() - t0), n_playouts / (time.process_time() - c0)

    # One searcher per algorithm, its table allocated and paged in once, as an engine does at start-up;
    # every run starts from an empty table all the same.
    searchers = {"sequential": algorithms.make_searcher("sequential", seq_cfg)}
    if with_tree:
        searchers["tree"] = algorithms.make_searcher("tree", tree_cfg)
    for searcher in searchers.values():
        tt.prefault(searcher.table_for(g))

    def search(name) -> tuple[float, float]:
        searcher = searchers[name]
        tt.clear(searcher.table)
        c0 = time.process_time()
        res = searcher.search(pos, Budget(sims=sims))
        cpu = time.process_time() - c0
        return res.sims / res.seconds, res.sims / cpu

    # warm-up: compile or load every kernel
    game.run_playouts(g, s, new_rng(1), 5)
    for name in searchers:
        search(name)
    kinds = ["playouts", "sequential"] + (["tree"] if with_tree else [])
    runs: dict[str, list[float]] = {}
    for _ in range(args.repeats):
        for kind in kinds:
            wall, cpu = playouts() if kind == "playouts" else search(kind)
            runs.setdefault(f"{kind}_per_s", []).append(wall)
            runs.setdefault(f"{kind}_per_cpu_s", []).append(cpu)
    med = {k: statistics.median(v) for k, v in runs.items()}
    out = {"board": args.board, "policy": args.policy, "sims_per_search": sims, "playouts_per_run": n_playouts,
           "repeats": args.repeats, "params": params, "medians": med, "runs": runs,
           "tree_overhead_ratio": med["sequential_per_s"] / med["playouts_per_s"],
           "tree_overhead_ratio_cpu": med["sequential_per_cpu_s"] / med["playouts_per_cpu_s"]}
    if with_tree:
        out["threads"] = args.threads
        out["tree_speedup"] = med["tree_per_s"] / med["sequential_per_s"]
        out["tree_cpu_efficiency"] = med["tree_per_cpu_s"] / med["sequential_per_cpu_s"]
    if directory is not None:
        out["saved_to"] = str(write_json(f"bench-search-{args.board}-{args.policy}", out, directory))
    if args.json:
        print(json.dumps(out, default=float))
        return 0
    print(f"{args.board}x{args.board} Go, {args.policy} playouts, median of {args.repeats} runs "
          f"(wall clock | per CPU-second):")
    print(f"  bare playouts    {med['playouts_per_s']:>9,.0f} | {med['playouts_per_cpu_s']:>9,.0f} /s")
    print(f"  sequential UCT   {med['sequential_per_s']:>9,.0f} | {med['sequential_per_cpu_s']:>9,.0f} sims/s  "
          f"(to playouts: {out['tree_overhead_ratio']:.2f} | {out['tree_overhead_ratio_cpu']:.2f})")
    if with_tree:
        print(f"  tree, {args.threads} threads {med['tree_per_s']:>9,.0f} | {med['tree_per_cpu_s']:>9,.0f} sims/s  "
              f"(speedup x{out['tree_speedup']:.2f}, CPU efficiency {out['tree_cpu_efficiency']:.2f})")
    if "saved_to" in out:
        print(f"  saved to {out['saved_to']}")
    return 0
