"""Small result files (benchmarks, experiments) under experiments/results/, stamped with date and machine."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from model.trace import machine_description, versions

RESULTS_DIR = Path(__file__).resolve().parent.parent / "experiments" / "results"


def stamp() -> dict[str, Any]:
    return {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": machine_description(),
            "versions": versions()}


def write_json(name: str, data: dict[str, Any], directory: Path | None = None) -> Path:
    """Write `data` plus date/machine to <results>/<name>.json and return the path."""
    d = directory or RESULTS_DIR
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{name}.json"
    path.write_text(json.dumps({**stamp(), **data}, indent=2, default=float) + "\n")
    return path
