"""Plausible synthetic traces, written with engine.trace_files.TraceWriter, for tests, benchmarks and demos.

The run imitates UCT-Treesplit's flows without running any search: each simulation starts at the root's
owner (rank 0, so rank 0 is the hot spot a load-balance view should show), hops over a few random search
ranks (SELECT packages joined by MOVE messages), runs a PLAYOUT at the last rank (sometimes forwarded to a
random rank with PLAYOUT_FWD / PLAYOUT_RESULT), then sends UPDATE messages back to every rank it visited.
Some updates trigger a SYNC to the rank's broadcast rank, which merges it (a `bcast` package) and spreads
it with BCAST messages around the broadcast ring and down to its search ranks. Samples are computed from
the packages (busy fraction per rank and tick, cumulative counters), and the tree snapshot is a skewed
random tree whose visit counts add up like an MCTS tree's (a parent's visits >= the sum of its children's).

Everything is vectorised numpy, so 10^6 packages and messages are made in a few seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from engine.trace_files import TraceWriter
from model.telemetry import Window
from model.trace import Meta
from viz.intervals import busy_integral

_PKG_MEAN_S = {"select": 20e-6, "expand": 40e-6, "playout": 300e-6, "update": 10e-6, "bcast": 15e-6}


@dataclass
class SyntheticSpec:
    search: int = 4  # search ranks M
    broadcast: int = 1  # broadcast ranks B
    threads: int = 4  # per search rank: the IO thread and threads-1 workers
    sims: int = 2000  # simulations (ignored when packages is set)
    packages: int | None = None  # exact number of package rows wanted
    messages: int | None = None  # exact number of message rows wanted (topped up with SYNC/BCAST traffic)
    tree_nodes: int = 5000
    snapshots: int = 1  # tree snapshots, evenly spaced in time (the tree grows between them)
    board: int = 9
    tick: float | None = None  # sampling interval (s); default: about 200 ticks over the run
    utilisation: float = 0.6  # target mean worker busy fraction; sets the run's duration
    p_forward: float = 0.05  # playouts forwarded to another rank
    p_sync: float = 0.15  # updates that trigger a SYNC
    seed: int = 0
    runtime: str = "sim"
    algo: str = "treesplit"


def _segment_cumsum(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Exclusive cumulative sum of `values` within segments beginning at indices `starts`."""
    cs = np.cumsum(values) - values
    offs = np.repeat(cs[starts], np.diff(np.append(starts, len(values))))
    return cs - offs


