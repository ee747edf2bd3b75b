"""Result files (benchmarks, validation, experiments, predictions), stamped with date, machine, commit and versions.
Where they go (./results/, --out DIR, or the committed reference with --update-reference) is model/results.py's
output_dir."""

from __future__ import annotations

import csv
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from engine.machine import git_commit, machine_description, versions

git_commit()  # as the command that writes results starts, before it writes any (engine.machine.git_commit)


def row_stamp() -> dict[str, str]:
    """date, machine and commit of a measurement: the columns a result row carries when a later run may keep it
    beside its own (an experiment's reused rows keep where and when they were measured)."""
    return {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": machine_description(),
            "commit": git_commit()}


def stamp() -> dict[str, Any]:
    return {**row_stamp(), "versions": versions()}


def write_json(name: str, data: dict[str, Any], directory: Path) -> Path:
    """Write `data` plus date/machine/commit/versions to <directory>/<name>.json and return the path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.json"
    path.write_text(json.dumps({**stamp(), **data}, indent=2, default=float) + "\n")
    return path


def write_csv(name: str, rows: list[dict[str, Any]], directory: Path) -> Path:
    """Write `rows` (dicts; a key only some rows have leaves the others' cells empty) to
    <directory>/<name>.csv and return the path; the date and machine stay in the JSON written beside it."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.csv"
    columns = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        w.writerows(rows)
    return path
