"""What a failed MPI job leaves behind: which rank failed and how, told to the user and written into the
trace, so that the dashboard shows the records up to the failure and marks it.

MPICH's mpiexec (Hydra) answers a rank that dies by SIGKILLing every other rank at once, without a SIGTERM
first: the ranks get no chance to close their trace parts (engine/trace_files.py therefore writes them in segments
that survive a kill), nor to say anything. Nor does mpiexec tell reliably which one died first: its report
("PID 14691 RUNNING AT node7 / EXIT CODE: 9", on its stdout) names the first rank in its own order that
ended badly, and after the clean-up every rank did. So the launcher watches the ranks itself:

  - each rank leaves "host pid" in the launcher's directory (`note_rank`);
  - `RankWatch` opens a pidfd for every rank on this host and wakes as soon as one ends: if it is the only
    one gone by then, it is the one that failed (the others die a few milliseconds later, at mpiexec's
    clean-up); if several are gone already, the launcher says it cannot tell which;
  - `OutputWatch` passes mpiexec's stdout and stderr on, line by line, and keeps the lines that matter:
    a rank that fails by itself says so first ("treesplit: rank 1: error: ..."), and that is the cause.

`mark_trace` then writes the failure into the trace's meta.json:

    extra.failure = {"rank": 1, "pid": 14691, "host": "node7", "cause": "killed by SIGKILL",
                     "what": "rank 1 (pid 14691 on node7) was killed by SIGKILL",
                     "t": 12.3,        # the failed rank's last record (the trace's end if it has none)
                     "t_stop": 12.8}   # the last record of any rank: when the job stopped
"""

from __future__ import annotations

import os
import re
import select
import signal
import socket
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from engine.trace_files import finalize, read_meta, read_table, write_meta
from model.errors import TraceError
from model.trace import TABLES

_RANK_ERROR = re.compile(r"treesplit: rank (\d+): error: (.*)")
_HYDRA_EXIT = re.compile(r"EXIT CODE: (\d+)")


@dataclass
class Failure:
    """How an MPI job failed; every field None that could not be told."""

    rank: int | None = None
    pid: int | None = None
    host: str | None = None
    cause: str | None = None

    @property
    def killed(self) -> bool:
        return bool(self.cause and self.cause.startswith("killed by"))

    def who(self) -> str:
        """'rank 1 (pid 14691 on node7)', as much of it as is known: the subject of describe()."""
        name = f"rank {self.rank}" if self.rank is not None else "a rank"
        where = [f"pid {self.pid}"] if self.pid is not None else []
        if self.host:
            where.append(f"on {self.host}")
        return name + (f" ({' '.join(where)})" if where else "")

    def describe(self) -> str:
        """'rank 1 (pid 14691 on node7) was killed by SIGKILL', or what it said before it failed."""
        if self.killed:
            return f"{self.who()} was {self.cause}"
        return f"{self.who()} failed" + (f": {self.cause}" if self.cause else "")


def signal_name(code: int) -> str:
    try:
        return signal.Signals(code).name
    except ValueError:
        return f"signal {code}"


def note_rank(directory: Path, rank: int) -> None:
    """In a rank: leave `rank<r>.pid` ("host pid") where the launcher looks for it. Best effort: a rank
    on another host may not see the launcher's directory."""
    try:
        (directory / f"rank{rank}.pid").write_text(f"{socket.gethostname()} {os.getpid()}\n")
    except OSError:
        pass


def _rank_pids(directory: Path) -> dict[int, tuple[str, int]]:
    """rank -> (host, pid) of the ranks that have left their pid file."""
    out = {}
    for p in directory.glob("rank*.pid"):
        try:
            host, pid = p.read_text().split()
            out[int(p.stem[4:])] = (host, int(pid))
        except (OSError, ValueError):
            continue
    return out


