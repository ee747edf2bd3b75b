"""`treesplit export`: a trace as Chrome/Perfetto trace-event JSON (checked field by field) and as OTF2 (read
back with the otf2 package)."""

import json

import numpy as np
import pytest

from engine.trace_files import TraceWriter, read_trace
from model.trace import Meta
from viz.export.chrome import events, tid_of

PACKAGES = [  # t_start, t_end, rank, worker, kind, sim_id
    (0.001, 0.002, 0, 0, "select", 7), (0.0015, 0.0016, 0, -1, "io", -1), (0.003, 0.004, 1, 1, "playout", 7),
    (0.005, 0.0052, 2, -1, "bcast", -1),
]
MESSAGES = [  # t_send, t_recv, src, dst, kind, bytes, sim_id
    (0.002, 0.0025, 0, 1, "MOVE", 40, 7), (0.0041, 0.0045, 1, 0, "UPDATE", 130, 7), (0.0048, 0.005, 1, 2, "SYNC", 96, -1),
]


@pytest.fixture
def trace(tmp_path):
    meta = Meta(runtime="engine", algo="treesplit", game="go", board=9, ranks={"search": 2, "broadcast": 1},
                threads=2, machine="test", versions={"x": "y"}, t_end=0.006)
    with TraceWriter(tmp_path / "t", meta) as w:
        for p in PACKAGES:
            w.package(*p)
        for m in MESSAGES:
            w.message(*m)
    return read_trace(tmp_path / "t")


def test_chrome_trace_events_field_by_field(trace, run_cli, tmp_path):
    out = tmp_path / "t.json"
    r = run_cli("export", str(trace.path), "--format", "chrome", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "4 slices (packages), 3 flows (messages)" in r.stdout
    doc = json.loads(out.read_text())
    assert doc["displayTimeUnit"] == "ms" and doc["otherData"]["algo"] == "treesplit"
    ev = doc["traceEvents"]
    assert ev == events(trace)
    meta = [e for e in ev if e["ph"] == "M"]
    procs = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
    assert procs == {0: "rank 0 (search)", 1: "rank 1 (search)", 2: "rank 2 (broadcast)"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    assert threads == {(0, 0): "IO thread", (0, 1): "worker 0", (1, 0): "IO thread", (1, 2): "worker 1",
                       (2, 0): "IO thread"}
    slices = [e for e in ev if e["ph"] == "X"]
    assert len(slices) == len(PACKAGES)
    for e, (t0, t1, rank, worker, kind, sim) in zip(slices, PACKAGES):
        assert set(e) == {"name", "cat", "ph", "ts", "dur", "pid", "tid", "args"}
        assert (e["name"], e["cat"], e["pid"], e["tid"], e["args"]) == (kind, "package", rank, tid_of(worker),
                                                                          {"sim_id": sim})
        assert e["ts"] == pytest.approx(t0 * 1e6) and e["dur"] == pytest.approx((t1 - t0) * 1e6)
    starts, finishes = [e for e in ev if e["ph"] == "s"], [e for e in ev if e["ph"] == "f"]
    assert len(starts) == len(finishes) == len(MESSAGES)
    for s, f, (ts, tr, src, dst, kind, nb, sim) in zip(starts, finishes, MESSAGES):
        assert s["id"] == f["id"] and s["name"] == f["name"] == kind and s["cat"] == f["cat"] == "message"
        assert (s["pid"], s["tid"], f["pid"], f["tid"]) == (src, 0, dst, 0)  # IO thread to IO thread
        assert s["ts"] == pytest.approx(ts * 1e6) and f["ts"] == pytest.approx(tr * 1e6) and f["bp"] == "e"
        assert s["args"] == {"bytes": nb, "sim_id": sim, "src": src, "dst": dst}
    assert len({s["id"] for s in starts}) == len(MESSAGES)


def test_otf2_archive_reads_back(trace, run_cli, tmp_path):
    import otf2

    out = tmp_path / "otf2"
    r = run_cli("export", str(trace.path), "--format", "otf2", "-o", str(out))
    assert r.returncode == 0, r.stderr
    counts: dict[str, int] = {}
    where: dict[str, set] = {}
    with otf2.reader.open(str(out / "traces.otf2")) as tr:
        assert tr.timer_resolution == 10**9
        names = sorted(r.name for r in tr.definitions.regions)
        groups = sorted(g.name for g in tr.definitions.location_groups)
        last: dict = {}
        for loc, e in tr.events:
            k = type(e).__name__
            counts[k] = counts.get(k, 0) + 1
            where.setdefault(k, set()).add((loc.group.name, loc.name))
            assert e.time >= last.get(loc, 0)  # each thread's events in time order
            last[loc] = e.time
            if k == "MpiSend":
                assert e.msg_length in (40, 130, 96)
    assert names == ["bcast", "io", "playout", "select"]
    assert groups == ["rank 0 (search)", "rank 1 (search)", "rank 2 (broadcast)"]
    assert counts["Enter"] == counts["Leave"] == len(PACKAGES)
    assert counts["MpiSend"] == counts["MpiRecv"] == len(MESSAGES)
    assert where["MpiSend"] == {("rank 0 (search)", "IO thread"), ("rank 1 (search)", "IO thread")}


def test_export_refuses_bad_input_before_work(run_cli, trace, tmp_path):
    r = run_cli("export", str(tmp_path / "nope"), "--format", "chrome")
    assert r.returncode != 0 and "no such directory" in r.stderr and "Traceback" not in r.stderr
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("x")
    r = run_cli("export", str(trace.path), "--format", "otf2", "-o", str(busy))
    assert r.returncode != 0 and "not an empty directory" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("export", str(trace.path), "--format", "chrome")  # default: beside the trace, named after it
    assert r.returncode == 0 and (trace.path.parent / "t.trace.json").exists()
    assert np.isfinite([e.get("ts", 0) for e in json.loads((trace.path.parent / "t.trace.json").read_text())
                        ["traceEvents"]]).all()
