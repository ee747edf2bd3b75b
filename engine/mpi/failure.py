"""What a failed MPI job leaves behind: which rank failed and how, told to the user and written into the
trace, so that the dashboard shows the records up to the failure and marks it.

MPICH's mpiexec (Hydra) answers a rank that dies by SIGKILLing every other rank at once, without a SIGTERM
first: the ranks get no chance to close their trace parts (model/trace.py therefore writes them in
segments that survive a kill), and only mpiexec's own report says which process died:

    =   PID 14691 RUNNING AT node7
    =   EXIT CODE: 9

(on mpiexec's stdout). A rank that fails by itself says so first, on stderr ("treesplit: rank 1: error: ...").
The launcher reads both streams through `OutputWatch` (passing every line on unchanged), the ranks leave
their pid in the launcher's directory (`note_rank`), and `mark_trace` writes the failure into the trace's
meta.json:

    extra.failure = {"rank": 1, "pid": 14691, "host": "node7", "cause": "killed by SIGKILL",
                     "what": "rank 1 (pid 14691 on node7) was killed by SIGKILL",
                     "t": 12.3,        # the failed rank's last record (the trace's end if it has none)
                     "t_stop": 12.8}   # the last record of any rank: when the job stopped
"""

from __future__ import annotations

import os
import re
import signal
import socket
import sys
import threading
from dataclasses import asdict, dataclass
from pathlib import Path

_RANK_ERROR = re.compile(r"treesplit: rank (\d+): error: (.*)")
_HYDRA_PID = re.compile(r"PID (\d+) RUNNING AT (\S+)")
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


def _rank_pids(directory: Path) -> dict[tuple[str, int], int]:
    out = {}
    for p in directory.glob("rank*.pid"):
        try:
            host, pid = p.read_text().split()
            out[(host, int(pid))] = int(p.stem[4:])
        except (OSError, ValueError):
            continue
    return out


class OutputWatch:
    """Copies a child's stdout and stderr to ours line by line (a thread each) and keeps the lines that
    say who failed."""

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
            if _RANK_ERROR.search(line) or _HYDRA_PID.search(line) or _HYDRA_EXIT.search(line):
                self.lines.append(line.rstrip("\n"))

    def join(self, timeout: float = 5.0) -> None:
        for t in self.threads:
            t.join(timeout)

    def failure(self, rc: int, pid_dir: Path | None = None) -> Failure:
        """The failure these lines and mpiexec's exit code `rc` tell of."""
        f = Failure()
        for line in self.lines:
            m = _RANK_ERROR.search(line)
            if m and f.rank is None:  # the first rank that failed by itself is the cause
                f.rank, f.cause = int(m.group(1)), m.group(2).strip()
        for line in self.lines:
            m = _HYDRA_PID.search(line)
            if m and f.pid is None:
                f.pid, f.host = int(m.group(1)), m.group(2)
            m = _HYDRA_EXIT.search(line)
            if m and f.cause is None:
                f.cause = _exit_cause(int(m.group(1)))
        if f.cause is None:
            f.cause = _exit_cause(rc)
        if f.pid is not None and pid_dir is not None:
            pids = _rank_pids(pid_dir)
            rank = pids.get((f.host, f.pid))
            if rank is None:  # hosts named differently (a short and a full name): the pid alone
                rank = next((r for (_, pid), r in pids.items() if pid == f.pid), None)
            if f.rank is None:
                f.rank = rank
            elif rank is not None and rank != f.rank:  # mpiexec names another process than the one that failed
                f.pid = f.host = None
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
    from model.errors import TraceError
    from model.trace import TABLES, finalize, read_meta, read_table, write_meta

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
