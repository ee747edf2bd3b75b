"""How the launcher tells which rank of a failed MPI job failed (engine/mpi/failure.py): the ranks' pids
watched, and what mpiexec and the ranks printed. The MPI runs themselves are in test_mpi_runtime.py."""

import io
import os
import signal
import socket
import subprocess
import sys
import time

from engine.mpi.failure import OutputWatch, RankWatch, diagnose

# what Hydra prints (on stdout) after a rank died: it names the first rank in its own order that ended badly
HYDRA = """
===================================================================================
=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES
=   PID 4242 RUNNING AT node7
=   EXIT CODE: 9
=   CLEANING UP REMAINING PROCESSES
===================================================================================
"""


def _output(stdout: str, stderr: str = "") -> OutputWatch:
    w = OutputWatch(io.StringIO(stdout), io.StringIO(stderr))
    w.join()
    return w


def _sleepers(tmp_path, n):
    procs = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) for _ in range(n)]
    for rank, p in enumerate(procs):
        (tmp_path / f"rank{rank}.pid").write_text(f"{socket.gethostname()} {p.pid}\n")
    return procs


def test_the_rank_that_ends_first_is_named(tmp_path, capsys):
    procs = _sleepers(tmp_path, 3)
    watch = RankWatch(tmp_path, 3)
    try:
        time.sleep(0.3)  # the watch has found the pid files
        os.kill(procs[1].pid, signal.SIGKILL)
        procs[1].wait()
        time.sleep(0.1)
        for p in (procs[0], procs[2]):  # mpiexec's clean-up
            p.kill()
        watch.thread.join(5)
    finally:
        for p in procs:
            p.kill()
            p.wait()
        watch.stop()
    f = diagnose(9, _output(HYDRA), watch)
    assert f.describe() == f"rank 1 (pid {procs[1].pid} on {socket.gethostname()}) was killed by SIGKILL"
    assert "PID 4242 RUNNING AT node7" in capsys.readouterr().out  # every line passed on, to the same stream


def test_ranks_that_ended_together_are_not_told_apart(tmp_path):
    procs = _sleepers(tmp_path, 2)
    for p in procs:
        p.kill()
        p.wait()
    watch = RankWatch(tmp_path, 2)
    watch.thread.join(5)
    assert watch.first is None and watch.ambiguous == [0, 1]
    assert diagnose(9, _output(HYDRA), watch).describe() == "a rank was killed by SIGKILL"


def test_a_rank_that_failed_by_itself_is_the_cause():
    f = diagnose(1, _output(HYDRA.replace("EXIT CODE: 9", "EXIT CODE: 1"),
                            "treesplit: rank 2: error: worker 0: RuntimeError: boom\n"))
    assert (f.rank, f.cause, f.killed) == (2, "worker 0: RuntimeError: boom", False)
    assert f.describe() == "rank 2 failed: worker 0: RuntimeError: boom"
