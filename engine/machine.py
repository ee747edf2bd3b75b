"""What a run is made on, for meta.json and results files: the machine (one line naming the host, its CPU model
and core count, from /proc/cpuinfo) and the versions of the software (from package metadata)."""

from __future__ import annotations

import os
import platform
import socket
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
