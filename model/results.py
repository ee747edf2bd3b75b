"""Small result files (benchmarks, experiments) under experiments/results/, stamped with date and machine."""

from __future__ import annotations

import csv
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


def write_csv(name: str, rows: list[dict[str, Any]], directory: Path | None = None) -> Path:
    """Write `rows` (dicts with the same keys, in order) to <results>/<name>.csv and return the path; the date
    and machine stay in the JSON written beside it."""
    d = directory or RESULTS_DIR
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{name}.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else [])
        w.writeheader()
        w.writerows(rows)
    return path
