"""`treesplit bench sim`: how fast the simulator runs: events per wall second and wall seconds per
simulated second on 1, 8, 32 and 128 oculus nodes (16 cores each; treesplit adds 1 broadcast node per 4,
printed as 128(+32)), both fidelities, for --algos (default treesplit).

Spans are short (8 simulated milliseconds at 128 nodes, after a warm-up of 20 %: a simulation takes a few
ms, so this is past the start-up transient) and the time per simulated second is extrapolated from them;
the printout says so. CPU time is printed beside wall time because a shared machine inflates the latter.
"events" are SimPy events for the functional fidelity and simulation ends (one event per simulation)
for the statistical one. Goal (issue 4): one simulated second of 128(+32) nodes in
at most 5 minutes of wall time, functional; statistical at least 10x faster than functional.
Writes results/bench_sim.json (or --out DIR; --update-reference refreshes experiments/results/).

examples:
  treesplit bench sim
  treesplit bench sim --nodes 1,8 --fidelity statistical --repeats 1
  treesplit bench sim --algos treesplit,tds,hybrid --scale 0.5 --json --no-save
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from model.results import add_output_flags, output_dir

# `treesplit --help` imports this module: the handlers import what they run (numba kernels, pandas, MPI, Bokeh)
# when they are called, which keeps --help fast.

# simulated seconds measured per node count (after a warm-up of 20 % of it)
SPANS = {"functional": {1: 0.05, 8: 0.02, 32: 0.01, 128: 0.008},
         "statistical": {1: 0.2, 8: 0.05, 32: 0.02, 128: 0.015}}


def register(kinds) -> None:
    p = kinds.add_parser("sim", help="simulator speed: events/s and wall s per simulated s (1..128 nodes)",
                         description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", default="1,8,32,128", help="node counts (default 1,8,32,128)")
    p.add_argument("--algos", default="treesplit",
                   help="algorithms, comma separated (default treesplit; statistical models treesplit, tds, "
                        "root, leaf, hybrid)")
    p.add_argument("--fidelity", choices=("functional", "statistical", "both"), default="both")
    p.add_argument("--repeats", type=int, default=3, help="runs per point; the median is reported")
    p.add_argument("--scale", type=float, default=1.0, help="multiply the simulated spans (shorter: < 1)")
    add_output_flags(p)
    p.set_defaults(func=main)


def measure(fidelity: str, nodes: int, span: float, seed: int, algo: str = "treesplit") -> dict:
    from sim.simulate import SimConfig, prepare, run

    cfg = SimConfig(algo=algo, profile="oculus", nodes=nodes, seconds=span, warmup=0.2 * span,
                    fidelity=fidelity, seed=seed, params={"table_mb": 4} if fidelity == "functional" else {})
    t0 = time.perf_counter()
    prep = prepare(cfg)
    t_build = time.perf_counter() - t0
    c0 = time.process_time()
    s = run(prep)
    cpu = time.process_time() - c0
    simulated = span * 1.2
    return {"bcast_nodes": s["bcast_nodes"], "bcast_ranks": s["bcast_ranks"], "build_s": t_build, "wall_s": s["wall_s"], "cpu_s": cpu, "events": s["events"],
            "sims_per_s": s["sims_per_s"], "events_per_s": s["events"] / s["wall_s"],
            "wall_per_sim_s": s["wall_s"] / simulated, "cpu_per_sim_s": cpu / simulated, "simulated_s": simulated}


def _where(n: int, bcast: int) -> str:
    """Node count, with the broadcast nodes of algorithms that have them: 128(+32)."""
    return f"{n}(+{bcast})" if bcast else f"{n}"


def main(args) -> int:
    from model.errors import UserError
    from model.algorithms import DISTRIBUTED as ALGORITHMS
    from engine.results import write_json
    from sim.commands.simulate import parse_nodes
    from sim.statistical import ALGOS as STAT_ALGOS

    directory = output_dir(args)
    say = (lambda *a, **k: None) if args.json else print  # --json: the one object is all that stdout gets
    nodes = parse_nodes(args.nodes)
    algos = [a.strip() for a in args.algos.split(",") if a.strip()]
    for a in algos:
        if a not in ALGORITHMS:
            raise UserError(f"--algos: unknown algorithm {a!r} (known: {', '.join(ALGORITHMS)})")
    fids = ("functional", "statistical") if args.fidelity == "both" else (args.fidelity,)
    out: dict = {"profile": "oculus", "algos": algos, "repeats": args.repeats, "points": []}
    for fid in fids:  # load (or compile) the numba kernels before anything is timed
        measure(fid, 1, 0.002, seed=99)
    say(f"{'algo':10} {'fidelity':12} {'nodes':>9} {'span s':>8} {'events/s':>10} {'wall s/sim s':>13} "
        f"{'cpu s/sim s':>12} {'build s':>8} {'sims/s':>10}")
    for algo in algos:
        for fid in fids:
            if fid == "statistical" and algo not in STAT_ALGOS:
                say(f"{algo:10} {fid:12} (not modelled by the statistical fidelity)")
                continue
            for n in nodes:
                span = SPANS[fid].get(n, SPANS[fid][max(k for k in SPANS[fid] if k <= n)] if n > 1 else 0.05)
                span *= args.scale
                runs = [measure(fid, n, span, seed, algo) for seed in range(args.repeats)]
                med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
                med.update({"algo": algo, "fidelity": fid, "nodes": n, "bcast_nodes": runs[0]["bcast_nodes"],
                            "bcast_ranks": runs[0]["bcast_ranks"], "span_s": span})
                out["points"].append(med)
                say(f"{algo:10} {fid:12} {_where(n, med['bcast_nodes']):>9} {span:>8.4g} "
                    f"{med['events_per_s']:>10.4g} {med['wall_per_sim_s']:>13.4g} {med['cpu_per_sim_s']:>12.4g} "
                    f"{med['build_s']:>8.3g} {med['sims_per_s']:>10.4g}", flush=True)
    by = {(p["algo"], p["fidelity"], p["nodes"]): p for p in out["points"]}
    big = max(nodes)
    lines = []
    for algo in algos:
        for fid in fids:
            if (algo, fid, big) in by:
                pt = by[(algo, fid, big)]
                lines.append(f"{algo} {fid}, {_where(big, pt['bcast_nodes'])} nodes: ~{pt['wall_per_sim_s']:.0f} s "
                             f"wall (~{pt['cpu_per_sim_s']:.0f} s CPU) per simulated second, extrapolated from "
                             f"{pt['span_s'] * 1.2:.3g} simulated s"
                             + ("; goal <= 300 s" if fid == "functional" and algo == "treesplit" else ""))
                out[f"{algo}_{fid}_wall_per_sim_s"] = pt["wall_per_sim_s"]
                out[f"{algo}_{fid}_cpu_per_sim_s"] = pt["cpu_per_sim_s"]
                if algo == "treesplit":  # the names earlier results used
                    out[f"{fid}_wall_per_sim_s"] = pt["wall_per_sim_s"]
                    out[f"{fid}_cpu_per_sim_s"] = pt["cpu_per_sim_s"]
        if (algo, "functional", big) in by and (algo, "statistical", big) in by:
            ratio = by[(algo, "functional", big)]["cpu_per_sim_s"] / by[(algo, "statistical", big)]["cpu_per_sim_s"]
            lines.append(f"{algo}: statistical is {ratio:.1f}x faster than functional at {big} nodes in CPU time "
                         f"(goal >= 10x)")
            out[f"{algo}_speedup_statistical"] = ratio
            if algo == "treesplit":
                out["speedup_statistical"] = ratio
    say("\n".join(lines))
    if directory is not None:
        out["saved_to"] = str(write_json("bench_sim", out, directory))
        say(f"wrote {out['saved_to']}")
    if args.json:
        print(json.dumps(out, default=float))
    return 0
