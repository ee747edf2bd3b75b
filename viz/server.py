"""The Bokeh server: one app per view URL (/overview, /load, /traffic, /tree, /teaching) and / for all
of them, the trace's files under /trace/ (nothing outside the trace directory), and /status as JSON."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any, Callable

from bokeh.application import Application
from bokeh.application.handlers import FunctionHandler
from bokeh.server.server import BaseServer
from bokeh.server.tornado import BokehTornado
from bokeh.server.util import bind_sockets
from tornado.httpserver import HTTPServer
from tornado.ioloop import IOLoop
from tornado.web import HTTPError, RequestHandler, StaticFileHandler

from model.errors import UserError
from viz.app import ALL_VIEWS, Provider, make_app
from viz.views.common import HELP, help_anchor


class TraceFileHandler(StaticFileHandler):
    """Serves a trace directory's files; refuses anything that resolves outside it (.., symlinks)."""

    def validate_absolute_path(self, root: str, absolute_path: str) -> str | None:
        real_root = Path(root).resolve()
        real = Path(absolute_path).resolve()
        if not real.is_relative_to(real_root):
            raise HTTPError(403, "%s is outside the trace directory", self.path)
        if real.is_dir():
            raise HTTPError(403, "directory listing is not served")
        return super().validate_absolute_path(root, absolute_path)


class StatusHandler(RequestHandler):
    def initialize(self, status: Callable[[], dict[str, Any]]) -> None:
        self.status = status

    def get(self) -> None:
        self.set_header("Content-Type", "application/json")
        self.write(json.dumps(self.status(), default=str))


class RunningServer:
    def __init__(self, server: BaseServer, port: int, url: str):
        self.server, self.port, self.url = server, port, url

    def stop(self) -> None:
        self.server.stop()


class HelpHandler(RequestHandler):
    """Every plot's help text, one section per plot (the '?' tools link here)."""

    def get(self) -> None:
        items = "".join(f"<h3 id='{help_anchor(t)}'>{escape(t)}</h3><p>{escape(h)}</p>" for t, h in sorted(HELP.items()))
        self.write(f"<!DOCTYPE html><html><head><title>treesplit dashboard: help</title></head>"
                   f"<body style='font-family:sans-serif;max-width:50em'><h2>What each plot shows</h2>{items}"
                   f"</body></html>")


def start_server(providers: list[Provider], live: bool, host: str = "127.0.0.1", port: int = 0,
                 trace_dirs: list[Path] | None = None, status: Callable[[], dict] | None = None,
                 io_loop: IOLoop | None = None) -> RunningServer:
    """Bind, build the apps and start serving on `io_loop` (the caller runs the loop); `port=0` picks a
    free port (RunningServer.port says which)."""
    apps = {"/": Application(FunctionHandler(make_app(ALL_VIEWS, providers, live, "/")))}
    for name in ALL_VIEWS:
        apps[f"/{name}"] = Application(FunctionHandler(make_app([name], providers, live, f"/{name}")))
    try:
        sockets, bound = bind_sockets(host, port)
    except OSError as e:
        raise UserError(f"cannot serve on {host}:{port} ({e.strerror or e})") from None
    origins = sorted({f"{host}:{bound}", f"localhost:{bound}", f"127.0.0.1:{bound}"})
    patterns: list = [(r"/status", StatusHandler, {"status": status or (lambda: {"ok": True})}),
                      (r"/help", HelpHandler)]
    for i, d in enumerate(trace_dirs or []):
        prefix = "trace" if i == 0 else "compare"
        patterns.append((rf"/{prefix}/(.*)", TraceFileHandler, {"path": str(Path(d).resolve())}))
    url = f"http://{host if ':' not in host else f'[{host}]'}:{bound}"
    try:
        tornado_app = BokehTornado(apps, extra_websocket_origins=origins, extra_patterns=patterns, absolute_url=url)
        http = HTTPServer(tornado_app)
        http.start(1)
        http.add_sockets(sockets)
    except Exception:
        for s in sockets:
            s.close()
        raise
    server = BaseServer(io_loop or IOLoop.current(), tornado_app, http)
    server.start()
    return RunningServer(server, bound, url)
