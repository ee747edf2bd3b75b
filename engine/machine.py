"""What a run is made on, for meta.json and results files: the machine (one line naming the host, its CPU model
and core count, from /proc/cpuinfo), the versions of the software (from package metadata) and the checkout's
git commit."""

from __future__ import annotations

import functools
import os
import platform
import socket
import subprocess
from pathlib import Path

import numpy as np
import pyarrow as pa

from model.version import package_version


def machine_description() -> str:
    """One line naming the host: hostname, CPU model, core count."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{socket.gethostname()}: {cpu}, {os.cpu_count()} cores"


def versions() -> dict[str, str]:
    return {"treesplit": package_version(), "python": platform.python_version(), "numpy": np.__version__,
            "numba": package_version("numba"), "pyarrow": pa.__version__}


@functools.cache
def git_commit() -> str:
    """The checkout's commit, with +dirty when tracked files differ from it; "unknown" outside a checkout.
    Read once per process: the code a process runs is what the checkout held when it started, and a run that
    writes the committed reference results (--update-reference) makes its own later stamps look dirty."""
    root = Path(__file__).resolve().parent.parent
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                             timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (sha or "unknown") + ("+dirty" if sha and dirty else "")
