"""`treesplit gtp`: play Go over GTP v2 on stdin/stdout (for GoGui, Sabaki, gogui-twogtp, `treesplit match`).

Also home of the player flags shared with `treesplit match` (add_player_arguments / player_config).
"""

from __future__ import annotations

import argparse
import sys

# `treesplit --help` imports this module: the handlers import what they run (numba kernels, pandas, MPI, Bokeh)
# when they are called, which keeps --help fast.


def add_player_arguments(p: argparse.ArgumentParser) -> None:
    """Flags that configure our Player; every one of them passes through to the Player's config."""
    p.add_argument("--algo", default="sequential",
                   help="search algorithm (sequential, tree, and the MPI ones; default sequential)")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--sims", type=int, default=None, help="simulations per move")
    budget.add_argument("--seconds", type=float, default=None, help="seconds per move")
    p.add_argument("--threads", type=int, default=None, help="worker threads (algorithms that use them)")
    p.add_argument("--ranks", type=int, default=None, help="MPI ranks (MPI algorithms)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="any other player or algorithm setting, e.g. --param c=0.7, --param rave=false, "
                        "--param n_dup=2048 (repeatable)")
    p.add_argument("--seed", type=int, default=None, help="random seed (reproducible searches)")


def player_config(args: argparse.Namespace):
    """The Player's config from the flags (validated; ConfigError names a bad field). A --param key the
    player does not have but the algorithm's config does goes to algo_params."""
    import dataclasses

    from engine import algorithms
    from engine.player import PlayerConfig
    from model.config import from_dict, parse_overrides

    data: dict = {"algo": args.algo}
    for flag in ("sims", "seconds", "threads", "ranks", "seed"):
        v = getattr(args, flag, None)
        if v is not None:
            data[flag] = v
    mine = {f.name for f in dataclasses.fields(PlayerConfig)}
    theirs = {f.name for f in dataclasses.fields(algorithms.get(args.algo).config_cls)}
    algo_params = {}
    for k, v in parse_overrides(args.param).items():
        if k not in mine and k in theirs:
            algo_params[k] = v
        else:
            data[k] = v
    if algo_params:
        data["algo_params"] = algo_params
    return from_dict(PlayerConfig, data, where="player: ")


def make_gtp_engine(config, size: int = 19, komi: float = 7.5):
    """A GtpEngine around a Player built from `config`, its kernels loaded and its ranks started (module-level
    so match workers can pickle it)."""
    from engine.gtp import GtpEngine
    from engine.player import Player

    engine = GtpEngine(Player(config), size=size, komi=komi)
    try:
        engine.warm_up()
    except BaseException:
        engine.close()
        raise
    return engine


DESCRIPTION = """\
Speak GTP v2 on stdin/stdout, for any GTP controller (GoGui, Sabaki, Lizzie, gogui-twogtp) or
`treesplit match`. Diagnostics go to stderr. Besides the standard commands: lz-analyze and kgs-analyze
(candidate moves with visits, winrate and principal variation every INTERVAL centiseconds, until the next
command: the analysis view of Sabaki and Lizzie), kata-analyze (the same in KataGo's numbers), printsgf,
kgs-genmove_cleanup, reg_genmove, time_settings and time_left. Before it reads the first command the
engine loads its compiled kernels and starts its MPI ranks (a search of a few dozen simulations, then
forgotten), so that the first genmove takes its budget like every other: a few seconds, minutes after a
code change while numba compiles.

examples:
  treesplit gtp --algo tree --threads 2 --seconds 1            # as Sabaki's engine command
  treesplit gtp --algo sequential --sims 5000 --param c=0.7
  treesplit gtp --algo treesplit --ranks 2 --threads 1 --seconds 2
"""


def register(sub) -> None:
    p = sub.add_parser("gtp", help="play Go over GTP v2 on stdin/stdout",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_player_arguments(p)
    p.add_argument("--name", default="treesplit", help="the engine name reported by `name`")
    p.set_defaults(func=run)


def serve(engine, stdin, stdout, stderr) -> int:
    """The I/O loop: one line in, one response out, until quit or end of input. A thread reads the lines, so
    that an analysis command (lz-analyze ...) can stream its response until the next line arrives; the
    commands themselves, searches included, all run on this thread (an MPI session started from a thread
    would be stopped when that thread ends: the launcher's parent-death signal follows the thread)."""
    import queue
    import threading

    lines: queue.Queue = queue.Queue()

    def read() -> None:
        for line in stdin:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, name="gtp-stdin", daemon=True).start()

    def write(text: str) -> None:
        stdout.write(text)
        stdout.flush()

    def report_error() -> None:
        if engine.last_traceback:
            stderr.write(engine.last_traceback)
            stderr.flush()
            engine.last_traceback = None

    while (line := lines.get()) is not None:
        response = engine.handle(line)
        if response is None:
            continue
        report_error()
        write(response)
        if engine.analysis is not None:
            engine.run_analysis(write, until=lambda: not lines.empty())
            report_error()
            write("\n")  # the blank line that ends the analysis response
        if engine.quit:
            break
    return 0


def run(args: argparse.Namespace) -> int:
    config = player_config(args)
    out = sys.stdout
    # Anything printed by library code (compilers, progress) must not corrupt the protocol stream.
    sys.stdout = sys.stderr
    try:
        engine = make_gtp_engine(config)
        engine.name = args.name
        try:
            return serve(engine, sys.stdin, out, sys.stderr)
        finally:
            engine.close()
    finally:
        sys.stdout = out