class RankWatch:
    """A thread that notes which rank ended first, when every rank runs on this host (Linux pidfds; else
    it notes nothing). `first`: (rank, pid, wall time) of the one rank that was gone when the thread woke,
    else None; `ambiguous`: the ranks that were gone together."""

    POLL_FILES = 0.02  # s between two looks for the ranks' pid files

    def __init__(self, directory: Path, world_size: int):
        self.directory, self.world_size = directory, world_size
        self.first: tuple[int, int, float] | None = None
        self.ambiguous: list[int] = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="rank-watch", daemon=True)
        if hasattr(os, "pidfd_open") and hasattr(select, "poll"):
            self.thread.start()

    def stop(self) -> None:
        self.done.set()
        if self.thread.is_alive():
            self.thread.join(2.0)

    def _watch(self) -> None:
        found: dict[int, tuple[str, int]] = {}
        while len(found) < self.world_size and not self.done.wait(self.POLL_FILES):
            found = _rank_pids(self.directory)
        here = socket.gethostname()
        if self.done.is_set() or any(host != here for host, _ in found.values()):
            return  # a rank elsewhere could fail unseen, and the first one seen here be a victim of the clean-up
        ranks = {rank: pid for rank, (_, pid) in found.items()}
        fds = {}
        try:
            for rank, pid in ranks.items():
                try:
                    fds[os.pidfd_open(pid)] = rank
                except OSError:  # gone before it could be watched: which one went first is not known
                    self.ambiguous = sorted(ranks)
                    return
            poller = select.poll()
            for fd in fds:
                poller.register(fd, select.POLLIN)
            while fds and not self.done.is_set():
                ready = poller.poll(200)
                if ready:
                    t = time.time()
                    gone = sorted(fds[fd] for fd, _ in poller.poll(0))
                    if len(gone) == 1:
                        self.first = (gone[0], ranks[gone[0]], t)
                    else:
                        self.ambiguous = gone
                    return
        finally:
            for fd in fds:
                os.close(fd)


class OutputWatch:
    """Copies a child's stdout and stderr to ours line by line (a thread each) and keeps the lines that
    say why it failed."""

    def __init__(self, stdout, stderr):
        self.lines: list[str] = []
        self.threads = [threading.Thread(target=self._pump, args=(stream, name), name=f"mpiexec-{name}",
                                         daemon=True) for stream, name in ((stdout, "stdout"), (stderr, "stderr"))]
        for t in self.threads:
            t.start()

    def _pump(self, stream, name: str) -> None:
        for line in stream:
            out = getattr(sys, name)  # looked up each time: a test may have replaced it
            out.write(line)
            out.flush()
            if _RANK_ERROR.search(line) or _HYDRA_EXIT.search(line):
                self.lines.append(line.rstrip("\n"))

    def join(self, timeout: float = 5.0) -> None:
        for t in self.threads:
            t.join(timeout)


def diagnose(rc: int, output: OutputWatch, ranks: RankWatch | None = None) -> Failure:
    """The failure that mpiexec's exit code `rc`, its output and the watch of the ranks tell of."""
    f = Failure()
    for line in output.lines:
        m = _RANK_ERROR.search(line)
        if m:  # the first rank that failed by itself is the cause
            f.rank, f.cause = int(m.group(1)), m.group(2).strip()
            break
    if f.cause is None:
        codes = [int(m.group(1)) for m in map(_HYDRA_EXIT.search, output.lines) if m]
        f.cause = _exit_cause(codes[0] if codes else rc)
    first = ranks.first if ranks is not None else None
    if first is not None and f.rank in (None, first[0]):
        f.rank, f.pid, f.host = first[0], first[1], socket.gethostname()
    return f


def _exit_cause(code: int) -> str:
    if code < 0:
        return f"killed by {signal_name(-code)}"
    if code > 128:
        return f"killed by {signal_name(code - 128)}"
    if code in (signal.SIGKILL, signal.SIGTERM):  # Hydra reports a signal's number as the exit code
        return f"killed by {signal_name(code)}"
    return f"exit code {code}"


def mark_trace(directory: str | Path, failure: Failure) -> dict | None:
    """Write `failure` into the trace's meta.json (not complete; when the failed rank was last heard of)
    and merge the parts the ranks left. Returns the failure as written, or None if there is no trace
    (rank 0 never wrote meta.json)."""
    d = Path(directory)
    try:
        meta = read_meta(d)
    except TraceError:
        return None
    ends, last = [], None
    for table, cols in TABLES.items():
        try:
            df = read_table(d, table)
        except TraceError:
            continue
        if not len(df):
            continue
        t_col = cols[1][0] if table in ("packages", "messages") else cols[0][0]
        ends.append(float(df[t_col].max()))
        if table == "samples" and failure.rank is not None:
            mine = df.loc[df["rank"] == failure.rank, "t"]
            last = float(mine.max()) if len(mine) else None
    t_stop = max(ends) if ends else 0.0
    record = {**asdict(failure), "what": failure.describe(), "t": last if last is not None else t_stop,
              "t_stop": t_stop}
    meta["t_end"] = t_stop
    meta.setdefault("extra", {}).update(complete=False, failure=record)
    write_meta(d, meta)
    try:
        finalize(d)
    except TraceError as e:  # the parts stay as they are; readers take them unmerged
        print(f"treesplit: could not merge the trace's parts: {e}", file=sys.stderr, flush=True)
    return record
