"""`treesplit bench kernels`: what a distributed simulation costs in the compiled kernels, without MPI.

Every rank's role of an algorithm runs in this one process (model/roles/loopback.py, BatchLoopback: the
batch kernels an engine rank with --threads 1 runs, the records passed between the ranks as the engine
passes them), on tables paged in beforehand, once with one search rank and once with --ranks. It times the
kernels (running packages, taking records in) per simulation, as the median of --repeats runs that take
turns, and the distributed run's extra per simulation and per hop (a MOVE record). No second core's
contention, no MPI calls, no waiting: a hop's own cost, steadier on a shared machine than `bench parallel`,
whose CPU per hop holds all of those. With --parts, one more run of each layout logs every part a package
runs (as a trace does) and gives each kind's cost as base + per tree step (the line `treesplit calibrate
--per-step` fits), on one rank and on --ranks, and where a simulation's kernel time goes on each: us per
simulation of every kind of part, of the batch kernel's work between parts ("batch": queueing packages,
finishing simulations, writing records) and of taking records in ("receive"). With --passes, what one AMAF
update pass over a node's children costs (the bulk of an update step) with its rows in cache (32 nodes over
and over) and out of it (random nodes of a full table), on the table as tt.new_table lays it out and on one
whose arrays start alike round a page (model/blocks.py says why that is slower). Writes
results/bench-kernels.json (or --out DIR).

examples:
  treesplit bench kernels --boards 9,19
  treesplit bench kernels --algos treesplit,tds,dfuct --sims 20000 --repeats 5 --json --no-save
  treesplit bench kernels --algos treesplit,root --parts --repeats 1
  treesplit bench kernels --boards 9,19 --algos treesplit --repeats 1 --passes
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from model.results import add_output_flags, output_dir

DEFAULT_ALGOS = "treesplit,tds,dfuct,leaf"


def register(kinds) -> None:
    p = kinds.add_parser("kernels", help="a distributed simulation's cost in the kernels, every rank in one process",
                         description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--algos", default=DEFAULT_ALGOS, help=f"MPI algorithms, comma-separated (default {DEFAULT_ALGOS})")
    p.add_argument("--boards", default="9", help="Go board sizes, comma-separated (default 9)")
    p.add_argument("--ranks", type=int, default=2, help="search ranks of the distributed run (default 2)")
    p.add_argument("--sims", type=int, default=20000,
                   help="simulations per run, on every board (default 20000; far fewer leave the tree too small "
                        "to show what a hop costs)")
    p.add_argument("--repeats", type=int, default=5, help="runs of each layout (default 5)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("--parts", action="store_true",
                   help="also each kind of part's cost as base + per tree step, and us per simulation of "
                        "each kind, the batch kernel between parts and the receive kernel, on 1 rank and on --ranks")
    p.add_argument("--passes", action="store_true",
                   help="also an AMAF pass's cost, rows in cache and out, spread table layout and aligned")
    add_output_flags(p)
    p.set_defaults(func=_run)


def _roles(algo: str, ranks: int, board: int, sims: int, seed: int) -> list:
    """Every rank's role of a loopback search, their tables paged in."""
    from engine.mpi.config import DistributedConfig
    from engine.mpi.roles_host import make_setup, roles_layout
    from model.roles import make_roles
    from model.tt import prefault

    cfg = DistributedConfig(algo=algo, ranks=ranks, bcast_ranks=0, threads=1, board=board, sims=sims, seed=seed)
    roles = make_roles(algo, roles_layout(cfg), make_setup(cfg), cfg.params)
    for role in roles:
        if getattr(role, "t", None) is not None:
            prefault(role.t)
    return roles


