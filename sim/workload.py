"""What one simulation of an algorithm does, in numbers: the statistical fidelity's model of the roles.

The functional fidelity lets model/'s roles decide hops, expansions and synchronisations. The statistical
fidelity draws them instead, from a Workload fitted to a trace (an engine trace or a functional simulation):

    remote_steps    in-tree steps at nodes that are not duplicated, per simulation. Each such node lives
                    on a rank chosen by its hash, so on M ranks a step moves the simulation with
                    probability (M-1)/M; this is what lets a workload fitted on M ranks predict others.
                    From a trace: the distribution whose thinning by (M-1)/M gives the hops per simulation.
    expands_per_sim expand packages per simulation
    syncs_per_sim   SYNC messages a search rank sends per simulation it completes (treesplit, root)
    sync_gap_cv     the spread of a search rank's gaps between SYNCs: their coefficient of variation. The
                    kernel draws each gap, in the rank's completed simulations, from a gamma distribution of
                    mean 1 / syncs_per_sim and this spread (0: evenly spaced). What a broadcast window merges
                    depends on it: the more SYNCs come close together, the fewer a window sends on. From a
                    trace: per rank, its own simulations that ended between two of its SYNCs
    nodes_per_sim   tree nodes created per simulation (NPS)
    dup_nodes       how many shared nodes synchronisation messages are about (merging at broadcast ranks).
                    From a trace: the search ranks' duplicated nodes, on average over its samples
    top_steps       step records a simulation carries on its first hop (the duplicated nodes it walked at
                    its origin; tds: the root, selected at its owner; leaf: the master's path in a JOB);
                    each later hop carries one more (the node selected where it was)
    tail_steps      step records its path holds beyond top_steps and one per hop (the leaf's, and steps
                    that stayed on a rank): an UPDATE carries top + hops + tail under RAVE
    sync_rows       statistics rows per SYNC or MERGE record, per shared node's worth of rows (a node row and
                    one per child: the game's max_children + 1). Under RAVE nearly every child of a synced
                    node has AMAF increments, so a record's rows follow the board
    hot_steps       per remote step k (k = 0, 1, ..): the shares of the simulations that step to each of
                    that step's hottest nodes. The first steps below the duplicated top of the tree are at
                    few nodes (UCT sends most simulations to the best children), each on one rank; those
                    ranks get that share of the cluster's steps whatever M is, which is what saturates
                    them as ranks are added. Each hot node's rank is drawn by hash (per run seed); the rest
                    of the step is uniform. From a trace: the k-th MOVE's destination shares above 2/M.
                    Empty: every step uniform (a developed tree, its hot nodes duplicated).

Message sizes are not a workload's: the statistical fidelity charges each message the size of its record
(model/roles/messages.py) with the counts above and the game's AMAF map.

The defaults are a 19x19 game near move 10 (Schaefers 2014, 4.3.2); they are a starting point, not a measurement.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from model.config import check
from model.errors import ConfigError, TraceError
from model.roles.messages import HEAD, STAT, STEP
from sim.distributions import Distribution, parse_distribution


@dataclass(frozen=True)
class Workload:
    remote_steps: Distribution
    expands_per_sim: float = 0.2
    syncs_per_sim: float = 0.25
    sync_gap_cv: float = 0.0
    nodes_per_sim: float = 1.0
    dup_nodes: int = 64
    hot_steps: tuple[tuple[float, ...], ...] = ()
    top_steps: float = 1.0
    tail_steps: float = 1.0
    sync_rows: float = 1.0
    source: str = "defaults"

    def validate(self) -> None:
        for f in ("expands_per_sim", "syncs_per_sim", "nodes_per_sim", "top_steps", "tail_steps", "sync_rows"):
            v = getattr(self, f)
            check(math.isfinite(v) and v >= 0, f"workload.{f}", f"must be >= 0, got {v!r}")
        check(math.isfinite(self.sync_gap_cv) and 0 <= self.sync_gap_cv <= MAX_SYNC_GAP_CV, "workload.sync_gap_cv",
              f"must be in [0, {MAX_SYNC_GAP_CV}], got {self.sync_gap_cv!r}")
        check(self.dup_nodes >= 1, "workload.dup_nodes", "must be >= 1")
        check(len(self.hot_steps) <= MAX_HOT_STEPS, "workload.hot_steps", f"at most {MAX_HOT_STEPS} steps")
        for k, shares in enumerate(self.hot_steps):
            check(len(shares) <= MAX_HOT_NODES, "workload.hot_steps", f"step {k}: at most {MAX_HOT_NODES} nodes")
            check(all(math.isfinite(x) and x >= 0 for x in shares) and sum(shares) <= 1.0 + 1e-9,
                  "workload.hot_steps", f"step {k}: shares must be >= 0 and sum to at most 1, got {list(shares)}")

    @property
    def sync_gap_shape(self) -> float:
        """The gamma shape of the SYNC gaps (1 / cv^2); 0 for evenly spaced ones."""
        return 1.0 / self.sync_gap_cv ** 2 if self.sync_gap_cv > 0 else 0.0

    def to_toml(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["remote_steps"] = self.remote_steps.to_toml()
        d["hot_steps"] = [list(x) for x in self.hot_steps]
        return d


MAX_HOT_STEPS = 4   # remote steps with hot nodes (deeper steps spread over many nodes)
MAX_HOT_NODES = 16  # hot nodes per step
MAX_SYNC_GAP_CV = 4.0  # gamma shape >= 1/16: a smaller one draws mostly near-zero gaps, a burst per SYNC


def hot_rank(seed: int, step: int, node: int, ranks: int) -> int:
    """The rank (0 .. ranks-1) that owns hot node `node` of remote step `step`: a hash, as ownership is."""
    x = (seed * 0x9E3779B97F4A7C15 + (step * MAX_HOT_NODES + node + 1) * 0xBF58476D1CE4E5B9) & (2**64 - 1)
    x ^= x >> 31
    x = (x * 0x94D049BB133111EB) & (2**64 - 1)
    x ^= x >> 29
    return int(x % ranks)


DEFAULTS: dict[str, Workload] = {
    "treesplit": Workload(Distribution("lognormal", median=2.5, sigma=0.5)),
    "tds": Workload(Distribution("lognormal", median=8.0, sigma=0.4), syncs_per_sim=0.0),
    "root": Workload(Distribution("const", value=0.0), syncs_per_sim=0.0),
    "leaf": Workload(Distribution("const", value=0.0), syncs_per_sim=0.0, top_steps=4.0),
}
DEFAULTS["hybrid"] = DEFAULTS["treesplit"]  # inside a group, hybrid is treesplit


def default_workload(algo: str) -> Workload:
    if algo not in DEFAULTS:
        raise ConfigError(f"--algo {algo!r}: the statistical fidelity knows {', '.join(sorted(DEFAULTS))}")
    return DEFAULTS[algo]


def workload_from_dict(data: dict[str, Any], where: str = "workload") -> Workload:
    d = dict(data)
    if "remote_steps" not in d:
        raise ConfigError(f"{where}.remote_steps: missing")
    d["remote_steps"] = parse_distribution(f"{where}.remote_steps", d["remote_steps"])
    if "hot_steps" in d:
        hs = d["hot_steps"]
        try:
            d["hot_steps"] = tuple(tuple(float(x) for x in step) for step in hs)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}.hot_steps: expected a list of lists of shares, got {hs!r}") from None
    known = {f.name for f in dataclasses.fields(Workload)}
    for k in d:
        if k not in known:
            raise ConfigError(f"{where}.{k}: unknown setting (known: {', '.join(sorted(known))})")
    try:
        w = Workload(**d)
    except TypeError as e:
        raise ConfigError(f"{where}: {e}") from None
    w.validate()
    return w


def fit_workload(trace) -> Workload:
    """Fit a Workload from a loaded trace (engine.trace_files.Trace) of any algorithm."""
    meta = trace.meta
    M = int(meta.get("ranks", {}).get("search", 1))
    if meta.get("algo") == "hybrid":  # a simulation moves among its group's ranks only
        M //= max(1, int(meta.get("params", {}).get("groups", 1)))
    pk, ms, smp = trace.packages, trace.messages, trace.samples
    algo = meta.get("algo", "?")
    if pk.empty:
        raise TraceError(f"{trace.path}: the trace has no work packages to fit a workload from")
    sims = pk.loc[(pk["sim_id"] >= 0) & (pk["kind"] == "playout"), "sim_id"].unique()
    if len(sims) == 0:
        raise TraceError(f"{trace.path}: no playout packages with a simulation id")
    n_sims = len(sims)
    base = default_workload(algo) if algo in DEFAULTS else DEFAULTS["treesplit"]
    unshared = algo == "tds" or (meta.get("params") or {}).get("share_root") is False
    if unshared and not ms.empty:  # a hop to the root's owner carries no step records: not a remote step
        ms = ms[~(ms["kind"].eq("MOVE") & (ms["bytes"] <= HEAD))]
    if M > 1 and not ms.empty:
        remote = _fit_remote_steps(pk, ms, sims, M, measured_window(trace))
    else:
        remote = base.remote_steps
    hot: tuple[tuple[float, ...], ...] = ()
    if M > 1 and not ms.empty and algo in ("treesplit", "hybrid"):  # tds's first step is the root's owner
        hot = _fit_hot_steps(ms, M)
    expands = float(pk.loc[pk["sim_id"].isin(sims), "kind"].eq("expand").sum())
    # the search ranks' SYNCs: broadcast ranks pass them on as SYNCs too, which the model makes itself; without
    # broadcast ranks a synchronisation is one SYNC to every other search rank
    n_search = int(meta.get("ranks", {}).get("search", 1))
    per_sync = 1 if int(meta.get("ranks", {}).get("broadcast", 0)) else max(1, n_search - 1)
    syncs = float((ms["kind"].eq("SYNC") & (ms["src"] < n_search)).sum()) / per_sync if not ms.empty else 0.0
    rate = float(meta.get("sample_rate", 1.0) or 1.0)
    # packages are sampled by simulation and SYNC messages (no simulation) by count, at the same rate
    syncs_per_sim = syncs / n_sims
    nodes_per_sim = base.nodes_per_sim
    dup_nodes = base.dup_nodes
    if not smp.empty:
        last = smp.sort_values("t").groupby("rank").last()
        done = float(last["sims_done"].sum())
        if done > 0:
            nodes_per_sim = float(last["nodes_stored"].sum()) / done
            syncs_per_sim = syncs / (done * rate)
        # every search rank holds the same duplicated nodes: their count over the run is what the
        # synchronisations are about (9x9 for a second on 4 ranks: the root alone)
        dup = smp.loc[smp["rank"] < n_search, "nodes_duplicated"]
        if algo in ("treesplit", "hybrid") and (dup > 0).any():
            dup_nodes = max(1, round(float(dup.mean())))
    sizes = _fit_records(ms, meta, n_search, base) if not ms.empty else {}
    gap_cv = _fit_sync_gap_cv(pk, ms, n_search, per_sync, rate, measured_window(trace)[0], base.sync_gap_cv)
    w = Workload(remote_steps=remote, expands_per_sim=expands / n_sims, syncs_per_sim=syncs_per_sim,
                 sync_gap_cv=gap_cv,
                 nodes_per_sim=nodes_per_sim, dup_nodes=dup_nodes, hot_steps=hot, **sizes,
                 source=f"fitted from trace {trace.path.name} ({algo}, M={M}, {n_sims} simulations)")
    w.validate()
    return w


def trace_game(meta: dict) -> tuple[int, int, bool]:
    """(the game's actions, its most children per node, whether RAVE was on) of the run a trace's meta describes."""
    from model.game import GameSpec, max_children, n_actions
    from model.roles import split_params

    spec = dict((meta.get("extra") or {}).get("game_spec") or {})
    spec.setdefault("name", meta.get("game", "go"))
    if meta.get("board"):
        spec.setdefault("size", int(meta["board"]))
    known = {f.name for f in dataclasses.fields(GameSpec)}
    g, _ = GameSpec(**{k: v for k, v in spec.items() if k in known}).make()
    algo = meta.get("algo", "treesplit")
    try:
        uct, _ = split_params(algo if algo in DEFAULTS or algo == "dfuct" else "treesplit", dict(meta.get("params") or {}))
        rave = bool(uct.rave)
    except ConfigError:
        rave = True
    return int(n_actions(g)), int(max_children(g)), rave


def measured_window(trace) -> tuple[float, float]:
    """The span of a trace whose rates its run reported: from the simulator's warm-up (meta extra.warmup)
    or, in a trace without one (the engine's), from a tenth of the way in, past the start when all S_par
    simulations begin at once; to the run's end (meta t_end; a statistical run books work past it)."""
    pk = trace.packages
    t0 = float(pk["t_start"].min())
    t1 = float(trace.meta.get("t_end") or pk["t_end"].max())
    warmup = (trace.meta.get("extra") or {}).get("warmup")
    return (float(warmup) if warmup is not None else t0 + 0.1 * (t1 - t0)), t1


def _fit_records(ms, meta: dict, n_search: int, base: Workload) -> dict[str, float]:
    """top_steps, tail_steps and sync_rows from the sizes of the trace's records (model/roles/messages.py's
    layout): the step records of MOVEs and JOBs by hop, of UPDATEs beyond top + hops, the rows of the search
    ranks' SYNC and MERGE records. What the trace has none of stays `base`'s."""
    actions, children, rave = trace_game(meta)
    kind = ms["kind"].astype(str)
    out: dict[str, float] = {}
    hops = ms[kind.isin(["MOVE", "JOB"]) & (ms["sim_id"] >= 0)].sort_values(["sim_id", "t_send"])
    if len(hops):
        rec = (hops["bytes"].to_numpy() - HEAD) // STEP.itemsize
        k = hops.groupby("sim_id").cumcount().to_numpy()
        out["top_steps"] = max(0.0, float(np.mean(rec - k)))
        up = ms[kind.eq("UPDATE") & (ms["sim_id"] >= 0)]
        if rave and len(up):
            n = hops[hops["kind"].astype(str) == "MOVE"].groupby("sim_id").size()
            got = (up["bytes"].to_numpy() - HEAD - (actions + 7) // 8 * 8) // STEP.itemsize
            moved = n.reindex(up["sim_id"].to_numpy(), fill_value=0).to_numpy()
            out["tail_steps"] = max(0.0, float(np.mean(got - out["top_steps"] - moved)))
    rows = ms[kind.isin(["SYNC", "MERGE"]) & (ms["src"] < n_search)]
    if len(rows):
        out["sync_rows"] = float(np.mean((rows["bytes"].to_numpy() - HEAD) / STAT.itemsize)) / (children + 1)
    return {k: round(v, 4) for k, v in out.items()}


def _fit_sync_gap_cv(pk, ms, n_search: int, per_sync: int, rate: float, t0: float, base: float) -> float:
    """The coefficient of variation of the search ranks' gaps between SYNCs from t0 on, counted in the
    simulations that the rank started (its first package ran there) and that ended in between; a
    synchronisation without broadcast ranks is per_sync SYNCs at once: one gap. Counted in simulations, as
    the kernel draws them, and not in time: a gap in time also holds the ranks' stalls and the tree's phases,
    which the kernel brings about from its own costs (experiments/SIMULATOR.md). A sampled trace (rate < 1)
    keeps SYNCs by count, so its gaps join several of the rank's: `base` then, as with too few gaps (< 30)."""
    if ms.empty or pk.empty or rate < 1.0:
        return base
    sy = ms[ms["kind"].eq("SYNC") & (ms["src"] < n_search)]
    by_sim = pk[pk["sim_id"] >= 0].sort_values("t_start").groupby("sim_id")
    origin, ended = by_sim["rank"].first().to_numpy(), by_sim["t_end"].max().to_numpy()
    gaps = [np.zeros(0, np.int64)]
    for r, ts in sy.groupby("src")["t_send"]:
        ts = np.sort(ts.to_numpy())[::per_sync]
        done = np.sort(ended[origin == r])
        gaps.append(np.diff(np.searchsorted(done, ts[ts >= t0], side="right")))
    g = np.concatenate(gaps)
    if len(g) < 30 or g.mean() <= 0:
        return base
    return round(min(MAX_SYNC_GAP_CV, float(g.std() / g.mean())), 4)


def _fit_remote_steps(pk, ms, sims, M: int, window: tuple[float, float]) -> Distribution:
    """Remote steps per simulation: the shape from the hops of the finished simulations, the mean from the
    MOVEs sent in the trace's measured window per simulation that ended in it (the figure the simulator's
    summary and the engine report). Finished simulations alone are biased to short paths: the long ones
    started near the end are still in flight when the trace ends (at 32 oculus nodes, 2.3 hops per finished
    simulation against 3.0 per simulation in the steady state); and a growing tree's simulations hop more as
    it deepens, so the window's rate is the run's, not that of its simulations that happen to have ended.

    A remote step moves the simulation with probability (M-1)/M whatever came before (its node's owner is
    uniform), so a simulation of n remote steps hops Binomial(n, (M-1)/M) times: the distribution of n is
    the one whose binomial thinning gives the hops seen (the maximum-likelihood mixture), not the hops
    scaled by M/(M-1), which has the right mean but too few simulations that never hop (and so too many
    that do, with too few UPDATEs for their hops)."""
    mine = pk[pk["sim_id"] >= 0]
    start = mine.groupby("sim_id")["t_start"].min()
    t0, t1 = float(start.min()), float(pk["t_end"].max())
    late = start.index[start.to_numpy() >= t0 + 0.25 * (t1 - t0)]
    use = np.intersect1d(sims, late) if len(np.intersect1d(sims, late)) >= 50 else sims
    mv = ms[(ms["kind"] == "MOVE") & (ms["sim_id"] >= 0)]
    hops = mv[mv["sim_id"].isin(use)].groupby("sim_id").size().reindex(use, fill_value=0).to_numpy(np.int64)
    dist = _integer_distribution(_unthinned(np.bincount(hops), (M - 1) / M))
    w0, w1 = window
    ended = mine[mine["kind"].eq("update")].groupby("sim_id")["t_end"].max()
    done = int(((ended >= w0) & (ended <= w1)).sum())
    if done >= 50 and hops.mean() > 0:
        moved = int(((mv["t_send"] >= w0) & (mv["t_send"] <= w1)).sum())
        dist = dist.scaled(moved / done / float(hops.mean()))
    return dist


def _unthinned(seen: np.ndarray, p: float, iterations: int = 2000) -> np.ndarray:
    """The distribution of n (index: n) whose Binomial(n, p) thinning gives counts `seen` (index: hops):
    the maximum-likelihood mixture by EM, from uniform weights on 0 .. the most hops / p (and a few more)."""
    if p >= 1.0:
        return seen / seen.sum()
    n_max = int(np.ceil((len(seen) - 1) / p)) + 3
    n = np.arange(n_max + 1)
    h = np.arange(len(seen))[:, None]
    with np.errstate(divide="ignore"):
        logc = np.array([[math.lgamma(k + 1) - math.lgamma(j + 1) - math.lgamma(k - j + 1) if j <= k else -np.inf
                          for k in n] for j in range(len(seen))])
        like = np.exp(logc + h * np.log(p) + (n[None, :] - h) * np.log1p(-p))  # P(hops | n)
    w = np.full(n_max + 1, 1.0 / (n_max + 1))
    total = seen.sum()
    for _ in range(iterations):
        mix = like @ w
        w = w * (like.T @ np.where(mix > 0, seen / np.where(mix > 0, mix, 1.0), 0.0)) / total
    return w / w.sum()


def _integer_distribution(pmf: np.ndarray) -> Distribution:
    """An empirical Distribution that draws whole numbers with these probabilities (index: the number): its
    quantile function is flat at each, rising to the next within 1e-9 of probability."""
    ks = np.flatnonzero(pmf > 1e-6)
    ws = pmf[ks] / pmf[ks].sum()
    if len(ks) == 1:
        return Distribution("const", value=float(ks[0]))
    q, p = [float(ks[0])], [0.0]
    c = 0.0
    for i, k in enumerate(ks):
        if i:
            q.append(float(k))
            p.append(c + 1e-9)
        c += float(ws[i])
        q.append(float(k))
        p.append(c)
    p[-1] = 1.0
    return Distribution("empirical", quantiles=tuple(q), probs=tuple(p))


def _fit_hot_steps(ms, M: int) -> tuple[tuple[float, ...], ...]:
    """Per remote step k, the shares of the hottest nodes: the k-th MOVE's destinations (ranks within a
    simulation's group of M) that take more than 2/M of that step, less the uniform background. Ranks
    stand for nodes: two hot nodes on one rank count as one, which matters little where M is not small."""
    # every traced simulation's MOVEs, finished or not: the ones still queued at a hot rank when the trace
    # ends are the hot ranks' share too
    mv = ms[(ms["kind"] == "MOVE") & (ms["sim_id"] >= 0)].sort_values(["sim_id", "t_send"])
    if mv.empty:
        return ()
    k = mv.groupby("sim_id").cumcount().to_numpy()
    dst = mv["dst"].to_numpy() % M
    out = []
    for step in range(MAX_HOT_STEPS):
        d = dst[k == step]
        if len(d) < 20 * M:  # too few to tell a hot rank from noise
            break
        share = np.sort(np.bincount(d, minlength=M) / len(d))[::-1]
        n_hot = min(MAX_HOT_NODES, int((share > 2.0 / M).sum()))
        if n_hot == 0:
            out.append(())
            continue
        background = (1.0 - share[:n_hot].sum()) / (M - n_hot)
        out.append(tuple(round(float(x - background), 4) for x in share[:n_hot]))
    while out and not out[-1]:
        out.pop()
    return tuple(out)
