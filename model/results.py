"""Where result files (benchmarks, validation, experiments, predictions) go; engine/results.py writes them.

A user's runs never change tracked files: their results go to ./results/ (git-ignored) or to --out DIR.
The reference results committed under experiments/results/ (indexed by experiments/README.md) are
refreshed only on request, with --update-reference. Every command that makes results takes the same
flags (add_output_flags): --out DIR, --json, --no-save, --quiet, --update-reference.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from model.errors import UserError

REFERENCE_DIR = Path(__file__).resolve().parent.parent / "experiments" / "results"
USER_DIR = Path("results")  # relative to where the command runs


def add_output_flags(p: argparse.ArgumentParser, default: str = "", reference: bool = True) -> None:
    """The output flags of every command that makes results. `default`: the folder under ./results/ where
    they go ("" for ./results/ itself); `reference`: the command can refresh committed reference results."""
    where = "/".join(x for x in ("results", default, "...") if x)
    g = p.add_argument_group("output (the same flags for bench, validate, experiment and predict)")
    g.add_argument("--out", metavar="DIR", default=None, help=f"directory for the result files (default ./{where})")
    g.add_argument("--json", action="store_true", help="print the result as one JSON object on stdout")
    g.add_argument("--no-save", action="store_true", help="write no result files")
    g.add_argument("--quiet", action="store_true", help="no progress on stderr")
    if reference:
        g.add_argument("--update-reference", action="store_true",
                       help="refresh the committed reference results under experiments/results/ instead "
                            "(maintainers; the files are indexed by experiments/README.md)")
    p.set_defaults(output_default=default, update_reference=False)


def output_dir(args: argparse.Namespace, name: str = "") -> Path | None:
    """Where this run's result files go, from the flags of add_output_flags: --out DIR, else
    ./results/<default>/<name>; with --update-reference experiments/results/<name>; None with --no-save."""
    if args.no_save:
        if args.out or args.update_reference:
            raise UserError("--no-save: writes nothing, so it takes neither --out nor --update-reference")
        return None
    if args.update_reference:
        if args.out:
            raise UserError("--update-reference: writes to experiments/results/, so it takes no --out")
        return REFERENCE_DIR / name
    return Path(args.out) if args.out else USER_DIR / args.output_default / name
