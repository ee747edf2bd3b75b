"""Live telemetry: the wire format of windowed aggregate records (engine/telemetry.py sends them, viz/live.py
receives them).

Each rank sums what it did over a short window (100-250 ms) into one record and pushes it, as one UDP
datagram, to the dashboard; the dashboard aggregates over ranks and time. A record carries the same
quantities as the trace tables (docs/TRACE_FORMAT.md), summed instead of listed:

    v                 wire format version (WIRE_VERSION)
    rank              sender rank (search ranks 0..M-1, broadcast ranks M..M+B-1)
    t0, t1            the window, seconds since the run started (t1 > t0)
    queue_len         MOVE/work queue length at t1
    busy_frac         mean busy fraction of the rank's workers over the window (0..1)
    workers_busy      optional, busy fraction per worker thread over the window
    io_busy           optional, busy fraction of the IO thread over the window (the packages it runs itself
                      and its handling of arrived messages)
    sims_done, playouts_done, nodes_stored, nodes_duplicated
                      the `samples` counters at t1 (cumulative / current levels, as in samples.parquet)
    in_flight         simulations this rank started that have not finished yet
    packages          {package kind: count finished in the window}
    messages          [[dst, kind, count, bytes], ...] sent in the window
    tree              optional, a small tree snapshot: {column of the tree table: list}
    meta              optional, a few meta.json fields (algo, game, board, ranks, threads), sent now and then
    final             optional, rank 0's last record: the search is over ({t_end, seconds, sims, sims_per_s,
                      move, stop_reason}); its sample fields are left out, not zero

Encoding is msgpack (default) or JSON, never pickle: decode() only builds dicts, lists, numbers and strings,
and validates them. A record whose encoding exceeds MAX_DATAGRAM is dropped by the sender (counted), since one
datagram is all a record may take.
"""

from __future__ import annotations

import json
import math
from typing import Any

import msgpack

from model.trace import MESSAGE_KINDS, PACKAGE_KINDS

WIRE_VERSION = 1
MAX_DATAGRAM = 60000  # bytes; below the 65507-byte UDP payload limit
_SAMPLE_FIELDS = ("sims_done", "playouts_done", "nodes_stored", "nodes_duplicated")
_TREE_FIELDS = ("hash", "parent", "move", "depth", "visits", "wins", "owner", "duplicated")
_META_FIELDS = ("algo", "game", "board", "ranks", "threads", "runtime")


class TelemetryError(ValueError):
    """A datagram that is not a valid telemetry record (the listener counts and drops it)."""


def encode(record: dict[str, Any], fmt: str = "msgpack") -> bytes:
    if fmt == "msgpack":
        return msgpack.packb(record, use_bin_type=True)
    if fmt == "json":
        return json.dumps(record, separators=(",", ":")).encode()
    raise ValueError(f"unknown telemetry format {fmt!r} (msgpack or json)")


def decode(data: bytes) -> dict[str, Any]:
    """Parse and validate one datagram (JSON if it starts with '{', else msgpack). Raises TelemetryError."""
    if len(data) > 65535:  # nothing larger fits one UDP datagram
        raise TelemetryError("datagram too large")
    try:
        if data[:1] == b"{":
            rec = json.loads(data)
        else:
            rec = msgpack.unpackb(data, raw=False, strict_map_key=True)
    except (ValueError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError, TypeError) as e:
        raise TelemetryError(f"undecodable datagram: {e}") from None
    return validate(rec)


def _num(rec: dict, key: str, kind: type = float, default: Any = None) -> Any:
    v = rec.get(key, default)
    if v is None:
        if default is None:
            raise TelemetryError(f"missing field {key!r}")
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not math.isfinite(v)):
        raise TelemetryError(f"field {key!r} must be a finite number")
    return kind(v)


