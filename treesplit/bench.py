"""`treesplit bench KIND`: benchmarks that print figures (medians of several runs) and save them to
./results/ (or --out DIR; --update-reference refreshes the committed ones under experiments/results/).

examples:
  treesplit bench playouts --board 19
  treesplit bench parallel --boards 9,19 --seconds 3 --repeats 3
  treesplit bench sim --nodes 1,8 --json --no-save
"""

# Each part contributes benchmark kinds as modules in `<part>/benchmarks/`, each with `register(subparsers)`
# adding one kind (e.g. `playouts`, `search`, `parallel`, `sim`).

from __future__ import annotations

import argparse
import importlib
import pkgutil

PARTS = ("engine", "sim", "viz", "experiments")


def register(sub) -> None:
    p = sub.add_parser("bench", help="benchmarks: print figures (medians of several runs) and save them",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    kinds = p.add_subparsers(dest="bench_kind", metavar="KIND", parser_class=type(p))
    for part in PARTS:
        try:
            pkg = importlib.import_module(f"{part}.benchmarks")
        except ModuleNotFoundError:
            continue
        for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
            if not info.name.startswith("_"):
                importlib.import_module(f"{part}.benchmarks.{info.name}").register(kinds)
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])
