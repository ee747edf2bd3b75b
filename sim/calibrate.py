"""Fit a machine profile from an engine trace, plus an MPI ping-pong sweep run here (sim/pingpong.py).

From the trace: one service-time distribution per package kind (the measured t_end - t_start of every
package of that kind), the median size of each message kind, the workload of the traced algorithm
(sim/workload.py, for the statistical fidelity), and the node layout (a node = one rank with the trace's
threads, since engine traces on one machine put every rank on the same host). From the ping-pong: the LogGP
network (L, o, g, G) and the IO loop's poll cost (one MPI_Testsome, and its growth per posted request,
our stand-in for "per peer"). Kinds the trace lacks, and the network with --no-pingpong, are taken from a
base profile and the profile's `source` line says which.
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

from model.errors import TraceError, UserError
from model.trace import read_trace
from sim.distributions import fit_distribution
from sim.profile import COST_KINDS, NetworkSpec, NodeSpec, Profile
from sim.workload import fit_workload

MIN_SAMPLES = 5


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


def calibrate(trace_dir: str | Path, base: Profile, name: str = "local", pingpong: dict | None = None) -> Profile:
    tr = read_trace(trace_dir)
    pk = tr.packages
    if pk.empty:
        raise TraceError(f"{trace_dir}: the trace has no work packages to calibrate from")
    notes = []
    costs = dict(base.costs)
    dur = (pk["t_end"] - pk["t_start"]).to_numpy()
    kinds = pk["kind"].astype(str).to_numpy()
    fitted = []
    for kind in COST_KINDS:
        x = dur[kinds == kind]
        if len(x) >= MIN_SAMPLES:
            costs[kind] = fit_distribution(x)
            fitted.append(f"{kind} ({len(x)})")
        else:
            notes.append(f"{kind} cost from {base.name}")
    if not fitted:
        raise TraceError(f"{trace_dir}: no package kind has {MIN_SAMPLES} or more packages to fit")
    messages = dict(base.messages)
    ms = tr.messages
    if not ms.empty:
        for kind, sizes in ms.groupby(ms["kind"].astype(str))["bytes"]:
            if kind != "CONTROL" and len(sizes):
                messages[kind] = int(np.median(sizes))
    threads = int(tr.meta.get("threads", base.node.cores_per_rank))
    node = NodeSpec(cores=max(2, threads), ranks_per_node=1)
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
        # the engine drives the roles from its IO thread: finished packages go back through it
        io = dataclasses.replace(io, handles_completions=True)
    workloads = dict(base.workloads)
    algo = tr.meta.get("algo", "")
    try:
        workloads[algo] = fit_workload(tr)
    except (TraceError, ValueError) as e:
        notes.append(f"no workload fitted ({e})")
    machine = tr.meta.get("machine", "?")
    rk = tr.meta.get("ranks", {})
    game = tr.meta.get("game", "?") + (f" {tr.meta.get('board')}x{tr.meta.get('board')}" if tr.meta.get("game") == "go" else "")
    source = (f"calibrated from {tr.meta.get('runtime')} trace {Path(trace_dir).name} ({algo} on {game}, "
              f"{rk.get('search', '?')}+{rk.get('broadcast', 0)} ranks, {threads} threads per rank, "
              f"started {tr.meta.get('started_at', '?')}) on {machine}; fitted: {', '.join(fitted)}"
              + (f"; ping-pong: {pingpong.get('mpi', 'MPI')}" if pingpong else "")
              + (f"; {'; '.join(notes)}" if notes else ""))
    prof = Profile(name=name, description=f"{machine}: one node = one rank with {threads} threads",
                   source=source, node=node, network=network, io=io, costs=costs, messages=messages,
                   workloads=workloads)
    # round-trip through the validating loader so a calibrated profile is as checked as a written one
    from sim.profile import profile_from_dict

    return profile_from_dict(prof.to_toml(), where=f"calibrated profile {name}: ")