def run_once(algo: str, ranks: int, board: int, sims: int, seed: int = 1) -> dict:
    """One loopback search: kernel seconds per simulation and MOVE records (hops) per simulation."""
    from model.roles.loopback import BatchLoopback

    roles = _roles(algo, ranks, board, sims, seed)
    spent = [0.0]
    for role in roles:
        if hasattr(role, "run_batch"):
            role.run_batch = _timed(role.run_batch, spent)
            role.receive_batch = _timed(role.receive_batch, spent)
    BatchLoopback(roles, seed=seed).run()
    moves = sum(m for r in roles if hasattr(r, "sent_counts") for _, kind, m, _ in r.sent_counts() if kind == "MOVE")
    return {"kernel_us_per_sim": spent[0] / sims * 1e6, "hops_per_sim": moves / sims}


def part_lines(algo: str, ranks: int, board: int, sims: int, seed: int = 1) -> tuple[dict, dict]:
    """One loopback search with every part logged: (lines, per_sim). lines: per kind whose steps vary, the
    least-squares line of a part's cost over its tree steps (sim.calibrate.step_costs), in us, and the mean
    steps per part. per_sim: us per simulation of every kind of part, of the batch kernel's work between
    parts ("batch": queueing, finishing simulations, writing records) and of the receive kernel ("receive":
    taking records in), which together are this run's kernel time (run_once's, plus the logging)."""
    import numpy as np
    import pandas as pd

    from engine.mpi.clock import ticks_per_second
    from model.roles.loopback import BatchLoopback
    from model.roles.treesplit import PKG_KINDS
    from sim.calibrate import step_costs

    roles = _roles(algo, ranks, board, sims, seed)
    logs: list = []
    run_s, receive_s = [0.0], [0.0]
    for role in roles:
        if hasattr(role, "run_batch") and hasattr(role, "take_logs"):
            role.run_batch = _logged(role, logs, run_s)
            role.receive_batch = _timed(role.receive_batch, receive_s)
    BatchLoopback(roles, seed=seed).run()
    if not logs:
        return {}, {}
    kinds, _, t0, t1, steps = (np.concatenate([p[i] for p in logs]) for i in range(5))
    tps = ticks_per_second()
    pk = pd.DataFrame({"t_start": t0 / tps, "t_end": t1 / tps, "kind": np.asarray(PKG_KINDS)[kinds],
                       "steps": steps})
    lines = {k: {"base_us": c.base * 1e6, "per_step_us": c.slope * 1e6, "steps_per_part": c.mean,
                 "parts_per_sim": float((pk["kind"] == k).sum()) / sims}
             for k, c in step_costs(pk).items()}
    per_sim = {k: float(d) / sims * 1e6 for k, d in (pk["t_end"] - pk["t_start"]).groupby(pk["kind"]).sum().items()}
    per_sim["batch"] = max(0.0, run_s[0] / sims * 1e6 - sum(per_sim.values()))
    per_sim["receive"] = receive_s[0] / sims * 1e6
    return lines, per_sim


def _logged(role, logs: list, spent: list):
    run = _timed(role.run_batch, spent)

    def call(max_cycles, log):
        run(max_cycles, True)
        parts, _ = role.take_logs(parts=True, rx=False)
        logs.append(parts)

    return call


def _timed(fn, spent: list):
    def call(*args):
        t0 = time.perf_counter()
        fn(*args)
        spent[0] += time.perf_counter() - t0

    return call


def measure(algo: str, board: int, ranks: int = 2, sims: int = 20000, repeats: int = 5, seed: int = 1,
            parts: bool = False) -> dict:
    from model.errors import ConfigError

    if ranks < 2 or sims < 100 or repeats < 1:
        raise ConfigError("bench kernels: --ranks >= 2, --sims >= 100, --repeats >= 1")
    for r in (1, ranks):  # compile or load the kernels before the clock matters
        run_once(algo, r, board, 200, seed)
    runs: dict[int, list] = {1: [], ranks: []}
    for i in range(repeats):
        for r in ((1, ranks) if i % 2 == 0 else (ranks, 1)):
            runs[r].append(run_once(algo, r, board, sims, seed + i))
    one = statistics.median(x["kernel_us_per_sim"] for x in runs[1])
    many = statistics.median(x["kernel_us_per_sim"] for x in runs[ranks])
    hops = statistics.median(x["hops_per_sim"] for x in runs[ranks])
    row = {"algo": algo, "board": board, "ranks": ranks, "sims_per_run": sims, "repeats": repeats,
           "us_per_sim_1": one, "us_per_sim_n": many, "ratio": many / one, "extra_us_per_sim": many - one,
           "hops_per_sim": hops, "us_per_hop": (many - one) / hops if hops > 0 else None,
           "runs_1": [x["kernel_us_per_sim"] for x in runs[1]],
           "runs_n": [x["kernel_us_per_sim"] for x in runs[ranks]]}
    if parts:
        row["parts_1"], row["per_sim_1"] = part_lines(algo, 1, board, sims, seed)
        row["parts_n"], row["per_sim_n"] = part_lines(algo, ranks, board, sims, seed)
    return row


