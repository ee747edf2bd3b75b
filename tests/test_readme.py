"""Every command README.md shows works as shown, and leaves the checkout as it was.

The commands are read from README.md's bash blocks and run in order (later ones read what earlier ones wrote:
the dashboard and calibrate use the search's trace) with small budgets: a shorter --seconds/--sims, fewer
repeats or configurations, where a command has them (BUDGETS). They run from a scratch directory that holds links to the
checkout's .venv and scripts/, so README's relative paths work verbatim; a command that writes into the
checkout itself (rather than ./results/, ./runs/, ... of where it runs) shows in `git status`, and every file
they leave where they run must be one that .gitignore ignores there: together, running them in the checkout
leaves `git status` as it was. The test suite's own command is CI's (.ci/run runs it), not run from here.
"""

import json
import os
import re
import shlex
import signal
import subprocess
import time
import urllib.request

import pandas as pd
import pytest

from conftest import ROOT
from engine.trace_files import read_trace
from validate_helpers import check_quick_validation

# README command (its words up to the first flag that changes) -> extra or replaced flags for the test
BUDGETS = {
    ".venv/bin/treesplit demo": ["--seconds", "1", "--no-pingpong"],
    ".venv/bin/treesplit search --algo treesplit": ["--seconds", "1"],
    ".venv/bin/treesplit search --algo root": ["--sims", "2000"],
    ".venv/bin/treesplit dashboard": ["--port", "0", "--no-browser"],
    ".venv/bin/treesplit dashboard --live": ["--live", "127.0.0.1:0", "--port", "0", "--no-browser"],
    ".venv/bin/treesplit calibrate": ["--pingpong-seconds", "1"],
    ".venv/bin/treesplit predict": ["--seconds", "0.005"],
    ".venv/bin/treesplit validate": ["--seconds", "0.5", "--repeats", "1", "--no-pingpong", "--warmup", "0"],
    ".venv/bin/treesplit gtp": ["--sims", "200"],
    ".venv/bin/treesplit bench parallel": ["--cores", "2", "--boards", "9", "--seconds", "0.5", "--repeats", "1",
                                           "--algos", "tree,treesplit"],
    ".venv/bin/treesplit bench soak": ["--games", "2", "--moves", "2", "--sims", "100"],
    ".venv/bin/python -m experiments.equal_time": ["--slots", "2", "--games", "1", "--seconds", "0.05", "--budget",
                                                   "120"],
}
SUITE = ".venv/bin/python -m pytest"  # the test suite itself: CI's command


def readme_commands() -> list[str]:
    """Every command line of README.md's bash blocks (comments dropped; `a && b` gives both)."""
    text = (ROOT / "README.md").read_text()
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.splitlines():
            line = line.split("#", 1)[0].strip()
            out += [part.strip() for part in line.split("&&") if part.strip()]
    return out


def with_budget(cmd: str) -> list[str]:
    """The command's words, with the test's budget: a flag it has gets the test's value, others are added."""
    words = shlex.split(cmd)
    key = next((k for k in sorted(BUDGETS, key=len, reverse=True) if cmd.startswith(k)), None)
    extra = list(BUDGETS.get(key, []))
    while extra:
        flag, value = extra.pop(0), extra.pop(0) if extra and not extra[0].startswith("--") else None
        if flag in words:
            if value is not None:
                words[words.index(flag) + 1] = value
        else:
            words += [flag] + ([value] if value is not None else [])
    return words


def _git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout


def _dashboard(words: list[str], cwd, env) -> subprocess.CompletedProcess:
    """A server until stopped: start it, ask /status, stop it as a service manager would (SIGTERM)."""
    p = subprocess.Popen(words, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = None
        deadline = time.monotonic() + 180
        while url is None and time.monotonic() < deadline:
            line = p.stdout.readline()
            if not line:
                break
            m = re.search(r"treesplit dashboard: (\S+)", line)
            url = m.group(1).rstrip("/") if m else None
        assert url and url.startswith("http://127.0.0.1:"), p.stderr.read() if p.poll() is not None else url
        status = json.loads(urllib.request.urlopen(f"{url}/status", timeout=30).read())
        assert status["mode"] == ("live" if "--live" in words else "recorded")
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    return subprocess.CompletedProcess(words, p.returncode, out, err)


def _check_demo(cwd) -> None:
    """The demo's report: the real run and its replay over the same time, and the rate error in words."""
    out = cwd / "results" / "demo"
    engine, sim = read_trace(out / "engine-trace"), read_trace(out / "sim-trace")
    assert engine.meta["runtime"] == "engine" and sim.meta["runtime"] == "sim"
    assert len(engine.packages) > 0 and len(sim.packages) > 0
    seconds = engine.meta["extra"]["summary"]["seconds"]
    assert sim.meta["t_end"] >= 0.95 * seconds  # the replay covers the run (on main: 0.2 s of an 8 s run)
    curve = pd.read_csv(out / "treesplit-oculus.csv")
    assert list(curve["nodes"]) == [1, 2, 4, 8, 16, 32, 64, 128] and (curve["sims_per_s"] > 0).all()
    # this engine's calibrated costs on the same cluster: a second curve, each with its band around it
    here = pd.read_csv(out / "treesplit-oculus+local-costs.csv")
    assert list(here["nodes"]) == list(curve["nodes"]) and (here["sims_per_s"] > 0).all()
    for c in (curve, here):
        assert (c["sims_per_s_low"] <= c["sims_per_s"]).all() and (c["sims_per_s"] <= c["sims_per_s_high"]).all()
    assert (curve["sims_per_s_low"] < curve["sims_per_s_high"]).any()  # oculus's assumed values have ranges
    html = (out / "report.html").read_text()
    assert "Prediction" in html and (out / "local.toml").exists()
    m = re.search(r"Simulation rate: the engine ran [\d,]+ sims/s .*?: ([+-]\d+)%", html)
    assert m, "the report states the replay's rate error"
    if abs(int(m.group(1))) > 15:
        assert "Above the goal because" in html


def _check_validate(cwd) -> None:
    """validate --quick saved its table where it ran (on main it died saving the CSV), and the table holds what
    the engine and the simulator together give: the suite's one real quick validation."""
    check_quick_validation(cwd / "results")


def _check_export(cwd) -> None:
    """The Chrome trace lands beside the trace it was made from (what it holds is test_viz_export.py's)."""
    doc = json.loads((cwd / "runs" / "t1.trace.json").read_text())
    assert any(e["ph"] == "X" for e in doc["traceEvents"])


def _check_equal_time(cwd) -> None:
    games = [pd.read_csv(f) for f in sorted((cwd / "runs" / "eq").glob("slot-*/games.csv"))]
    assert games and sum(len(g) for g in games) >= 1  # the slots played their games


CHECKS = {".venv/bin/treesplit demo": _check_demo, ".venv/bin/treesplit validate": _check_validate,
          ".venv/bin/treesplit export": _check_export, ".venv/bin/python -m experiments.equal_time": _check_equal_time}


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_every_readme_command_works_and_leaves_the_checkout_clean(tmp_path):
    commands = readme_commands()
    assert any(c.startswith(SUITE) for c in commands) and len(commands) >= 10
    for link in (".venv", "scripts"):
        (tmp_path / link).symlink_to(ROOT / link)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    before = _git_status()
    times, failures = [], []
    for cmd in commands:
        if cmd.startswith(SUITE):
            continue
        words = with_budget(cmd)
        t0 = time.monotonic()
        if words[:2] == [".venv/bin/treesplit", "dashboard"]:
            r = _dashboard(words, tmp_path, env)
        else:
            stdin = "boardsize 9\ngenmove b\nquit\n" if words[:2] == [".venv/bin/treesplit", "gtp"] else ""
            r = subprocess.run(words, cwd=tmp_path, env=env, input=stdin, capture_output=True, text=True,
                               timeout=900)
        times.append((shlex.join(words), time.monotonic() - t0))
        if r.returncode != 0:
            failures.append(f"{shlex.join(words)}: exit {r.returncode}\n{r.stderr[-1500:]}")
            continue
        if "--json" in words:
            json.loads(r.stdout)
        if "Traceback" in r.stderr:
            failures.append(f"{shlex.join(words)}: a traceback on stderr\n{r.stderr[-1500:]}")
        check = next((f for k, f in CHECKS.items() if cmd.startswith(k)), None)
        if check:
            check(tmp_path)
    print("\n".join(f"{t:7.1f} s  {c}" for c, t in times))
    assert not failures, "\n\n".join(failures)
    assert _git_status() == before, "README's commands changed the checkout"
    left = [os.path.relpath(os.path.join(d, f), tmp_path) for d, _, files in os.walk(tmp_path) for f in files]
    assert left  # the commands wrote their results where they ran
    ignored = subprocess.run(["git", "check-ignore", "--no-index", "--stdin"], cwd=ROOT, input="\n".join(left),
                             capture_output=True, text=True).stdout.split()
    assert sorted(ignored) == sorted(left), f"not ignored by .gitignore: {sorted(set(left) - set(ignored))}"
