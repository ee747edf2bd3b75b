"""What machine a run is made on: one line naming the host, its CPU model and core count (for meta.json and
results files). The CPU model comes from /proc/cpuinfo, so it is read here, not in model/."""

from __future__ import annotations

import os
import platform
import socket
from pathlib import Path


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
