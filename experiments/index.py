"""Rewrite experiments/README.md's index from the registry and each kept run's summary.json.

    .venv/bin/python -m experiments.index
"""

from __future__ import annotations

import json
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


def index_table() -> str:
    lines = ["| experiment | question | status | latest results (full run) | measured on |", "| --- | --- | --- | --- | --- |"]
    for e in EXPERIMENTS.values():
        summary = REFERENCE_DIR / e.name / "summary.json"
        if e.module is None:
            status, res, where = "not built yet", "", ""
        elif summary.exists():
            s = json.loads(summary.read_text())
            status = f"[report](results/{e.name}/report.html)"
            res = _headline(s.get("results", {})).replace("|", "/")
            wall = f", {s['wall_s']:.0f} s" if s.get("wall_s") is not None else ""
            where = f"{s['date'][:10]}, {s['machine']}{wall}" + _overrides(e.name, s["config"])
        else:
            status, res, where = "built, no kept run", "", ""
        lines.append(f"| `{e.name}` | {e.question} | {status} | {res} | {where} |")
    return "\n".join(lines)


def main() -> None:
    text = README.read_text()
    a, b = text.index(BEGIN) + len(BEGIN), text.index(END)
    README.write_text(text[:a] + "\n" + index_table() + "\n" + text[b:])
    print(f"updated {README}")


if __name__ == "__main__":
    main()
