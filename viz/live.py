"""Live mode: a UDP listener for model/telemetry records and the aggregator that turns them into RunData.

The ranks only sum their activity into short windows and send one datagram per window; everything else
(joining ranks, binning, matrices, rates) happens here, in the dashboard process, so a run pays nothing
for being watched beyond a counter increment and a non-blocking sendto. The listener runs on the
server's Tornado IOLoop (no thread): datagrams are read as they arrive, and sessions poll `version`.
"""

from __future__ import annotations

import math
import socket
import time
from typing import Any

import numpy as np
import pandas as pd

from model.errors import UserError
from model.telemetry import TelemetryError, decode
from model.trace import MESSAGE_KINDS, TABLES
from viz.intervals import nice_step
from viz.views.common import plural
from viz.rundata import Messages, RunData, kind_bins, lane_label, per_rank_means, series_from_samples

LIVE_MIN_BIN = 0.1  # s
LIVE_MAX_BINS = 600
MAX_CELLS = 2_000_000  # message cells kept; beyond, cells are merged into coarser time buckets
_SAMPLE_COLS = ("t", "rank", "queue_len", "busy_frac", "sims_done", "playouts_done", "nodes_stored",
                "nodes_duplicated", "in_flight")


class LiveAggregator:
    """Accumulates validated telemetry records; `snapshot()` gives a RunData of everything so far."""

    def __init__(self, label: str = "live"):
        self.label = label
        self.version = 0
        self.received = 0
        self.rejected = 0
        self.last_error = ""
        self.last_arrival = 0.0
        self.meta: dict[str, Any] = {"runtime": "engine", "algo": "?", "game": "?", "board": None,
                                     "ranks": {"search": 0, "broadcast": 0}, "threads": None}
        self._samples: list[tuple] = []
        self._cells: list[tuple] = []  # (t, src, dst, kind, count, bytes)
        self._cells_np: Messages | None = None
        self._bucket = 0.0  # time resolution of merged cells (0: exact windows)
        self._workers: list[tuple] = []  # (t, rank, worker, busy); worker -1: the IO thread
        self.final: dict[str, Any] | None = None  # rank 0's last record: the search is over
        self._trees: dict[int, tuple[float, dict]] = {}
        self._kind_index = {k: i for i, k in enumerate(MESSAGE_KINDS)}
        self._snap: RunData | None = None
        self._snap_version = -1
        self.ranks_seen: set[int] = set()
        self._window_len: list[float] = []

    # --- input ------------------------------------------------------------------------------------
    def feed(self, datagram: bytes) -> bool:
        try:
            rec = decode(datagram)
        except TelemetryError as e:
            self.rejected += 1
            self.last_error = str(e)
            return False
        self.add(rec)
        return True

    def add(self, rec: dict[str, Any]) -> None:
        r, t1 = rec["rank"], rec["t1"]
        self.ranks_seen.add(r)
        if rec.get("final"):  # not a sample: its counters are left out, not zero
            self.final = rec["final"]
            self._bump()
            return
        self._window_len.append(t1 - rec["t0"])
        self._samples.append((t1, r, rec["queue_len"], rec["busy_frac"], rec["sims_done"], rec["playouts_done"],
                              rec["nodes_stored"], rec["nodes_duplicated"], rec["in_flight"]))
        tm = (rec["t0"] + t1) / 2  # cells are binned by time like trace messages: stamp the window's middle
        for dst, kind, count, nbytes in rec["messages"]:
            self._cells.append((tm, r, dst, self._kind_index[kind], count, nbytes))
        for w, b in enumerate(rec["workers_busy"]):
            self._workers.append((t1, r, w, b))  # end-stamped, like samples
        if rec.get("io_busy") is not None:
            self._workers.append((t1, r, -1, rec["io_busy"]))
        if rec["tree"] is not None:
            self._trees[r] = (t1, rec["tree"])
        if rec["meta"]:
            self.meta.update(rec["meta"])
        self._bump()

    def _bump(self) -> None:
        self.received += 1
        self.version += 1
        self.last_arrival = time.time()

    # --- output -----------------------------------------------------------------------------------
    def _messages(self) -> Messages:
        if self._cells:
            a = np.array(self._cells, dtype=np.float64)
            new = Messages(a[:, 0], a[:, 1].astype(np.int64), a[:, 2].astype(np.int64), a[:, 3].astype(np.int64),
                           a[:, 4].astype(np.int64), a[:, 5].astype(np.int64))
            self._cells = []
            old = self._cells_np
            if old is not None:
                new = Messages(*(np.concatenate([getattr(old, f), getattr(new, f)])
                                 for f in ("t", "src", "dst", "kind", "count", "nbytes")))
            o = np.argsort(new.t, kind="stable")
            new = Messages(new.t[o], new.src[o], new.dst[o], new.kind[o], new.count[o], new.nbytes[o])
            if len(new) > MAX_CELLS:
                new = self._coarsen(new)
            self._cells_np = new
        return self._cells_np if self._cells_np is not None else Messages.empty()

    def _coarsen(self, m: Messages) -> Messages:
        """Merge cells into time buckets twice as coarse until they fit (long runs keep bounded memory)."""
        while len(m) > MAX_CELLS // 2:
            self._bucket = max(self._bucket * 2, 1.0)
            tb = np.ceil(m.t / self._bucket) * self._bucket
            key = np.stack([tb, m.src, m.dst, m.kind])
            uniq, inv = np.unique(key, axis=1, return_inverse=True)
            inv = inv.ravel()
            m = Messages(uniq[0], uniq[1].astype(np.int64), uniq[2].astype(np.int64), uniq[3].astype(np.int64),
                         np.bincount(inv, weights=m.count).astype(np.int64),
                         np.bincount(inv, weights=m.nbytes).astype(np.int64))
        return m

    def snapshot(self) -> RunData:
        if self._snap is not None and self._snap_version == self.version:
            return self._snap
        sm = pd.DataFrame(self._samples, columns=list(_SAMPLE_COLS))
        msgs = self._messages()
        ranks = self.meta.get("ranks") or {}
        M = int(ranks.get("search") or 0)
        B = int(ranks.get("broadcast") or 0)
        seen = max(self.ranks_seen, default=0)
        if len(msgs):
            seen = max(seen, int(msgs.dst.max()), int(msgs.src.max()))
        R = max(M + B, seen + 1, 1)
        if M == 0:
            M = R - B
        t_end = max(float(sm["t"].max()) if len(sm) else 0.0, LIVE_MIN_BIN)
        # bins no finer than the ranks' windows, or every other bin would be empty
        win = float(np.median(self._window_len[-1000:])) if self._window_len else LIVE_MIN_BIN
        bin_s = nice_step(t_end, LIVE_MAX_BINS, max(LIVE_MIN_BIN, 0.9 * win))  # (windows jitter a little)
        T = max(1, math.ceil(t_end / bin_s - 1e-9))
        edges = np.arange(T + 1) * bin_s
        if len(sm):
            sims, playouts, nodes = series_from_samples(sm, R, edges)
            inflight = _levels(sm, R, edges, "in_flight")
            busy, queue = per_rank_means(sm["t"].to_numpy(), sm["rank"].to_numpy(), sm["busy_frac"].to_numpy(),
                                         sm["queue_len"].to_numpy(), R, edges)
        else:
            sims = playouts = nodes = inflight = np.zeros(T)
            busy = queue = np.full((R, T), np.nan)
        rows, wbusy = self._worker_busy(edges)
        kinds = list(MESSAGE_KINDS)
        meta = {**self.meta, "ranks": {"search": M, "broadcast": B}}
        self._snap = RunData(label=self.label, meta=meta, n_search=M, n_bcast=B, n_ranks=R, t_end=t_end,
                             bin_s=bin_s, sims=sims, playouts=playouts, nodes=nodes, in_flight=inflight, busy=busy,
                             queue=queue, worker_rows=rows, worker_busy=wbusy, msgs=msgs, kinds=kinds,
                             kind_bins=kind_bins(msgs, len(kinds), edges), tree=self._tree(),
                             samples=sm, source="live", version=self.version, final=self.final)
        self._snap_version = self.version
        return self._snap

    def _worker_busy(self, edges: np.ndarray) -> tuple[list[str], np.ndarray]:
        if not self._workers:
            return [], np.zeros((0, len(edges) - 1))
        a = np.array(self._workers, dtype=np.float64)
        key = a[:, 1].astype(np.int64) * 4096 + a[:, 2].astype(np.int64) + 1  # the IO thread (-1) first
        keys, row = np.unique(key, return_inverse=True)
        busy, _ = per_rank_means(a[:, 0], row.ravel(), a[:, 3], np.zeros(len(a)), len(keys), edges)
        return [lane_label(int(k // 4096), int(k % 4096) - 1) for k in keys], busy

    def _tree(self) -> pd.DataFrame:
        cols = [c for c, _ in TABLES["tree"]]
        if not self._trees:
            return pd.DataFrame({c: pd.Series(dtype="float64" if c in ("t", "wins") else "int64") for c in cols})
        t = max(t for t, _ in self._trees.values())
        parts = [pd.DataFrame(tr) for _, tr in self._trees.values()]
        df = pd.concat(parts, ignore_index=True)
        df["t"] = t
        df["hash"] = df["hash"].astype(np.uint64)
        df["parent"] = df["parent"].astype(np.uint64)
        df["duplicated"] = df["duplicated"].astype(bool)
        return df[cols]

    def status(self) -> dict[str, Any]:
        return {"received": self.received, "rejected": self.rejected, "ranks": sorted(self.ranks_seen),
                "t_end": float(self._samples[-1][0]) if self._samples else 0.0, "last_error": self.last_error,
                "version": self.version, "final": self.final}


def _levels(sm: pd.DataFrame, R: int, edges: np.ndarray, col: str) -> np.ndarray:
    """Sum over ranks of each rank's last reported `col` at each bin's end."""
    s = sm.sort_values(["rank", "t"], kind="stable")
    rank, t, v = s["rank"].to_numpy(), s["t"].to_numpy(), s[col].to_numpy().astype(np.float64)
    bounds = np.searchsorted(rank, np.arange(R + 1))
    out = np.zeros(len(edges) - 1)
    for r in range(R):
        lo, hi = bounds[r], bounds[r + 1]
        if lo < hi:
            idx = np.searchsorted(t[lo:hi], edges[1:], side="right") - 1
            out += np.where(idx >= 0, v[lo:hi][np.maximum(idx, 0)], 0.0)
    return out


class LiveProvider:
    """Sessions' view of the aggregator (the same RunData object for every session of one version)."""

    def __init__(self, agg: LiveAggregator, address: tuple[str, int]):
        self.agg, self.address = agg, address

    @property
    def version(self) -> int:
        return self.agg.version

    def current(self) -> RunData:
        return self.agg.snapshot()

    def status_html(self) -> str:
        s = self.agg.status()
        where = f"udp://{self.address[0]}:{self.address[1]}"
        f = s["final"]
        if f:
            return (f"<b>live: finished at t = {f['t_end']:.2f} s, {f['sims']:,} simulations "
                    f"({f['sims_per_s']:,.0f}/s), move {f['move']}</b> &mdash; {s['received']:,} records from "
                    f"{plural(len(s['ranks']), 'rank')}; still listening on {where} for the next run")
        if not s["received"]:
            return (f"<b>live</b>: waiting for telemetry on {where} (start a run with "
                    f"<code>treesplit search ... --telemetry {self.address[0]}:{self.address[1]}</code>)")
        ago = time.time() - self.agg.last_arrival
        return (f"<b>live: running</b>, t = {s['t_end']:.2f} s &mdash; {s['received']:,} records from "
                f"{plural(len(s['ranks']), 'rank')} on {where}, last {ago:.1f} s ago"
                + (f", {s['rejected']} rejected" if s["rejected"] else ""))


class TelemetryListener:
    """A non-blocking UDP socket whose datagrams go to an aggregator, read on the given IOLoop."""

    def __init__(self, host: str, port: int, agg: LiveAggregator):
        self.agg = agg
        try:
            info = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0]
            self.sock = socket.socket(info[0], socket.SOCK_DGRAM)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            self.sock.bind(info[4])
        except OSError as e:
            raise UserError(f"--live {host}:{port}: cannot listen for telemetry there ({e.strerror or e})") from None
        self.sock.setblocking(False)
        self.address = self.sock.getsockname()[:2]

    def attach(self, io_loop) -> None:
        io_loop.add_handler(self.sock.fileno(), self._readable, io_loop.READ)

    def _readable(self, fd, events) -> None:
        for _ in range(10_000):  # drain what is there, but let the loop breathe under a flood
            try:
                data = self.sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            self.agg.feed(data)

    def close(self) -> None:
        self.sock.close()
