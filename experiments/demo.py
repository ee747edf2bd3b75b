"""The main job, `treesplit demo`: one short real run, watched live, replayed by the simulator, extrapolated.

Steps (each a `treesplit` subcommand in a subprocess, so the demo exercises exactly what users run):
  1. start the live dashboard on 127.0.0.1 (URL printed) listening for telemetry;
  2. run UCT-Treesplit on local MPI ranks on 9x9 for a short search, with a trace and live telemetry;
  3. calibrate a machine profile on that trace (plus an MPI ping-pong);
  4. predict the scaling curve to 128(+32) nodes on the thesis' cluster (oculus profile): with Gomorra's costs,
     and with this engine's costs calibrated in step 3 (`treesplit predict --costs`), each with its band; both
     run in the background, beside step 5 (they need nothing of it);
  5. replay the same configuration in the simulator with the calibrated profile (a simulated trace) for as
     long as the real run lasted, so both cover the same stretch of the search: the rate falls as the tree
     grows (on one calibrated profile, a replay of the first 0.2 s ran 33% faster than one of the whole 8 s);
  6. write results/demo/report.html: the real run and its simulated replay side by side with the rate error
     in words (and, above validate's 15%, what made them differ), and the prediction.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

from experiments.validate import GOAL
from model.config import check
from model.errors import UserError


@dataclass
class DemoConfig:
    out: str = "results/demo"
    board: int = 9
    ranks: int = 2  # search ranks; 2 fit this 2-core machine (one core each)
    bcast_ranks: int = 1
    seconds: float = 8.0  # of real search; the replay simulates as many seconds
    predict_nodes: list = field(default_factory=lambda: [1, 2, 4, 8, 16, 32, 64, 128])
    predict_profile: str = "oculus"
    dashboard: bool = True
    pingpong: bool = True

    def validate(self) -> None:
        check(2 <= self.board <= 19, "board", "need 2..19")
        check(self.ranks >= 1, "ranks", "need >= 1")
        check(self.bcast_ranks >= 0, "bcast_ranks", "need >= 0")
        check(self.seconds > 0, "seconds", "need > 0")
        check(len(self.predict_nodes) >= 2 and all(n >= 1 for n in self.predict_nodes), "predict_nodes",
              "need at least two node counts >= 1")


def _treesplit() -> list[str]:
    exe = Path(sys.executable).parent / "treesplit"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "treesplit"]


@dataclass
class _Step:
    """A `treesplit` subcommand started in a subprocess, its output in temporary files until it ends."""
    name: str
    args: list
    proc: subprocess.Popen
    out: object
    err: object
    t0: float


def _start(step: str, args: list[str]) -> _Step:
    shown = [a if len(a) <= 60 else a[:40] + "..." for a in args]  # the report's note, said in full above
    print(f"  $ treesplit {shlex.join(shown)}", flush=True)
    out, err = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
    proc = subprocess.Popen(_treesplit() + args, stdout=out, stderr=err, text=True)
    return _Step(step, args, proc, out, err, time.monotonic())


def _finish(st: _Step, log, timeout: float, label: str = "") -> str:
    """Wait for a started step (timeout counted from its start); its output goes to the log, stdout back."""
    try:
        st.proc.wait(timeout=max(0.0, st.t0 + timeout - time.monotonic()))
    except subprocess.TimeoutExpired:
        st.proc.kill()
        st.proc.wait()
        raise UserError(f"demo step '{st.name}' did not finish within {timeout:.0f} s") from None
    finally:
        st.out.seek(0)
        st.err.seek(0)
        stdout, stderr = st.out.read(), st.err.read()
        st.out.close()
        st.err.close()
    log.write(f"$ treesplit {shlex.join(st.args)}\n{stdout}\n{stderr}\n")
    log.flush()
    if st.proc.returncode != 0:
        tail = (stderr.strip() or stdout.strip()).splitlines()[-3:]
        raise UserError(f"demo step '{st.name}' failed (exit {st.proc.returncode}): " + " | ".join(tail))
    print(f"    {label}done in {time.monotonic() - st.t0:.1f} s", flush=True)
    return stdout


def _run(step: str, args: list[str], log, timeout: float) -> str:
    return _finish(_start(step, args), log, timeout)


class _Dashboard:
    """The live dashboard in a subprocess: its URL and telemetry address, read from what it prints."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(_treesplit() + ["dashboard", "--live", "127.0.0.1:0", "--port", "0",
                                                     "--no-browser"],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
        self.url = self.telemetry = None
        deadline = time.monotonic() + 120
        assert self.proc.stdout is not None
        while time.monotonic() < deadline and (self.url is None or self.telemetry is None):
            line = self.proc.stdout.readline()
            if not line:
                break
            m = re.search(r"treesplit dashboard: (\S+)", line)
            if m:
                self.url = m.group(1).rstrip("/")
            m = re.search(r"udp://(\S+)", line)
            if m:
                self.telemetry = m.group(1)
        if self.url is None or self.telemetry is None:
            self.close()
            raise UserError("the live dashboard did not start (run `treesplit dashboard --live 127.0.0.1:0` "
                            "to see why)")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def replay_note(engine: dict, sim: dict, cores: int, load: float | None) -> tuple[float, str]:
    """(relative error, a paragraph for the report) of the simulated replay's sims/s against the real run's:
    the error, and where it is above validate's goal, what the two runs' own figures say made them differ."""

    meas, pred = float(engine["sims_per_s"]), float(sim["sims_per_s"])
    error = (pred - meas) / meas if meas else float("inf")
    ranks = int(engine["ranks"]) + int(engine.get("bcast_ranks", 0))
    words = (f"Simulation rate: the engine ran {meas:,.0f} sims/s over {float(engine['seconds']):.1f} s; the "
             f"simulator's replay of the same {float(sim['seconds']):.1f} s, calibrated on that run's trace, "
             f"{pred:,.0f} sims/s: {100 * error:+.0f}% (`treesplit validate`'s goal: within {GOAL:.0%}).")
    if abs(error) <= GOAL:
        return error, words
    why = []
    share = float(engine.get("cpu_seconds") or 0) / max(float(engine["seconds"]) * ranks, 1e-9)
    if error > 0 and share < 0.8:
        crowd = [f"{ranks} ranks on {cores} cores"] if ranks > cores else []
        if load is not None and load > cores:
            crowd.append(f"a load average of {load:.1f} on {cores} cores (other processes)")
        why.append(f"the engine's {ranks} ranks were on a core {share:.0%} of the time (CPU time over wall time) "
                   f"while the simulator gives every rank a core of its own" + (f": {', '.join(crowd)}" if crowd
                                                                                 else ""))
    busy_e, busy_s = float(engine.get("busy_frac", 0)), float(sim.get("busy_frac", 0))
    if busy_s > 0 and abs(busy_e - busy_s) > GOAL * busy_s:
        gap = ("time lost waiting (for a core, for messages) that the profile does not charge" if busy_e < busy_s
               else "work the profile charges more cheaply than the run paid")
        why.append(f"the engine's workers were busy {busy_e:.0%} of the time, the simulated ones {busy_s:.0%}: {gap}")
    if not why:
        why.append("neither the CPU share of the ranks nor the workers' busy fraction explains it; "
                   "experiments/SIMULATOR.md says what the simulator leaves out")
    return error, words + " Above the goal because " + "; and ".join(why) + "."