def _line(p: dict) -> str:
    return f"{p['base_us']:.2f} + {p['per_step_us']:.2f} us/step ({p['steps_per_part']:.2f} steps a part)"


def _run(args) -> int:
    from engine.results import write_json
    from model.algorithms import DISTRIBUTED
    from model.errors import ConfigError

    algos = [a.strip() for a in args.algos.split(",") if a.strip()]
    bad = [a for a in algos if a not in DISTRIBUTED]
    if bad or not algos:
        raise ConfigError(f"--algos: MPI algorithms only, not {', '.join(bad) or 'none'}")
    try:
        boards = [int(b) for b in args.boards.split(",")]
    except ValueError:
        raise ConfigError(f"--boards: comma-separated sizes, not {args.boards!r}") from None
    if any(not 5 <= b <= 19 for b in boards):
        raise ConfigError("--boards: sizes from 5 to 19")
    rows = []
    for board in boards:
        for algo in algos:
            row = measure(algo, board, args.ranks, args.sims, args.repeats, args.seed, args.parts)
            rows.append(row)
            if not args.json and not args.quiet:
                hop = f"{row['us_per_hop']:.1f} us/hop" if row["us_per_hop"] is not None else "no hops"
                print(f"{board}x{board} {algo:10s} 1 rank {row['us_per_sim_1']:6.1f} us/sim, {args.ranks} ranks "
                      f"{row['us_per_sim_n']:6.1f} (x{row['ratio']:.2f}, {row['extra_us_per_sim']:+.1f} us; "
                      f"{row['hops_per_sim']:.2f} hops/sim, {hop})", flush=True)
                for kind in sorted(set(row.get("parts_1", {})) | set(row.get("parts_n", {}))):
                    print(f"  {kind:7s} " + ", ".join(
                        f"{r} rank{'s' if r > 1 else ''} " + (_line(row[key][kind]) if kind in row[key] else "-")
                        for r, key in ((1, "parts_1"), (args.ranks, "parts_n"))), flush=True)
                if "per_sim_n" in row:
                    one, many = row["per_sim_1"], row["per_sim_n"]
                    print(f"  us/sim on 1 rank / {args.ranks}: " + ", ".join(
                        f"{k} {one.get(k, 0.0):.2f} / {many.get(k, 0.0):.2f}"
                        for k in list(many) + [k for k in one if k not in many]), flush=True)
    res = {"ranks": args.ranks, "sims": args.sims, "repeats": args.repeats, "rows": rows}
    if args.passes:
        from engine.benchmarks._passes import pass_costs

        res["passes"] = {str(b): pass_costs(b, args.seed) for b in boards}
        if not args.json and not args.quiet:
            for b, p in res["passes"].items():
                print(f"{b}x{b} AMAF pass over {int(b) ** 2} children: " + "; ".join(
                    f"{layout} {p[layout]['warm_us']:.2f} us in cache, {p[layout]['cold_us']:.2f} out"
                    for layout in ("spread", "aligned")), flush=True)
    out = output_dir(args)
    path = write_json("bench-kernels", res, out) if out else None
    if args.json:
        print(json.dumps(res, indent=2))
    elif path and not args.quiet:
        print(f"written to {path}")
    return 0
