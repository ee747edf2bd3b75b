"""`treesplit bench playouts`: Go playouts per second from the empty board, on one core.

A warm-up run compiles (or loads) the kernels, then --runs timed runs of at least --seconds each play
playouts back to back (each from a fresh copy of the empty board, as a search would). Prints the median
rate with min and max, the mean moves per playout, and the share of wall time the process was on a core
(below 1 means other processes took the CPU during the runs; the rate per CPU second is then the better
guide to the speed of one free core); writes the figures to results/bench-playouts-<board>-<policy>.json
(or --out DIR; --update-reference refreshes experiments/results/).

examples:
  treesplit bench playouts --board 9
  treesplit bench playouts --board 19 --policy light --json --no-save
  treesplit bench playouts --game loa --policy knowledge   # Lines of Action: bench-playouts-loa-knowledge.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from model.results import add_output_flags, output_dir

# `treesplit --help` imports this module: the handlers import what they run (numba kernels, pandas, MPI, Bokeh)
# when they are called, which keeps --help fast.


def register(kinds) -> None:
    p = kinds.add_parser("playouts", help="Go playouts per second on one core (median of several runs)",
                         description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--game", choices=("go", "loa"), default="go", help="game (default go)")
    p.add_argument("--board", type=int, default=9, help="board size, 2..19 (default 9)")
    p.add_argument("--policy", choices=("random", "light", "knowledge"), default="random",
                   help="playout policy (Go: random, light; LOA: random, knowledge)")
    p.add_argument("--komi", type=float, default=7.0, help="komi (default 7)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("--runs", type=int, default=5, help="timed runs (default 5)")
    p.add_argument("--seconds", type=float, default=1.0, help="minimum seconds per run (default 1)")
    add_output_flags(p)
    p.set_defaults(func=_run)


def measure(board: int, policy: str, komi: float = 7.0, seed: int = 1, runs: int = 5,
            seconds: float = 1.0, game: str = "go") -> dict:
    from model.errors import ConfigError
    from model.rng import new_rng

    if runs < 1 or seconds <= 0:
        raise ConfigError("runs must be >= 1 and seconds > 0")
    if game == "loa":
        from model.loa.board import loa_playout_batch as run_playouts
        from model.loa.board import make_params as loa_params
        from model.loa.board import new_state

        if policy not in ("random", "knowledge"):
            raise ConfigError(f"LOA playout policy: random or knowledge, not {policy!r}")
        g = loa_params(policy)
    else:
        from model.go.board import go_playout_batch as run_playouts
        from model.go.board import make_params, new_state

        g = make_params(board, komi, policy)
    s0 = new_state(g)
    rng = new_rng(seed)
    t0 = time.perf_counter()
    run_playouts(g, s0, rng, 20)
    compile_s = time.perf_counter() - t0
    # batch size for about 0.1 s, from a short probe
    t0 = time.perf_counter()
    run_playouts(g, s0, rng, 200)
    batch = max(10, int(200 * 0.1 / max(time.perf_counter() - t0, 1e-6)))
    rates, cpu_rates, cpu_shares, moves_total, playouts_total = [], [], [], 0, 0
    for _ in range(runs):
        n = 0
        w0, c0 = time.perf_counter(), time.thread_time()
        while time.perf_counter() - w0 < seconds:
            moves_total += run_playouts(g, s0, rng, batch)
            n += batch
        wall, cpu = time.perf_counter() - w0, time.thread_time() - c0
        rates.append(n / wall)
        cpu_rates.append(n / max(cpu, 1e-9))
        cpu_shares.append(cpu / wall)
        playouts_total += n
    return {
        "game": game, "board": board if game == "go" else 8, "policy": policy, "komi": komi, "seed": seed,
        "runs": runs, "seconds_per_run": seconds,
        "playouts_per_s_median": statistics.median(rates), "playouts_per_s_min": min(rates),
        "playouts_per_s_max": max(rates), "playouts_per_s_runs": rates,
        "playouts_per_cpu_s_median": statistics.median(cpu_rates),
        "moves_per_playout": moves_total / playouts_total, "cpu_share_median": statistics.median(cpu_shares),
        "warmup_s": compile_s,
    }


def _run(args) -> int:
    from engine.results import write_json

    out = output_dir(args)
    res = measure(args.board, args.policy, args.komi, args.seed, args.runs, args.seconds, args.game)
    tag = "loa" if args.game == "loa" else args.board
    path = write_json(f"bench-playouts-{tag}-{args.policy}", res, out) if out else None
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        where = "LOA" if args.game == "loa" else f"{args.board}x{args.board}"
        print(f"playouts {where} {args.policy}: median {res['playouts_per_s_median']:,.0f}/s "
              f"(min {res['playouts_per_s_min']:,.0f}, max {res['playouts_per_s_max']:,.0f}; "
              f"{args.runs} runs of >= {args.seconds:g} s), {res['moves_per_playout']:.1f} moves/playout, "
              f"on-CPU share {res['cpu_share_median']:.2f} "
              f"({res['playouts_per_cpu_s_median']:,.0f} per CPU second)")
        if path:
            print(f"written to {path}")
    return 0