def run_demo(cfg: DemoConfig) -> Path:
    cfg.validate()
    out = Path(cfg.out)
    engine_dir, sim_dir = out / "engine-trace", out / "sim-trace"
    for d in (engine_dir, sim_dir):
        if d.exists():
            shutil.rmtree(d)
    out.mkdir(parents=True, exist_ok=True)
    profile = out / "local.toml"
    scaling = out / f"treesplit-{cfg.predict_profile}.csv"  # what `treesplit predict --out` names it
    # this engine on that cluster: the run's calibrated node costs with the profile's network and nodes
    scaling_here = out / f"treesplit-{Path(cfg.predict_profile).stem}+{profile.stem}-costs.csv"
    steps = 6
    t_start = time.monotonic()
    with open(out / "demo.log", "w") as log:
        dash = None
        background: list[_Step] = []
        try:
            print(f"[1/{steps}] live dashboard", flush=True)
            tele: list[str] = []
            if cfg.dashboard:
                dash = _Dashboard()
                print(f"    open {dash.url}/ (telemetry on {dash.telemetry})", flush=True)
                tele = ["--telemetry", dash.telemetry]
            else:
                print("    skipped (--no-dashboard)", flush=True)

            print(f"[2/{steps}] UCT-Treesplit on {cfg.ranks} search + {cfg.bcast_ranks} broadcast MPI ranks, "
                  f"{cfg.board}x{cfg.board}, {cfg.seconds:g} s", flush=True)
            layout = ["search", "--algo", "treesplit", "--game", "go", "--board", str(cfg.board), "--ranks",
                      str(cfg.ranks), "--bcast-ranks", str(cfg.bcast_ranks), "--threads", "1"]
            # a first, tiny search compiles the kernels (minutes on a fresh machine) outside the measured run
            _run("warm-up", layout + ["--sims", "20"], log, timeout=900)
            res = json.loads(_run("search", layout + ["--seconds", str(cfg.seconds), "--trace", str(engine_dir),
                                                      "--json", *tele], log, timeout=300 + cfg.seconds))
            load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None  # the minute the run had
            print(f"    move {res.get('move_str')}, {res.get('sims_per_s', 0):.0f} sims/s, "
                  f"{res.get('messages_per_sim', 0):.2f} messages/sim", flush=True)

            print(f"[3/{steps}] calibrate the simulator on that run", flush=True)
            _run("calibrate", ["calibrate", str(engine_dir), "-o", str(profile),
                               *([] if cfg.pingpong else ["--no-pingpong"])], log, timeout=300)

            print(f"[4/{steps}] predict scaling to {max(cfg.predict_nodes)} nodes ({cfg.predict_profile} profile): "
                  f"with its own costs, and with this engine's (step 3's on its network and nodes); beside step 5",
                  flush=True)
            nodes_arg = ",".join(map(str, cfg.predict_nodes))
            background.append(_start("predict", ["predict", "--algo", "treesplit", "--profile", cfg.predict_profile,
                                                 "--nodes", nodes_arg, "--out", str(out), "--quiet"]))
            background.append(_start("predict with this engine's costs", [
                "predict", "--algo", "treesplit", "--profile", cfg.predict_profile, "--costs", str(profile),
                "--nodes", nodes_arg, "--out", str(out), "--quiet"]))

            seconds = float(res["seconds"])
            print(f"[5/{steps}] replay the same configuration in the simulator ({seconds:.1f} simulated s, as long "
                  f"as the real run)", flush=True)
            nodes = max(1, cfg.ranks)
            sim = json.loads(_run("simulate", [
                "simulate", "--algo", "treesplit", "--profile", str(profile), "--game", "go", "--board",
                str(cfg.board), "--nodes", str(nodes), "--bcast-nodes", str(cfg.bcast_ranks), "--seconds",
                f"{seconds:.3f}", "--warmup", "0", "--param", "node.ranks_per_node=1", "--trace", str(sim_dir),
                "--json"], log, timeout=600 + 20 * seconds))
            error, note = replay_note(res, sim, os.cpu_count() or 1, load)
            print(f"    {sim['sims_per_s']:.0f} sims/s simulated against {res['sims_per_s']:.0f} measured: "
                  f"{100 * error:+.0f}%", flush=True)
            print(textwrap.fill(note, width=110, initial_indent="    ", subsequent_indent="    "), flush=True)
            while background:
                _finish(background[0], log, timeout=900, label=f"step 4's {background[0].name}: ")
                background.pop(0)

            print(f"[6/{steps}] report", flush=True)
            report = out / "report.html"
            _run("report", ["report", str(engine_dir), "--compare", str(sim_dir), "--scaling", str(scaling),
                            "--scaling", str(scaling_here), "--note", note, "-o", str(report)], log, timeout=300)
        finally:
            for st in background:  # a step failed: the predictions still running go with it
                st.proc.kill()
                st.proc.wait()
                st.out.close()
                st.err.close()
            if dash is not None:
                dash.close()
    print(f"demo finished in {time.monotonic() - t_start:.0f} s: {report.resolve()}", flush=True)
    return report


if __name__ == "__main__":  # pragma: no cover
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    run_demo(DemoConfig())
