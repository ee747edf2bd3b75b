"""`treesplit validate`: the simulator against the real engine on the configurations that fit this machine.

For each configuration the real engine runs (engine.mpi.run_distributed for the MPI algorithms, with a trace;
engine.algorithms' searchers for sequential and tree), then the simulator (functional fidelity, Go on the same
board, the same simulated seconds as the measured run) predicts the same figures with a profile calibrated on
this machine, and the table says by how much they differ.

Two tables:
  - held out (the headline): the profile is calibrated once, on the reference configuration (treesplit 2x1 on the
    first board: its traced runs, one profile per repeat, and the MPI ping-pong made at the start), and
    predicts every other configuration without refitting: other algorithms, boards, parameters, Lines of
    Action, and sequential and tree from its package costs alone, each kind of package cost scaled by the
    case's board against the reference's and by the machine's drift since the reference was calibrated
    (held_out_scale: kernel probes, runs of their own). Each row says `calibrated_on` and `in_sample` false.
    Where a row misses, `wrong_cost` names the modelled cost the reference profile gets wrong there, from the
    configuration's own calibration (experiments/held_out.py). Goals: 20% on sims/s and busy fraction, 10% on
    messages, bytes and hops per simulation.
  - in sample: each MPI configuration calibrated on traced runs of its own (sim.calibrate: package costs,
    message sizes, per-package bookkeeping; network from the ping-pong), one per repeat, each followed by an
    untraced run; the prediction is the median over the calibrations and the measurement the median over the
    untraced runs (both tables compare with the same untraced runs), so it tests the model's structure given
    the costs a trace shows. sims/s, a rate of this drifting machine, is judged by the median of each pair's
    error (paired_error; column sims_per_s_error_of_medians keeps the medians' error). The traced runs record
    every other 0.1 s (DistributedConfig.trace_probe); the ratio of the recorded windows' sims/s to the
    unrecorded ones' is column record_factor (sim.calibrate.probe_factor: what recording cost, left out of
    the calibration's fit). sequential and tree are predicted as the simulator's shared-memory rate (the board's first
    MPI calibration without the runtime's overheads) scaled by this machine's sequential kernel speed,
    measured by a separate short search right before; what sharing one tree costs its threads
    (NodeSpec.tree_share) is measured once at the start, on 9x9 (experiments/tree_sharing.py).
  - --profile P: one table, every configuration predicted by P (held out, calibrated_on "profile P").
Figures fixed by construction (zero on both sides, leaf's job and result per simulation, the in-sample
sequential rate measured twice) are listed apart (`fixed`, fixed_by_construction) and not counted.

Figures (docs/ARCHITECTURE.md, "Metrics"): sims/s, messages/sim, bytes/sim, hops/sim, worker busy fraction. A relative
error is (predicted - measured) / measured; None where the figure does not apply (0 measured and predicted,
or sequential/tree's message figures).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from engine.benchmarks.parallel import _run_shared
from engine.machine import machine_description
from engine.mpi import DistributedConfig, run_distributed
from engine.results import write_csv, write_json
from engine.trace_files import read_trace
from experiments import held_out as ho
from experiments import tree_sharing
from model.algorithms import DISTRIBUTED
from model.config import check
from model.errors import UserError
from sim.calibrate import calibrate, fused, probe_factor, run_pingpong
from sim.profile import SIM_KINDS, load_profile
from sim.simulate import SimConfig, simulate

FIGURES = ("sims_per_s", "messages_per_sim", "bytes_per_sim", "hops_per_sim", "busy_frac")
GOAL = 0.15  # |relative error| the issue asks for


@dataclass(frozen=True)
class Case:
    """One configuration: an algorithm on RANKS x THREADS (threads count the IO thread) on a game's board, with
    algorithm parameters other than the defaults (KEY=VALUE pairs)."""

    algo: str
    board: int
    ranks: int = 1
    threads: int = 1
    game: str = "go"
    params: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        where = f"{self.board}x{self.board}" if self.game == "go" else f"{self.game} {self.board}x{self.board}"
        extra = "".join(f" {k}={v}" for k, v in self.params)
        if self.algo == "sequential":
            return f"sequential {where}{extra}"
        if self.algo == "tree":
            return f"tree {self.threads}t {where}{extra}"
        return f"{self.algo} {self.ranks}x{self.threads} {where}{extra}"

    @property
    def mpi(self) -> bool:
        return self.algo in DISTRIBUTED

    @property
    def param_dict(self) -> dict[str, str]:
        return dict(self.params)


def reference_case(boards: list[int]) -> Case:
    """The configuration whose traced runs calibrate every held-out prediction: treesplit on 2 ranks of one
    thread on the first board (9x9 by default), the smallest run with messages a user can trace."""
    return Case("treesplit", boards[0], 2, 1)


def cases(boards: list[int], quick: bool, cores: int | None = None) -> list[Case]:
    """The configurations of 1-4 ranks x 1-2 threads (threads count the IO thread) that fit `cores` (default:
    this machine's): more processes and threads than cores would measure the scheduler, which the simulator
    does not model. The reference configuration comes first."""

    cores = cores or os.cpu_count() or 1
    ref = reference_case(boards)
    todo = [c for c in _all_cases(boards, quick) if c.ranks * c.threads <= cores]
    return [ref] + [c for c in todo if c != ref]


def _all_cases(boards: list[int], quick: bool) -> list[Case]:
    out: list[Case] = []
    first = boards[0]
    for b in boards:
        if quick:
            out += [Case("treesplit", b, 2, 1), Case("tds", b, 2, 1), Case("root", b, 2, 1), Case("leaf", b, 2, 1),
                    Case("sequential", b)]
            if b == first:
                out.append(Case("treesplit", b, 2, 1, params=(("n_dup", "64"),)))
            continue
        out += [Case("treesplit", b, 2, 1), Case("treesplit", b, 1, 2), Case("treesplit", b, 2, 2),
                Case("treesplit", b, 4, 1), Case("tds", b, 2, 1), Case("tds", b, 2, 2), Case("root", b, 2, 1),
                Case("leaf", b, 2, 1), Case("dfuct", b, 2, 1), Case("hybrid", b, 2, 1), Case("sequential", b),
                Case("tree", b, 1, 2)]
        if b == first:
            # other parameters than the reference run's, on its board: duplication early and never past the
            # root's children, synchronisation every few visits, one simulation in flight per rank
            out += [Case("treesplit", b, 2, 1, params=(("n_dup", "64"),)),
                    Case("treesplit", b, 2, 1, params=(("n_sync_min", "2"), ("n_sync_max", "4"))),
                    Case("treesplit", b, 2, 1, params=(("overload", "1"),))]
    if not quick:
        if 13 not in boards:
            out.append(Case("treesplit", 13, 2, 1))
        out.append(Case("treesplit", 8, 2, 1, game="loa"))
    return out


def rel_error(pred: float | None, meas: float | None) -> float | None:
    """(pred - meas) / meas; 0 when both are 0; None when either is missing or not finite; inf when only
    the measurement is 0."""
    if pred is None or meas is None or not (math.isfinite(pred) and math.isfinite(meas)):
        return None
    if meas == 0:
        return 0.0 if pred == 0 else math.inf
    return (pred - meas) / meas


def row(case: Case, measured: dict[str, float], predicted: dict[str, float],
        figures: tuple[str, ...] = FIGURES, in_sample: bool = True, calibrated_on: str | None = None
        ) -> dict[str, Any]:
    """One table row: measured, predicted and the relative error of each figure (None: not compared), which
    configuration's runs made the profile (`calibrated_on`, default the row's own) and whether that is the
    row's own configuration (`in_sample`). `fixed` names the compared figures that cannot miss
    (experiments.held_out.fixed_by_construction); they are listed apart and not counted."""

    out: dict[str, Any] = {"config": case.label, "algo": case.algo, "game": case.game, "board": case.board,
                           "ranks": case.ranks, "threads": case.threads,
                           "params": " ".join(f"{k}={v}" for k, v in case.params),
                           "in_sample": in_sample, "calibrated_on": calibrated_on or case.label}
    fixed = {}
    for f in FIGURES:
        m, p = measured.get(f), predicted.get(f)
        out[f"{f}_measured"] = m
        out[f"{f}_predicted"] = p
        out[f"{f}_error"] = rel_error(p, m) if f in figures else None
        why = ho.fixed_by_construction(case.algo, f, m, p, in_sample, case.param_dict) if f in figures else None
        if why:
            fixed[f] = why
    out["fixed"] = fixed
    return out


def counted(r: dict[str, Any], f: str) -> bool:
    """Whether figure f of row r is compared and counts (not fixed by construction)."""
    return r.get(f"{f}_error") is not None and f not in (r.get("fixed") or {})


def goal_of(r: dict[str, Any], f: str) -> float:
    """The |relative error| goal of figure f in row r: GOAL in sample, issue 18's per-figure goals held out."""

    return GOAL if r.get("in_sample", True) else ho.HELD_OUT_GOALS[f]


def within_spread(r: dict[str, Any], f: str = "sims_per_s") -> bool:
    """Figure f's error over its goal that is no larger than the spread of the runs it was measured from (the
    engine's own runs of one configuration disagree by more than the goal: 19x19 tds 2x1 read 1.51, 1.64 and
    2.07 hops a simulation in three 3-s runs here)."""
    e, sp = r.get(f"{f}_error"), r.get(f"{f}_spread")
    return counted(r, f) and sp is not None and goal_of(r, f) < abs(e) <= sp


def worst(rows: list[dict[str, Any]]) -> tuple[float, str]:
    """The largest |relative error| among the counted figures of the table, and where (row label / figure)."""
    best, where = 0.0, ""
    for r in rows:
        for f in FIGURES:
            e = r.get(f"{f}_error")
            if counted(r, f) and abs(e) > best:
                best, where = abs(e), f"{r['config']} {f}"
    return best, where


def fixed_list(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The figures fixed by construction, apart: configuration, figure, why, measured and predicted."""
    return [{"config": r["config"], "in_sample": r.get("in_sample", True), "figure": f, "why": why,
             "measured": r[f"{f}_measured"], "predicted": r[f"{f}_predicted"]}
            for r in rows for f, why in (r.get("fixed") or {}).items()]


def format_table(rows: list[dict[str, Any]]) -> str:
    """The held-out table (the headline) and, below it, the in-sample one; each with its count of misses."""
    held = [r for r in rows if not r.get("in_sample", True)]
    own = [r for r in rows if r.get("in_sample", True)]
    parts = []
    if held:
        on = sorted({r["calibrated_on"] for r in held})
        parts.append(f"held out: every row predicted by the profile calibrated on {', '.join(on)} "
                     f"(goals: sims/s and busy 20%, messages, bytes and hops 10%)\n" + _table(held))
    if own:
        parts.append(f"in sample: each row calibrated on traced runs of its own configuration (goal {GOAL:.0%})\n"
                     + _table(own))
    fixed = fixed_list(rows)
    if fixed:
        parts.append("fixed by construction (not counted):\n" + "\n".join(
            f"  {x['config']} {x['figure']}{'' if x['in_sample'] else ' (held out)'}: {x['why']}" for x in fixed))
    causes = [f"  {r['config']}: {r['wrong_cost']}" for r in held if r.get("wrong_cost")]
    if causes:
        parts.append("held-out misses, the modelled cost that differs:\n" + "\n".join(causes))
    return "\n\n".join(parts)


def _table(rows: list[dict[str, Any]]) -> str:
    short = {"sims_per_s": "sims/s", "messages_per_sim": "msg/sim", "bytes_per_sim": "B/sim",
             "hops_per_sim": "hops/sim", "busy_frac": "busy"}
    wid = max([26] + [len(r["config"]) + 1 for r in rows])
    head = f"{'configuration':{wid}s}" + "".join(f" {short[f]:>24s}" for f in FIGURES)
    sub = f"{'':{wid}s}" + "".join(f" {'meas':>8s} {'pred':>8s} {'err':>6s}" for _ in FIGURES)
    lines = [head, sub]

    def num(x: float | None) -> str:
        if x is None:
            return "-"
        return f"{x:.3g}" if abs(x) < 1e4 else f"{x:.0f}"

    for r in rows:
        cells = []
        for f in FIGURES:
            e = r[f"{f}_error"]
            es = "-" if e is None else ("inf" if math.isinf(e) else f"{100 * e:+.0f}%")
            mark = ("=" if f in (r.get("fixed") or {}) else
                    "*" if e is not None and abs(e) > goal_of(r, f) else " ")
            cells.append(f" {num(r[f'{f}_measured']):>8s} {num(r[f'{f}_predicted']):>8s} {es:>5s}{mark}")
        lines.append(f"{r['config']:{wid}s}" + "".join(cells))
    w, where = worst(rows)
    n_bad = sum(1 for r in rows for f in FIGURES if counted(r, f) and abs(r[f"{f}_error"]) > goal_of(r, f))
    n_all = sum(1 for r in rows for f in FIGURES if counted(r, f))
    lines.append(f"* beyond its goal: {n_bad} of {n_all} counted figures; largest {w:.0%} ({where}); "
                 f"= fixed by construction" if where else "all errors within the goals")
    noisy = [f"{r['config']} {short[f]}" for r in rows for f in FIGURES if within_spread(r, f)]
    if noisy:
        lines.append(f"  beyond its goal but within the spread of its own measured runs: {', '.join(noisy)}")
    return "\n".join(lines)


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts for one table: configurations, counted figures, how many beyond their goals, the worst."""
    n_all = sum(1 for r in rows for f in FIGURES if counted(r, f))
    n_bad = sum(1 for r in rows for f in FIGURES if counted(r, f) and abs(r[f"{f}_error"]) > goal_of(r, f))
    w, where = worst(rows)
    return {"configurations": len(rows), "figures_counted": n_all, "beyond_goal": n_bad, "worst_error": w,
            "worst_at": where, "fixed_by_construction": sum(len(r.get("fixed") or {}) for r in rows)}


# --- measuring ------------------------------------------------------------------------------------------
def measure_mpi(case: Case, seconds: float, trace: str | None, params: dict[str, Any], timeout: float,
                seed: int = 1) -> dict[str, float]:
    cfg = DistributedConfig(algo=case.algo, game=case.game, board=case.board, komi=7.0,
                            game_params={"policy": "random"}, ranks=case.ranks, bcast_ranks=None,
                            threads=case.threads, seconds=seconds, params={**params, **case.param_dict}, seed=seed,
                            trace=trace,
                            trace_probe=trace is not None)
    res = run_distributed(cfg, timeout=timeout)
    out = {k: float(res[k]) for k in FIGURES}
    out.update(seconds=float(res["seconds"]), bcast_ranks=int(res["bcast_ranks"]), sims=int(res["sims"]))
    # the share of the run its ranks held a core (CPU time over wall time): the simulator gives each a core
    ranks = case.ranks + int(res["bcast_ranks"])
    if res.get("cpu_seconds") and out["seconds"] > 0:
        out["cpu_share"] = float(res["cpu_seconds"]) / (out["seconds"] * ranks * case.threads)
    return out


def measure_shared(case: Case, seconds: float) -> dict[str, float]:
    r = _run_shared(case.algo if case.algo == "tree" else "sequential", case.threads, case.board, seconds, "random",
                    game=case.game)
    return {"sims_per_s": r["sims_per_s"], "messages_per_sim": 0.0, "bytes_per_sim": 0.0, "hops_per_sim": 0.0,
            "busy_frac": r["busy_frac"], "seconds": seconds}


# --- predicting -----------------------------------------------------------------------------------------
KERNEL_CALIBRATION_S = 1.0


def calibrate_kernel(board: int, seconds: float, game: str = "go") -> float:
    """This machine's sequential sims/s on the board: a calibration run of its own, not the measured case."""
    return float(measure_shared(Case("sequential", board, game=game), seconds)["sims_per_s"])


KERNEL_PROBE_S = 1.0  # seconds of each kernel probe (board_scale)
MIN_PROBE_PACKAGES = 50  # a kind with fewer packages in a probe is scaled by the whole simulation's ratio


def kernel_probe(game: str, board: int, seconds: float = KERNEL_PROBE_S, timeout: float = 120.0
                 ) -> dict[str, float]:
    """This machine's mean cost of each kind of a simulation's packages (SIM_KINDS) on the game and board, and
    `simulation`: all of them per playout. A traced treesplit search on one rank of one thread, a run of its
    own (never a measured case's): the engine's own package costs there, which a sequential search's rate
    cannot split by kind."""
    with tempfile.TemporaryDirectory(prefix="treesplit-probe-") as tmp:
        measure_mpi(Case("treesplit", board, 1, 1, game=game), seconds, str(Path(tmp) / "t"), {}, timeout)
        pk = read_trace(str(Path(tmp) / "t")).packages
    dur = (pk["t_end"] - pk["t_start"]).to_numpy()
    kinds = pk["kind"].astype(str).to_numpy()
    playouts = int((kinds == "playout").sum())
    if playouts == 0:
        raise UserError(f"kernel probe on {game} {board}x{board}: the traced run played nothing out")
    out = {k: float(dur[kinds == k].mean()) for k in SIM_KINDS if (kinds == k).sum() >= MIN_PROBE_PACKAGES}
    out["simulation"] = float(dur[np.isin(kinds, SIM_KINDS)].sum()) / playouts
    return out


def board_scale(ref: Case, case: Case, seconds: float = KERNEL_PROBE_S, there: dict[str, float] | None = None
                ) -> dict[str, float]:
    """What each kind of a simulation's packages costs on `case`'s game and board against the reference's, by
    which a held-out prediction scales the reference profile's package costs (Profile.sim_scaled): the ratio
    of kernel probes on the two (kernel_probe), measured now, one after the other (`there`: the reference
    board's, if already probed now); a kind a probe has too few of takes the whole simulation's ratio. Empty
    on the reference's own board. A profile's costs hold for the board it was calibrated on, and not in one
    proportion: at 19x19 against 9x9 a playout costs ~4.2x, the tree's packages 1.9-3.1x, where the whole
    sequential simulation costs ~3.7x."""
    if (case.game, case.board) == (ref.game, ref.board):
        return {}
    there = there or kernel_probe(ref.game, ref.board, seconds)
    here = kernel_probe(case.game, case.board, seconds)
    whole = here["simulation"] / there["simulation"]
    return {k: (here[k] / there[k] if k in here and k in there else whole) for k in SIM_KINDS} | {"simulation": whole}


def held_out_scale(ref: Case, case: Case, at_calibration: dict[str, float], seconds: float = KERNEL_PROBE_S
                   ) -> tuple[dict[str, float], float]:
    """(board_scale, drift) of a held-out case, probed right before it: `drift` is how much more a simulation
    costs on the reference's board now than when the reference was calibrated (the reference board's kernel
    probe now against `at_calibration`, the median of probes around the reference's runs; bracketed_drift
    adds the probe after the case's runs). This VM's speed drifts by
    20-40% between minutes, and a profile calibrated in one minute carries that minute's speed into every
    prediction made with it; the held-out prediction scales the reference's package costs by both
    (cost_factors), so that it tests the model's transfer to another configuration, not the VM's minute."""
    now = kernel_probe(ref.game, ref.board, seconds)
    return board_scale(ref, case, seconds, there=now), now["simulation"] / at_calibration["simulation"]


WARMUP_S = 15.0  # s of the reference's run before anything is measured (validate)
REF_PROBES = 3  # kernel probes that say the reference board's cost as the reference is calibrated


def median_probe(probes: list[dict[str, float]]) -> dict[str, float]:
    """Per kind, the median of several kernel probes: one 1-s probe on this VM lands anywhere within +-15% of
    the minute's speed, and the probe the reference is calibrated against is the denominator of every
    held-out row's drift, so one slow probe there made every held-out prediction as much too fast."""
    return {k: float(np.median([p[k] for p in probes if k in p])) for k in probes[0]}


def bracketed_drift(ref: Case, before: float, at_calibration: dict[str, float], seconds: float = KERNEL_PROBE_S
                    ) -> float:
    """A held-out case's drift from its probe before its runs (`before`) and one more of the reference's board
    after them: their mean, so that the drift is the speed of the minutes the case ran in."""
    after = kernel_probe(ref.game, ref.board, seconds)["simulation"] / at_calibration["simulation"]
    return 0.5 * (before + after)


def cost_factors(scale: dict[str, float], drift: float) -> dict[str, float]:
    """Per kind of a simulation's package, what a held-out prediction scales the reference profile's cost by."""
    return {k: scale.get(k, 1.0) * drift for k in SIM_KINDS}


def scale_columns(scale: dict[str, float], drift: float = 1.0) -> dict[str, float]:
    """A held-out row's scaling of the reference's costs: the board's, for the whole simulation (`board_scale`)
    and each kind, and the machine's drift since the reference's calibration (`drift`)."""
    return {"board_scale": scale.get("simulation", 1.0),
            **{f"board_scale_{k}": scale.get(k, 1.0) for k in SIM_KINDS}, "drift": drift}


def case_profile(prof, case: Case):
    """The profile laid out as the case runs: one rank per node with the case's threads (1: no workers)."""
    return dataclasses.replace(prof, node=dataclasses.replace(prof.node, cores=max(1, case.threads),
                                                               ranks_per_node=1))


TREE_SHARE_BOARD = 9  # measured on one board; the other board's tree case checks it


def measure_tree_share(threads: int, seconds: float, rounds: int = 3) -> float:
    """NodeSpec.tree_share on this machine: `tree` on `threads` threads against as many independent
    sequential searches at once (experiments/tree_sharing.py), median over `rounds`. The independent searches
    pay for the busy cores as the shared tree does, so their ratio is what sharing the nodes costs."""

    ratios = []
    for _ in range(rounds):
        r = tree_sharing.one_round(TREE_SHARE_BOARD, threads, seconds)
        ratios.append(r["tree"] / r["independent"])
    return min(1.0, max(0.0, (1.0 / statistics.median(ratios) - 1.0) / (threads - 1)))


def kernel_only(prof):
    """The profile without the runtime's overheads: what a sequential or shared-tree search pays."""
    io = dataclasses.replace(prof.io, poll_base=0.0, poll_per_peer=0.0, per_message=0.0, per_byte=0.0,
                             stats_per_byte=0.0, per_package=0.0, inline_slice=0.0, handles_completions=False)
    return dataclasses.replace(prof, io=io)


def predict(case: Case, prof, seconds: float, bcast_ranks: int, params: dict[str, Any], seed: int = 0) -> dict[str, Any]:
    algo = case.algo
    if not case.mpi:
        # one rank, no messages: the sequential search is 1 rank x 1 thread, tree one rank of `threads` workers
        prof = kernel_only(prof)
        algo = "treesplit"
    p = case_profile(prof, case) if case.mpi else dataclasses.replace(
        prof, node=dataclasses.replace(prof.node, cores=1 if case.algo == "sequential" else case.threads + 1,
                                       ranks_per_node=1))
    cfg = SimConfig(algo=algo, profile=p.name, nodes=case.ranks if case.mpi else 1,
                    bcast_nodes=bcast_ranks if case.mpi else None,
                    seconds=seconds, warmup=0.0, fidelity="functional", game=case.game, board=case.board,
                    params={"game.komi": 7.0, **params, **case.param_dict}, seed=seed)
    s = simulate(cfg, profile=p)
    return {k: float(s[k]) for k in FIGURES} | {"wall_s": float(s["wall_s"])}


# --- the whole validation ----------------------------------------------------------------------------------
@dataclass
class ValidateConfig:
    boards: tuple[int, ...] = (9, 19)
    quick: bool = False
    seconds: float | None = None     # seconds per real run (default 1.5 quick, 3 full)
    profile: str | None = None       # one profile for every case instead of calibrating on each run
    pingpong: bool = True
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    timeout: float = 120.0           # per real run
    repeats: int | None = None       # engine runs per MPI configuration (default 3), each predicted with its
                                     # own seed; medians compared
    per_step: bool = False           # calibrations charge a part for its tree steps (sim.calibrate's per_step)
    warmup: float = WARMUP_S         # s of the reference's run before anything is measured (0: none)

    def validate(self) -> None:
        check(len(self.boards) > 0, "board", "need at least one board size")
        for b in self.boards:
            check(b in (9, 13, 19), "board", f"expected 9, 13 or 19, got {b}")
        check(self.seconds is None or (self.seconds > 0 and math.isfinite(self.seconds)), "seconds", "need > 0")
        check(self.repeats is None or 1 <= self.repeats <= 20, "repeats", "need 1 to 20")
        check(self.warmup >= 0 and math.isfinite(self.warmup), "warmup", "need >= 0 seconds")

    @property
    def run_repeats(self) -> int:
        # several even in quick mode: one run pair on this VM moved a figure by 20-35% (experiments/SIMULATOR.md);
        # five in the full run, whose medians three runs of a minute's slow spell still moved by 20-30%
        return self.repeats if self.repeats is not None else (3 if self.quick else 5)

    @property
    def run_seconds(self) -> float:
        return self.seconds if self.seconds is not None else (1.5 if self.quick else 3.0)


def validate(cfg: ValidateConfig, log: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True)
             ) -> dict[str, Any]:
    """Both tables: held out (every configuration but the reference predicted by the reference's calibration,
    the headline) and in sample (each configuration by its own). With cfg.profile, one table: every
    configuration predicted by that profile."""
    cfg.validate()
    given = load_profile(cfg.profile) if cfg.profile else None
    t_start = time.monotonic()
    todo = cases(list(cfg.boards), cfg.quick)
    ref_case = todo[0]
    if given is None and cfg.warmup > 0:
        # This VM runs slow for the first 20-45 s of work after an idle spell (kernel probes 19-22 us a
        # simulation, then 17-18), which the reference's probes and runs, coming first, would otherwise carry
        # into every held-out row's drift: a run of the reference, measured nowhere, first.
        log(f"warming the machine up ({cfg.warmup:g} s of {ref_case.label}) ...")
        measure_mpi(ref_case, cfg.warmup, None, cfg.params, cfg.timeout)
    pp = None
    if given is None and cfg.pingpong:
        log("MPI ping-pong for the network parameters ...")
        pp = run_pingpong(2.0)
    base = load_profile("local")
    ref_label = f"profile {given.name}" if given is not None else ref_case.label
    share = None  # NodeSpec.tree_share, measured for the in-sample rows of a case that shares a tree
    sharing = [c.threads for c in todo if c.algo == "tree"]
    if given is None and sharing:
        share = measure_tree_share(max(sharing), 0.5 if cfg.quick else 1.0)
        log(f"tree on {max(sharing)} threads against independent searches ({TREE_SHARE_BOARD}x{TREE_SHARE_BOARD}): "
            f"sharing the tree costs {100 * share:.1f}% per other thread (tree_share, in-sample rows only)")
    held: list[dict[str, Any]] = []
    own: list[dict[str, Any]] = []
    # the reference board's kernel costs as the reference is calibrated (probes right before its runs, which
    # come first, and one right after them; their median): what each held-out case's drift is measured against
    # (held_out_scale). The dict is completed in place once the reference has run.
    ref_probes = [kernel_probe(ref_case.game, ref_case.board) for _ in range(REF_PROBES - 1)] if given is None else []
    ref_probe = median_probe(ref_probes) if ref_probes else {}
    ref_profiles: list[Any] = []  # one per repeat of the reference configuration: nothing else calibrates them
    failed: list[dict[str, str]] = []  # configurations whose engine run failed: named, not compared
    with tempfile.TemporaryDirectory(prefix="treesplit-validate-") as tmp:
        board_prof: dict[tuple[str, int], Any] = {}
        modelled_seq: dict[tuple[str, int], float] = {}  # the simulator's sequential sims/s, kernel profile
        # the reference first; then per board, MPI cases before the shared-memory ones, which borrow their
        # board's first calibration for their in-sample row
        todo.sort(key=lambda c: (c != ref_case, c.board, not c.mpi))
        for i, case in enumerate(todo):
            t0 = time.monotonic()
            held_row = own_row = None
            if case.mpi:
                try:
                    held_row, own_row, prof = _mpi_case(case, i, cfg, tmp, given, pp, base, share, ref_case,
                                                        ref_profiles, ref_label, ref_probe)
                except UserError as e:
                    # the reference calibrates everything else: without it there is nothing to predict with
                    if case == ref_case and given is None:
                        raise
                    # one engine run that fails (a stalled shutdown under load) costs its row, not the table
                    failed.append({"config": case.label, "error": str(e)})
                    log(f"  [{i + 1}/{len(todo)}] {case.label:30s} FAILED: {e}")
                    continue
                board_prof.setdefault((case.game, case.board), prof)
                if case == ref_case and ref_probes:
                    ref_probes.append(kernel_probe(ref_case.game, ref_case.board))
                    ref_probe.update(median_probe(ref_probes))
            else:
                held_row, own_row = _shared_case(case, cfg, given, board_prof, modelled_seq, ref_profiles,
                                                 ref_label, ref_case, ref_probe)
            if held_row is not None:
                held.append(held_row)
            if own_row is not None:
                own.append(own_row)
            shown = held_row or own_row
            errs = "; ".join(f"{'held out' if not r['in_sample'] else 'in sample'} "
                             f"{r['sims_per_s_predicted']:8.0f} ({100 * r['sims_per_s_error']:+.0f}%)"
                             for r in (held_row, own_row) if r is not None and r["sims_per_s_error"] is not None)
            log(f"  [{i + 1}/{len(todo)}] {case.label:30s} measured {shown['sims_per_s_measured']:8.0f} sims/s, "
                f"predicted {errs}  ({time.monotonic() - t0:.0f} s)")
    rows = held + own
    head = held if held else own
    from sim.calibrate import with_spread

    reference = (dataclasses.replace(with_spread(ref_profiles), name=f"engine-{ref_label.replace(' ', '-')}")
                 if ref_profiles else None)
    w, where = worst(head)
    return {"quick": cfg.quick, "boards": list(cfg.boards), "seconds": cfg.run_seconds, "repeats": cfg.run_repeats,
            "profile": cfg.profile or f"calibrated on {ref_label} (held out), on each configuration (in sample)",
            "calibrated_on": ref_label, "params": cfg.params, "goal": GOAL, "held_out_goals": ho.HELD_OUT_GOALS,
            "held_out": summary(held), "in_sample": summary(own), "fixed_by_construction": fixed_list(rows),
            "tree_share": share, "worst_error": w, "worst_at": where, "wall_s": time.monotonic() - t_start,
            "load_avg": list(_loadavg()), "failed": failed, "rows": rows, REFERENCE_PROFILE: reference}


# the result's key for the reference calibration (a Profile, not JSON): the command saves it beside the table
# as NAME-reference.toml, for `treesplit predict --costs`
REFERENCE_PROFILE = "_reference_profile"


def _mpi_case(case: Case, i: int, cfg: ValidateConfig, tmp: str, given, pp, base, share, ref_case: Case,
              ref_profiles: list, ref_label: str, ref_probe: dict[str, float]
              ) -> tuple[dict | None, dict | None, Any]:
    """(held-out row, in-sample row, the first profile calibrated on this case) of an MPI configuration.

    Each repeat is a traced run that only calibrates and an untraced run that is measured, one after the other:
    this shared VM's speed drifts 20-40% within minutes, so one calibration run carried its minute's speed into
    the prediction; the in-sample prediction is the median over the calibrations, as the measurement is the
    median over the runs. Recording itself costs a traced 2x1 run at 9x9 2-30% of its sims/s: the traced runs
    probe it (trace_probe). The held-out prediction of the same runs uses the reference's profiles, never this
    case's traces (which only say, for a miss, which cost differs)."""
    preds, held_preds, traced_runs, runs, factors, profs, uses = [], [], [], [], [], [], []
    is_ref = case == ref_case and given is None
    scale, drift = held_out_scale(ref_case, case, ref_probe) if given is None and not is_ref else ({}, 1.0)
    held_runs = []  # (repeat, seed, seconds, broadcast ranks) of each held-out prediction, made once the drift is
    # known. Each run is predicted with its own seed: the search's random stream, which the roles draw from alike
    # in both runtimes, decides which moves the tree favours and so which ranks own the nodes on its hot paths,
    # and thereby hops/sim (tds 2x1 19x19: 1.50, 1.68 and 1.69 with seeds 1-3, predicted 1.55, 1.67, 1.66;
    # another seed's prediction misses by the seeds' spread)
    for k in range(cfg.run_repeats):
        seed = 1 + k
        trace = str(Path(tmp) / f"t{i}-{k}")
        if given is None:
            traced_runs.append(measure_mpi(case, cfg.run_seconds, trace, cfg.params, cfg.timeout, seed=seed))
        runs.append(measure_mpi(case, cfg.run_seconds, None, cfg.params, cfg.timeout, seed=seed))
        secs, bcast = runs[-1]["seconds"], int(runs[-1].get("bcast_ranks", 0))
        if given is None:
            tr = read_trace(trace)
            prof = calibrate(tr, base, name=f"validate-{i}-{k}", pingpong=pp, tree_share=share,
                             per_step=cfg.per_step)
            profs.append(prof)
            uses.append(ho.usage(tr))
            probe = probe_factor(tr)
            if probe is not None:
                factors.append(probe[0])
            preds.append(predict(case, prof, secs, bcast, cfg.params, seed=seed))
            if not is_ref:
                held_runs.append((k, seed, secs, bcast))
        else:
            held_preds.append(predict(case, given, secs, bcast, cfg.params, seed=seed))
        shutil.rmtree(trace, ignore_errors=True)
    if held_runs:
        drift = bracketed_drift(ref_case, drift, ref_probe)
    costs = cost_factors(scale, drift)
    for k, seed, secs, bcast in held_runs:
        held_preds.append(predict(case, ref_profiles[k % len(ref_profiles)].sim_scaled(costs), secs, bcast,
                                  cfg.params, seed=seed))
    if is_ref:
        ref_profiles.extend(profs)
    meas = _median(runs)
    # how far the measured runs lie apart ((max - min) / median), per figure: an error below it is within what
    # this machine's own measurements of one configuration disagree by
    spreads = {f"{f}_spread": _spread([r[f] for r in runs]) for f in FIGURES}
    held_row = own_row = None
    share = statistics.median(r["cpu_share"] for r in runs) if all("cpu_share" in r for r in runs) else None
    if held_preds:
        held_row = row(case, meas, _median(held_preds), in_sample=False, calibrated_on=ref_label)
        held_row.update(spreads)
        held_row["cpu_share"] = share
        held_row.update(scale_columns(scale, drift))
        held_row["wrong_cost"] = (ho.wrong_cost(held_row, ho.median_usage(uses), profs[0] if profs else None,
                                                ref_profiles[0].sim_scaled(costs)) if given is None else "")
        held_row["wrong_cost"] = ho.with_load(held_row["wrong_cost"], share)
    if preds:
        own_row = row(case, meas, _median(preds), in_sample=True)
        own_row["sims_per_s_error_of_medians"] = own_row["sims_per_s_error"]
        own_row["sims_per_s_error"] = paired_error(preds, runs)
        own_row.update(spreads)
        own_row["cpu_share"] = share
        traced = _median(traced_runs)
        # what recording cost the calibration runs (the traced median against the untraced one)
        own_row["sims_per_s_traced"] = traced["sims_per_s"]
        own_row["trace_cost"] = 1.0 - traced["sims_per_s"] / meas["sims_per_s"] if meas["sims_per_s"] else None
        # the calibration runs record every other 0.1 s: sims/s recorded / unrecorded in the same run
        # (sim.calibrate.probe_factor)
        own_row["record_factor"] = statistics.median(factors) if factors else None
    return held_row, own_row, (profs[0] if profs else given)


def _shared_case(case: Case, cfg: ValidateConfig, given, board_prof: dict, modelled_seq: dict, ref_profiles: list,
                 ref_label: str, ref_case: Case, ref_probe: dict[str, float]) -> tuple[dict | None, dict | None]:
    """(held-out row, in-sample row) of sequential or tree. Held out: the simulator's shared-memory rate with the
    reference's package costs, nothing else. In sample: that rate scaled by this machine's sequential kernel
    speed, measured by a calibration search of its own right before (the package costs in an MPI trace include
    the runtime's work around each kernel call, which the fused sequential kernel never pays)."""
    from experiments import held_out as ho

    key = (case.game, case.board)
    prof = given or board_prof.get(key)
    if prof is None:
        raise UserError(f"{case.label}: no MPI configuration on this board to calibrate from")
    scale, drift = held_out_scale(ref_case, case, ref_probe) if given is None else ({}, 1.0)
    # right before the measured run, for each case: this shared VM's speed drifts by 10-20% within minutes,
    # which a calibration made once per board carried into the tree prediction
    calibrated = calibrate_kernel(case.board, KERNEL_CALIBRATION_S) if given is None else None
    meas = measure_shared(case, cfg.run_seconds)
    if given is None:
        drift = bracketed_drift(ref_case, drift, ref_probe)
    refs = [given] if given is not None else [p.sim_scaled(cost_factors(scale, drift)) for p in ref_profiles]
    held = _median([predict(case, p, meas["seconds"], 0, {}, seed=0) for p in refs])
    held_row = row(case, meas, held, ("sims_per_s",), in_sample=False, calibrated_on=ref_label)
    held_row.update(scale_columns(scale, drift))
    held_row["wrong_cost"] = ho.sequential_cost(held_row, calibrated, refs[0])
    if given is not None:
        return held_row, None
    if key not in modelled_seq:
        modelled_seq[key] = predict(Case("sequential", case.board, game=case.game), prof, cfg.run_seconds, 0,
                                    {})["sims_per_s"]
    pred = predict(case, prof, meas["seconds"], 0, {}, seed=0)
    # the model's own speed-up over its sequential search, before the kernel calibration (which is a run of its
    # own for each case, in its own minute)
    speedup = pred["sims_per_s"] / modelled_seq[key]
    pred["sims_per_s"] *= calibrated / modelled_seq[key]
    own_row = row(case, meas, pred, ("sims_per_s",), in_sample=True)
    own_row["speedup_predicted"] = speedup
    return held_row, own_row


def _median(runs: list[dict[str, float]]) -> dict[str, float]:
    """Per key, the median over runs (the first run's value for keys some run lacks)."""

    return {k: (statistics.median(r[k] for r in runs) if all(k in r for r in runs) else v)
            for k, v in runs[0].items()}


def _spread(xs: list[float]) -> float | None:
    """(max - min) / median of repeated measurements of one figure; None for fewer than two."""

    med = statistics.median(xs) if len(xs) > 1 else 0.0
    return (max(xs) - min(xs)) / med if med > 0 else None


def paired_error(preds: list[dict[str, float]], runs: list[dict[str, float]], figure: str = "sims_per_s"
                 ) -> float | None:
    """The median over repeats of each prediction's error against the run measured right after the traced run
    it was calibrated on. sims/s is a rate of this machine, whose speed drifts by 20-40% within minutes: a pair
    shares its minute, while the median of the predictions against the median of the runs mixes minutes (on
    one afternoon the traced and untraced medians of a configuration differed by up to 20% either way, and the
    error with them). The per-simulation figures do not depend on the machine's speed and stay medians."""
    errs = [e for p, m in zip(preds, runs) if (e := rel_error(p.get(figure), m.get(figure))) is not None]
    return statistics.median(errs) if errs else None


def _loadavg() -> tuple[float, ...]:
    try:
        return os.getloadavg()
    except OSError:
        return ()


def save(result: dict[str, Any], name: str, directory: Path) -> tuple[Path, Path]:
    # the CSV names the fixed figures; the JSON keeps why (and lists them apart, fixed_by_construction)
    flat = [{**r, "fixed": " ".join(r.get("fixed") or {})} for r in result["rows"]]
    return write_json(name, result, directory), write_csv(name, flat, directory)



# --- against measured traces (no engine run here) ------------------------------------------------------------
@dataclass(frozen=True)
class TraceRun:
    """An engine trace made elsewhere: its configuration and the figures its run measured (meta.json's
    summary, the engine's own counters over the whole run)."""

    path: Path
    case: Case
    bcast_ranks: int
    seconds: float
    params: dict[str, Any]
    komi: float
    machine: str
    measured: dict[str, float]
    seed: int = 0  # the run's random seed: a reproduction draws the same streams where the runtime lets it

    @property
    def name(self) -> str:
        return self.path.name


def load_trace_run(path: str | Path) -> TraceRun:
    """Read a trace directory's meta.json (model.trace's format); UserError naming the directory if it is
    not a complete engine trace."""

    p = Path(path)
    meta_file = p / "meta.json"
    if not p.is_dir() or not meta_file.is_file():
        raise UserError(f"--traces {p}: not a trace directory (no meta.json; expected the directory an engine "
                        f"run with --trace wrote, or a directory of such directories)")
    try:
        meta = json.loads(meta_file.read_text())
    except (OSError, ValueError) as e:
        raise UserError(f"--traces {p}: meta.json is not readable JSON ({e})") from None
    if not isinstance(meta, dict) or meta.get("runtime") != "engine":
        raise UserError(f"--traces {p}: not an engine trace (runtime {meta.get('runtime') if isinstance(meta, dict) else None!r})")
    summary = (meta.get("extra") or {}).get("summary")
    if not isinstance(summary, dict) or any(f not in summary for f in FIGURES + ("seconds",)):
        raise UserError(f"--traces {p}: the trace has no run summary in meta.json (an interrupted run?)")
    ranks = meta.get("ranks") or {}
    algo = str(meta.get("algo", "?"))
    case = Case(algo, int(meta.get("board", 19)), int(ranks.get("search", 1)), int(meta.get("threads", 1)))
    if not case.mpi:
        raise UserError(f"--traces {p}: algorithm {algo!r} is not one the simulator runs over MPI ranks")
    return TraceRun(p, case, int(ranks.get("broadcast", 0)), float(summary["seconds"]),
                    dict(meta.get("params") or {}), float((meta.get("extra") or {}).get("komi", 7.0)),
                    str(meta.get("machine", "?")), {f: float(summary[f]) for f in FIGURES},
                    int(meta.get("seed") or 0))


def find_trace_runs(dirs: list[str | Path]) -> list[TraceRun]:
    """Each DIR is a trace directory or a directory of them; sorted by algorithm, board, ranks, threads."""
    runs: list[TraceRun] = []
    for d in dirs:
        p = Path(d)
        if p.is_dir() and not (p / "meta.json").exists():
            subs = sorted(s for s in p.iterdir() if (s / "meta.json").is_file())
            if not subs:
                raise UserError(f"--traces {p}: not a trace directory and holds none (no meta.json in it or "
                                f"in its subdirectories)")
            runs += [load_trace_run(s) for s in subs]
        else:
            runs.append(load_trace_run(p))
    return sorted(runs, key=lambda r: (r.case.algo, r.case.board, r.case.ranks, r.case.threads, r.name))


def default_base(runs: list[TraceRun]) -> TraceRun:
    """The smallest run that has messages (2 ranks or more): the one a user could afford to trace."""
    multi = [r for r in runs if r.case.ranks >= 2]
    return min(multi or runs, key=lambda r: (r.case.ranks, r.case.threads))


def bench_figures(bench: dict[str, Any] | None, case: Case) -> dict[str, float]:
    """The untraced runs' medians for the case from a `treesplit bench parallel` result, if it has them."""
    if not bench:
        return {}
    cell = (bench.get("boards") or {}).get(str(case.board), {}).get(f"{case.algo} {case.ranks}x{case.threads}")
    return {f"{f}_untraced": float(cell[f]) for f in FIGURES if f in cell} if isinstance(cell, dict) else {}


@dataclass
class TraceValidateConfig:
    traces: tuple[str, ...]
    base: str | None = None          # the trace (directory name or path) every "predict" row is calibrated on
    network: str = "local"           # profile whose network and IO-loop poll costs are used (none measured)
    bench: str | None = None         # optional bench_parallel JSON: untraced figures beside the traced ones
    seconds: float | None = None     # simulated seconds (default: each trace's own run time)
    modes: tuple[str, ...] = ("reproduce", "predict")

    def validate(self) -> None:
        check(len(self.traces) > 0, "traces", "need at least one trace directory")
        check(self.seconds is None or (self.seconds > 0 and math.isfinite(self.seconds)), "seconds", "need > 0")
        check(all(m in ("reproduce", "predict") for m in self.modes) and self.modes, "modes",
              "reproduce and/or predict")


def validate_traces(cfg: TraceValidateConfig,
                    log: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True)) -> dict[str, Any]:
    """Predict each traced run with the simulator (drawing from the run's own seed), calibrated (a) on that
    run's own trace ("reproduce") and (b) on the base trace only ("predict"), and compare with what the run
    measured."""

    cfg.validate()
    runs = find_trace_runs(list(cfg.traces))
    read_once = functools.cache(read_trace)  # each trace is read once, for `fused` and for calibration

    def trace_of(path: str | Path) -> Any:
        return read_once(str(path))

    # the engine fused a simulation's steps on a rank into one package only from a later version on; a
    # trace made before runs the roles unfused (its bookkeeping is per step)
    runs = [r if "fuse" in r.params else dataclasses.replace(
        r, params={**r.params, "fuse": fused(trace_of(r.path).packages)}) for r in runs]
    base_run = None
    if "predict" in cfg.modes:
        if cfg.base:
            hits = [r for r in runs if r.name == cfg.base or str(r.path) == cfg.base]
            base_run = hits[0] if hits else load_trace_run(cfg.base)
        else:
            base_run = default_base(runs)
    bench = None
    if cfg.bench:
        try:
            bench = json.loads(Path(cfg.bench).read_text())
        except (OSError, ValueError) as e:
            raise UserError(f"--bench {cfg.bench}: not a readable JSON file ({e})") from None
    net = load_profile(cfg.network)
    t_start = time.monotonic()
    own: dict[str, Any] = {}
    base_prof = calibrate(trace_of(base_run.path), net, name=f"base-{base_run.name}") if base_run else None
    rows: list[dict[str, Any]] = []
    for run in runs:
        for mode in cfg.modes:
            t0 = time.monotonic()
            if mode == "reproduce":
                prof = own.get(run.name) or calibrate(trace_of(run.path), net, name=run.name)
                own[run.name] = prof
            else:
                prof = base_prof
            secs = cfg.seconds or run.seconds
            pred = predict(run.case, prof, secs, run.bcast_ranks, {**run.params, "game.komi": run.komi},
                           seed=run.seed)
            r = row(run.case, run.measured, pred)
            r["config"] = f"{run.case.label} {mode}"
            on = run.name if mode == "reproduce" else base_run.name
            r.update(mode=mode, trace=run.name, calibrated_on=on, in_sample=on == run.name, seed=run.seed,
                     bcast_ranks=run.bcast_ranks, seconds=secs, sim_wall_s=pred["wall_s"],
                     **bench_figures(bench, run.case))
            rows.append(r)
            err = r["sims_per_s_error"]
            log(f"  {r['config']:36s} measured {run.measured['sims_per_s']:8.0f} sims/s, predicted "
                f"{pred['sims_per_s']:8.0f} ({100 * err:+.0f}%)  ({time.monotonic() - t0:.0f} s)")
    w, where = worst(rows)
    machines = sorted({r.machine for r in runs})
    return {"mode": "traces", "machine": "; ".join(machines), "analysed_on": machine_description(),
            "traces": [str(r.path) for r in runs], "base": base_run.name if base_run else None,
            "network": f"{net.name} profile ({net.path or 'shipped'}): no ping-pong was measured with the traces",
            "profiles": {k: v.source for k, v in own.items()} | (
                {f"base-{base_run.name}": base_prof.source} if base_prof else {}),
            "goal": GOAL, "worst_error": w, "worst_at": where, "wall_s": time.monotonic() - t_start,
            "rows": rows}

