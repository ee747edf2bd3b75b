"""Rewrite experiments/README.md's index from the registry and each kept run's summary.json: its headline
numbers, what they rest on (samples) and where, when and at which commit they were measured.

    .venv/bin/python -m experiments.index
"""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path

from experiments.registry import EXPERIMENTS
from experiments.runner import CONFIG_DIR
from model.results import REFERENCE_DIR

README = Path(__file__).resolve().parent / "README.md"
BEGIN, END = "<!-- index:begin -->", "<!-- index:end -->"


def _headline(results: dict) -> str:
    items = []
    for k, v in results.items():
        if isinstance(v, float):
            v = f"{v:.3g}"
        items.append(f"{k} = {v}")
    return "; ".join(items)


def _overrides(name: str, config: dict) -> str:
    """The settings of a kept run that differ from configs/NAME.toml (a medium run, say), as key=value."""


    try:
        toml = tomllib.loads((CONFIG_DIR / f"{name}.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return ""
    toml.pop("quick", None)
    diff = [f"{k}={json.dumps(config[k])}" for k, v in toml.items() if k in config and config[k] != v]
    return f" (run with {', '.join(diff)})" if diff else ""


def _commit(name: str, s: dict) -> str:
    """The commit a kept run was measured at (its stamp), else the commit that brought its tables into git."""
    if s.get("commit"):
        return f"`{s['commit']}`"
    tables = [str(REFERENCE_DIR / name / t) for t in s.get("tables", [])]
    try:
        sha = subprocess.run(["git", "log", "-1", "--format=%h", "--", *tables], cwd=README.parent,
                             capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        sha = ""
    return f"not stamped; tables committed in `{sha}`" if sha else "not stamped"


def index_table() -> str:
    lines = ["| experiment | question | status | latest results (full run) | samples | machine, date, commit |",
             "| --- | --- | --- | --- | --- | --- |"]
    for e in EXPERIMENTS.values():
        summary = REFERENCE_DIR / e.name / "summary.json"
        if e.module is None:
            status, res, samples, where = "not built yet", "", "", ""
        elif summary.exists():
            s = json.loads(summary.read_text())
            status = f"[report](results/{e.name}/report.html)"
            res = _headline(s.get("results", {})).replace("|", "/")
            samples = s.get("samples") or "not recorded"
            wall = f", {s['wall_s']:.0f} s" if s.get("wall_s") is not None else ""
            where = (f"{s['machine']}, {s['date'][:10]}, {_commit(e.name, s)}{wall}"
                     + _overrides(e.name, s["config"]))
        else:
            status, res, samples, where = "built, no kept run", "", "", ""
        lines.append(f"| `{e.name}` | {e.question} | {status} | {res} | {samples} | {where} |".replace("\n", " "))
    return "\n".join(lines)


def main() -> None:
    text = README.read_text()
    a, b = text.index(BEGIN) + len(BEGIN), text.index(END)
    README.write_text(text[:a] + "\n" + index_table() + "\n" + text[b:])
    print(f"updated {README}")


if __name__ == "__main__":
    main()