def _simulations(spec: SyntheticSpec, n_sims: int, rng: np.random.Generator) -> tuple[dict, dict]:
    """Packages and messages of n_sims simulations, with start times in units of 'one package time'."""
    M = spec.search
    hops = np.minimum(1 + rng.poisson(1.2, n_sims), 8)
    sim_of = np.repeat(np.arange(n_sims), hops)  # one row per SELECT
    first = np.concatenate(([0], np.cumsum(hops)[:-1]))
    pos = np.arange(len(sim_of)) - first[sim_of]
    rank = rng.integers(0, M, len(sim_of))
    rank[pos == 0] = 0  # the root's owner takes the first step of every simulation
    lat = 5e-6 + rng.exponential(10e-6, len(sim_of))
    d_sel = rng.exponential(_PKG_MEAN_S["select"], len(sim_of))
    last = np.append(first[1:], len(sim_of)) - 1
    is_last = np.zeros(len(sim_of), bool)
    is_last[last] = True
    step = d_sel + np.where(is_last, 0.0, lat)
    # start times are spread later (see _place); here offsets inside each simulation
    t_sel = _segment_cumsum(step, first)
    t_sel_end = t_sel + d_sel
    # the playout: at the last rank, or forwarded to a random rank
    p_rank = rank[last].copy()
    fwd = rng.random(n_sims) < spec.p_forward
    fwd_to = rng.integers(0, M, n_sims)
    fwd_lat = 5e-6 + rng.exponential(10e-6, n_sims)
    t_play = t_sel_end[last] + np.where(fwd, fwd_lat, 0.0)
    p_rank = np.where(fwd, fwd_to, p_rank)
    t_play_end = t_play + rng.exponential(_PKG_MEAN_S["playout"], n_sims)
    t_res = t_play_end + np.where(fwd, fwd_lat, 0.0)  # result back at the last select rank
    # expand now and then, right after the last select
    exp_mask = rng.random(n_sims) < 0.3
    # updates: one per visited select step (same rank visited twice updates twice, as two nodes)
    up_lat = np.where(is_last, 0.0, 5e-6 + rng.exponential(10e-6, len(sim_of)))
    t_up = t_res[sim_of] + up_lat
    t_up_end = t_up + rng.exponential(_PKG_MEAN_S["update"], len(sim_of))
    e_start = t_sel_end[last][exp_mask]
    pk = {
        "t_start": [t_sel, t_play, e_start, t_up],
        "t_end": [t_sel_end, t_play_end, e_start + rng.exponential(_PKG_MEAN_S["expand"], exp_mask.sum()), t_up_end],
        "rank": [rank, p_rank, rank[last][exp_mask], rank],
        "kind": [np.full(len(sim_of), 0), np.full(n_sims, 2), np.full(exp_mask.sum(), 1), np.full(len(sim_of), 3)],
        "sim_id": [sim_of, np.arange(n_sims), np.arange(n_sims)[exp_mask], sim_of],
    }
    # messages: MOVE between consecutive selects, UPDATE from the last rank to earlier ones, forwarding pairs
    mv = ~is_last
    up = (~is_last) & (rank != rank[last][sim_of])
    f_src, f_dst = rank[last][fwd], fwd_to[fwd]
    ms = {
        "t_send": [t_sel_end[mv], t_res[sim_of][up], t_sel_end[last][fwd], t_play_end[fwd]],
        "t_recv": [t_sel_end[mv] + lat[mv], t_up[up], t_play[fwd], t_res[fwd]],
        "src": [rank[mv], rank[last][sim_of][up], f_src, f_dst],
        "dst": [rank[np.flatnonzero(mv) + 1], rank[up], f_dst, f_src],
        "kind": [np.full(mv.sum(), 0), np.full(up.sum(), 1), np.full(fwd.sum(), 5), np.full(fwd.sum(), 6)],
        "bytes": [48 + 8 * pos[mv], np.full(up.sum(), 40), np.full(fwd.sum(), 200), np.full(fwd.sum(), 24)],
        "sim_id": [sim_of[mv], sim_of[up], np.arange(n_sims)[fwd], np.arange(n_sims)[fwd]],
    }
    pk = {k: np.concatenate(v) for k, v in pk.items()}
    ms = {k: np.concatenate(v) for k, v in ms.items()}
    pk["_sync_candidates"] = np.flatnonzero(pk["kind"] == 3)
    return pk, ms


_PKG_NAMES = np.array(["select", "expand", "playout", "update", "sync", "bcast", "io"])
_MSG_NAMES = np.array(["MOVE", "UPDATE", "DUP", "SYNC", "BCAST", "PLAYOUT_FWD", "PLAYOUT_RESULT"])


def _broadcast(spec: SyntheticSpec, t: np.ndarray, src: np.ndarray, rng: np.random.Generator) -> tuple[dict, dict]:
    """SYNC from search rank `src` at times `t` to its broadcast rank, a merge there, then BCAST around the
    broadcast ring (one hop per peer) and down to the broadcast rank's search ranks."""
    M, B = spec.search, spec.broadcast
    n = len(t)
    b = M + src % B
    lat = 5e-6 + rng.exponential(15e-6, n)
    t_b = t + lat
    t_b_end = t_b + rng.exponential(_PKG_MEAN_S["bcast"], n)
    pk = {"t_start": [t_b], "t_end": [t_b_end], "rank": [b], "kind": [np.full(n, 5)], "sim_id": [np.full(n, -1)]}
    ms = {"t_send": [t], "t_recv": [t_b], "src": [src], "dst": [b], "kind": [np.full(n, 3)],
          "bytes": [np.full(n, 16 + 24 * 4)], "sim_id": [np.full(n, -1)]}
    if B > 1:  # to the next broadcast rank on the ring, which merges too
        nb = M + (b - M + 1) % B
        ms_t = t_b_end + 5e-6 + rng.exponential(15e-6, n)
        for k, v in (("t_send", t_b_end), ("t_recv", ms_t), ("src", b), ("dst", nb), ("kind", np.full(n, 4)),
                     ("bytes", np.full(n, 16 + 24 * 4)), ("sim_id", np.full(n, -1))):
            ms[k].append(v)
        for k, v in (("t_start", ms_t), ("t_end", ms_t + rng.exponential(_PKG_MEAN_S["bcast"], n)), ("rank", nb),
                     ("kind", np.full(n, 5)), ("sim_id", np.full(n, -1))):
            pk[k].append(v)
    # down to one random search rank (other than the origin) per merge
    dst = (src + 1 + rng.integers(0, max(M - 1, 1), n)) % M
    for k, v in (("t_send", t_b_end), ("t_recv", t_b_end + lat), ("src", b), ("dst", dst), ("kind", np.full(n, 4)),
                 ("bytes", np.full(n, 16 + 24 * 4)), ("sim_id", np.full(n, -1))):
        ms[k].append(v)
    return ({k: np.concatenate(v) for k, v in pk.items()}, {k: np.concatenate(v) for k, v in ms.items()})


