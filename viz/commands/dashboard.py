"""`treesplit dashboard`: the Bokeh dashboard, live from telemetry or replaying recorded traces."""

from __future__ import annotations

import argparse
from pathlib import Path

from model.errors import UserError

# `treesplit --help` imports this module: the handlers import what they run (numba kernels, pandas, MPI, Bokeh)
# when they are called, which keeps --help fast.

DESCRIPTION = """\
Start the dashboard (a Bokeh server in this process) and print its URLs. Views: / (all, in tabs),
/overview, /load, /traffic, /tree, /teaching. --trace replays a recorded run (engine or simulator) with a
time slider and play/pause; --compare adds a second trace below the first, on shared axes, under a banner
that says how the two configurations differ; --live listens for the ranks' telemetry on HOST:PORT (UDP)
and redraws as it arrives. The trace's own files are served under /trace/, and /status answers JSON.
Stop with Ctrl-C.

examples:
  treesplit dashboard --trace runs/t1
  treesplit dashboard --trace runs/t1 --compare runs/sim1 --port 0 --no-browser
  treesplit dashboard --live 127.0.0.1:7777     # then: treesplit search ... --telemetry 127.0.0.1:7777
"""


def register(sub) -> None:
    p = sub.add_parser("dashboard", help="live or recorded dashboard (Bokeh server)", description=DESCRIPTION,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--live", metavar="HOST:PORT", help="listen for telemetry on this UDP address "
                     "(port 0: any free port, printed)")
    src.add_argument("--trace", metavar="DIR", type=Path, help="a trace directory to replay")
    p.add_argument("--compare", metavar="DIR2", type=Path, help="a second trace, shown below the first")
    p.add_argument("--port", type=int, default=5006, help="HTTP port (0: any free port; default 5006)")
    p.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1: this machine only)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser")
    p.set_defaults(func=run)


def parse_hostport(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise UserError(f"--live {text!r}: expected HOST:PORT, e.g. 127.0.0.1:7777")
    try:
        p = int(port)
    except ValueError:
        raise UserError(f"--live {text!r}: port {port!r} is not a number") from None
    if not 0 <= p <= 65535:
        raise UserError(f"--live {text!r}: port must be 0..65535")
    return host.strip("[]"), p


def run(args) -> int:
    import signal

    from engine.trace_files import read_meta, read_trace

    if not 0 <= args.port <= 65535:
        raise UserError(f"--port {args.port}: must be 0..65535")
    live_addr = parse_hostport(args.live) if args.live else None
    dirs = [d for d in (args.trace, args.compare) if d is not None]
    for d in dirs:  # a bad directory stops here with one clear message, before the heavy imports
        read_meta(d)
    traces = [read_trace(d) for d in dirs]

    from tornado.ioloop import IOLoop

    from viz.app import ALL_VIEWS, TraceProvider
    from viz.rundata import RunData, trace_labels
    from viz.server import start_server
    providers: list = []
    listener = None
    loop = IOLoop.current()
    status = {"mode": "live" if args.live else "recorded", "traces": [str(d) for d in dirs]}
    if args.live:
        from viz.live import LiveAggregator, LiveProvider, TelemetryListener

        host, port = live_addr
        agg = LiveAggregator()
        listener = TelemetryListener(host, port, agg)
        listener.attach(loop)
        providers.append(LiveProvider(agg, listener.address))
    providers += [TraceProvider(RunData.from_trace(t, label=lab)) for t, lab in zip(traces, trace_labels(dirs))]
    endings = {p.data.label: p.data.ending[2] for p in providers if isinstance(p, TraceProvider) and p.data.ending}
    for label, sentence in endings.items():  # a run that did not finish: said here, and marked in the views
        print(f"{label}: {sentence}", flush=True)
    if endings:
        status["ended"] = endings

    def status_fn() -> dict:
        out = dict(status)
        if listener is not None:
            out["live"] = listener.agg.status()
        return out

    srv = start_server(providers, live=bool(args.live), host=args.host, port=args.port, trace_dirs=dirs,
                       status=status_fn, io_loop=loop)
    print(f"treesplit dashboard: {srv.url}/", flush=True)
    for name in ALL_VIEWS:
        print(f"  {name:9s} {srv.url}/{name}", flush=True)
    if listener is not None:
        h, p = listener.address
        print(f"telemetry: listening on udp://{h}:{p}", flush=True)
    if not args.no_browser:
        import webbrowser

        loop.add_callback(lambda: webbrowser.open(f"{srv.url}/"))
    signal.signal(signal.SIGTERM, lambda *a: loop.add_callback_from_signal(loop.stop))
    try:
        loop.start()
    finally:
        srv.stop()
        if listener is not None:
            listener.close()
    return 0

