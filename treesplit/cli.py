"""The `treesplit` command: a thin dispatcher.

This is the one module that imports every part. Each part owns its subcommands: every module in
`<part>/commands/` defines `register(subparsers)` and adds one subcommand (importing heavy modules only
inside its handler, so `treesplit --help` stays fast). This file only discovers and wires them up, and
turns user errors into one clear message and a non-zero exit.
"""

from __future__ import annotations

import argparse
import sys

from model.errors import UserError

# Parts that contribute subcommands, in the order of --help.
PARTS = ("engine", "sim", "viz", "experiments")
EXAMPLES = """\
examples:
  treesplit demo                                   # the main job: a watched MPI run, its replay, a prediction
  treesplit search --algo treesplit --ranks 2 --board 9 --seconds 5 --trace runs/t1
  treesplit dashboard --trace runs/t1
  treesplit COMMAND --help                         # each command, with examples of its own
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's default prints usage twice for subparsers
        self.print_usage(sys.stderr)
        raise UserError(message)


class _Version(argparse.Action):
    """--version, reading the version only when asked (treesplit.__version__ reads package metadata)."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        import treesplit

        print(f"treesplit {treesplit.__version__}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    import importlib
    import pkgutil

    parser = _Parser(
        prog="treesplit",
        description=(
            "Distributed Monte-Carlo Tree Search for study: a real MPI engine (UCT-Treesplit and friends), "
            "a SimPy simulator of the same message flows, and Bokeh dashboards over their traces."
        ),
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for part in PARTS:
        pkg = importlib.import_module(f"{part}.commands")
        for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
            if not info.name.startswith("_"):
                importlib.import_module(f"{part}.commands.{info.name}").register(sub)
    from treesplit import bench

    bench.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        rc = args.func(args)
        return int(rc or 0)
    except UserError as e:
        print(f"treesplit: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("treesplit: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