def validate(rec: Any) -> dict[str, Any]:
    """Check types and ranges; return a normalised copy with every optional field present."""
    if not isinstance(rec, dict):
        raise TelemetryError("a record must be a map")
    if rec.get("v") != WIRE_VERSION:
        raise TelemetryError(f"wire version {rec.get('v')!r} is not {WIRE_VERSION}")
    out: dict[str, Any] = {"v": WIRE_VERSION, "rank": _num(rec, "rank", int), "t0": _num(rec, "t0"),
                           "t1": _num(rec, "t1")}
    if out["rank"] < 0 or not out["t1"] > out["t0"]:
        raise TelemetryError("need rank >= 0 and t1 > t0")
    out["queue_len"] = _num(rec, "queue_len", int, 0)
    out["busy_frac"] = min(1.0, max(0.0, _num(rec, "busy_frac", float, 0.0)))
    out["in_flight"] = _num(rec, "in_flight", int, 0)
    for f in _SAMPLE_FIELDS:
        out[f] = _num(rec, f, int, 0)
    wb = rec.get("workers_busy") or []
    if not isinstance(wb, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in wb):
        raise TelemetryError("workers_busy must be a list of numbers")
    out["workers_busy"] = [min(1.0, max(0.0, float(x))) for x in wb]
    io = rec.get("io_busy")
    out["io_busy"] = None if io is None else min(1.0, max(0.0, _num(rec, "io_busy", float)))
    pk = rec.get("packages") or {}
    if not isinstance(pk, dict) or not all(k in PACKAGE_KINDS and isinstance(v, int) for k, v in pk.items()):
        raise TelemetryError(f"packages must map kinds in {PACKAGE_KINDS} to counts")
    out["packages"] = dict(pk)
    msgs = rec.get("messages") or []
    if not isinstance(msgs, list):
        raise TelemetryError("messages must be a list of [dst, kind, count, bytes]")
    clean = []
    for m in msgs:
        if (not isinstance(m, (list, tuple)) or len(m) != 4 or m[1] not in MESSAGE_KINDS
                or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in (m[0], m[2], m[3]))):
            raise TelemetryError("each message entry is [dst >= 0, kind, count >= 0, bytes >= 0]")
        clean.append([m[0], m[1], m[2], m[3]])
    out["messages"] = clean
    tree = rec.get("tree")
    if tree is not None:
        if not isinstance(tree, dict) or set(tree) != set(_TREE_FIELDS):
            raise TelemetryError(f"tree must have exactly the columns {_TREE_FIELDS}")
        n = {len(v) if isinstance(v, list) else -1 for v in tree.values()}
        if len(n) != 1 or -1 in n:
            raise TelemetryError("tree columns must be lists of equal length")
    out["tree"] = tree
    meta = rec.get("meta")
    if meta is not None and not isinstance(meta, dict):
        raise TelemetryError("meta must be a map")
    out["meta"] = {k: meta[k] for k in _META_FIELDS if k in meta} if meta else None
    final = rec.get("final")
    if final is not None:
        if not isinstance(final, dict):
            raise TelemetryError("final must be a map")
        out["final"] = {"t_end": _num(final, "t_end"), "seconds": _num(final, "seconds", float, 0.0),
                        "sims": _num(final, "sims", int, 0), "sims_per_s": _num(final, "sims_per_s", float, 0.0),
                        "move": str(final.get("move", "?"))[:32], "stop_reason": str(final.get("stop_reason", ""))[:64]}
    else:
        out["final"] = None
    return out


class Window:
    """Accumulates one rank's activity between two flushes (cheap dict increments on the sending side)."""

    def __init__(self, rank: int, t0: float = 0.0):
        self.rank, self.t0 = rank, t0
        self.packages: dict[str, int] = {}
        self.messages: dict[tuple[int, str], list[int]] = {}

    def package(self, kind: str, n: int = 1) -> None:
        self.packages[kind] = self.packages.get(kind, 0) + n

    def message(self, dst: int, kind: str, nbytes: int) -> None:
        cell = self.messages.get((dst, kind))
        if cell is None:
            self.messages[(dst, kind)] = [1, nbytes]
        else:
            cell[0] += 1
            cell[1] += nbytes

    def flush(self, t1: float, **fields: Any) -> dict[str, Any]:
        """Close the window at t1 and return its record; `fields` are the sample fields (queue_len,
        busy_frac, sims_done, ..., tree, meta). The next window starts at t1."""
        rec = {"v": WIRE_VERSION, "rank": self.rank, "t0": self.t0, "t1": max(t1, self.t0 + 1e-9),
               "packages": self.packages,
               "messages": [[d, k, c, b] for (d, k), (c, b) in self.messages.items()], **fields}
        self.t0 = rec["t1"]
        self.packages, self.messages = {}, {}
        return rec
