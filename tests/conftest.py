import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent


def treesplit_cmd() -> list[str]:
    """The installed console command (tests run it as a user would)."""
    exe = VENV_BIN / "treesplit"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "treesplit"]


def mpiexec() -> str:
    exe = VENV_BIN / "mpiexec"
    return str(exe) if exe.exists() else (shutil.which("mpiexec") or "mpiexec")


@pytest.fixture
def run_cli():
    """Run `treesplit ARGS...` in a subprocess with a timeout; returns CompletedProcess (text)."""

    def _run(*args: str, timeout: float = 300, input: str | None = None, env: dict | None = None):
        e = dict(os.environ)
        e.update(env or {})
        return subprocess.run(treesplit_cmd() + list(args), capture_output=True, text=True, timeout=timeout,
                              input=input, env=e, cwd=ROOT)

    return _run
