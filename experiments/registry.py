"""The experiments, by name: the question each answers and the module that runs it.

Kept free of heavy imports so `treesplit experiment --list` is instant; `load(name)` imports the module.
An experiment module defines `QUESTION`, `REFERENCE` (what of the source documents, docs/REFERENCES.md, it
reproduces), a `Config` dataclass with validate() (its fields are the keys of experiments/configs/NAME.toml) and
`run(cfg, out: Path) -> experiments.report.Outcome`, and `outcome(cfg, tables) -> Outcome` that builds the report
from the tables alone (`treesplit experiment NAME --report-only` rebuilds a kept report with it).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from model.errors import UserError


@dataclass(frozen=True)
class Entry:
    name: str
    question: str
    module: str | None  # None: not built yet


EXPERIMENTS: dict[str, Entry] = {e.name: e for e in (
    Entry("broadcast-topology", "Which m-connected k-ary n-cube does eq. 4.8/4.9 choose for each number of "
          "broadcast ranks (Table 4.1, Figure 4.5), and does every origin's broadcast reach every rank exactly "
          "once within n(k-1)+1 hops?", "experiments.broadcast_topology"),
    Entry("scaling-oculus", "On the thesis's OCuLUS cluster, how do the simulation rate, the worker workload and "
          "the outgoing bandwidth of search and broadcast ranks develop from 1 to 128(+32) compute nodes at "
          "moves 10/50/100/150 (Figures 4.8-4.11)?", "experiments.scaling_oculus"),
    Entry("overheads", "How is computation time split among the work-package kinds, how often does each kind "
          "occur and how long does one package take, sequentially and in parallel, across a game "
          "(Figures 4.18-4.21)?", "experiments.overheads"),
    Entry("parameters", "How do N_dup and N_sync (min, max = 2 min) change synchronisation traffic, hops per "
          "simulation and load imbalance, and playing strength (Figures 4.22, 4.23)?", "experiments.parameters"),
    Entry("parallel-degree", "How much strength do S_par simulations in parallel lose against sequential search "
          "at equal simulation counts (Figure 4.15)?", "experiments.parallel_degree"),
    Entry("algorithms", "How do root, leaf, tds, dfuct and treesplit compare by PPS, NPS and strength as nodes "
          "grow, on LOA and Go (Christoph 2020)?", "experiments.algorithms"),
    Entry("strength-scaling", "How does strength (against GNU Go 3.8 and in self-play) grow as ranks double, "
          "against the thesis's ~+700 Elo over 6 doublings?", "experiments.strength_scaling"),
    Entry("sim-validation", "How far are the simulator's predictions from engine measurements, for every "
          "configuration that runs here, over time?", "experiments.sim_validation"),
)}


def get(name: str) -> Entry:
    if name not in EXPERIMENTS:
        raise UserError(f"unknown experiment {name!r} (known: {', '.join(EXPERIMENTS)}; "
                        f"`treesplit experiment --list` says what each asks)")
    return EXPERIMENTS[name]


def load(name: str):
    """The module of a built experiment."""
    e = get(name)
    if e.module is None:
        built = ", ".join(n for n, x in EXPERIMENTS.items() if x.module)
        raise UserError(f"experiment {name!r} is not built yet (built: {built})")
    return importlib.import_module(e.module)
