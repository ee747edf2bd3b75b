"""Issue 2's strength measurement: 9x9, komi 7, 10,000 simulations per move on one core, against GNU Go 3.8
level 10, at least 100 games with alternating colours; win rate with its 95% Wilson interval and Elo.

    .venv/bin/python -m experiments.strength                 # the full measurement (hours; see below)
    .venv/bin/python -m experiments.strength --games 2       # a smoke run

It is `treesplit match` with the settings fixed, writing to results/strength-9x9/ (SGFs, games.csv,
summary.json; the committed reference run: --out experiments/results/strength-9x9). The same run by hand:
    treesplit match --opponent "gnugo --mode gtp --level 10 --chinese-rules" --games 100 --board 9 --komi 7
        --sims 10000 --algo sequential --out results/strength-9x9
GNU Go counts with Chinese (area) rules here, so its final_score is directly comparable to our
Tromp-Taylor count. --jobs J plays J games at once (one core each): use it only on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import sys

from treesplit.cli import main as cli_main

OPPONENT = "gnugo --mode gtp --level 10 --chinese-rules"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.strength", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", type=int, default=100)
    p.add_argument("--sims", type=int, default=10_000)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--out", default="results/strength-9x9", help="directory (default results/strength-9x9)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE")
    a = p.parse_args(argv)
    args = ["match", "--opponent", OPPONENT, "--games", str(a.games), "--board", "9", "--komi", "7",
            "--sims", str(a.sims), "--algo", "sequential", "--threads", "1", "--jobs", str(a.jobs),
            "--out", a.out]
    for kv in a.param:
        args += ["--param", kv]
    return cli_main(args)


if __name__ == "__main__":
    sys.exit(main())