def _cat(a: dict, b: dict) -> dict:
    return {k: np.concatenate([a[k], b[k]]) for k in b}


def random_tree(n: int, board: int, search: int, rng: np.random.Generator, total_visits: int = 100_000,
                dup_fraction: float = 0.01) -> pd.DataFrame:
    """A skewed MCTS-like tree of about n nodes (breadth first): columns of the trace's tree table."""
    n_moves = board * board + 1
    parents_idx = [np.array([-1])]
    visits = [np.array([total_visits])]
    depth = [np.array([0])]
    moves = [np.array([-1])]
    count = 1
    while count < n:
        pv, pi = visits[-1], parents_idx[-1]
        base = count - len(pv)
        expandable = np.flatnonzero(pv >= 2)
        if len(expandable) == 0:
            break
        nchild = np.minimum(np.minimum(pv[expandable] // 2, n_moves), 12 + rng.integers(0, 20, len(expandable)))
        nchild = np.maximum(nchild, 1)
        room = n - count
        if nchild.sum() > room:  # stop at n: keep the most visited parents' children
            keep = np.argsort(-pv[expandable], kind="stable")
            cum = np.cumsum(nchild[keep])
            sel = keep[cum <= room]
            if len(sel) == 0:
                break
            mask = np.zeros(len(expandable), bool)
            mask[sel] = True
            expandable, nchild = expandable[mask], nchild[mask]
        par = np.repeat(expandable, nchild)
        k = np.arange(len(par)) - np.repeat(np.cumsum(nchild) - nchild, nchild)
        # visits: a geometric split, the first child the strongest (MCTS concentrates on the best move)
        w = 0.55 ** k * rng.uniform(0.5, 1.5, len(par))
        wsum = np.bincount(par - par.min(), weights=w)[par - par.min()]
        spare = (pv[par] - 1 - np.repeat(nchild, nchild)).clip(0)  # every child gets at least one visit
        cv = 1 + np.floor(spare * w / wsum).astype(np.int64)
        stride = 7 if n_moves % 7 else 5
        start = rng.integers(0, n_moves, len(expandable))
        mv = (np.repeat(start, nchild) + stride * k) % n_moves
        parents_idx.append(base + par)
        visits.append(cv)
        depth.append(np.full(len(par), len(depth)))
        moves.append(mv)
        count += len(par)
        if cv.max(initial=0) < 2:
            break
    parent = np.concatenate(parents_idx)
    v = np.concatenate(visits)
    d = np.concatenate(depth)
    mv = np.concatenate(moves)
    keep = v > 0
    keep[0] = True
    hashes = rng.integers(1, np.iinfo(np.int64).max, len(v), dtype=np.int64).astype(np.uint64) * np.uint64(2) + np.uint64(1)
    ph = np.where(parent >= 0, hashes[np.maximum(parent, 0)], np.uint64(0))
    value = np.clip(0.5 + 0.15 * np.tanh(np.log1p(v) / 4 - 1) + rng.normal(0, 0.03, len(v)), 0.02, 0.98)
    owner = ((hashes >> np.uint64(33)) % np.uint64(search)).astype(np.int32)
    n_dup = max(1, int(dup_fraction * len(v)))
    dup = np.zeros(len(v), bool)
    dup[np.argsort(-v, kind="stable")[:n_dup]] = True
    df = pd.DataFrame({"t": 0.0, "hash": hashes, "parent": ph, "move": mv.astype(np.int32),
                       "depth": d.astype(np.int32), "visits": v.astype(np.int64), "wins": v * value,
                       "owner": owner, "duplicated": dup})
    return df[keep].reset_index(drop=True)


def make_tables(spec: SyntheticSpec) -> tuple[Meta, dict[str, dict[str, np.ndarray]]]:
    """Meta and the four tables as column dicts (kinds as strings), before writing."""
    rng = np.random.default_rng(spec.seed)
    M, B, W = spec.search, spec.broadcast, max(spec.threads, 2)
    per_sim_pkgs = 2 * 2.2 + 1.3 + 0.15 * 2.2 * (1 + (B > 1))
    n_sims = int(np.ceil(spec.packages / per_sim_pkgs * 1.05)) if spec.packages else spec.sims
    pk, ms = _simulations(spec, n_sims, rng)
    # place simulations in time: S_par-like overlap, so total work / capacity ~ utilisation
    work = float(np.sum(pk["t_end"] - pk["t_start"]))
    duration = max(work / (spec.utilisation * M * (W - 1)), 1e-3)
    t0 = np.sort(rng.uniform(0, duration * 0.97, n_sims))
    pk_sim = pk.pop("_sync_candidates")
    for tab, tcols in ((pk, ("t_start", "t_end")), (ms, ("t_send", "t_recv"))):
        for c in tcols:
            tab[c] = tab[c] + t0[tab["sim_id"]]
    # synchronisation traffic after some updates (and as much extra as asked for)
    sync_from = pk_sim[rng.random(len(pk_sim)) < spec.p_sync]
    if B > 0:
        bpk, bms = _broadcast(spec, pk["t_end"][sync_from], pk["rank"][sync_from], rng)
        pk, ms = _cat(pk, bpk), _cat(ms, bms)
        want = spec.messages or 0
        if want > len(ms["t_send"]):
            per = 2 + (B > 1)
            extra = int(np.ceil((want - len(ms["t_send"])) / per))
            idx = rng.choice(pk_sim, extra)
            _, ems = _broadcast(spec, pk["t_end"][idx] + 1e-6, pk["rank"][idx], rng)
            ms = _cat(ms, ems)
    # threads as both runtimes name them: a search rank's packages go round-robin over its workers 0..W-2, a
    # broadcast rank's run on its IO thread (-1)
    pk["worker"] = np.where(pk["rank"] < M, np.arange(len(pk["rank"])) % (W - 1), -1).astype(np.int32)
    # exact counts: drop the latest rows
    for tab, tcol, want in ((pk, "t_start", spec.packages), (ms, "t_send", spec.messages)):
        order = np.argsort(tab[tcol], kind="stable")
        if want:
            order = order[:want]
        for k in list(tab):
            tab[k] = tab[k][order]
    pk["kind"] = _PKG_NAMES[pk["kind"]]
    ms["kind"] = _MSG_NAMES[ms["kind"]]
    t_end = float(max(pk["t_end"].max(initial=0), ms["t_recv"].max(initial=0))) or duration
    samples = _samples(spec, pk, t_end, rng)
    tree = _tree_snapshots(spec, t_end, rng)
    meta = Meta(runtime=spec.runtime, algo=spec.algo, game="go", board=spec.board,
                params={"N_dup": 8192, "synthetic": True}, ranks={"search": M, "broadcast": B}, threads=W,
                machine="synthetic", seed=spec.seed, versions={"treesplit": "synthetic"}, t_end=t_end,
                extra={"generator": "viz.synthetic"})
    return meta, {"packages": pk, "messages": ms, "samples": samples, "tree": tree}


def _samples(spec: SyntheticSpec, pk: dict, t_end: float, rng: np.random.Generator) -> dict[str, np.ndarray]:
    M, B, W = spec.search, spec.broadcast, max(spec.threads, 2)
    tick = spec.tick or max(t_end / 200, 1e-4)
    ticks = np.arange(tick, t_end + tick, tick)
    cols: dict[str, list] = {k: [] for k in ("t", "rank", "queue_len", "busy_frac", "sims_done", "playouts_done",
                                             "nodes_stored", "nodes_duplicated")}
    order = np.argsort(pk["rank"], kind="stable")
    bounds = np.searchsorted(pk["rank"][order], np.arange(M + B + 1))
    for r in range(M + B):
        idx = order[bounds[r]:bounds[r + 1]]
        ts, te, kind = pk["t_start"][idx], pk["t_end"][idx], pk["kind"][idx]
        edges = np.concatenate(([0.0], ticks))
        busy = np.diff(busy_integral(ts, te, edges)) / (tick * (W - 1 if r < M else 1))
        plays = np.searchsorted(np.sort(te[kind == "playout"]), ticks, side="right")
        sims = np.searchsorted(np.sort(te[kind == "update"]), ticks, side="right") // 2
        nodes = (sims * (0.9 + 0.2 * rng.random())).astype(np.int64)
        inflight = np.searchsorted(np.sort(ts), ticks) - np.searchsorted(np.sort(te), ticks)
        cols["t"].append(ticks)
        cols["rank"].append(np.full(len(ticks), r))
        cols["queue_len"].append(np.maximum(0, inflight - (W - 1)) + rng.poisson(1.0 if r == 0 else 0.3, len(ticks)))
        cols["busy_frac"].append(np.clip(busy, 0, 1))
        cols["sims_done"].append(sims if r < M else np.zeros(len(ticks), np.int64))
        cols["playouts_done"].append(plays)
        cols["nodes_stored"].append(nodes)
        cols["nodes_duplicated"].append(nodes // 100)
    out = {k: np.concatenate(v) for k, v in cols.items()}
    order = np.argsort(out["t"], kind="stable")
    return {k: v[order] for k, v in out.items()}


def _tree_snapshots(spec: SyntheticSpec, t_end: float, rng: np.random.Generator) -> dict[str, np.ndarray]:
    if spec.tree_nodes <= 0:
        return {}
    tree = random_tree(spec.tree_nodes, spec.board, spec.search, rng, total_visits=max(10 * spec.tree_nodes, 1000))
    parts = []
    for j in range(spec.snapshots):
        f = (j + 1) / spec.snapshots
        part = tree.iloc[: max(1, int(len(tree) * f))].copy()  # breadth-first: a prefix is a subtree
        part["visits"] = np.maximum(1, (part["visits"] * f).astype(np.int64))
        part["wins"] = part["wins"] * f
        part["duplicated"] = part["duplicated"] & (f > 0.3)
        part["t"] = t_end * f
        parts.append(part)
    df = pd.concat(parts, ignore_index=True)
    return {c: df[c].to_numpy() for c in df.columns}


def write_synthetic_trace(directory: str | Path, spec: SyntheticSpec | None = None, **kw) -> Path:
    """Write a synthetic trace to `directory` (created) and return its path. Keywords set SyntheticSpec fields."""
    spec = spec or SyntheticSpec(**kw)
    meta, tables = make_tables(spec)
    d = Path(directory)
    with TraceWriter(d, meta, flush_rows=1 << 30) as w:
        for name, cols in tables.items():
            if cols:
                w.extend(name, cols)
        w.close(t_end=meta.t_end)
    return d


def telemetry_records(t0: float, t1: float, search: int = 4, broadcast: int = 1, threads: int = 4,
                      step: int = 0, rng: np.random.Generator | None = None,
                      with_tree: bool = False, board: int = 9) -> list[dict]:
    """One window [t0, t1) of plausible telemetry from every rank (model/telemetry records), the
    `step`-th window of a run: counters grow with step so rates come out steady."""

    rng = rng or np.random.default_rng(step)
    M, B, W = search, broadcast, max(threads, 2)
    recs = []
    for r in range(M + B):
        w = Window(r, t0)
        if r < M:
            for _ in range(int(rng.integers(5, 15))):
                w.message(int(rng.integers(0, M)), "MOVE", 56)
                w.package("select")
            for _ in range(int(rng.integers(2, 6))):
                w.message(int(rng.integers(0, M)), "UPDATE", 40)
            if B:
                w.message(M + r % B, "SYNC", 112)
            if rng.random() < 0.3:
                w.message(int(rng.integers(0, M)), "PLAYOUT_FWD", 200)
            sims = 100 * (step + 1) + r
            fields = dict(queue_len=int(rng.integers(0, 8)) + (5 if r == 0 else 0),
                          busy_frac=float(min(1.0, 0.5 + 0.4 * rng.random() + (0.1 if r == 0 else 0))),
                          workers_busy=[0.1] + [float(rng.uniform(0.3, 1.0)) for _ in range(W - 1)],
                          sims_done=sims, playouts_done=sims, nodes_stored=50 * (step + 1),
                          nodes_duplicated=step, in_flight=int(rng.integers(5, 20)))
            if r == 0:
                fields["meta"] = {"algo": "treesplit", "game": "go", "board": board, "runtime": "engine",
                                  "ranks": {"search": M, "broadcast": B}, "threads": W}
                if with_tree:
                    df = random_tree(200, board, M, rng, total_visits=1000 * (step + 1))
                    fields["tree"] = {c: df[c].tolist() for c in
                                      ("hash", "parent", "move", "depth", "visits", "wins", "owner", "duplicated")}
        else:
            for d in range(M):
                w.message(d, "BCAST", 112)
            if B > 1:
                w.message(M + (r - M + 1) % B, "BCAST", 112)
            fields = dict(queue_len=int(rng.integers(0, 3)), busy_frac=float(rng.uniform(0.05, 0.2)))
        recs.append(w.flush(t1, **fields))
    return recs
