"""The MPI runtime (engine/mpi) hosting the stand-in roles of tests/mpi_standin.py under real mpiexec:
results, bookkeeping checked against the trace, shutdown, failures and interrupts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.trace_files import read_trace

ROOT = Path(__file__).resolve().parent.parent
STANDIN = "tests.mpi_standin:make"


def _config(tmp_path: Path, **kw) -> Path:
    cfg = {"algo": "standin", "ranks": 2, "bcast_ranks": 1, "threads": 2, "sims": 200,
           "role_factory": STANDIN, "stall_timeout": 20}
    cfg.update(kw)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return path


_STARTED: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def _no_leftovers():
    """A failing test must not leave its MPI job running."""
    yield
    while _STARTED:
        p = _STARTED.pop()
        if p.poll() is None:
            p.kill()
            p.communicate()


def _start(cfg: Path, tmp_path: Path) -> subprocess.Popen:
    env = dict(os.environ, TMPDIR=str(tmp_path))  # the launcher's files (and so its ranks' command lines)
    # SIGINT at its default: a shell starts a background job with SIGINT ignored, and Python then installs no
    # KeyboardInterrupt handler, so tests run from such a job (`bash .ci/run &`) could not interrupt the launcher
    p = subprocess.Popen([sys.executable, "-m", "engine.mpi", str(cfg)], cwd=ROOT, env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    _STARTED.append(p)
    return p


def _run(cfg: Path, tmp_path: Path, timeout: float = 90) -> tuple[int, dict | None, str]:
    p = _start(cfg, tmp_path)
    out, err = p.communicate(timeout=timeout)
    return p.returncode, (json.loads(out) if p.returncode == 0 else None), err


def _ranks_alive(tmp_path: Path) -> list[int]:
    """Pids of rank processes (python -m engine.mpi.main) whose command line names tmp_path."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (len(args) > 2 and args[0].endswith((b"python", b"python3")) and b"engine.mpi.main" in args
                and any(str(tmp_path).encode() in a for a in args)):
            pids.append(int(proc.name))
    return pids


def _check_trace_bookkeeping(trace: Path, res: dict) -> None:
    t = read_trace(trace)
    assert t.meta["extra"]["complete"] is True
    # every message a rank sent was received (and recorded) exactly once by its destination
    sent = {}
    for src, dst, kind, count, _ in t.meta["extra"]["messages_sent"]:
        sent[(src, dst, kind)] = sent.get((src, dst, kind), 0) + count
    got = t.messages.groupby(["src", "dst", "kind"], observed=True).size().to_dict()
    assert got == sent
    assert (t.messages.t_recv >= t.messages.t_send - 0.01).all()  # clocks agree to well under 10 ms
    # every simulation's packages were recorded once: one playout per simulation
    playouts = t.packages[t.packages.kind == "playout"]
    assert playouts.sim_id.is_unique and len(playouts) == res["sims"]
    assert set(t.samples["rank"]) == set(range(res["ranks"] + res["bcast_ranks"]))


@pytest.mark.mpi
@pytest.mark.parametrize("ranks,bcast,threads", [(2, 1, 2), (4, 1, 1)])
def test_nothing_lost_or_doubled(tmp_path, ranks, bcast, threads):
    trace = tmp_path / "trace"
    rc, res, err = _run(_config(tmp_path, ranks=ranks, bcast_ranks=bcast, threads=threads, sims=300,
                                trace=str(trace)), tmp_path)
    assert rc == 0, err
    assert res["sims"] >= 300
    assert res["root_visits"] == res["sims"]  # every simulation completed exactly once at its origin
    assert res["updates_applied"] == res["updates_sent"]
    assert res["bcast_in"] == res["sync_sent"] * (ranks - 1)  # every SYNC reached every other search rank
    assert res["messages_by_kind"]["MOVE"]["count"] > 0 and res["hops_per_sim"] > 0
    assert 0 < res["busy_frac"] <= 1
    _check_trace_bookkeeping(trace, res)
    assert not _ranks_alive(tmp_path)


@pytest.mark.mpi
def test_time_budget_and_single_rank(tmp_path):
    rc, res, err = _run(_config(tmp_path, ranks=1, bcast_ranks=0, sims=None, seconds=0.5), tmp_path)
    assert rc == 0, err
    assert res["stop_reason"].endswith("s elapsed") and 0.5 <= res["seconds"] < 5
    assert res["root_visits"] == res["sims"] > 0


@pytest.mark.mpi
def test_rank_exception_fails_the_job_with_a_clear_message(tmp_path):
    cfg = _config(tmp_path, params={"fail_rank": 1, "fail_after": 20}, sims=100000)
    t0 = time.monotonic()
    rc, _, err = _run(cfg, tmp_path, timeout=60)
    assert rc != 0
    assert "rank 1: error: worker 0: RuntimeError: stand-in failure injected" in err
    assert "MPI job" in err and time.monotonic() - t0 < 60
    assert not _ranks_alive(tmp_path)


def _rank_of(pid: int) -> int:
    env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return int(next(e for e in env if e.startswith(b"PMI_RANK="))[9:])


