"""RunData: one run (a recorded trace, or the live telemetry received so far) as binned numpy arrays.

Every view takes a RunData and a time, so the views neither know nor care whether the numbers came from
an engine trace, a simulator trace or live telemetry. Time is cut into equal bins (bin i covers
[i * bin_s, (i + 1) * bin_s)); rates are counts per bin / bin_s. Messages stay as a time-sorted table
of cells (one row per message for a trace, one row per (window, src, dst, kind) for telemetry, with a
count), so a rank x rank matrix over any time window is a searchsorted and a bincount.

Counters in `samples` (sims_done, playouts_done) are cumulative per rank; nodes_stored and
nodes_duplicated are current levels. Unique nodes = sum over ranks of (stored - duplicated) + the largest
duplicated count, since a duplicated node is held by every rank.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.trace_files import Trace
from model import game as games
from model.trace import MESSAGE_KINDS
from viz.intervals import busy_per_bin, nice_step, open_at

MAX_BINS = 300


@dataclass
class Messages:
    """Message cells sorted by t (send time, or the telemetry window's end)."""

    t: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    kind: np.ndarray  # index into RunData.kinds
    count: np.ndarray
    nbytes: np.ndarray

    @classmethod
    def empty(cls) -> "Messages":
        z = np.zeros(0, np.int64)
        return cls(np.zeros(0), z, z, z, z, z)

    def __len__(self) -> int:
        return len(self.t)


@dataclass
class RunData:
    label: str
    meta: dict[str, Any]
    n_search: int
    n_bcast: int
    n_ranks: int
    t_end: float
    bin_s: float
    sims: np.ndarray  # (T,) simulations completed per bin
    playouts: np.ndarray  # (T,)
    nodes: np.ndarray  # (T,) net new unique tree nodes per bin
    in_flight: np.ndarray  # (T,) simulations in flight at each bin's end
    busy: np.ndarray  # (R, T) mean busy fraction, nan before a rank's first sample
    queue: np.ndarray  # (R, T) mean queue length
    worker_rows: list[str]  # "rank.worker" labels of worker_busy's rows
    worker_busy: np.ndarray  # (W, T)
    msgs: Messages
    kinds: list[str]
    kind_bins: np.ndarray  # (K, T) messages per bin and kind
    tree: pd.DataFrame  # all snapshots, sorted by t
    packages: pd.DataFrame | None = None  # raw rows for the teaching view (trace only)
    messages: pd.DataFrame | None = None
    samples: pd.DataFrame | None = None
    source: str = "trace"
    version: int = 0
    final: dict[str, Any] | None = None  # live: rank 0's last record (the search is over), else None
    _tree_times: np.ndarray = field(default=None, repr=False)
    _tree_bounds: np.ndarray = field(default=None, repr=False)
    _tree_cache: dict = field(default_factory=dict, repr=False)

    # --- geometry ---------------------------------------------------------------------------------
    @property
    def T(self) -> int:
        return len(self.sims)

    @property
    def edges(self) -> np.ndarray:
        return np.arange(self.T + 1) * self.bin_s

    @property
    def centers(self) -> np.ndarray:
        return (np.arange(self.T) + 0.5) * self.bin_s

    def bins_upto(self, t: float) -> int:
        """How many bins have started by time t (the bins a replay at time t shows)."""
        return int(min(self.T, max(0, math.ceil(t / self.bin_s - 1e-9))))

    # --- how a run that did not finish stopped ------------------------------------------------------------
    @property
    def ending(self) -> tuple[float, str, str] | None:
        """(t, short label, sentence) for an engine run that did not finish: a failed MPI job (the failed
        rank's last record; engine/mpi/failure.py), an interrupted one, or one whose trace was never closed
        (its ranks stopped without warning, or it is still running); None for a finished run."""
        extra = self.meta.get("extra") or {}
        f = extra.get("failure")
        if f:
            who = f"rank {f['rank']}" if f.get("rank") is not None else "a rank"
            t, stop = float(f.get("t") or self.t_end), float(f.get("t_stop") or self.t_end)
            return (t, f"{who} failed", f"the job failed: {f.get('what') or who + ' failed'}; its last record at "
                    f"t = {t:.3g} s, the others' at t = {stop:.3g} s (later records were lost with the ranks)")
        if self.source != "trace" or self.meta.get("runtime") != "engine" or extra.get("complete") is not False:
            return None
        if extra.get("interrupted"):
            return self.t_end, "interrupted", f"interrupted at t = {self.t_end:.3g} s"
        return (self.t_end, "ended", f"the trace ends at t = {self.t_end:.3g} s without being closed: the ranks "
                "stopped without warning (or the run is still going)")

    # --- the game (named by model/game.py, the one place viz learns about a game) -----------------------
    @property
    def game(self) -> str:
        return str(self.meta.get("game") or "").lower()

    def board_shape(self) -> tuple[int, int] | None:
        """(width, height) of the game's board, None if it has none (the P-game) or the trace does not say."""
        return games.board_shape(self.game, self.meta.get("board"))

    def board_axes(self) -> tuple[list[str], list[str]] | None:
        return games.board_axes(self.game, self.meta.get("board"))

    def action_label(self, action: int) -> str:
        """The trace's move as a player names it; the root's move (-1) is "root"."""
        return "root" if action < 0 else games.action_label(self.game, self.meta.get("board"), action)

    def action_cell(self, action: int) -> tuple[int, int] | None:
        return None if action < 0 else games.action_cell(self.game, self.meta.get("board"), action)

    # --- messages ---------------------------------------------------------------------------------
    def msg_slice(self, t0: float, t1: float) -> slice:
        i0, i1 = np.searchsorted(self.msgs.t, [t0, t1], side="right")
        return slice(int(i0), int(i1))

    def kind_mask(self, sl: slice, kinds: list[str] | None) -> np.ndarray | None:
        if not kinds:
            return None
        codes = [self.kinds.index(k) for k in kinds if k in self.kinds]
        return np.isin(self.msgs.kind[sl], codes)

    def matrix(self, t0: float, t1: float, kinds: list[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(messages, bytes) sent src -> dst in (t0, t1], as (R, R) arrays indexed [src, dst]."""
        R = self.n_ranks
        sl = self.msg_slice(t0, t1)
        src, dst, cnt, nb = self.msgs.src[sl], self.msgs.dst[sl], self.msgs.count[sl], self.msgs.nbytes[sl]
        m = self.kind_mask(sl, kinds)
        if m is not None:
            src, dst, cnt, nb = src[m], dst[m], cnt[m], nb[m]
        key = src.astype(np.int64) * R + dst
        c = np.bincount(key, weights=cnt, minlength=R * R)[: R * R].reshape(R, R)
        b = np.bincount(key, weights=nb, minlength=R * R)[: R * R].reshape(R, R)
        return c, b

    def cells(self, t0: float, t1: float, block: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Sparse traffic in (t0, t1]: (src, dst, messages (K, C), bytes (K, C)) for the C (src, dst) pairs
        that exchanged anything, ranks summed in blocks of `block`."""
        sl = self.msg_slice(t0, t1)
        nb = -(-self.n_ranks // block)
        pair = (self.msgs.src[sl] // block).astype(np.int64) * nb + self.msgs.dst[sl] // block
        cells, inv = np.unique(pair, return_inverse=True)
        K, C = len(self.kinds), len(cells)
        key = self.msgs.kind[sl].astype(np.int64) * C + inv
        n = np.bincount(key, weights=self.msgs.count[sl], minlength=K * C).reshape(K, C)
        b = np.bincount(key, weights=self.msgs.nbytes[sl], minlength=K * C).reshape(K, C)
        return cells // nb, cells % nb, n, b

    def sent_per_rank(self, t0: float, t1: float, kinds: list[str]) -> np.ndarray:
        c, _ = self.matrix(t0, t1, kinds)
        return c.sum(axis=1)

    # --- tree -------------------------------------------------------------------------------------
    def tree_times(self) -> np.ndarray:
        if self._tree_times is None:
            t = self.tree["t"].to_numpy() if len(self.tree) else np.zeros(0)
            self._tree_times = np.unique(t)
            self._tree_bounds = np.searchsorted(t, np.append(self._tree_times, np.inf), side="left")
        return self._tree_times

    def tree_at(self, t: float | None = None) -> pd.DataFrame:
        """The latest snapshot taken at or before t (t None: the last one), one row per node (a node written
        by several ranks keeps its most visited copy); no rows when the first snapshot is later than t."""
        times = self.tree_times()
        if len(times) == 0:
            return self.tree
        i = len(times) - 1 if t is None else int(np.searchsorted(times, t + 1e-9, side="right") - 1)
        if i < 0:
            return self.tree.iloc[:0]
        if i not in self._tree_cache:
            snap = self.tree.iloc[self._tree_bounds[i]: self._tree_bounds[i + 1]]
            if snap["hash"].duplicated().any():
                snap = snap.sort_values("visits", ascending=False, kind="stable").drop_duplicates("hash")
            self._tree_cache[i] = snap.reset_index(drop=True)
        return self._tree_cache[i]

    # --- construction -----------------------------------------------------------------------------
    @classmethod
    def from_trace(cls, trace: Trace, label: str | None = None, max_bins: int = MAX_BINS) -> "RunData":
        meta = trace.meta
        ranks = meta.get("ranks") or {}
        M, B = int(ranks.get("search", 1) or 1), int(ranks.get("broadcast", 0) or 0)
        pk, ms, sm = trace.packages, trace.messages, trace.samples
        t_end = _t_end(meta, pk, ms, sm, trace.tree)
        R = max(M + B, _max_rank(pk["rank"], ms["src"], ms["dst"], sm["rank"]) + 1)
        tick = sampling_interval(sm)
        bin_s = nice_step(t_end, max_bins, 0.9 * tick)  # (ticks jitter a little)
        T = max(1, math.ceil(t_end / bin_s - 1e-9))
        edges = np.arange(T + 1) * bin_s
        rate = float(meta.get("sample_rate") or 1.0)
        msgs, kinds = _messages_from_frame(ms)
        if len(sm):
            sims, playouts, nodes = series_from_samples(sm, R, edges)
        else:
            sims, playouts, nodes = _series_from_packages(pk, edges, rate)
        busy, queue = per_rank_means(sm["t"].to_numpy(), sm["rank"].to_numpy(), sm["busy_frac"].to_numpy(),
                                     sm["queue_len"].to_numpy(), R, edges)
        in_flight = _in_flight_from_packages(pk, edges) / rate
        worker_rows, worker_busy = _worker_busy(pk, edges, rate)
        tree = trace.tree
        if len(tree) and not tree["t"].is_monotonic_increasing:
            tree = tree.sort_values("t", kind="stable").reset_index(drop=True)
        if len(pk) and not pk["t_start"].is_monotonic_increasing:  # the teaching view steps in time order
            pk = pk.sort_values("t_start", kind="stable").reset_index(drop=True)
        if len(ms) and not ms["t_send"].is_monotonic_increasing:
            ms = ms.sort_values("t_send", kind="stable").reset_index(drop=True)
        return cls(label=label or trace.path.name, meta=meta, n_search=M, n_bcast=B, n_ranks=R, t_end=t_end,
                   bin_s=bin_s, sims=sims, playouts=playouts, nodes=nodes, in_flight=in_flight, busy=busy,
                   queue=queue, worker_rows=worker_rows, worker_busy=worker_busy, msgs=msgs, kinds=kinds,
                   kind_bins=kind_bins(msgs, len(kinds), edges), tree=tree, packages=pk, messages=ms,
                   samples=sm, source="trace")


def trace_labels(paths: list) -> list[str]:
    """A short label per trace directory: its name, or its last two parts when two traces share a name."""

    parts = [Path(p).resolve().parts for p in paths]
    names = [p[-1] for p in parts]
    return [n if names.count(n) < 2 else "/".join(p[-2:]) for n, p in zip(names, parts)]


def sampling_interval(sm: pd.DataFrame) -> float:
    """Median time between two samples of the same rank (ranks sample at different offsets, so the gaps
    between all sample times would be much shorter); 0 without repeated samples."""
    if len(sm) < 2:
        return 0.0
    s = sm.sort_values(["rank", "t"], kind="stable")
    same = np.diff(s["rank"].to_numpy()) == 0
    gaps = np.diff(s["t"].to_numpy())[same]
    gaps = gaps[gaps > 0]
    return float(np.median(gaps)) if len(gaps) else 0.0


def _max_rank(*cols: pd.Series) -> int:
    return max([int(c.max()) for c in cols if len(c)] + [0])


def _t_end(meta: dict, pk: pd.DataFrame, ms: pd.DataFrame, sm: pd.DataFrame, tree: pd.DataFrame) -> float:
    seen = [float(c.max()) for c in (pk["t_end"], ms["t_recv"], sm["t"], tree["t"]) if len(c)]
    t = meta.get("t_end")
    t = float(t) if isinstance(t, (int, float)) and t > 0 else 0.0
    return max([t, *seen]) or 1.0


def _messages_from_frame(ms: pd.DataFrame) -> tuple[Messages, list[str]]:
    kinds = list(MESSAGE_KINDS)
    if not len(ms):
        return Messages.empty(), kinds
    cat = ms["kind"].astype("category")
    for c in cat.cat.categories:
        if c not in kinds:
            kinds.append(str(c))
    lut = np.array([kinds.index(c) for c in cat.cat.categories], np.int16)
    kind = lut[cat.cat.codes.to_numpy()]
    t = ms["t_send"].to_numpy()
    src, dst, nb = ms["src"].to_numpy(), ms["dst"].to_numpy(), ms["bytes"].to_numpy()
    if not ms["t_send"].is_monotonic_increasing:
        o = np.argsort(t, kind="stable")
        t, src, dst, nb, kind = t[o], src[o], dst[o], nb[o], kind[o]
    return Messages(t, src, dst, kind, np.ones(len(t), np.int64), nb.astype(np.int64)), kinds


def bin_of(t: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin index of each time (times past the last edge go to the last bin)."""
    T = len(edges) - 1
    return np.clip((t / edges[1]).astype(np.int64), 0, T - 1) if T else np.zeros(len(t), np.int64)


def bin_of_end(t: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin index of end-stamped times (a sample at t summarises the tick that ends at t): (t - b, t] -> bin."""
    T = len(edges) - 1
    return np.clip(np.ceil(t / edges[1] - 1e-9).astype(np.int64) - 1, 0, T - 1) if T else np.zeros(len(t), np.int64)


def kind_bins(msgs: Messages, K: int, edges: np.ndarray) -> np.ndarray:
    T = len(edges) - 1
    key = msgs.kind.astype(np.int64) * T + bin_of(msgs.t, edges)
    return np.bincount(key, weights=msgs.count, minlength=K * T)[: K * T].reshape(K, T)


def series_from_samples(sm: pd.DataFrame, R: int, edges: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per-bin simulations, playouts and net new unique nodes, summed over ranks, from the counters."""
    sm = sm.sort_values(["rank", "t"], kind="stable")
    rank = sm["rank"].to_numpy()
    bounds = np.searchsorted(rank, np.arange(R + 1))
    t = sm["t"].to_numpy()
    cols = {c: sm[c].to_numpy().astype(np.float64) for c in ("sims_done", "playouts_done", "nodes_stored",
                                                              "nodes_duplicated")}
    at = {c: np.zeros(len(edges)) for c in cols}
    dup_max = np.zeros(len(edges))
    for r in range(R):
        lo, hi = bounds[r], bounds[r + 1]
        if lo == hi:
            continue
        idx = np.searchsorted(t[lo:hi], edges, side="right") - 1  # last sample at or before each edge
        ok = idx >= 0
        for c, v in cols.items():
            val = np.where(ok, v[lo:hi][np.maximum(idx, 0)], 0.0)
            at[c] += val
            if c == "nodes_duplicated":
                dup_max = np.maximum(dup_max, val)
    unique = at["nodes_stored"] - at["nodes_duplicated"] + dup_max
    return np.diff(at["sims_done"]), np.diff(at["playouts_done"]), np.diff(unique)


def per_rank_means(t: np.ndarray, rank: np.ndarray, busy: np.ndarray, queue: np.ndarray, R: int,
                   edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(R, T) means of busy fraction and queue length per bin, from end-stamped samples; gaps carry the last
    value forward."""
    T = len(edges) - 1
    key = rank.astype(np.int64) * T + bin_of_end(t, edges)
    n = np.bincount(key, minlength=R * T)[: R * T].reshape(R, T)
    out = []
    for v in (busy, queue):
        s = np.bincount(key, weights=v, minlength=R * T)[: R * T].reshape(R, T)
        with np.errstate(invalid="ignore", divide="ignore"):
            m = np.where(n > 0, s / np.maximum(n, 1), np.nan)
        out.append(_ffill(m))
    return out[0], out[1]


def _ffill(a: np.ndarray) -> np.ndarray:
    """Forward-fill nans along axis 1 (a rank sampled less often than the bins keeps its last value)."""
    if a.size == 0:
        return a
    idx = np.where(~np.isnan(a), np.arange(a.shape[1]), 0)
    np.maximum.accumulate(idx, axis=1, out=idx)
    filled = a[np.arange(a.shape[0])[:, None], idx]
    return filled


def _series_from_packages(pk: pd.DataFrame, edges: np.ndarray, rate: float) -> tuple[np.ndarray, ...]:
    """Without samples: simulations end with their last package, playouts with their playout package."""
    T = len(edges) - 1
    if not len(pk):
        z = np.zeros(T)
        return z, z.copy(), z.copy()
    ends = pk.loc[pk["sim_id"] >= 0].groupby("sim_id", observed=True)["t_end"].max().to_numpy()
    sims = np.bincount(bin_of(ends, edges), minlength=T)[:T] / rate
    po = pk.loc[pk["kind"] == "playout", "t_end"].to_numpy()
    return sims, np.bincount(bin_of(po, edges), minlength=T)[:T] / rate, np.zeros(T)


def _in_flight_from_packages(pk: pd.DataFrame, edges: np.ndarray) -> np.ndarray:
    """A simulation is in flight from its first package's start to its last package's end."""
    if not len(pk):
        return np.zeros(len(edges) - 1)
    sim = pk["sim_id"].to_numpy()
    ok = sim >= 0
    sim, ts, te = sim[ok], pk["t_start"].to_numpy()[ok], pk["t_end"].to_numpy()[ok]
    if not len(sim):
        return np.zeros(len(edges) - 1)
    if sim.max() < 4 * len(sim) + 1024:  # dense ids: scatter instead of sorting
        first = np.full(int(sim.max()) + 1, np.inf)
        last = np.full(int(sim.max()) + 1, -np.inf)
        np.minimum.at(first, sim, ts)
        np.maximum.at(last, sim, te)
        seen = np.isfinite(first)
        a, b = first[seen], last[seen]
    else:
        g = pd.DataFrame({"s": sim, "a": ts, "b": te}).groupby("s", sort=False).agg(a=("a", "min"), b=("b", "max"))
        a, b = g["a"].to_numpy(), g["b"].to_numpy()
    return open_at(a, b, edges[1:]).astype(np.float64)


def _worker_busy(pk: pd.DataFrame, edges: np.ndarray, rate: float) -> tuple[list[str], np.ndarray]:
    """Busy fraction per (rank, worker) and bin, from the package intervals; rows labelled by lane_label."""
    T = len(edges) - 1
    if not len(pk):
        return [], np.zeros((0, T))
    rank, worker = pk["rank"].to_numpy().astype(np.int64), pk["worker"].to_numpy().astype(np.int64)
    wmin = min(int(worker.min()), 0)
    span = int(worker.max()) - wmin + 1
    key = (rank - min(int(rank.min()), 0)) * span + (worker - wmin)
    keys, row = np.unique(key, return_inverse=True) if len(key) < 4096 else _dense_unique(key)
    busy = busy_per_bin(row.ravel(), pk["t_start"].to_numpy(), pk["t_end"].to_numpy(), len(keys), edges)
    first = np.zeros(len(keys), np.int64)
    first[row.ravel()[::-1]] = np.arange(len(key))[::-1]  # one package of each row, for its label
    rows = [lane_label(int(rank[i]), int(worker[i])) for i in first.tolist()]
    return rows, np.clip(busy / (edges[1] * rate), 0.0, 1.0)


def lane_label(rank: int, worker: int) -> str:
    """A thread's name, the same for both runtimes: "rank.io" for the IO thread (worker -1; the engine's
    --threads 1 runs its packages there too), "rank.worker" for a worker thread."""
    return f"{rank}.{worker if worker >= 0 else 'io'}"


def _dense_unique(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(key, return_inverse=True) for small non-negative ints, without sorting."""
    present = np.bincount(key) > 0
    keys = np.flatnonzero(present)
    lut = np.cumsum(present) - 1
    return keys, lut[key]
