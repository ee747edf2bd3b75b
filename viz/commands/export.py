"""`treesplit export`: a recorded trace in the formats of the HPC trace viewers."""

from __future__ import annotations

import argparse
from pathlib import Path

from model.errors import UserError

# `treesplit --help` imports this module: the handlers import what they run (numba kernels, pandas, MPI, Bokeh)
# when they are called, which keeps --help fast.

DESCRIPTION = """\
Write a recorded trace (engine or simulator) in a format the HPC trace viewers open:
  chrome  Chrome/Perfetto trace-event JSON: ranks as processes, the IO thread and workers as threads, work
          packages as slices, messages as flow arrows. Open it in ui.perfetto.dev or chrome://tracing.
  otf2    an OTF2 archive (a directory; open OUT/traces.otf2 in Vampir): packages as Enter/Leave of a region
          per kind, messages as MPI send/receive events.

examples:
  treesplit export runs/t1 --format chrome              # writes runs/t1.trace.json
  treesplit export runs/t1 --format otf2 -o runs/t1-otf2
"""

SUFFIX = {"chrome": ".trace.json", "otf2": "-otf2"}


def register(sub) -> None:
    p = sub.add_parser("export", help="a trace as Chrome/Perfetto JSON or OTF2 (Vampir)", description=DESCRIPTION,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", metavar="TRACE", type=Path, help="a trace directory")
    p.add_argument("--format", required=True, choices=sorted(SUFFIX), help="chrome (JSON file) or otf2 (directory)")
    p.add_argument("-o", "--out", type=Path, default=None,
                   help="output file (chrome) or directory (otf2); default: beside TRACE, named after it")
    p.set_defaults(func=run)


def run(args) -> int:
    from engine.trace_files import read_meta, read_trace

    read_meta(args.trace)  # a bad directory stops here with one clear message
    out = args.out or args.trace.parent / (args.trace.resolve().name + SUFFIX[args.format])
    if args.format == "otf2":
        from viz.export.otf2 import require_otf2

        require_otf2()
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise UserError(f"{out}: exists and is not an empty directory (OTF2 writes a directory of files)")
    elif out.is_dir():
        raise UserError(f"{out}: is a directory (chrome writes one JSON file)")
    if not out.parent.exists():
        raise UserError(f"{out.parent}: no such directory")
    trace = read_trace(args.trace)
    if args.format == "chrome":
        from viz.export.chrome import write_chrome

        n = write_chrome(trace, out)
        print(f"wrote {out}: {n['slices']:,} slices (packages), {n['flows']:,} flows (messages); "
              "open it in ui.perfetto.dev")
    else:
        from viz.export.otf2 import write_otf2

        n = write_otf2(trace, out)
        print(f"wrote {out}/traces.otf2: {n['regions']:,} package regions, {n['messages']:,} messages; "
              "open it in Vampir")
    return 0
