"""Starting a distributed search: either inside an MPI job someone else started (mpiexec, srun), or by
starting one ourselves through the mpiexec that sits next to this Python (the venv's MPICH).

    run_distributed(config) -> result dict      (None on ranks other than 0 inside a user-started job)

The search command and the GTP player call it the same way; they need not know which case applies.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from engine.mpi.config import DistributedConfig
from engine.mpi.failure import Failure, OutputWatch, RankWatch, diagnose, mark_trace
from engine.mpi.host import check_config
from engine.mpi.rank import RankRuntime, warm_stamp
from model.errors import UserError

# Environment variables that MPI launchers set in every rank (MPICH/Hydra, Open MPI, PMIx, Slurm's PMI).
_MPI_ENV = ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
            "MPI_LOCALNRANKS", "HYDI_CONTROL_FD")
INTERRUPT_GRACE = 20.0
# The first run of a kind on a machine compiles its numba kernels before the ranks' clock starts (rank 0
# first, then the others load them: 2-4 minutes on 2 cores); a caller's timeout is meant for the search
COMPILE_ALLOWANCE = 600.0


class DistributedError(UserError):
    """The MPI job failed (a rank died, aborted or was interrupted); the message says how."""


def inside_mpi() -> bool:
    """True when this process is a rank of an MPI job started by a launcher."""
    return any(v in os.environ for v in _MPI_ENV)


def mpiexec_path() -> str:
    exe = Path(sys.executable).parent / "mpiexec"
    if exe.exists():
        return str(exe)
    found = shutil.which("mpiexec")
    if not found:
        raise UserError("no mpiexec next to this Python or on PATH: install mpich (pip install mpich) "
                        "or run the search inside your own mpiexec")
    return found


def mpiexec_command(config: DistributedConfig, spec: Path, result: Path) -> list[str]:
    return [mpiexec_path(), *map(str, config.mpiexec_args), "-n", str(config.world_size),
            sys.executable, "-m", "engine.mpi.main", str(spec), str(result)]


def mpi_world():
    """MPI_COMM_WORLD, starting MPI with MPI_THREAD_FUNNELED if it is not running yet (only the IO thread
    of a rank calls MPI)."""
    import mpi4py  # here, not at the top: importing mpi4py.MPI starts MPI, and the thread level comes first

    if "mpi4py.MPI" not in sys.modules:
        mpi4py.rc.thread_level = "funneled"
    from mpi4py import MPI

    return MPI.COMM_WORLD


def run_in_mpi(config: DistributedConfig) -> dict[str, Any] | None:
    """Run this process's rank of the search (called on every rank)."""

    return RankRuntime(config, mpi_world()).run()


def run_distributed(config: DistributedConfig, timeout: float | None = None) -> dict[str, Any] | None:
    """Run one distributed search and return rank 0's result dict (chosen move and summary figures).

    Inside an MPI job, every rank calls this and only rank 0 gets the dict (the others get None).
    Otherwise this starts `mpiexec -n M+B python -m engine.mpi.main ...` and waits for it.
    Raises DistributedError if the job fails, KeyboardInterrupt if interrupted (the trace stays readable).
    """
    config.validate()
    if inside_mpi():
        return run_in_mpi(config)

    check_config(config)
    timeout = allowing_compile(config, timeout)
    with tempfile.TemporaryDirectory(prefix="treesplit-mpi-") as tmp:
        spec, result = Path(tmp) / "config.json", Path(tmp) / "result.json"
        config.save(spec)
        cmd = mpiexec_command(config, spec, result)
        # own session: a terminal's Ctrl-C reaches mpiexec once, through us (twice would make Hydra kill
        # the ranks before they close their trace parts)
        env = dict(os.environ)
        nice = autogroup_nice()
        if nice is not None:
            env[AUTOGROUP_ENV] = str(nice)
        proc = subprocess.Popen(cmd, start_new_session=True, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent,
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
        output = OutputWatch(proc.stdout, proc.stderr)  # passes every line on; keeps what says why it failed
        ranks = RankWatch(Path(tmp), config.world_size)  # notes which rank ends first
        try:
            rc = proc.wait(timeout)
        except KeyboardInterrupt:
            _interrupt(proc)
            raise
        except subprocess.TimeoutExpired:
            _interrupt(proc)
            raise DistributedError(f"the MPI job did not finish within {timeout:g} s and was stopped") from None
        finally:
            output.join()
            ranks.stop()
        if rc != 0:
            failure = diagnose(rc, output, ranks)
            message = _failure(rc, config, failure)
            if config.trace and not _interrupted(rc) and mark_trace(config.trace, failure) is not None:
                message += f"; the trace {config.trace} holds the records up to the failure"
            raise DistributedError(message)
        try:
            return json.loads(result.read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise DistributedError(f"the MPI job ended but rank 0 left no result ({e})") from None


def allowing_compile(config: DistributedConfig, timeout: float | None) -> float | None:
    """`timeout` plus the time to compile the kernels where no earlier run of this kind left them cached."""
    if timeout is None:
        return None
    stamp = warm_stamp(config)
    return timeout + COMPILE_ALLOWANCE if stamp is not None and not stamp.exists() else timeout


AUTOGROUP_ENV = "TREESPLIT_AUTOGROUP_NICE"
_AUTOGROUP = "/proc/self/autogroup"


def autogroup_nice() -> int | None:
    """This process's autogroup nice value (Linux with autogroup scheduling), else None."""
    try:
        with open(_AUTOGROUP) as f:
            return int(f.read().split("nice")[1])
    except (OSError, IndexError, ValueError):
        return None


def inherit_priority() -> None:
    """In a rank: take the launcher's autogroup nice. The ranks run in sessions of their own (ours and
    Hydra's), so each is an autogroup of its own at nice 0: a benchmark that gives its own session more
    weight (`echo -20 > /proc/self/autogroup`) would otherwise favour the one-process searches it compares
    them with."""
    want = os.environ.get(AUTOGROUP_ENV)
    if want is None or autogroup_nice() == int(want):
        return
    try:
        with open(_AUTOGROUP, "w") as f:
            f.write(want)
    except OSError:  # not allowed (raising priority needs CAP_SYS_NICE): keep the default
        pass


def _die_with_parent() -> None:
    """In the mpiexec child: get SIGINT if this process dies (even by SIGKILL), so the ranks never outlive
    their launcher (mpiexec passes the SIGINT on; the ranks close their traces and exit)."""
    try:
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGINT)
    except (OSError, AttributeError):  # not Linux: the ranks' watchdog is the backstop
        pass


def _interrupt(proc: subprocess.Popen) -> None:
    """Ask mpiexec to pass SIGINT to the ranks (they close their traces), then insist."""
    try:
        proc.send_signal(signal.SIGINT)
        proc.wait(INTERRUPT_GRACE)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        pass


def _interrupted(rc: int) -> bool:
    return rc == 130 or rc == -signal.SIGINT


def _failure(rc: int, config: DistributedConfig, failure: Failure) -> str:
    n = config.world_size
    if _interrupted(rc):
        return f"the MPI job ({n} ranks) was interrupted"
    if failure.killed:
        return f"the MPI job ({n} ranks) failed: {failure.describe()}; mpiexec stopped the others (exit code {rc})"
    return f"the MPI job ({n} ranks) failed with exit code {rc}; see the rank's error above"
