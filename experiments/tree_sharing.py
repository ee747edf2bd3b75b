"""What sharing one tree costs two threads: `tree` on T threads against T independent sequential searches run
at once on T threads (each its own table), and one sequential search, on an empty Go board. Independent searches
pay only for the machine's busy cores; the shared tree pays for that and for the threads' updates of the same
nodes (engine/tree_parallel.py is lock-free, but both threads' atomic adds move the upper nodes' cache lines
between cores every simulation). The ratio tree/independent is what a machine profile's `[node] tree_share`
models (experiments/SIMULATOR.md).

    .venv/bin/python -m experiments.tree_sharing                      # 9x9 and 19x19, 5 rounds of 2 s -> results
    .venv/bin/python -m experiments.tree_sharing --seconds 0.2 --repeats 1 --no-save

Prints and writes results/tree-sharing.json (or --out DIR; --update-reference refreshes experiments/results/):
medians over the rounds of sims/s and the ratios
tree/sequential, independent/sequential and tree/independent (the share the sharing leaves).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading

from engine.benchmarks.parallel import prepared_searcher
from engine.results import write_json
from engine.timecontrol import Budget
from model.errors import UserError
from model.results import add_output_flags, output_dir


def one_round(board: int, threads: int, seconds: float) -> dict[str, float]:
    def timed(searcher, pos) -> float:
        try:
            return searcher.search(pos, Budget(seconds=seconds)).sims_per_s
        finally:
            searcher.close()

    out = {"sequential": timed(*prepared_searcher("sequential", 1, board, "random")),
           "tree": timed(*prepared_searcher("tree", threads, board, "random"))}
    apart = [prepared_searcher("sequential", 1, board, "random", seed=1 + i) for i in range(threads)]
    rates = [0.0] * threads

    def run(i: int) -> None:
        rates[i] = timed(*apart[i])

    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    out["independent"] = sum(rates)
    return out


def measure(boards: list[int], threads: int, seconds: float, repeats: int) -> list[dict]:
    rows = []
    for board in boards:
        rounds = [one_round(board, threads, seconds) for _ in range(repeats)]
        med = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
        rows.append({"board": board, "threads": threads, "seconds": seconds, "repeats": repeats,
                     **{f"{k}_sims_per_s": round(v) for k, v in med.items()},
                     "tree_vs_sequential": med["tree"] / med["sequential"],
                     "independent_vs_sequential": med["independent"] / med["sequential"],
                     "tree_vs_independent": statistics.median(r["tree"] / r["independent"] for r in rounds)})
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.tree_sharing", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--board", type=int, action="append", default=None, help="9, 13 or 19 (may repeat; 9 and 19)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seconds", type=float, default=2.0, help="per search")
    p.add_argument("--repeats", type=int, default=5, help="rounds; medians are reported")
    add_output_flags(p)
    a = p.parse_args(argv)
    try:
        boards = a.board or [9, 19]
        if any(b not in (9, 13, 19) for b in boards) or a.threads < 2 or a.seconds <= 0 or a.repeats < 1:
            raise UserError("need --board 9, 13 or 19, --threads >= 2, --seconds > 0 and --repeats >= 1")
        directory = output_dir(a)
        rows = measure(boards, a.threads, a.seconds, a.repeats)
    except UserError as e:
        print(f"tree_sharing: error: {e}", file=sys.stderr)
        return 2
    result = {"command": "python -m experiments.tree_sharing " + " ".join(argv or sys.argv[1:]), "rows": rows}
    if directory is not None:
        result["saved_to"] = str(write_json("tree-sharing", result, directory))
    if a.json:
        print(json.dumps(result, default=float))
        return 0
    for r in rows:
        print(f"{r['board']}x{r['board']}: sequential {r['sequential_sims_per_s']} sims/s, tree {r['threads']}t "
              f"{r['tree_vs_sequential']:.2f}x, {r['threads']} independent {r['independent_vs_sequential']:.2f}x, "
              f"tree / independent {r['tree_vs_independent']:.2f}")
    if directory is not None:
        print(f"written to {result['saved_to']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
