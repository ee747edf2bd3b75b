"""`treesplit bench soak`: a long GTP session, as a tournament runs one. One `treesplit gtp` process plays
--games games against itself (clear_board, then genmove for each side in turn, up to --moves moves or until
the game ends), and after every game this reads the memory of its processes (the resident set of every MPI
rank, or of the engine process for sequential and tree) and keeps the time of each move.

Memory must stay flat from game to game and moves must not get slower: the summary gives each rank's RSS
growth from game 2 to the last (game 1 starts the ranks and loads the kernels) and the median move time of
the first games against the last ones. Results go to results/bench-soak-<algo>-<board>.json (or --out DIR).
Reads /proc: Linux only.

examples:
  treesplit bench soak --algo treesplit --games 50 --sims 300
  treesplit bench soak --algo root --ranks 2 --threads 1 --games 20 --moves 10 --seconds 0.1
  treesplit bench soak --algo sequential --games 5 --json --no-save
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from model.errors import UserError
from model.results import add_output_flags, output_dir

# `treesplit --help` imports this module: the handlers import what they run (numba kernels, pandas, MPI, Bokeh)
# when they are called, which keeps --help fast.

DEFAULT_SIMS = 300
SLOWDOWN_GAMES = 10  # the median move time of this many games at either end (fewer in a short soak)


def register(kinds) -> None:
    from engine.commands.gtp import add_player_arguments

    p = kinds.add_parser("soak", help="one GTP session, many games: memory per rank and time per move, game "
                                      "by game", description=__doc__,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    add_player_arguments(p)
    p.add_argument("--games", type=int, default=20, help="games in the session (default 20)")
    p.add_argument("--moves", type=int, default=20, help="moves per game at most (default 20)")
    p.add_argument("--board", type=int, default=9, help="board size (default 9)")
    p.add_argument("--komi", type=float, default=7.0, help="komi (default 7)")
    add_output_flags(p, reference=False)  # a machine's soak: no committed reference to refresh
    p.set_defaults(func=run)


# --- memory of a process tree (Linux /proc) -------------------------------------------------------------------
def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(p.name))
    return kids


def _rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _mpi_rank(pid: int) -> int | None:
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    for var in (b"PMI_RANK=", b"OMPI_COMM_WORLD_RANK="):
        for e in env:
            if e.startswith(var):
                return int(e[len(var):])
    return None


def _tree(pid: int) -> list[int]:
    """`pid` and every process below it."""
    kids, out, todo = _children(), [], [pid]
    while todo:
        q = todo.pop()
        out.append(q)
        todo.extend(kids.get(q, []))
    return out


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` and every process below it (the ranks of its MPI job)."""
    import os

    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for q in _tree(pid):
        try:
            fields = Path(f"/proc/{q}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
        except (OSError, IndexError, ValueError):
            continue
    return total / tick


def process_memory(pid: int) -> dict[int, float]:
    """RSS (MiB) of the MPI ranks that process `pid` started, by rank; {0: its own} when it started none."""
    ranks = {}
    for q in _tree(pid)[1:]:
        rank = _mpi_rank(q)
        rss = _rss_mib(q) if rank is not None else None
        if rss is not None:
            ranks[rank] = rss
    if ranks:
        return dict(sorted(ranks.items()))
    own = _rss_mib(pid)
    return {0: own} if own is not None else {}


# --- the session ----------------------------------------------------------------------------------------------
def _player_flags(args: argparse.Namespace) -> list[str]:
    flags = ["--algo", args.algo]
    for name in ("sims", "seconds", "threads", "ranks", "seed"):
        v = getattr(args, name)
        if v is not None:
            flags += [f"--{name}", str(v)]
    for kv in args.param:
        flags += ["--param", kv]
    return flags


def soak(args: argparse.Namespace, progress: bool = False) -> list[dict[str, Any]]:
    """Play the games in one GTP session; one row per game: moves, their times, RSS per rank after it."""
    from tqdm import tqdm

    from engine.gtp_client import GtpDied, GtpProcess, GtpTimeout

    command = shlex.join([sys.executable, "-m", "treesplit", "gtp", *_player_flags(args)])
    rows, cpu = [], 0.0
    with tempfile.TemporaryFile("w+") as log:
        engine = GtpProcess(command, name="treesplit gtp", stderr=log, timeout=900.0)
        try:
            for cmd in (f"boardsize {args.board}", f"komi {args.komi:g}"):
                if not engine.send(cmd).ok:
                    raise UserError(f"the engine refused {cmd!r}")
            for game in tqdm(range(1, args.games + 1), desc=f"soak {args.algo}", unit="game", disable=not progress,
                             dynamic_ncols=True):
                engine.send("clear_board")
                times, passes = [], 0
                for move in range(args.moves):
                    t0 = time.perf_counter()
                    reply = engine.send(f"genmove {'bw'[move % 2]}")
                    times.append(time.perf_counter() - t0)
                    if not reply.ok:
                        raise GtpDied(f"genmove failed: {reply.text}")
                    word = reply.text.lower()
                    passes = passes + 1 if word == "pass" else 0
                    if word == "resign" or passes == 2:
                        break
                now = cpu_seconds(engine.proc.pid)
                used, cpu = now - cpu, now
                rows.append({"game": game, "moves": len(times), "move_s_median": statistics.median(times),
                             "move_s": times, "cpu_s_per_move": used / len(times),
                             "rss_mib": process_memory(engine.proc.pid)})
        except (GtpDied, GtpTimeout) as e:
            log.seek(0)
            tail = "".join(log.readlines()[-15:])
            raise UserError(f"the GTP engine failed in game {len(rows) + 1}: {e}\n{tail}") from None
        finally:
            engine.close(grace=30.0)
    return rows


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """RSS growth per rank from game 2 to the last (%); the median move time of the first and the last games
    (from game 2), and the trend of the games' median move times (a least-squares line through them, its
    end over its start: on a shared machine single games' medians scatter by tens of percent)."""
    import numpy as np

    base = rows[1] if len(rows) > 1 else rows[0]
    last = rows[-1]
    growth = {r: 100.0 * (last["rss_mib"][r] - mib) / mib for r, mib in base["rss_mib"].items()
              if r in last["rss_mib"]}
    later = rows[1:] or rows
    k = max(1, min(SLOWDOWN_GAMES, len(later) // 3))
    first = statistics.median(t for row in later[:k] for t in row["move_s"])
    final = statistics.median(t for row in later[-k:] for t in row["move_s"])

    def trend(key: str) -> float | None:
        if len(later) < 3:
            return None
        x = np.array([row["game"] for row in later], dtype=float)
        slope, start = np.polyfit(x, [row[key] for row in later], 1)
        at_start = start + slope * x[0]
        return float((start + slope * x[-1]) / at_start) if at_start > 0 else None

    return {"rss_from_game": base["game"], "rss_growth_pct": growth, "max_rss_growth_pct": max(growth.values()),
            "move_s_first": first, "move_s_last": final, "move_slowdown": final / first if first > 0 else None,
            "move_trend": trend("move_s_median"), "cpu_trend": trend("cpu_s_per_move"), "games_compared": k}


def run(args: argparse.Namespace) -> int:
    from engine.commands.gtp import player_config
    from engine.results import write_json

    if not Path("/proc/self/status").exists():
        raise UserError("bench soak reads process memory from /proc (Linux only)")
    if args.games < 1 or args.moves < 1:
        raise UserError("--games and --moves: must be >= 1")
    if args.sims is None and args.seconds is None:
        args.sims = DEFAULT_SIMS
    directory = output_dir(args)
    config = player_config(args)  # a bad flag is refused here, before the engine starts
    from model.go.board import make_params

    make_params(args.board, args.komi)  # and a bad board size or komi
    rows = soak(args, progress=not (args.json or args.quiet))
    out = {"algo": args.algo, "board": args.board, "games": args.games, "moves_per_game": args.moves,
           "player": _player_flags(args), "tt_mb": config.tt_mb, **summarise(rows), "per_game": rows}
    if directory is not None:
        out["saved_to"] = str(write_json(f"bench-soak-{args.algo}-{args.board}", out, directory))
    if args.json:
        print(json.dumps(out, default=float))
        return 0
    ranks = sorted(rows[0]["rss_mib"])
    print(f"{args.algo} on {args.board}x{args.board}, {len(rows)} games of up to {args.moves} moves "
          f"({' '.join(_player_flags(args)[2:])}):")
    print("  game  moves  median move  CPU per move  " + "  ".join(f"rank {r} MiB" for r in ranks))
    for row in rows:
        print(f"  {row['game']:>4}  {row['moves']:>5}  {row['move_s_median'] * 1e3:>8.0f} ms  "
              f"{row['cpu_s_per_move'] * 1e3:>9.0f} ms  "
              + "  ".join(f"{row['rss_mib'].get(r, float('nan')):>10.0f}" for r in ranks))
    growth = ", ".join(f"rank {r} {g:+.1f}%" for r, g in out["rss_growth_pct"].items())
    print(f"  RSS from game {out['rss_from_game']} to {len(rows)}: {growth}")
    print(f"  median move: {out['move_s_first'] * 1e3:.0f} ms in the first {out['games_compared']} games, "
          f"{out['move_s_last'] * 1e3:.0f} ms in the last {out['games_compared']} (x{out['move_slowdown']:.2f})"
          + (f"; fitted over the games x{out['move_trend']:.2f} (CPU per move x{out['cpu_trend']:.2f})"
             if out["move_trend"] is not None else ""))
    if directory is not None:
        print(f"  saved to {out['saved_to']}")
    return 0
