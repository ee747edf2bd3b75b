"""The dashboard server: starts on a free port, serves every view and the trace's files (nothing outside
the trace directory), and refuses a bad trace directory with one clear message."""

import http.client
import json
import os
import socket
from urllib.parse import urlparse

import pytest
from viz_helpers import Dashboard

from viz.synthetic import write_synthetic_trace

VIEW_PATHS = ["/", "/overview", "/load", "/traffic", "/tree", "/teaching"]


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    base = tmp_path_factory.mktemp("traces")
    a = write_synthetic_trace(base / "sim", sims=300, tree_nodes=2000, seed=1)
    b = write_synthetic_trace(base / "engine", sims=300, tree_nodes=2000, seed=2, runtime="engine")
    (base / "outside.txt").write_text("secret")
    os.symlink(base / "outside.txt", a / "link.txt")
    return a, b


def _raw_get(url: str, path: str) -> int:
    u = urlparse(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=20)
    c.request("GET", path)  # sent as is: no client-side normalisation of ".."
    status = c.getresponse().status
    c.close()
    return status


def test_recorded_compare_serves_every_view_and_only_trace_files(traces, tmp_path):
    a, b = traces
    with Dashboard("--trace", str(a), "--compare", str(b), log=tmp_path / "server.log") as dash:
        assert dash.url.startswith("http://127.0.0.1:")
        for path in VIEW_PATHS:
            status, body = dash.get(path)
            assert status == 200, path
            assert b"bokeh" in body.lower()
        status, body = dash.get("/help")
        assert status == 200 and b"Top of the tree" in body and b"Busy fraction per rank" in body
        st = dash.status()
        assert st["mode"] == "recorded" and len(st["traces"]) == 2
        status, body = dash.get("/trace/meta.json")
        assert status == 200 and json.loads(body)["runtime"] == "sim"
        assert json.loads(dash.get("/compare/meta.json")[1])["runtime"] == "engine"
        for bad in ("/trace/../../outside.txt", "/trace/%2e%2e/outside.txt", "/trace/link.txt", "/trace/",
                    "/trace/../../../../etc/passwd"):
            assert _raw_get(dash.url, bad) in (403, 404), bad
        log = dash.log()
        assert "Traceback" not in log and "Error running application handler" not in log, log[-3000:]


def test_bad_trace_directory_is_one_clear_error(run_cli, tmp_path):
    r = run_cli("dashboard", "--trace", str(tmp_path / "nope"), "--no-browser", timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("treesplit: error:") and "no such directory" in r.stderr
    r = run_cli("dashboard", "--trace", str(tmp_path), "--no-browser", timeout=60)
    assert r.returncode == 2 and "not a trace directory" in r.stderr and "Traceback" not in r.stderr


def test_bad_live_address_and_busy_port_are_clear_errors(run_cli, traces):
    r = run_cli("dashboard", "--live", "nonsense", "--no-browser", timeout=60)
    assert r.returncode == 2 and "HOST:PORT" in r.stderr and "Traceback" not in r.stderr
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    try:
        r = run_cli("dashboard", "--trace", str(traces[0]), "--port", str(s.getsockname()[1]), "--no-browser",
                    timeout=60)
    finally:
        s.close()
    assert r.returncode == 2 and "cannot serve on" in r.stderr and "Traceback" not in r.stderr


def test_report_is_one_standalone_html(run_cli, traces, tmp_path):
    out = tmp_path / "report.html"
    r = run_cli("report", str(traces[0]), "--compare", str(traces[1]), "-o", str(out), timeout=120)
    assert r.returncode == 0, r.stderr
    html = out.read_text()
    assert "<script src=" not in html.replace("<script src=\"data:", "")  # everything inlined, no network
    for title in ("Search speed", "Busy fraction per rank", "Messages sender", "Top of the tree"):
        assert title in html
    assert "treesplit report: sim vs engine" in html  # both traces, side by side
    r = run_cli("report", str(tmp_path / "nope"), "-o", str(out), timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr
