"""`treesplit validate`: the simulator against the real engine on the configurations that fit this machine.

For each configuration the real engine runs (engine.mpi.run_distributed for the MPI algorithms, with a trace;
engine.algorithms' searchers for sequential and tree), then the simulator (functional fidelity, Go on the same
board, the same simulated seconds as the measured run) predicts the same figures with a profile calibrated on
this machine, and the table says by how much they differ.

Which profile:
  - default: each MPI configuration is calibrated on traced runs of its own (sim.calibrate: package costs, message
    sizes, per-package bookkeeping; network from one MPI ping-pong made at the start), one per repeat, each
    followed by an untraced run; the prediction is the median over the calibrations and the measurement the
    median over the untraced runs, so the prediction tests the model's structure (roles,
    IO loop, queues, network) given the costs a trace shows. sims/s, a rate of this drifting machine, is
    judged by the median of each pair's error (a calibration against the run right after it: paired_error;
    column sims_per_s_error_of_medians keeps the medians' error). The traced runs record every other 0.1 s
    (DistributedConfig.trace_probe), and calibration scales the costs they show by the ratio of the
    recorded windows' sims/s to the unrecorded ones' (sim.calibrate.probe_factor): what recording cost
    that run, measured in the same minute (column record_factor). sequential and tree are
    predicted from the package costs of the board's first MPI run without the runtime's overheads (roles'
    bookkeeping, IO loop), which is what the sequential kernel pays: no messages, no hand-overs.
  - --profile P: one profile for every configuration (a prediction across configurations).
  The package costs in an MPI trace include the runtime's Python around each kernel call (~10-30 us a
  package), which the sequential search's fused kernel never pays: so sequential and tree are predicted as the
  simulator's shared-memory rate scaled by this machine's sequential kernel speed, measured beforehand by a
  separate short calibration search on the board (the simulator then predicts how tree's threads scale).
  What sharing one tree costs its threads (NodeSpec.tree_share) is measured once at the start, on 9x9: `tree`
  against as many independent sequential searches at once (experiments/tree_sharing.py); 19x19 checks it.

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

from engine.benchmarks.parallel import _run_shared
from engine.machine import machine_description
from engine.mpi import DistributedConfig, run_distributed
from engine.results import write_csv, write_json
from engine.trace_files import read_trace
from experiments import tree_sharing
from model.algorithms import DISTRIBUTED
from model.config import check
from model.errors import UserError
from sim.calibrate import calibrate, fused, probe_factor, run_pingpong
from sim.profile import load_profile
from sim.simulate import SimConfig, simulate

FIGURES = ("sims_per_s", "messages_per_sim", "bytes_per_sim", "hops_per_sim", "busy_frac")
GOAL = 0.15  # |relative error| the issue asks for


@dataclass(frozen=True)
class Case:
    """One configuration: an algorithm on RANKS x THREADS (threads count the IO thread) on a board."""

    algo: str
    board: int
    ranks: int = 1
    threads: int = 1

    @property
    def label(self) -> str:
        if self.algo == "sequential":
            return f"sequential {self.board}x{self.board}"
        if self.algo == "tree":
            return f"tree {self.threads}t {self.board}x{self.board}"
        return f"{self.algo} {self.ranks}x{self.threads} {self.board}x{self.board}"

    @property
    def mpi(self) -> bool:
        return self.algo in DISTRIBUTED


def cases(boards: list[int], quick: bool, cores: int | None = None) -> list[Case]:
    """The configurations of 1-4 ranks x 1-2 threads (threads count the IO thread) that fit `cores` (default:
    this machine's): more processes and threads than cores would measure the scheduler, which the simulator
    does not model."""

    cores = cores or os.cpu_count() or 1
    return [c for c in _all_cases(boards, quick) if c.ranks * c.threads <= cores]


def _all_cases(boards: list[int], quick: bool) -> list[Case]:
    out: list[Case] = []
    for b in boards:
        if quick:
            out += [Case("treesplit", b, 2, 1), Case("tds", b, 2, 1), Case("root", b, 2, 1),
                    Case("sequential", b)]
            continue
        out += [Case("treesplit", b, 2, 1), Case("treesplit", b, 1, 2), Case("treesplit", b, 2, 2),
                Case("treesplit", b, 4, 1), Case("tds", b, 2, 1), Case("tds", b, 2, 2), Case("root", b, 2, 1),
                Case("leaf", b, 2, 1), Case("sequential", b), Case("tree", b, 1, 2)]
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
        figures: tuple[str, ...] = FIGURES) -> dict[str, Any]:
    """One table row: measured, predicted and the relative error of each figure (None: not compared)."""
    out: dict[str, Any] = {"config": case.label, "algo": case.algo, "board": case.board, "ranks": case.ranks,
                           "threads": case.threads}
    for f in FIGURES:
        m, p = measured.get(f), predicted.get(f)
        out[f"{f}_measured"] = m
        out[f"{f}_predicted"] = p
        out[f"{f}_error"] = rel_error(p, m) if f in figures else None
    return out


def within_spread(r: dict[str, Any]) -> bool:
    """A sims/s error over the goal that is no larger than the spread of the runs it was measured from."""
    e, sp = r.get("sims_per_s_error"), r.get("sims_per_s_spread")
    return e is not None and sp is not None and GOAL < abs(e) <= sp


def worst(rows: list[dict[str, Any]]) -> tuple[float, str]:
    """The largest |relative error| in the table and where (row label / figure)."""
    best, where = 0.0, ""
    for r in rows:
        for f in FIGURES:
            e = r.get(f"{f}_error")
            if e is not None and abs(e) > best:
                best, where = abs(e), f"{r['config']} {f}"
    return best, where


def format_table(rows: list[dict[str, Any]]) -> str:
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
            mark = "*" if e is not None and abs(e) > GOAL else " "
            cells.append(f" {num(r[f'{f}_measured']):>8s} {num(r[f'{f}_predicted']):>8s} {es:>5s}{mark}")
        lines.append(f"{r['config']:{wid}s}" + "".join(cells))
    w, where = worst(rows)
    n_bad = sum(1 for r in rows for f in FIGURES if r[f"{f}_error"] is not None and abs(r[f"{f}_error"]) > GOAL)
    lines.append(f"* |error| > {GOAL:.0%}: {n_bad} of "
                 f"{sum(1 for r in rows for f in FIGURES if r[f'{f}_error'] is not None)} figures; "
                 f"largest {w:.0%} ({where})" if where else f"all errors within {GOAL:.0%}")
    noisy = [r["config"] for r in rows if within_spread(r)]
    if noisy:
        lines.append(f"  sims/s over {GOAL:.0%} but within the spread of its own measured runs: {', '.join(noisy)}")
    return "\n".join(lines)


# --- measuring ------------------------------------------------------------------------------------------
def measure_mpi(case: Case, seconds: float, trace: str | None, params: dict[str, Any], timeout: float,
                seed: int = 1) -> dict[str, float]:
    cfg = DistributedConfig(algo=case.algo, game="go", board=case.board, komi=7.0, game_params={"policy": "random"},
                            ranks=case.ranks, bcast_ranks=None,
                            threads=case.threads, seconds=seconds, params=dict(params), seed=seed, trace=trace,
                            trace_probe=trace is not None)
    res = run_distributed(cfg, timeout=timeout)
    out = {k: float(res[k]) for k in FIGURES}
    out.update(seconds=float(res["seconds"]), bcast_ranks=int(res["bcast_ranks"]), sims=int(res["sims"]))
    return out


def measure_shared(case: Case, seconds: float) -> dict[str, float]:
    r = _run_shared(case.algo if case.algo == "tree" else "sequential", case.threads, case.board, seconds, "random")
    return {"sims_per_s": r["sims_per_s"], "messages_per_sim": 0.0, "bytes_per_sim": 0.0, "hops_per_sim": 0.0,
            "busy_frac": r["busy_frac"], "seconds": seconds}


# --- predicting -----------------------------------------------------------------------------------------
KERNEL_CALIBRATION_S = 1.0


def calibrate_kernel(board: int, seconds: float) -> float:
    """This machine's sequential sims/s on the board: a calibration run of its own, not the measured case."""
    return float(measure_shared(Case("sequential", board), seconds)["sims_per_s"])


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
                    seconds=seconds, warmup=0.0, fidelity="functional", game="go", board=case.board,
                    params={"game.komi": 7.0, **params}, seed=seed)
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
    repeats: int | None = None       # engine runs and simulator seeds per MPI configuration, medians compared
                                     # (default 3): which rank owns the nodes a search favours
                                     # decides hops/sim, so one run pair differs by more than the model does

    def validate(self) -> None:
        check(len(self.boards) > 0, "board", "need at least one board size")
        for b in self.boards:
            check(b in (9, 13, 19), "board", f"expected 9, 13 or 19, got {b}")
        check(self.seconds is None or (self.seconds > 0 and math.isfinite(self.seconds)), "seconds", "need > 0")
        check(self.repeats is None or 1 <= self.repeats <= 20, "repeats", "need 1 to 20")

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
    cfg.validate()
    given = load_profile(cfg.profile) if cfg.profile else None
    pp = None
    if given is None and cfg.pingpong:
        log("MPI ping-pong for the network parameters ...")
        pp = run_pingpong(2.0)
    base = load_profile("local")
    rows: list[dict[str, Any]] = []
    t_start = time.monotonic()
    todo = cases(list(cfg.boards), cfg.quick)
    share = None  # NodeSpec.tree_share, measured when a case shares a tree among threads
    sharing = [c.threads for c in todo if c.algo == "tree"]
    if given is None and sharing:
        share = measure_tree_share(max(sharing), 0.5 if cfg.quick else 1.0)
        log(f"tree on {max(sharing)} threads against independent searches ({TREE_SHARE_BOARD}x{TREE_SHARE_BOARD}): "
            f"sharing the tree costs {100 * share:.1f}% per other thread (tree_share)")
    with tempfile.TemporaryDirectory(prefix="treesplit-validate-") as tmp:
        board_prof: dict[int, Any] = {}
        modelled_seq: dict[int, float] = {}  # board -> the simulator's sequential sims/s with the kernel profile
        # MPI cases first: the shared-memory ones borrow their board's first calibration
        todo.sort(key=lambda c: (c.board, not c.mpi))
        for i, case in enumerate(todo):
            t0 = time.monotonic()
            # the calibration runs' sims/s of an MPI case; the measured runs' spread; sims/s error over pairs
            traced = spread = paired = None
            if case.mpi:
                # each repeat is a traced run that only calibrates and an untraced run that is measured, one
                # after the other: this shared VM's speed drifts 20-40% within minutes (five back-to-back untraced
                # runs of leaf 2x1 9x9: 9,285-19,093 sims/s), so one calibration run carried its minute's speed
                # into the prediction. The prediction is the median over the calibrations, as the measurement is
                # the median over the runs. Recording itself costs a traced 2x1 run at 9x9 2-30% of its sims/s
                # (A/B pairs: treesplit 0.98, leaf 0.95, tds 0.71): the traced runs probe it (trace_probe).
                preds, traced_runs, runs, factors = [], [], [], []
                for k in range(cfg.run_repeats):
                    trace = str(Path(tmp) / f"t{i}-{k}")
                    if given is None:
                        traced_runs.append(measure_mpi(case, cfg.run_seconds, trace, cfg.params, cfg.timeout,
                                                       seed=1 + k))
                    runs.append(measure_mpi(case, cfg.run_seconds, None, cfg.params, cfg.timeout, seed=1 + k))
                    if given is None:
                        tr = read_trace(trace)
                        prof = calibrate(tr, base, name=f"validate-{i}-{k}", pingpong=pp, tree_share=share)
                        probe = probe_factor(tr)
                        if probe is not None:
                            factors.append(probe[0])
                    else:
                        prof = given
                    board_prof.setdefault(case.board, prof)
                    preds.append(predict(case, prof, runs[-1]["seconds"], int(runs[-1].get("bcast_ranks", 0)),
                                         cfg.params, seed=k))
                    shutil.rmtree(trace, ignore_errors=True)
                meas, pred = _median(runs), _median(preds)
                spread = _spread([r["sims_per_s"] for r in runs])
                if given is None:
                    paired = paired_error(preds, runs)
                traced = _median(traced_runs) if traced_runs else None
                figs = FIGURES
            else:
                prof = given or board_prof.get(case.board)
                if prof is None:
                    raise UserError(f"{case.label}: no MPI configuration on this board to calibrate from")
                if case.board not in modelled_seq:
                    modelled_seq[case.board] = predict(Case("sequential", case.board), prof, cfg.run_seconds, 0,
                                                       {})["sims_per_s"]
                # right before the measured run, for each case: this shared VM's speed drifts by 10-20% within
                # minutes, which a calibration made once per board carried into the tree prediction
                calibrated = calibrate_kernel(case.board, KERNEL_CALIBRATION_S)
                meas = measure_shared(case, cfg.run_seconds)
                figs = ("sims_per_s",)
                pred = predict(case, prof, meas["seconds"], 0, {}, seed=0)
                # the model's own speed-up over its sequential search, before the kernel calibration (which is a
                # run of its own for each case, in its own minute)
                speedup = pred["sims_per_s"] / modelled_seq[case.board]
                pred["sims_per_s"] *= calibrated / modelled_seq[case.board]
            r = row(case, meas, pred, figs)
            if not case.mpi:
                r["speedup_predicted"] = speedup
            if paired is not None:
                r["sims_per_s_error_of_medians"] = r["sims_per_s_error"]
                r["sims_per_s_error"] = paired
            note = ""
            r["sims_per_s_traced"] = r["trace_cost"] = r["record_factor"] = None
            # how far the measured runs lie apart ((max - min) / median): an error below it is within what this
            # machine's own measurements of one configuration disagree by
            r["sims_per_s_spread"] = spread
            if traced is not None:
                # what recording cost the calibration runs (the traced median against the untraced one): the
                # profiles' costs carry it, so a prediction that is low by about as much is the trace's
                r["sims_per_s_traced"] = traced["sims_per_s"]
                r["trace_cost"] = 1.0 - traced["sims_per_s"] / meas["sims_per_s"] if meas["sims_per_s"] else None
                note = f", traced {traced['sims_per_s']:.0f}"
            if case.mpi and factors:
                # the calibration runs record every other 0.1 s: sims/s recorded / unrecorded in the same run,
                # by which calibration scaled the costs the trace showed (sim.calibrate.probe_factor)
                r["record_factor"] = statistics.median(factors)
                note += f", recorded windows at {r['record_factor']:.2f}"
            rows.append(r)
            err = r["sims_per_s_error"]
            log(f"  [{i + 1}/{len(todo)}] {case.label:26s} measured {meas['sims_per_s']:8.0f} sims/s, predicted "
                f"{pred['sims_per_s']:8.0f} ({100 * err:+.0f}%){note}  ({time.monotonic() - t0:.0f} s)")
    w, where = worst(rows)
    return {"quick": cfg.quick, "boards": list(cfg.boards), "seconds": cfg.run_seconds, "repeats": cfg.run_repeats,
            "profile": cfg.profile or "calibrated per configuration", "params": cfg.params, "goal": GOAL,
            "tree_share": share, "worst_error": w, "worst_at": where, "wall_s": time.monotonic() - t_start,
            "load_avg": list(_loadavg()), "rows": rows}


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
    return write_json(name, result, directory), write_csv(name, result["rows"], directory)


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
                    str(meta.get("machine", "?")), {f: float(summary[f]) for f in FIGURES})


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
    """Predict each traced run with the simulator, calibrated (a) on that run's own trace ("reproduce") and
    (b) on the base trace only ("predict"), and compare with what the run measured."""

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
            pred = predict(run.case, prof, secs, run.bcast_ranks, {**run.params, "game.komi": run.komi})
            r = row(run.case, run.measured, pred)
            r["config"] = f"{run.case.label} {mode}"
            r.update(mode=mode, trace=run.name, calibrated_on=run.name if mode == "reproduce" else base_run.name,
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

