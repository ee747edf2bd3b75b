"""What one simulation of an algorithm does, in numbers: the statistical fidelity's model of the roles.

The functional fidelity lets model/'s roles decide hops, expansions and synchronisations. The statistical
fidelity draws them instead, from a Workload fitted to a trace (an engine trace or a functional simulation):

    remote_steps    in-tree steps at nodes that are not duplicated, per simulation. Each such node lives
                    on a rank chosen by its hash, so on M ranks a step moves the simulation with
                    probability (M-1)/M; this is what lets a workload fitted on M ranks predict others.
                    From a trace: hops per simulation * M / (M-1).
    expands_per_sim expand packages per simulation
    syncs_per_sim   SYNC messages a search rank sends per simulation it completes (treesplit, root)
    nodes_per_sim   tree nodes created per simulation (NPS)
    dup_nodes       how many shared nodes synchronisation messages are about (merging at broadcast ranks)

The defaults are a 19x19 game near move 10 (seed 000 4.3.2); they are a starting point, not a measurement.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from model.config import check
from model.errors import ConfigError, TraceError
from sim.distributions import Distribution, fit_distribution, parse_distribution


@dataclass(frozen=True)
class Workload:
    remote_steps: Distribution
    expands_per_sim: float = 0.2
    syncs_per_sim: float = 0.25
    nodes_per_sim: float = 1.0
    dup_nodes: int = 64
    source: str = "defaults"

    def validate(self) -> None:
        for f in ("expands_per_sim", "syncs_per_sim", "nodes_per_sim"):
            v = getattr(self, f)
            check(math.isfinite(v) and v >= 0, f"workload.{f}", f"must be >= 0, got {v!r}")
        check(self.dup_nodes >= 1, "workload.dup_nodes", "must be >= 1")

    def to_toml(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["remote_steps"] = self.remote_steps.to_toml()
        return d


DEFAULTS: dict[str, Workload] = {
    "treesplit": Workload(Distribution("lognormal", median=2.5, sigma=0.5)),
    "tds": Workload(Distribution("lognormal", median=8.0, sigma=0.4), syncs_per_sim=0.0),
    "root": Workload(Distribution("const", value=0.0), syncs_per_sim=0.0),
    "leaf": Workload(Distribution("const", value=0.0), syncs_per_sim=0.0),
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
    """Fit a Workload from a loaded trace (model.trace.Trace) of any algorithm."""
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
    if M > 1 and not ms.empty:
        moves = ms[(ms["kind"] == "MOVE") & ms["sim_id"].isin(sims)].groupby("sim_id").size()
        hops = moves.reindex(sims, fill_value=0).to_numpy(dtype=np.float64)
        remote = fit_distribution(hops * M / (M - 1))
    else:
        remote = base.remote_steps
    expands = float(pk.loc[pk["sim_id"].isin(sims), "kind"].eq("expand").sum())
    syncs = float(ms["kind"].eq("SYNC").sum()) if not ms.empty else 0.0
    rate = float(meta.get("sample_rate", 1.0) or 1.0)
    # packages are sampled by simulation and SYNC messages (no simulation) by count, at the same rate
    syncs_per_sim = syncs / n_sims
    nodes_per_sim = base.nodes_per_sim
    if not smp.empty:
        last = smp.sort_values("t").groupby("rank").last()
        done = float(last["sims_done"].sum())
        if done > 0:
            nodes_per_sim = float(last["nodes_stored"].sum()) / done
            syncs_per_sim = syncs / (done * rate)
    w = Workload(remote_steps=remote, expands_per_sim=expands / n_sims, syncs_per_sim=syncs_per_sim,
                 nodes_per_sim=nodes_per_sim, dup_nodes=base.dup_nodes,
                 source=f"fitted from trace {trace.path.name} ({algo}, M={M}, {n_sims} simulations)")
    w.validate()
    return w
