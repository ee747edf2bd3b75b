"""Fit a machine profile from an engine trace, plus an MPI ping-pong sweep run here (sim/pingpong.py).

From the trace: one service-time distribution per package kind (the measured t_end - t_start of every
package of that kind; with per_step also how a select's and an update's cost grows with the tree steps it
covered, step_costs, from traces of schema version 2), the median size of each message kind, the workload of
the traced algorithm (sim/workload.py, for the statistical fidelity), and the node layout (a node = one rank
with the trace's threads, since engine traces on one machine put every rank on the same host). From the
ping-pong: the LogGP network (L, o, g, G) and the IO loop's poll cost (one MPI_Testsome, and its growth per
posted request, our stand-in for "per peer"). Kinds the trace lacks, and the network with --no-pingpong, are
taken from a base profile and the profile's `source` line says which.

Recording a trace slows the engine (2-30% of its simulations at 9x9 on 2 ranks), between its packages, not in
them: moving records into the trace costs a rank gaps of 30-100 us, and the other ranks wait for it; a playout
lasts as long in a run whose recording slowed it by 10% as in one slowed by 22%. So package costs are taken as
the trace shows them, and the bookkeeping between packages is fitted on gaps too short to hold a collection
(COLLECT_GAP). A probing trace (`treesplit search --trace-probe`) records only every other 0.1 s; its samples
say how much faster the unrecorded windows ran (probe_factor), which validate reports.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from engine.trace_files import Trace, read_trace
from model.errors import TraceError, UserError
from model.game import game_title
from sim.distributions import fit_distribution
from sim.profile import (COST_KINDS, SIM_KINDS, STEP_KINDS, NetworkSpec, NodeSpec, Profile, StepCost, ValueSource,
                         profile_from_dict)
from sim.runtime import STATS_KINDS
from sim.workload import fit_workload

MIN_SAMPLES = 5
# With --threads 1 the engine's IO thread runs packages this long between two polls (engine/mpi/rank.py's
# INLINE_SLICE; sim/ may not import engine/, so the value is repeated here)
ENGINE_INLINE_SLICE = 2e-4
FUSED_GAP = 1e-6  # s: shorter gaps between packages are parts of one package, not a hand-over
# s: a gap between two packages this long or longer may hold a collection of trace records (15 us and more),
# which an unrecorded run does not pay; a loop turn's messages take ~0.5 us each, so 40 of them fit below it
COLLECT_GAP = 3e-5


def run_pingpong(budget: float = 4.0, timeout: float = 60.0) -> dict[str, Any]:
    """Run the ping-pong under the venv's mpiexec with 2 ranks; raises UserError if it cannot."""
    exe = Path(sys.executable).parent / "mpiexec"
    mpiexec = str(exe) if exe.exists() else "mpiexec"
    cmd = [mpiexec, "-n", "2", sys.executable, "-m", "sim.pingpong", str(budget)]
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except FileNotFoundError:
        raise UserError("ping-pong: no mpiexec found (install mpich, or use --no-pingpong)") from None
    except subprocess.TimeoutExpired:
        raise UserError(f"ping-pong: no answer within {timeout:.0f} s (use --no-pingpong)") from None
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        tail = (out.stderr or out.stdout).strip().splitlines()[-3:]
        raise UserError(f"ping-pong failed (exit {out.returncode}): {' | '.join(tail)}")
    res = json.loads(lines[-1])
    if "error" in res:
        raise UserError(f"ping-pong: {res['error']}")
    return res


def package_gap(pk, idle: float = 1e-2) -> float | None:
    """The mean time between one package's end and the next one's start on the same worker (a hand-over,
    see _handovers), over gaps shorter than `idle` (longer ones are a worker waiting for work, not
    bookkeeping). The mean, not the median: on a shared host the gaps include the rank being descheduled,
    which costs the run as much."""
    pk = pk[pk["kind"].astype(str) != "io"]  # the IO thread's message handling is not a package's bookkeeping
    if len(pk) < 2 * MIN_SAMPLES:
        return None
    gaps = []
    for _, d in pk.groupby(["rank", "worker"], sort=True):
        a, b = _gaps(d, handovers=True)
        gaps.append(b - a)
    gap = np.concatenate(gaps)
    gap = gap[gap < idle]
    return float(np.mean(gap)) if len(gap) >= MIN_SAMPLES else None


def _gaps(d, handovers: bool) -> tuple[np.ndarray, np.ndarray]:
    """(gap starts, gap ends) between the consecutive packages of d (one worker's or one rank's); handovers:
    only those before another package begins (_handovers)."""
    d = d.sort_values("t_start")
    a, b = d["t_end"].to_numpy()[:-1], d["t_start"].to_numpy()[1:]
    if handovers:
        new = _handovers(d, a, b)
        a, b = a[new], b[new]
    return a, b


