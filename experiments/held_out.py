"""What `treesplit validate` needs to judge a prediction out of sample: which figures cannot miss, how much of a
simulation's time each calibrated cost makes up, and which of them a missed configuration shows differently.

A held-out row is predicted with the profile of the reference configuration's runs (experiments/validate.py);
the configuration's own traced runs only calibrate its in-sample row and, here, say where a held-out miss
comes from: the cost whose time per simulation differs most between the two calibrations, weighted by how
often this configuration pays it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from model.roles.params import split_params
from sim.profile import COST_KINDS, STEP_KINDS
from sim.runtime import STATS_KINDS

# |relative error| a held-out figure must stay within (issue 18): rates and fractions move with this
# machine's speed, the per-simulation counts follow from the roles both runtimes share
HELD_OUT_GOALS = {"sims_per_s": 0.20, "busy_frac": 0.20, "messages_per_sim": 0.10, "bytes_per_sim": 0.10,
                  "hops_per_sim": 0.10}
RATE_FIGURES = ("sims_per_s", "busy_frac")
# a calibrated cost that differs by less than this share of a simulation's modelled time does not explain a miss
NEGLIGIBLE = 0.05


def fixed_by_construction(algo: str, figure: str, measured: float | None, predicted: float | None,
                          in_sample: bool, params: dict[str, Any] | None = None) -> str | None:
    """Why a figure cannot miss whatever the model gets wrong, or None when it can (params: the
    configuration's algorithm parameters). Such figures are listed apart and not counted."""
    if measured == 0 and predicted == 0:
        return "zero on both sides: no messages between ranks"
    if algo == "leaf" and figure == "hops_per_sim":
        return "leaf parallelisation moves no simulation between search ranks"
    if algo == "leaf" and figure == "messages_per_sim" and not split_params("leaf", params or {})[1].master_playouts:
        return "the thesis's leaf master sends one job and gets one result per simulation, whatever it costs"
    if in_sample and algo == "sequential" and figure == "sims_per_s":
        return "the sequential rate is calibrated on a sequential run of its own: measured twice"
    return None


def usage(tr) -> dict[str, float]:
    """Per simulation of a traced run: packages of each kind, packages in all, messages and statistics bytes
    received; and per part of the kinds whose cost grows with the tree steps, its mean steps (`<kind>_steps`,
    where the trace says them). Counted over the recorded windows only (a probing trace records every other
    0.1 s), with the playout packages (one per simulation) as the count of simulations."""

    pk = tr.packages
    kinds = pk["kind"].astype(str) if len(pk) else pk.get("kind")
    sims = float((kinds == "playout").sum()) if len(pk) else 0.0
    if sims == 0:
        return {}
    out = {k: float((kinds == k).sum()) / sims for k in COST_KINDS}
    out["packages"] = float((kinds != "io").sum()) / sims
    if "steps" in pk:
        for k in STEP_KINDS:
            st = pk.loc[(kinds == k) & (pk["steps"] >= 0), "steps"]
            if len(st):
                out[f"{k}_steps"] = float(st.mean())
    ms = tr.messages
    out["messages"] = float(len(ms)) / sims
    out["stats_bytes"] = (float(ms.loc[ms["kind"].astype(str).isin(STATS_KINDS), "bytes"].sum()) / sims
                          if len(ms) else 0.0)
    return out


def cost_terms(prof, use: dict[str, float]) -> dict[str, float]:
    """Seconds per simulation that each modelled cost of `prof` charges a run that does what `use` says (the
    simulator's charges: a package's service time, for the tree steps its parts cover where both say them;
    per_package after it, o + per_message at both ends of a message, stats_per_byte on shared-node
    statistics)."""

    def per_part(k: str) -> float:
        if k in prof.steps and f"{k}_steps" in use:
            k0, k1 = prof.steps[k].coefficients()
            return prof.costs[k].mean * (k0 + k1 * use[f"{k}_steps"])
        return prof.costs[k].mean

    terms = {f"{k} package cost": use.get(k, 0.0) * per_part(k) for k in COST_KINDS}
    terms["per-package bookkeeping (io.per_package)"] = use.get("packages", 0.0) * prof.io.per_package
    terms["per-message cost (network.overhead + io.per_message)"] = (
        2 * use.get("messages", 0.0) * (prof.network.overhead + prof.io.per_message))
    terms["shared-node statistics (io.stats_per_byte)"] = use.get("stats_bytes", 0.0) * prof.io.stats_per_byte
    return terms


def median_usage(uses: list[dict[str, float]]) -> dict[str, float]:
    uses = [u for u in uses if u]
    if not uses:
        return {}
    return {k: float(np.median([u.get(k, 0.0) for u in uses])) for k in uses[0]}


def wrong_cost(row: dict[str, Any], use: dict[str, float], own, ref) -> str:
    """For a held-out row with a figure beyond its goal: which modelled cost the reference profile gets wrong
    for this configuration, from the configuration's own calibration (`own`, the in-sample profile) against
    the reference one (`ref`); "" when every figure is within its goal."""
    missed = [f for f, g in HELD_OUT_GOALS.items()
              if f not in row.get("fixed", ()) and row.get(f"{f}_error") is not None
              and abs(row[f"{f}_error"]) > g]
    if not missed:
        return ""
    parts = []
    if any(f in RATE_FIGURES for f in missed):
        if own is None or not use:
            parts.append("no trace of this configuration to compare costs with")
        else:
            a, b = cost_terms(own, use), cost_terms(ref, use)
            total = sum(b.values()) or 1e-12
            name = max(a, key=lambda k: abs(a[k] - b[k]))
            d = a[name] - b[name]
            if abs(d) < NEGLIGIBLE * total:
                parts.append(f"no calibrated cost differs by {NEGLIGIBLE:.0%} of a simulation's modelled time "
                             f"({total * 1e6:.1f} us): the miss is in what the model does with them (queues, IO "
                             f"loop, network) or in this machine's drift")
            else:
                parts.append(f"{name}: {a[name] * 1e6:.1f} us per simulation in this configuration's own "
                             f"calibration, {b[name] * 1e6:.1f} us as the reference profile models it "
                             f"({d / total:+.0%} of a simulation's modelled time)")
    counts = [f for f in missed if f not in RATE_FIGURES]
    if counts:
        parts.append(f"{', '.join(counts)} follow from the roles both runtimes share, not from costs: the "
                     f"simulated search grew a different tree")
    return "; ".join(parts)


def sequential_cost(row: dict[str, Any], kernel_sims_per_s: float | None, ref) -> str:
    """For a held-out sequential or tree row beyond its goal: the reference trace's cost of one simulation
    (select + playout + update packages) against this machine's sequential kernel, measured apart."""
    e = row.get("sims_per_s_error")
    if e is None or abs(e) <= HELD_OUT_GOALS["sims_per_s"]:
        return ""
    model = ref.sim_seconds()
    if not kernel_sims_per_s:
        return f"package costs of one simulation as the reference trace shows them: {model * 1e6:.1f} us"
    return (f"select + playout + update package costs: {model * 1e6:.1f} us per simulation as the reference trace "
            f"shows them, {1e6 / kernel_sims_per_s:.1f} us as this machine's sequential kernel runs one")


LOADED = 0.8  # a run whose ranks held a core less than this share of the time was slowed by other processes


def with_load(cause: str, cpu_share: float | None) -> str:
    """A miss's cause, and where the measured runs' ranks held a core less than LOADED of the time, that too:
    the simulator gives every rank a core of its own, so on a loaded machine the measured rate is lower than
    any cost explains."""
    if not cause or cpu_share is None or cpu_share >= LOADED:
        return cause
    return (f"{cause}; and the measured runs' ranks held a core only {cpu_share:.0%} of the time (other "
            f"processes on this machine), which no profile models")
