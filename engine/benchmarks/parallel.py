"""`treesplit bench parallel`: simulation rates of the parallel algorithms against the sequential search,
measured in the same run, with the message figures of the MPI ones.

Per board and configuration: sims/s, PPS, NPS, messages/sim, hops/sim, bytes/sim, the worker busy
fraction, CPU per simulation (and its ratio to the sequential search's), the part of it a rank spent waiting
for work (its IO loop spinning with nothing to run or receive) and, for layouts of several ranks, CPU per
remote hop (what a simulation costs over the same algorithm on one rank, divided by its hops), in all and
without the waiting (a rank idle for want of work spins, and its spinning counts as CPU: that is load
imbalance or latency, not the hop's own work), and without the waiting against one rank that shares the
machine with another (`ALGO 1xT pair`: two one-rank searches at once, each on its own core, as the ranks of
a 2x1 run are; what the two cores slow each other by, through their shared caches, memory and clock, is then
left out of the hop's cost: column "vs pair"): the median of --repeats runs of --seconds each. Runs are interleaved
(every configuration once, then again) so that a machine whose load drifts treats them alike. MPI layouts
are RANKSxTHREADS (threads per rank count the IO thread; 1 = the IO thread runs the packages itself). With
--trace-cost the first MPI layout also runs with a trace recorded, which gives the price of recording.

examples:
  treesplit bench parallel                                   # this machine: 19x19, the 2-core layouts
  treesplit bench parallel --boards 9,19 --seconds 5 --repeats 5
  treesplit bench parallel --scaling --cores 16              # 1,2,4,8,16 ranks on a 16-core machine
  treesplit bench parallel --scaling --algos tree,treesplit,tds --keep-traces traces/

With --scaling each MPI algorithm of --algos runs on 1, 2, 4, ... search ranks up to --cores, with
--rank-threads threads each (default 1: one core per search rank; broadcast ranks come on top from 4 search
ranks, at the default 1:4 ratio), and `tree` on 2, 4, ... threads. --keep-traces adds one traced run per MPI
configuration and keeps its trace (DIR/<board>/<configuration>/), for `treesplit calibrate` and validation.
The results file (results/<name>.json, or --out DIR; --update-reference refreshes experiments/results/) is
rewritten after every round, so an interrupted run keeps what it measured.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any

from model.results import add_output_flags

DEFAULT_LAYOUTS = "2x1,1x3"  # a 2-core machine: two ranks, or one rank whose IO thread feeds two workers
METRICS = ("sims_per_s", "pps", "nps", "messages_per_sim", "hops_per_sim", "bytes_per_sim", "busy_frac",
           "cpu_us_per_sim", "wait_us_per_sim")


def register(kinds) -> None:
    p = kinds.add_parser("parallel", help="parallel algorithms vs the sequential search: sims/s, PPS, NPS, "
                                          "messages, hops and bytes per simulation, busy fraction",
                         description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--boards", default="19", help="board sizes, comma separated (default 19)")
    p.add_argument("--algos", default="tree,treesplit,tds",
                   help="algorithms besides sequential, comma separated (default tree,treesplit,tds)")
    p.add_argument("--layouts", default=DEFAULT_LAYOUTS,
                   help=f"MPI layouts RANKSxTHREADS, comma separated (default {DEFAULT_LAYOUTS})")
    p.add_argument("--tree-threads", type=int, default=2, help="threads of the tree algorithm (default 2)")
    p.add_argument("--scaling", action="store_true",
                   help="scaling table instead: each algorithm on 1, 2, 4, ... ranks (threads) up to --cores")
    p.add_argument("--cores", type=int, default=os.cpu_count(), help="cores for --scaling (default: all)")
    p.add_argument("--rank-threads", type=int, default=1,
                   help="threads per search rank with --scaling (default 1: the IO thread runs the packages)")
    p.add_argument("--keep-traces", metavar="DIR", default=None,
                   help="one more run per MPI configuration with a trace, kept under DIR")
    p.add_argument("--seconds", type=float, default=3.0, help="seconds per run (default 3)")
    p.add_argument("--repeats", type=int, default=3, help="runs per configuration (default 3)")
    p.add_argument("--policy", choices=("random", "light"), default="random", help="Go playout policy")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="parameter for the MPI algorithms (e.g. overload=10)")
    p.add_argument("--pairs", action=argparse.BooleanOptionalAction, default=True,
                   help="also run each 1xT layout twice at once where there is a 2xT one, the baseline of "
                        "the \"vs pair\" hop cost (default on; not with --scaling)")
    p.add_argument("--trace-cost", action=argparse.BooleanOptionalAction, default=True,
                   help="also run the first MPI layout with a trace, to price recording (default on)")
    p.add_argument("--name", default=None, help="results file name (default bench_parallel[_scaling])")
    add_output_flags(p)
    p.set_defaults(func=_run)


def _configs(args) -> list[dict[str, Any]]:
    from model.errors import UserError

    if args.scaling:
        if args.cores < 1 or args.rank_threads < 1:
            raise UserError("--cores and --rank-threads must be at least 1")
        counts, r = [], 1
        while r * args.rank_threads <= args.cores:
            counts.append(r)
            r *= 2
        out = []
        for algo in [a.strip() for a in args.algos.split(",") if a.strip()]:
            if algo == "tree":
                out += [{"algo": "tree", "threads": t} for t in counts if t > 1]
            else:
                out += [{"algo": algo, "ranks": n, "threads": args.rank_threads} for n in counts]
        if args.keep_traces:
            out += [{**c, "trace": True} for c in out if "ranks" in c]
        return out
    out = []
    for algo in [a.strip() for a in args.algos.split(",") if a.strip()]:
        if algo == "tree":
            out.append({"algo": "tree", "threads": args.tree_threads})
            continue
        for lay in args.layouts.split(","):
            try:
                ranks, threads = (int(x) for x in lay.lower().split("x"))
            except ValueError:
                raise UserError(f"--layouts: {lay!r} is not RANKSxTHREADS") from None
            out.append({"algo": algo, "ranks": ranks, "threads": threads})
    if args.pairs:  # the baseline of a 2xT layout, where two of them fit the machine's cores
        out += [{**c, "pair": True} for c in list(out) if c.get("ranks") == 1 and 2 * c["threads"] <= (
                os.cpu_count() or 1) and {**c, "ranks": 2} in out]
    if args.trace_cost:
        mpi = next((c for c in out if "ranks" in c), None)
        if mpi is not None:
            out.append({**mpi, "trace": True})
    return out


def _label(c: dict[str, Any]) -> str:
    if c["algo"] in ("sequential", "tree"):
        return c["algo"] if c["algo"] == "sequential" else f"tree {c['threads']}t"
    return (f"{c['algo']} {c['ranks']}x{c['threads']}" + (" +trace" if c.get("trace") else "")
            + (" pair" if c.get("pair") else ""))


def prepared_searcher(algo: str, threads: int, board: int, policy: str, seed: int = 1, game: str = "go"):
    """(searcher, start position) of a shared-memory algorithm on an empty board (Go's of size `board`, or
    another game's), its kernels loaded and its table's pages touched, so a timed search that follows measures
    the search alone."""
    from engine import algorithms
    from engine.sequential import Position
    from engine.timecontrol import Budget
    from model import tt
    from model.game import make_game

    g, s = make_game(game, policy=policy, **({"size": board, "komi": 7.0} if game == "go" else {}))
    pos = Position.initial(g, s)
    searcher = algorithms.make_searcher(algo, algorithms.make_config(algo, {}, threads=threads, seed=seed))
    searcher.search(pos, Budget(sims=64))  # load the kernels outside the measurement
    searcher.reset()
    tt.prefault(searcher.table_for(g))  # as `treesplit search` does, and the MPI ranks (engine.mpi.roles_host)
    return searcher, pos


def _run_shared(algo: str, threads: int, board: int, seconds: float, policy: str, game: str = "go"
                ) -> dict[str, float]:
    from engine.timecontrol import Budget

    searcher, pos = prepared_searcher(algo, threads, board, policy, game=game)
    cpu0 = time.process_time()
    r = searcher.search(pos, Budget(seconds=seconds))
    cpu = time.process_time() - cpu0
    searcher.close()
    return {"sims_per_s": r.sims_per_s, "pps": r.pps, "nps": r.nps, "messages_per_sim": 0.0,
            "hops_per_sim": 0.0, "bytes_per_sim": 0.0, "busy_frac": 1.0, "sims": r.sims,
            "cpu_us_per_sim": 1e6 * cpu / max(r.sims, 1), "wait_us_per_sim": 0.0}


def _run_mpi(c: dict[str, Any], board: int, seconds: float, policy: str, params: dict[str, str],
             keep: str | None = None, seed: int = 1) -> dict[str, float]:
    from engine.mpi import DistributedConfig, run_distributed

    if c.get("pair"):
        return _run_pair({k: v for k, v in c.items() if k != "pair"}, board, seconds, policy, params)
    with tempfile.TemporaryDirectory(prefix="treesplit-bench-") as tmp:
        trace = None
        if c.get("trace"):
            trace = f"{keep}/{board}/{_label(c)[: -len(' +trace')].replace(' ', '-')}" if keep else f"{tmp}/trace"
            if keep:
                shutil.rmtree(trace, ignore_errors=True)
        cfg = DistributedConfig(algo=c["algo"], game="go", board=board, komi=7.0, game_params={"policy": policy},
                                ranks=c["ranks"], bcast_ranks=None,
                                threads=c["threads"], seconds=seconds, params=dict(params), seed=seed,
                                trace=trace)
        res = run_distributed(cfg)
    spin = sum(r.get("loop", {}).get("idle_s", 0.0) for r in res["per_rank"])  # "loop": the compiled loop's ranks
    return {**{k: float(res[k]) for k in (*METRICS, "sims") if k != "wait_us_per_sim"},
            "wait_us_per_sim": 1e6 * spin / max(float(res["sims"]), 1.0)}


def _run_pair(c: dict[str, Any], board: int, seconds: float, policy: str, params: dict[str, str]
              ) -> dict[str, float]:
    """Two runs of configuration `c` at once (seeds 1 and 2): sims/s and the per-simulation figures of one of
    them (the two's mean; CPU and waiting per simulation over both runs' simulations)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as ex:  # each run waits on its own mpiexec
        both = list(ex.map(lambda seed: _run_mpi(c, board, seconds, policy, params, seed=seed), (1, 2)))
    sims = sum(m["sims"] for m in both)
    out = {k: statistics.fmean(m[k] for m in both) for k in both[0]}
    for k in ("cpu_us_per_sim", "wait_us_per_sim"):
        out[k] = sum(m[k] * m["sims"] for m in both) / max(sims, 1.0)
    return out


def _run(args: argparse.Namespace) -> int:
    import json

    from model.config import parse_overrides
    from engine.results import write_json
    from model.results import output_dir

    directory = output_dir(args)
    params = parse_overrides(args.param)
    boards = [int(b) for b in args.boards.split(",")]
    configs = [{"algo": "sequential", "threads": 1}] + _configs(args)
    name = args.name or ("bench_parallel_scaling" if args.scaling else "bench_parallel")
    table: dict[int, dict[str, dict[str, Any]]] = {}

    def result() -> dict[str, Any]:
        return {"seconds": args.seconds, "repeats": args.repeats, "policy": args.policy, "params": params,
                "cpu_count": os.cpu_count(), "load_avg": os.getloadavg(),
                "boards": {str(b): r for b, r in table.items()}}

    def save() -> str | None:
        return str(write_json(name, result(), directory)) if directory is not None else None

    for board in boards:
        runs: dict[str, list[dict[str, float]]] = {_label(c): [] for c in configs}
        for rep in range(args.repeats):
            for c in configs:
                if c.get("trace") and args.keep_traces and rep > 0:
                    continue  # one kept trace per configuration is enough
                t0 = time.monotonic()
                if "ranks" in c:
                    m = _run_mpi(c, board, args.seconds, args.policy, params, args.keep_traces)
                else:
                    m = _run_shared(c["algo"], c["threads"], board, args.seconds, args.policy)
                runs[_label(c)].append(m)
                if not args.quiet:
                    print(f"  {board}x{board} run {rep + 1}/{args.repeats} {_label(c):24s} "
                          f"{m['sims_per_s']:9.0f} sims/s  ({time.monotonic() - t0:.1f} s)", file=sys.stderr)
            table[board] = _rows(runs)
            save()
        rows = table[board]
        if not args.json:
            _print(board, rows)
        traced = [lbl for lbl in rows if lbl.endswith("+trace")]
        if traced:
            plain, with_trace = rows[traced[0][: -len(" +trace")]], rows[traced[0]]
            cost = 1 - with_trace["sims_per_s"] / plain["sims_per_s"] if plain["sims_per_s"] else float("nan")
            cpu_cost = with_trace["cpu_us_per_sim"] / plain["cpu_us_per_sim"] - 1 if plain["cpu_us_per_sim"] else 0
            if not args.json:
                print(f"  recording a trace ({traced[0]}): {100 * cost:+.1f}% of sims/s lost, "
                      f"{100 * cpu_cost:+.1f}% CPU per simulation")
            with_trace["trace_cost"], with_trace["trace_cpu_cost"] = cost, cpu_cost
    path = save()
    if args.json:
        print(json.dumps({**result(), "saved_to": path}, default=float))
    elif path:
        print(f"results: {path}")
    return 0


def _rows(runs: dict[str, list[dict[str, float]]]) -> dict[str, dict[str, Any]]:
    """Medians per configuration so far, speedups against the sequential search of the same run; CPU per
    simulation against the sequential search's, and CPU per remote hop: what a simulation costs over the
    same algorithm on one rank (same threads), divided by the hops it made, in all and without the time the
    ranks spent waiting for work; and without it against the one-rank runs made two at once (`... pair`)."""
    seq = statistics.median(r["sims_per_s"] for r in runs["sequential"])
    seq_cpu = statistics.median(r["cpu_us_per_sim"] for r in runs["sequential"])
    rows = {}
    for label, rs in runs.items():
        if not rs:
            continue
        row = {k: statistics.median(r[k] for r in rs) for k in METRICS}
        row["runs_sims_per_s"] = [r["sims_per_s"] for r in rs]
        row["speedup"] = row["sims_per_s"] / seq if seq else float("nan")
        row["cpu_vs_sequential"] = row["cpu_us_per_sim"] / seq_cpu if seq_cpu else float("nan")
        rows[label] = row
    for label, row in rows.items():
        one = _one_rank(label)
        if one in rows and row["hops_per_sim"] > 0:
            row["cpu_us_per_hop"] = (row["cpu_us_per_sim"] - rows[one]["cpu_us_per_sim"]) / row["hops_per_sim"]
            work = {lbl: rows[lbl]["cpu_us_per_sim"] - rows[lbl]["wait_us_per_sim"] for lbl in (label, one,
                                                                                              f"{one} pair")
                    if lbl in rows}
            row["work_us_per_hop"] = (work[label] - work[one]) / row["hops_per_sim"]
            if f"{one} pair" in work:
                row["pair_us_per_hop"] = (work[label] - work[f"{one} pair"]) / row["hops_per_sim"]
    return rows


def _one_rank(label: str) -> str:
    """The label of the same configuration on one rank ("treesplit 2x1" -> "treesplit 1x1")."""
    algo, _, layout = label.partition(" ")
    if "x" not in layout or layout.endswith(("+trace", "pair")):
        return ""
    return f"{algo} 1x{layout.split('x', 1)[1]}"


def _print(board: int, rows: dict[str, dict[str, Any]]) -> None:
    print(f"\n{board}x{board} Go, medians:")
    print(f"  {'configuration':24s} {'sims/s':>9s} {'speedup':>8s} {'PPS':>9s} {'NPS':>8s} {'msg/sim':>8s} "
          f"{'hops/sim':>8s} {'B/sim':>8s} {'busy':>5s} {'CPU us/sim':>10s} {'vs seq':>6s} {'wait':>5s} "
          f"{'us/hop':>6s} {'w/o wait':>8s} {'vs pair':>7s}")
    for label, r in rows.items():
        hop, work, pair = r.get("cpu_us_per_hop"), r.get("work_us_per_hop"), r.get("pair_us_per_hop")
        print(f"  {label:24s} {r['sims_per_s']:9.0f} {r['speedup']:8.2f} {r['pps']:9.0f} {r['nps']:8.0f} "
              f"{r['messages_per_sim']:8.2f} {r['hops_per_sim']:8.2f} {r['bytes_per_sim']:8.0f} "
              f"{r['busy_frac']:5.2f} {r['cpu_us_per_sim']:10.0f} {r['cpu_vs_sequential']:6.2f} "
              f"{r['wait_us_per_sim']:5.1f} {'' if hop is None else f'{hop:6.1f}':>6s} "
              f"{'' if work is None else f'{work:8.1f}':>8s} {'' if pair is None else f'{pair:7.1f}':>7s}")
