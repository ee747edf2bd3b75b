"""Several searches in one MPI job: the GTP player's case, where starting ranks for every move would cost
seconds and throw away the tree.

Rank 0 takes commands and passes each to every rank (an MPI broadcast of JSON bytes: the ranks wait for
nothing else between searches, polling with short naps so that a waiting session leaves the cores to the
engine that thinks); each rank keeps its transposition table from one search to the next. A session job
that dies takes its trees with it; engine.mpi.algorithms.DistributedSearcher then starts a new one.

    {"op": "search", "config": {...DistributedConfig...}}   every rank runs the search; rank 0 answers
                                                             {"ok": true, "result": {...}}
    {"op": "reset"}                                          forget the trees (new game, undo)
    {"op": "quit"}                                           every rank leaves

Two ways in:
  - `SessionClient` starts `mpiexec -n W python -m engine.mpi.session` and talks to rank 0 over its stdin
    and stdout (mpiexec passes the parent's pipes to rank 0), one JSON line each way;
  - inside an MPI job the user started (`mpiexec -n W treesplit gtp --algo treesplit ...`), rank 0's
    searcher calls `lead()`, and the other ranks `follow()` until rank 0 quits.
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import numpy as np

from engine.mpi.config import DistributedConfig
from engine.mpi.launch import DistributedError, _die_with_parent, mpi_world, mpiexec_path
from engine.mpi.rank import RankRuntime
from model import tt
from model.errors import UserError

QUIT = {"op": "quit"}


def _comm():
    return mpi_world()


# s: a rank waiting for rank 0's next command (while the opponent or a person thinks) naps this long between
# polls; MPI's blocking broadcast would spin a core all that time, taking it from the other engine
COMMAND_POLL = 0.0005


def _bcast_json(comm, obj: dict | None) -> dict:
    """Rank 0 passes `obj` to every rank (JSON bytes, never pickle); the others get it."""
    from mpi4py import MPI  # MPI starts when mpi4py.MPI is imported: launch.world() sets the thread level first

    n = np.zeros(1, np.int64)
    data = b""
    if comm.Get_rank() == 0:
        data = json.dumps(obj).encode()
        n[0] = len(data)
    req = comm.Ibcast([n, MPI.INT64_T], root=0)
    while not req.Test():
        time.sleep(COMMAND_POLL)
    buf = bytearray(data) if comm.Get_rank() == 0 else bytearray(int(n[0]))
    comm.Bcast([buf, MPI.BYTE], root=0)
    return json.loads(bytes(buf))


def _execute(comm, cmd: dict, cache: dict) -> dict[str, Any] | None:
    """One command on this rank; rank 0 returns the answer."""

    op = cmd.get("op")
    if op == "search":
        warm = cache.get("warm")
        res = RankRuntime(DistributedConfig.from_json(json.dumps(cmd["config"])), comm, cache).run()
        if cache.get("warm") != warm:
            refreeze()
        return {"ok": True, "result": res}
    if op == "reset":
        # the same table, emptied: a new one would cost its page faults again, every game
        if cache.get("table") is not None:
            tt.clear(cache["table"])
        return {"ok": True}
    return {"ok": False, "error": f"unknown session command {op!r}"}


def refreeze() -> None:
    """Between two searches, after one that made long-lived objects (the first search loads the kernels
    and allocates the table; a new board size, new ones): the search's own objects are garbage now, so a
    full collection frees them and a freeze takes the rest out of the collector's way (engine.mpi.rank
    freezes only in a process where nothing is frozen yet)."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


def follow() -> None:
    """Ranks other than 0: carry out rank 0's commands until it quits."""
    comm, cache = _comm(), {}
    while True:
        cmd = _bcast_json(comm, None)
        if cmd.get("op") == "quit":
            return
        _execute(comm, cmd, cache)


class Leader:
    """Rank 0 of a session inside an MPI job: search() runs on every rank."""

    def __init__(self):
        self.comm, self.cache, self.open = _comm(), {}, True
        atexit.register(self.close)  # the other ranks must not wait for ever if rank 0 just ends

    def command(self, cmd: dict) -> dict:
        if not self.open:
            raise UserError("the MPI session is closed")
        _bcast_json(self.comm, cmd)
        return _execute(self.comm, cmd, self.cache)

    def close(self) -> None:
        if self.open:
            self.open = False
            _bcast_json(self.comm, QUIT)


class SessionClient:
    """A session in an MPI job of its own; commands go to rank 0's stdin, answers come from its stdout."""

    def __init__(self, world_size: int, mpiexec_args: list | None = None):
        cmd = [mpiexec_path(), *map(str, mpiexec_args or []), "-n", str(world_size), sys.executable, "-m",
               "engine.mpi.session"]
        self.world_size = world_size
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
                                     start_new_session=True, preexec_fn=_die_with_parent)
        atexit.register(self.close)

    def ended(self) -> int | None:
        """The job's exit code once it has ended (a rank died, or it was killed), else None."""
        return self.proc.poll()

    def command(self, cmd: dict) -> dict:
        if self.proc.poll() is not None:
            raise DistributedError(f"the MPI session ended (exit code {self.proc.returncode})")
        try:
            self.proc.stdin.write(json.dumps(cmd) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except (BrokenPipeError, OSError):
            line = ""
        if not line:
            rc = self.proc.wait()
            raise DistributedError(f"the MPI session failed (exit code {rc}); see the rank's error above")
        answer = json.loads(line)
        if not answer.get("ok"):
            raise DistributedError(answer.get("error", "the MPI session refused the command"))
        return answer

    def close(self, timeout: float = 30.0) -> None:
        if self.proc.poll() is not None:
            return
        try:
            self.proc.stdin.write(json.dumps(QUIT) + "\n")
            self.proc.stdin.close()
            self.proc.wait(timeout)
        except (BrokenPipeError, OSError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()


def main() -> int:
    """`mpiexec -n W python -m engine.mpi.session`: rank 0 reads commands from stdin, one JSON per line."""
    out = sys.stdout
    sys.stdout = sys.stderr  # mpiexec merges every rank's stdout: only the answers may go there
    if _comm().Get_rank() != 0:
        follow()
        return 0
    leader = Leader()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            cmd = json.loads(line)
        except json.JSONDecodeError as e:
            print(json.dumps({"ok": False, "error": f"not JSON: {e}"}), file=out, flush=True)
            continue
        if cmd.get("op") == "quit":
            break
        if cmd.get("op") == "search":
            try:  # a bad configuration is answered, not fatal; it must fail alike on every rank: check here
                DistributedConfig.from_json(json.dumps(cmd.get("config", {}))).validate()
            except (UserError, TypeError) as e:
                print(json.dumps({"ok": False, "error": str(e)}), file=out, flush=True)
                continue
        print(json.dumps(leader.command(cmd), default=float), file=out, flush=True)
    leader.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