def _handovers(d, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Which gaps (a[i], b[i]) between the consecutive packages of one worker are hand-overs to another
    package rather than between the parts of one fused package (a simulation's steps on a rank,
    model.roles.CONTINUE). The parts share their sim_id; the compiled engine starts the next package as
    quickly as the next part (most hand-overs under FUSED_GAP), so the sim id, not the gap's length, tells
    the two apart (packages of no simulation, sim_id -1, and traces without sim ids: gaps of FUSED_GAP or
    more)."""
    long = (b - a) >= FUSED_GAP
    if "sim_id" not in d:
        return long
    sim = d["sim_id"].to_numpy()
    return np.where(sim[1:] >= 0, sim[1:] != sim[:-1], long)


def rank_gaps(pk, ranks: int | None = None, handovers: bool = False) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """Per rank (the first `ranks` only, if given): (rank, gap starts, gap ends) between its consecutive
    packages (a rank of the engine's --threads 1 runs its packages one after the other on its IO thread).
    handovers: only the gaps before another package begins (_handovers)."""
    out = []
    if len(pk):
        pk = pk[pk["kind"].astype(str) != "io"]  # IO-loop records: between the packages (engine), over them (simulator)
    for r, d in pk.groupby("rank", sort=True):
        if ranks is not None and int(r) >= ranks:
            continue
        out.append((int(r), *_gaps(d, handovers)))
    return out


def fused(pk) -> bool:
    """Whether the engine ran fused packages (model.roles.CONTINUE: a simulation's steps on a rank follow
    each other with no hand-over, gaps under FUSED_GAP); traces made before fusion have none."""
    if len(pk) < 2 * MIN_SAMPLES:
        return False
    g = np.concatenate([b - a for _, a, b in rank_gaps(pk)])
    return bool(len(g) and (g < FUSED_GAP).mean() > 0.05)


def idle_nap(pk, lo: float = 4e-5, hi: float = 5e-4, min_gaps: int = 500) -> float | None:
    """The period at which an idle IO thread polls, from the gaps between packages on --threads 1 ranks:
    a rank that ran out of work naps, polls, naps again, so its long gaps sit on a lattice c + k P. P is the
    period whose phase the gaps agree on best (the first Fourier component of the gap lengths); None when
    the ranks were hardly ever idle or the gaps show no lattice."""
    g = np.concatenate([b - a for _, a, b in rank_gaps(pk)]) if len(pk) else np.zeros(0)
    g = g[(g > lo) & (g < 5 * hi)]
    if len(g) < min_gaps:
        return None
    if len(g) > 20000:
        g = np.random.default_rng(0).choice(g, 20000, replace=False)
    periods = np.arange(lo, hi, 1e-6)
    # Gaps all shorter than P agree on any long period's phase trivially: a lattice needs gaps that span it
    # (a rank that spins after its last work, as the engine's --threads 1 ranks do for 2 ms, has none)
    spans = np.array([(g >= p).mean() for p in periods])
    score = np.array([abs(np.exp(2j * np.pi * g / p).mean()) for p in periods])
    score[spans < 0.2] = 0.0
    i = int(np.argmax(score))
    return float(periods[i]) if score[i] >= 0.3 else None


def inline_costs(tr, short: float) -> tuple[float, float, float, float] | None:
    """(per package, per message received, per message sent, per statistics byte received) seconds on an
    engine rank that runs its packages on its IO thread: a least-squares fit of each gap between two
    packages shorter than `short` (no nap in it) to 1 + the messages the rank received and sent in it
    (their t_recv / t_send) + the bytes of shared-node statistics (runtime.STATS_KINDS) received in it.
    The gap holds the role's bookkeeping of the package before it and, at the end of an inline slice, the
    loop's turn: probing, receiving, decoding and the role's on_message per received message."""

    M = int(tr.meta.get("ranks", {}).get("search", 1))
    ms = tr.messages
    xs, ys = [], []
    for r, a, b in rank_gaps(tr.packages, M, handovers=True):
        # the simulator charges per_package once per package: the gaps between packages count, those between
        # the parts of one fused package do not
        keep = (b - a) < short
        a, b = a[keep], b[keep]
        if ms.empty:
            nr = ns = nb = np.zeros(len(a))
        else:
            mine = ms[ms["dst"] == r].sort_values("t_recv")
            rv = mine["t_recv"].to_numpy()
            sb = np.concatenate([[0.0], np.cumsum(np.where(mine["kind"].astype(str).isin(STATS_KINDS),
                                                           mine["bytes"].to_numpy(), 0))])
            sd = np.sort(ms.loc[ms["src"] == r, "t_send"].to_numpy())
            i0, i1 = np.searchsorted(rv, a), np.searchsorted(rv, b)
            nr, nb = i1 - i0, sb[i1] - sb[i0]
            ns = np.searchsorted(sd, b) - np.searchsorted(sd, a)
        xs.append(np.c_[np.ones(len(a)), nr, ns, nb])
        ys.append(b - a)
    if not xs or sum(len(y) for y in ys) < 2 * MIN_SAMPLES:
        return None
    x, y = np.vstack(xs), np.concatenate(ys)
    if not (x[:, 1] > 0).any():  # one rank: no messages, the gap is all bookkeeping
        return max(float(np.mean(y)), 0.0), 0.0, 0.0, 0.0  # hand-overs within a clock tick may read as -0
    if not (x[:, 3] > 0).any():
        x = x[:, :3]
    c = np.linalg.lstsq(x, y, rcond=None)[0]
    c = [float(max(v, 0.0)) for v in c] + [0.0] * (4 - len(c))
    return c[0], c[1], c[2], c[3]


def probe_factor(tr, min_windows: int = 4) -> tuple[float, int] | None:
    """(sims/s in recorded windows / sims/s in unrecorded ones, windows of each kind) of a probing engine trace
    (meta extra `trace_probe` = the window P: packages and messages recorded only in windows [kP, (k+1)P) of
    even k), from the ranks' samples, which every window has; None for other traces or too few windows. A
    window is the span between two of a rank's samples, named by the first one's time (the engine samples on
    the grid kP and chooses the next window's recording there). The first and last window of each rank (start
    and drain) are left out. Recorded and unrecorded windows alternate every P (0.1 s), so both see the same
    minute of a host whose speed drifts."""
    period = float((tr.meta.get("extra") or {}).get("trace_probe") or 0.0)
    smp = tr.samples
    if period <= 0 or smp.empty:
        return None
    M = int(tr.meta.get("ranks", {}).get("search", 1))
    sums = np.zeros((2, 2))  # [recorded?][sims, seconds]
    counts = [0, 0]
    for r, d in smp[smp["rank"] < M].groupby("rank"):
        d = d.sort_values("t")
        t, n = d["t"].to_numpy(), d["sims_done"].to_numpy().astype(float)
        if len(t) < 4:
            continue
        on = (np.floor(t[:-1] / period).astype(np.int64) % 2 == 0).astype(int)
        dn, dt = np.diff(n), np.diff(t)
        for i in range(1, len(dt) - 1):
            sums[on[i], 0] += dn[i]
            sums[on[i], 1] += dt[i]
            counts[on[i]] += 1
    if min(counts) < min_windows or sums[0, 1] <= 0 or sums[1, 1] <= 0 or sums[0, 0] <= 0:
        return None
    return float((sums[1, 0] / sums[1, 1]) / (sums[0, 0] / sums[0, 1])), min(counts)


def step_costs(pk, want: tuple[str, ...] = STEP_KINDS) -> dict[str, StepCost]:
    """Per kind whose parts' steps the trace gives (steps >= 0) and vary: the least-squares line of a part's
    duration over its steps, and the mean steps per part. The longest 1% of the parts (a descheduled
    thread, a page fault) are left out of the line, which a few of them would swing; the profile charges a
    part the line's ratio at its steps to the line's at the mean times a draw from the kind's distribution,
    which keeps them."""
    out = {}
    if "steps" not in pk or pk.empty:
        return out
    dur = (pk["t_end"] - pk["t_start"]).to_numpy()
    kinds = pk["kind"].astype(str).to_numpy()
    steps = pk["steps"].to_numpy()
    for kind in want:
        m = (kinds == kind) & (steps >= 0)
        if m.sum() < 10 * MIN_SAMPLES or steps[m].min() == steps[m].max():
            continue
        x, y = steps[m].astype(np.float64), dur[m]
        keep = y <= np.quantile(y, 0.99)
        slope, base = np.polyfit(x[keep], y[keep], 1)
        mean = float(x.mean())
        slope = max(float(slope), 0.0)
        base = max(float(base), 0.0)
        if base + slope * mean > 0:
            out[kind] = StepCost(mean=mean, base=base, slope=slope)
    return out


def calibrated_sources(base: Profile, fitted: dict[str, int], pingpong: bool) -> dict[str, ValueSource]:
    """[sources] of a calibrated profile: measured, except what it took from `base` (cost kinds the trace
    lacks; without a ping-pong the network and IO loop poll; always the eager threshold and the IO core's
    copy cost per byte), which keeps base's source and range."""
    kept = [f"costs.{k}" for k in COST_KINDS if k not in fitted] + ["network.eager_threshold", "io.per_byte"]
    if not pingpong:
        kept += [f"network.{f.name}" for f in dataclasses.fields(NetworkSpec)] + ["io.poll_base", "io.poll_per_peer"]
    out = {"default": ValueSource("measured")}
    for k in kept:
        v = base.source_of(k)
        if v.source != "unknown" and v != out["default"]:
            out[k] = v
    return out


def with_spread(profiles: list[Profile]) -> Profile:
    """The first of several profiles calibrated on repeats of one configuration, its measured package costs
    marked with their spread over the repeats (half of (max - min) / median of a simulation's modelled time),
    which `treesplit predict` draws into its band."""
    prof = profiles[0]
    t = [p.sim_seconds() for p in profiles]
    spread = 0.0 if len(t) < 2 else min(0.9, (max(t) - min(t)) / (2 * float(np.median(t))))
    if spread <= 0 or prof.source_of("costs").source != "measured":
        return prof
    return dataclasses.replace(prof, sources={**prof.sources, "costs": ValueSource("measured", spread=spread)})


def calibrate(trace: str | Path | Trace, base: Profile, name: str = "local", pingpong: dict | None = None,
              tree_share: float | None = None, per_step: bool = False) -> Profile:
    """A profile of the machine that made `trace` (a trace directory, or one already read: a caller that also
    reads other facts from it, such as probe_factor, reads it once). `tree_share` (default: base's) is what
    one more worker on a rank's tree costs a simulation there (NodeSpec.tree_share), measured apart: the
    profile keeps the costs of a worker alone, so a trace of ranks with several workers has it divided out.
    per_step: the profile also says how a select's and an update's cost grows with the tree steps it covers
    ([steps], which the functional fidelity then charges; see experiments/SIMULATOR.md for where that line,
    fitted on 2 ranks, holds and where it does not)."""
    tr = trace if isinstance(trace, Trace) else read_trace(trace)
    pk = tr.packages
    if pk.empty:
        raise TraceError(f"{tr.path}: the trace has no work packages to calibrate from")
    notes = []
    costs = dict(base.costs)
    dur = (pk["t_end"] - pk["t_start"]).to_numpy()
    kinds = pk["kind"].astype(str).to_numpy()
    fitted: dict[str, int] = {}  # kind -> packages its cost was fitted from
    for kind in COST_KINDS:
        x = dur[kinds == kind]
        if len(x) >= MIN_SAMPLES:
            costs[kind] = fit_distribution(x)
            fitted[kind] = len(x)
        else:
            notes.append(f"{kind} cost from {base.name}")
    if not fitted:
        raise TraceError(f"{tr.path}: no package kind has {MIN_SAMPLES} or more packages to fit")
    messages = dict(base.messages)
    ms = tr.messages
    if not ms.empty:
        for kind, sizes in ms.groupby(ms["kind"].astype(str))["bytes"]:
            if kind != "CONTROL" and len(sizes):
                messages[kind] = int(np.median(sizes))
    threads = int(tr.meta.get("threads", base.node.cores_per_rank))
    node = NodeSpec(cores=max(1, threads), ranks_per_node=1,
                    tree_share=base.node.tree_share if tree_share is None else tree_share)
    node.validate()
    share = node.sharing_factor()
    steps = step_costs(pk, tuple(k for k in STEP_KINDS if k in fitted)) if per_step else {}
    if steps:
        notes.append("cost per tree step: " + ", ".join(f"{k} {v.base * 1e6:.2f} + {v.slope * 1e6:.2f} us/step "
                                                        f"(mean {v.mean:.2f} steps)" for k, v in steps.items()))
    if share != 1.0:
        costs = {k: (v.scaled(1 / share) if k in fitted and k in SIM_KINDS else v) for k, v in costs.items()}
        steps = {k: StepCost(v.mean, v.base / share, v.slope / share) for k, v in steps.items()}
        notes.append(f"simulation costs divided by {share:.3f}: {threads - 1} workers shared each rank's tree "
                     f"(tree_share {node.tree_share:.3f})")
    network, io = base.network, base.io
    if pingpong:
        network = NetworkSpec(latency=pingpong["latency"], overhead=pingpong["overhead"], gap=pingpong["gap"],
                              gap_per_byte=pingpong["gap_per_byte"], eager_threshold=base.network.eager_threshold,
                              shm_latency=pingpong["latency"], shm_gap_per_byte=pingpong["gap_per_byte"])
        io = dataclasses.replace(base.io, poll_base=pingpong["poll_base"],
                                 poll_per_peer=pingpong["poll_per_request"], per_message=pingpong["overhead"])
    else:
        notes.append(f"network and IO loop from {base.name} (--no-pingpong)")
    if tr.meta.get("runtime") == "engine":
        # the engine's worker runs the role's callback for its own package (the roles' lock, not the IO
        # thread); that bookkeeping is the gap between one package and the next on a worker kept busy.
        # Its endpoint sends one MPI message per destination and turn with every record for it (batched)
        io = dataclasses.replace(io, handles_completions=False, batched=True,
                                 inline_slice=ENGINE_INLINE_SLICE if threads == 1 else 0.0)
        # the engine's search ranks without workers spin 2 ms after their last work (meta's idle_spin; traces
        # made before it said so: those that fuse packages), so in a search they see arrivals at once; only
        # its broadcast ranks nap (a lattice over the search ranks' gaps is their waiting for each other:
        # 80-120 us fitted on 2x1 at 9x9, which made leaf and tds 20-30% slow)
        spins = threads == 1 and (float((tr.meta.get("extra") or {}).get("idle_spin", 0.0)) > 0 or fused(pk))
        M = int(tr.meta.get("ranks", {}).get("search", 1))
        nap = idle_nap(pk[pk["rank"] >= M] if spins else pk) if threads == 1 else None
        fit = inline_costs(tr, min(COLLECT_GAP, 0.6 * nap) if nap else COLLECT_GAP) if threads == 1 else None
        if fit is not None:
            # the IO thread itself pays every record: received ones in its loop, sent ones when the role
            # encodes them; the simulator charges per_message for each record in and out, and o once per
            # batch (a share of each record's measured cost too small to take out: tens of records a batch)
            pp, recv, send, stats_b = fit
            per_msg = (recv + send) / 2
            io = dataclasses.replace(io, per_package=pp, per_message=per_msg, stats_per_byte=stats_b)
            notes.append(f"per_package {pp * 1e6:.1f} us, per message {recv * 1e6:.1f} us received / "
                         f"{send * 1e6:.1f} us sent, {stats_b * 1e9:.2f} ns per statistics byte (package gaps)")
        else:
            pp = package_gap(pk)
            if pp is not None:
                io = dataclasses.replace(io, per_package=pp)
                notes.append(f"per_package {pp * 1e6:.1f} us (package gaps)")
        if nap is not None:
            io = dataclasses.replace(io, idle_nap=nap)
            notes.append(f"idle_nap {nap * 1e6:.0f} us (lattice of idle gaps)")
        elif spins:
            io = dataclasses.replace(io, idle_nap=0.0)
            notes.append("idle_nap 0 (the search ranks spin; no lattice of idle gaps on a broadcast rank)")
        probe = probe_factor(tr)
        if probe is not None:
            notes.append(f"recorded windows ran at {probe[0]:.3f} of the unrecorded ones' sims/s ({probe[1]}+ "
                         "windows each): the recording's own gaps, left out of the fit")
    workloads = dict(base.workloads)
    algo = tr.meta.get("algo", "")
    try:
        workloads[algo] = fit_workload(tr)
    except (TraceError, ValueError) as e:
        notes.append(f"no workload fitted ({e})")
    machine = tr.meta.get("machine", "?")
    rk = tr.meta.get("ranks", {})
    game = game_title(tr.meta.get("game", "?"), tr.meta.get("board"))
    source = (f"calibrated from {tr.meta.get('runtime')} trace {tr.path.name} ({algo} on {game}, "
              f"{rk.get('search', '?')}+{rk.get('broadcast', 0)} ranks, {threads} threads per rank, "
              f"started {tr.meta.get('started_at', '?')}) on {machine}; fitted: {', '.join(f'{k} ({n})' for k, n in fitted.items())}"
              + (f"; ping-pong: {pingpong.get('mpi', 'MPI')}" if pingpong else "")
              + (f"; {'; '.join(notes)}" if notes else ""))
    prof = Profile(name=name, description=f"{machine}: one node = one rank with {threads} threads",
                   source=source, node=node, network=network, io=io, costs=costs, messages=messages,
                   workloads=workloads, sources=calibrated_sources(base, fitted, pingpong is not None),
                   steps=steps)
    # round-trip through the validating loader so a calibrated profile is as checked as a written one
    return profile_from_dict(prof.to_toml(), where=f"calibrated profile {name}: ")
