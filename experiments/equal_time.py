"""Issue 3's strength goal: on 9x9 at equal wall time per move, do `tree` (2 threads) and `treesplit` (2 ranks x 1
thread, or `treesplit-1x3`: one rank with an IO thread and 2 workers) beat the sequential engine? Each slot is
one `treesplit match` of our engine against `treesplit gtp --algo sequential` (or `--opponent`, e.g.
`treesplit-1x1`: self-play of 2 ranks against 1) at the same seconds per move, colours alternating; slots run
at once, each optionally confined to two CPUs of its own (`--pin`: taskset), under a wall-clock budget after
which the games played so far are kept.

    .venv/bin/python -m experiments.equal_time run --algo tree --slots 6 --games 40 --out /tmp/eq-tree
    .venv/bin/python -m experiments.equal_time run --algo treesplit --slots 2 --pin --out /tmp/eq-ts
    .venv/bin/python -m experiments.equal_time run --algo treesplit --opponent treesplit-1x1 --slots 1 --out /tmp/eq-2v1
    .venv/bin/python -m experiments.equal_time summarize --run "tree 2t vs sequential|conditions|/tmp/eq-tree"

`summarize` pools every slot's games.csv of each run into one line (wins, losses, draws, win rate with its
95% Wilson interval, Elo) and writes results/<name>.json plus one CSV of all games per run (or --out DIR;
--update-reference: experiments/results/).
A slot needs 2 free cores (3 with `--algo treesplit`'s launcher): use it on a many-core machine, not on a
loaded one.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from engine.results import write_csv, write_json
from model.errors import UserError
from model.results import add_output_flags, output_dir
from model.stats import match_stats

ALGO_ARGS = {"tree": ["--algo", "tree", "--threads", "2"],
             "treesplit": ["--algo", "treesplit", "--ranks", "2", "--threads", "1"],
             # one rank per machine as in Schaefers 2014: its IO thread and two workers (the IO thread idles alone)
             "treesplit-1x3": ["--algo", "treesplit", "--ranks", "1", "--threads", "3"],
             "treesplit-1x1": ["--algo", "treesplit", "--ranks", "1", "--threads", "1"],
             "sequential": ["--algo", "sequential"]}


def run(algo: str, slots: int, games: int, seconds: float, budget: float, out: Path, pin: bool,
        seed: int = 100, opponent_algo: str = "sequential") -> list[Path]:
    """Play `slots` matches at once; returns their directories (each with games.csv, even if cut short)."""
    for flag, name in (("--algo", algo), ("--opponent", opponent_algo)):
        if name not in ALGO_ARGS:
            raise UserError(f"{flag} must be one of {', '.join(ALGO_ARGS)}")
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
    if pin and len(cpus) < 2 * slots:
        raise UserError(f"--pin needs 2 CPUs per slot: {slots} slots, {len(cpus)} CPUs")
    if pin and not shutil.which("taskset"):
        raise UserError("--pin needs taskset (util-linux)")
    me = [sys.executable, "-m", "treesplit"]
    opponent = " ".join([*me, "gtp", *ALGO_ARGS[opponent_algo], "--seconds", str(seconds)])
    procs, dirs = [], []
    for k in range(slots):
        d = out / f"slot-{k}"
        d.mkdir(parents=True, exist_ok=True)
        cmd = [*me, "match", *ALGO_ARGS[algo], "--seconds", str(seconds), "--opponent", opponent, "--board", "9",
               "--games", str(games), "--first-color", "black" if k % 2 == 0 else "white", "--seed",
               str(seed + k), "--out", str(d), "--quiet"]
        if pin:
            cmd = ["taskset", "-c", f"{cpus[2 * k]},{cpus[2 * k + 1]}", *cmd]
        log = open(d / "match.log", "w")
        procs.append((subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT), log))
        dirs.append(d)
    end = time.monotonic() + budget
    try:
        while any(p.poll() is None for p, _ in procs) and time.monotonic() < end:
            time.sleep(1.0)
    finally:
        for p, _ in procs:  # SIGINT: a match writes the games it finished and exits
            if p.poll() is None:
                p.send_signal(2)
        for p, log in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
            log.close()
    return dirs


def pooled(csvs: list[Path]) -> pd.DataFrame:
    frames = [pd.read_csv(f) for f in csvs if f.exists() and f.stat().st_size > 0]
    if not frames:
        raise UserError(f"no games.csv among {', '.join(map(str, csvs)) or 'nothing'}")
    return pd.concat(frames, ignore_index=True)


def summarize(runs: list[tuple[str, str, list[Path]]], name: str, question: str,
              directory: Path | None = None) -> dict:
    """runs: (label, conditions, games.csv files). Writes <name>.json and <name>-<k>.csv to `directory` (None:
    nowhere); returns the summary."""

    out = {"question": question, "runs": []}
    for k, (label, conditions, csvs) in enumerate(runs):
        df = pooled(csvs)
        counts = df["outcome"].value_counts()
        st = match_stats(int(counts.get("win", 0)), int(counts.get("loss", 0)), int(counts.get("draw", 0)))
        games_csv = f"{name}-{k}.csv"
        if directory is not None:
            write_csv(games_csv[:-4], df.to_dict("records"), directory)
        out["runs"].append({"label": label, "conditions": conditions, "games_csv": games_csv,
                            "mean_game_s": float(df["seconds"].mean()), "mean_moves": float(df["moves"].mean()),
                            **st.as_dict()})
        print(f"{label}: {st.wins}-{st.losses}-{st.draws} in {st.games} games, win rate {st.win_rate:.3f} "
              f"[{st.ci_low:.3f}, {st.ci_high:.3f}], Elo {st.elo:+.0f}  ({conditions})")
    if directory is not None:
        write_json(name, out, directory)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.equal_time", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="play matches against the sequential engine (or --opponent) at equal seconds "
                                          "per move")
    r.add_argument("--algo", default="tree", choices=sorted(ALGO_ARGS))
    r.add_argument("--opponent", default="sequential", choices=sorted(ALGO_ARGS),
                   help="the engine played against (default: sequential)")
    r.add_argument("--slots", type=int, default=4, help="matches at once")
    r.add_argument("--games", type=int, default=50, help="games per slot")
    r.add_argument("--seconds", type=float, default=0.1, help="seconds per move, both sides")
    r.add_argument("--budget", type=float, default=3600.0, help="wall seconds, then the games so far are kept")
    r.add_argument("--pin", action="store_true", help="confine each slot to 2 CPUs of its own (taskset)")
    r.add_argument("--seed", type=int, default=100)
    r.add_argument("--out", type=Path, required=True)
    s = sub.add_parser("summarize", help="pool the slots' games into results/NAME.json")
    s.add_argument("--run", action="append", required=True, metavar="LABEL|CONDITIONS|DIR[,DIR...]",
                   help="one run: a label, its conditions, and directories searched for games.csv files")
    s.add_argument("--name", default="strength-9x9-equal-time")
    s.add_argument("--question", default="Do tree (2 threads) and treesplit (2 ranks x 1 thread) beat the "
                   "sequential engine at equal wall time on 9x9 (issue 3)?")
    add_output_flags(s)
    a = p.parse_args(argv)
    try:
        if a.cmd == "run":
            for d in run(a.algo, a.slots, a.games, a.seconds, a.budget, a.out, a.pin, a.seed, a.opponent):
                print(d, (d / "match.log").read_text().strip().splitlines()[-3:] if (d / "match.log").exists() else "")
            return 0
        runs = []
        for spec in a.run:
            parts = spec.split("|")
            if len(parts) != 3:
                raise UserError(f"--run {spec!r}: expected LABEL|CONDITIONS|DIR[,DIR...]")
            dirs = [Path(x) for x in parts[2].split(",") if x]
            csvs = [f for d in dirs for f in ([d] if d.suffix == ".csv" else sorted(d.rglob("games.csv")))]
            runs.append((parts[0], parts[1], csvs))
        summarize(runs, a.name, a.question, output_dir(a))
        return 0
    except UserError as e:
        print(f"treesplit: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
