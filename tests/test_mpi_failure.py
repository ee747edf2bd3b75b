"""How the launcher tells which rank of a failed MPI job failed (engine/mpi/failure.py), from what mpiexec
and the ranks printed; the MPI runs themselves are in test_mpi_runtime.py."""

import io

from engine.mpi.failure import OutputWatch, note_rank

HYDRA = """
===================================================================================
=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES
=   PID 4242 RUNNING AT node7
=   EXIT CODE: 9
=   CLEANING UP REMAINING PROCESSES
===================================================================================
"""


def _watch(stdout: str, stderr: str = "") -> OutputWatch:
    w = OutputWatch(io.StringIO(stdout), io.StringIO(stderr))
    w.join()
    return w


def test_a_killed_rank_is_named_by_its_pid(tmp_path, capsys):
    (tmp_path / "rank0.pid").write_text("node7 4241\n")
    (tmp_path / "rank1.pid").write_text("node7 4242\n")
    note_rank(tmp_path, 2)  # this process: another pid on another host name
    f = _watch(HYDRA).failure(9, tmp_path)
    assert (f.rank, f.pid, f.host, f.cause) == (1, 4242, "node7", "killed by SIGKILL")
    assert f.describe() == "rank 1 (pid 4242 on node7) was killed by SIGKILL"
    assert "PID 4242 RUNNING AT node7" in capsys.readouterr().out  # every line passed on, to the same stream
    assert _watch(HYDRA).failure(9, tmp_path / "elsewhere").describe() == \
        "a rank (pid 4242 on node7) was killed by SIGKILL"


def test_a_rank_that_failed_by_itself_is_the_cause():
    f = _watch(HYDRA.replace("EXIT CODE: 9", "EXIT CODE: 1"),
               "treesplit: rank 2: error: worker 0: RuntimeError: boom\n").failure(1)
    assert (f.rank, f.cause, f.killed) == (2, "worker 0: RuntimeError: boom", False)
    assert f.describe() == "rank 2 (pid 4242 on node7) failed: worker 0: RuntimeError: boom"


def test_the_pid_of_another_rank_is_not_attached(tmp_path):
    (tmp_path / "rank0.pid").write_text("node7 4242\n")
    f = _watch(HYDRA, "treesplit: rank 2: error: stalled\n").failure(1, tmp_path)
    assert f.describe() == "rank 2 failed: stalled"