@pytest.mark.mpi
def test_killed_rank_fails_the_job_and_leaves_its_trace(tmp_path):
    from viz.rundata import RunData

    trace = tmp_path / "trace"
    cfg = _config(tmp_path, ranks=2, bcast_ranks=1, sims=None, seconds=60, trace=str(trace))
    p = _start(cfg, tmp_path)
    end = time.monotonic() + 40
    while len(list(trace.glob("samples.rank*.parquet"))) < 3 and time.monotonic() < end:
        time.sleep(0.2)  # every rank has written its first segment
    time.sleep(1.5)
    victim = next((pid for pid in _ranks_alive(tmp_path) if _rank_of(pid) == 1), None)
    assert victim is not None, "ranks did not start"
    os.kill(victim, signal.SIGKILL)
    out, err = p.communicate(timeout=30)
    assert p.returncode != 0
    assert "rank 1 (pid" in err and "was killed by SIGKILL" in err
    time.sleep(0.5)
    assert not _ranks_alive(tmp_path)
    t = read_trace(trace)  # mpiexec killed the others without warning: what they had written is there
    failure = t.meta["extra"]["failure"]
    assert t.meta["extra"]["complete"] is False
    assert failure["rank"] == 1 and failure["cause"] == "killed by SIGKILL" and failure["pid"] == victim
    assert set(t.samples["rank"]) == {0, 1, 2} and len(t.packages) > 0 and len(t.messages) > 0
    assert 1.0 < failure["t"] <= failure["t_stop"] == t.meta["t_end"]
    assert t.samples.loc[t.samples["rank"] == 1, "t"].max() == failure["t"]
    assert not list(trace.glob("*.rank*"))  # the launcher merged the parts
    t_mark, label, sentence = RunData.from_trace(t).ending
    assert t_mark == failure["t"] and label == "rank 1 failed" and "killed by SIGKILL" in sentence


@pytest.mark.mpi
def test_stalled_rank_is_aborted_by_the_watchdog(tmp_path):
    cfg = _config(tmp_path, params={"hang_rank": 1, "hang_after": 10}, sims=100000, stall_timeout=2)
    rc, _, err = _run(cfg, tmp_path, timeout=60)
    assert rc != 0
    assert "made no progress for 2 s" in err or "no simulation completed for 2 s" in err


@pytest.mark.mpi
def test_sigint_leaves_a_readable_partial_trace(tmp_path):
    trace = tmp_path / "trace"
    p = _start(_config(tmp_path, sims=None, seconds=60, trace=str(trace)), tmp_path)
    end = time.monotonic() + 40
    while not list(trace.glob("samples.rank*.parquet")) and time.monotonic() < end:
        time.sleep(0.2)
    time.sleep(1.5)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=40)
    assert p.returncode == 130, err
    t = read_trace(trace)  # unmerged parts read fine
    assert t.meta["extra"].get("interrupted") is True and t.meta["t_end"] > 0
    assert len(t.packages) > 0 and len(t.messages) > 0
    assert set(t.samples["rank"]) == {0, 1, 2}
    time.sleep(0.5)
    assert not _ranks_alive(tmp_path)


@pytest.mark.mpi
def test_telemetry_reaches_a_listener_and_a_missing_one_costs_nothing(tmp_path):
    import socket

    from model.telemetry import decode

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    cfg = _config(tmp_path, sims=None, seconds=1.5, telemetry=f"127.0.0.1:{port}")
    rc, res, err = _run(cfg, tmp_path)
    assert rc == 0, err
    sock.settimeout(0.2)
    records = []
    try:
        while True:
            records.append(decode(sock.recv(65536)))
    except socket.timeout:
        pass
    sock.close()
    ranks = {r["rank"] for r in records}
    assert ranks == {0, 1, 2}
    final = [r for r in records if r["final"]]  # rank 0's last word: the search is over, and its answer
    assert len(final) == 1 and final[0]["rank"] == 0 and final[0]["final"]["sims"] == res["sims"] > 0
    assert final[0]["final"]["move"] == str(res.get("move_str", res.get("move")))  # (a stand-in role has no name)
    rank0 = sorted((r for r in records if r["rank"] == 0 and not r["final"]), key=lambda r: r["t0"])
    assert all(r["io_busy"] is not None for r in rank0)  # the IO thread's share of every window
    assert len(rank0) >= 4  # about every 200 ms over 1.5 s
    assert all(0.05 < r["t1"] - r["t0"] < 1.0 for r in rank0[1:])
    assert rank0[-1]["sims_done"] > 0 and sum(sum(m[2] for m in r["messages"]) for r in rank0) > 0
    assert any(r["packages"].get("playout") for r in rank0)
    # nobody listening on that port any more: the search runs as before
    rc, res, err = _run(cfg, tmp_path)
    assert rc == 0, err
    assert res["sims"] > 0


@pytest.mark.mpi
def test_ranks_do_not_outlive_a_killed_launcher(tmp_path):
    p = _start(_config(tmp_path, sims=None, seconds=60), tmp_path)
    end = time.monotonic() + 30
    while len(_ranks_alive(tmp_path)) < 3 and time.monotonic() < end:
        time.sleep(0.2)
    assert len(_ranks_alive(tmp_path)) == 3
    p.kill()  # SIGKILL: the launcher gets no chance to clean up
    p.wait()
    end = time.monotonic() + 15
    while _ranks_alive(tmp_path) and time.monotonic() < end:
        time.sleep(0.2)
    assert not _ranks_alive(tmp_path)
