"""A trace as Chrome/Perfetto trace-event JSON (the "JSON Object Format" of Google's Trace Event Format):
every rank a process, its IO thread and worker threads its threads, every work package a complete ("X")
slice, every message a flow ("s" at the sender's IO thread when it is sent, "f" at the receiver's when it
arrives), and "M" metadata naming the processes and threads. Opens in ui.perfetto.dev and chrome://tracing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from engine.trace_files import Trace

US = 1e6  # the format's timestamps are microseconds


def tid_of(worker: int) -> int:
    """Thread id: 0 for the IO thread (worker -1), 1 + w for worker w (ids must be non-negative)."""
    return int(worker) + 1


def thread_name(worker: int) -> str:
    return "IO thread" if worker < 0 else f"worker {worker}"


def events(trace: Trace) -> list[dict[str, Any]]:
    """The trace's events, metadata first, then slices, then flows."""
    meta = trace.meta
    ranks = meta.get("ranks") or {}
    M, B = int(ranks.get("search", 1) or 1), int(ranks.get("broadcast", 0) or 0)
    pk, ms = trace.packages, trace.messages
    rank_col = pk["rank"].to_numpy().astype(np.int64)
    worker_col = pk["worker"].to_numpy().astype(np.int64)
    threads: dict[int, set[int]] = {r: {-1} for r in range(M + B)}
    for r, w in zip(rank_col.tolist(), worker_col.tolist()):
        threads.setdefault(r, {-1}).add(w)
    for c in ("src", "dst"):
        for r in ms[c].astype(int).unique().tolist():
            threads.setdefault(r, {-1})
    out: list[dict[str, Any]] = []
    for r in sorted(threads):
        role = "search" if r < M else "broadcast"
        out.append({"name": "process_name", "ph": "M", "pid": r, "tid": 0, "args": {"name": f"rank {r} ({role})"}})
        out.append({"name": "process_sort_index", "ph": "M", "pid": r, "tid": 0, "args": {"sort_index": r}})
        for w in sorted(threads[r]):
            out.append({"name": "thread_name", "ph": "M", "pid": r, "tid": tid_of(w), "args": {"name": thread_name(w)}})
            out.append({"name": "thread_sort_index", "ph": "M", "pid": r, "tid": tid_of(w),
                        "args": {"sort_index": tid_of(w)}})
    ts = pk["t_start"].to_numpy(np.float64) * US
    dur = np.maximum(pk["t_end"].to_numpy(np.float64) * US - ts, 0.0)
    kinds = pk["kind"].astype(str).tolist()
    sims = pk["sim_id"].to_numpy().astype(np.int64).tolist()
    for t, d, r, w, k, s in zip(ts.tolist(), dur.tolist(), rank_col.tolist(), worker_col.tolist(), kinds, sims):
        out.append({"name": k, "cat": "package", "ph": "X", "ts": t, "dur": d, "pid": r, "tid": tid_of(w),
                    "args": {"sim_id": s}})
    send = (ms["t_send"].to_numpy(np.float64) * US).tolist()
    recv = (ms["t_recv"].to_numpy(np.float64) * US).tolist()
    for i, (t0, t1, a, b, k, n, s) in enumerate(zip(send, recv, ms["src"].astype(int).tolist(),
                                                    ms["dst"].astype(int).tolist(), ms["kind"].astype(str).tolist(),
                                                    ms["bytes"].astype(int).tolist(),
                                                    ms["sim_id"].astype(int).tolist())):
        args = {"bytes": n, "sim_id": s, "src": a, "dst": b}
        out.append({"name": k, "cat": "message", "ph": "s", "id": i, "ts": t0, "pid": a, "tid": 0, "args": args})
        out.append({"name": k, "cat": "message", "ph": "f", "bp": "e", "id": i, "ts": max(t1, t0), "pid": b,
                    "tid": 0, "args": args})
    return out


def write_chrome(trace: Trace, path: Path) -> dict[str, int]:
    """Write the JSON file; returns how many slices and flows it holds."""
    ev = events(trace)
    doc = {"traceEvents": ev, "displayTimeUnit": "ms",
           "otherData": {"source": "treesplit", "runtime": str(trace.meta.get("runtime", "")),
                         "algo": str(trace.meta.get("algo", "")), "trace": str(trace.path)}}
    Path(path).write_text(json.dumps(doc, separators=(",", ":")))
    return {"slices": len(trace.packages), "flows": len(trace.messages)}
