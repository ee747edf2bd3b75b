"""Running one experiment: its TOML config (plus --quick and --param), its module, and its outputs.

experiments/configs/NAME.toml holds the full run's settings at the top level and, in a [quick] table,
the overrides that make a smoke run of seconds. The settings become the module's Config dataclass through
model/config.py, so a bad key or value is one ConfigError naming it.

Outputs in OUT (`treesplit experiment` picks it: results/experiments/NAME/, --out DIR, or with
--update-reference the committed experiments/results/NAME/): one CSV per table of the outcome, summary.json
(stamped with date and machine by model/results.py) and report.html. `report_only` rebuilds report.html from a
kept run's CSVs and summary.json (its configuration) through the module's `outcome(cfg, tables)`, without
running anything.
"""

from __future__ import annotations

import dataclasses
import json
import time
import tomllib
import typing
from pathlib import Path
from typing import Any

import pandas as pd

from engine.config_files import read_toml
from engine.results import write_json
from experiments import registry
from experiments.report import write_report
from model.config import from_dict, parse_overrides
from model.errors import ConfigError

CONFIG_DIR = Path(__file__).resolve().parent / "configs"


def _scalar(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _lists_from_text(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """--param values for list fields arrive as "1,2,4" (or TOML "[1, 2, 4]"): make them lists."""
    hints = typing.get_type_hints(cls)
    out = dict(data)
    for k, v in data.items():
        if k in hints and (hints[k] is list or typing.get_origin(hints[k]) is list) and isinstance(v, str):
            parsed = _scalar(v)
            out[k] = parsed if isinstance(parsed, list) else [_scalar(x.strip()) for x in v.split(",") if x.strip()]
    return out


def load_config(name: str, cls: type, quick: bool = False, params: list[str] | None = None,
                path: Path | None = None):
    """The experiment's Config from its TOML file, the [quick] overrides and --param pairs."""
    p = path or CONFIG_DIR / f"{name}.toml"
    data = read_toml(p, missing="no such file (every experiment needs its configuration)")
    quick_over = data.pop("quick", {})
    if not isinstance(quick_over, dict):
        raise ConfigError(f"{p}: [quick] must be a table")
    if quick:
        data.update(quick_over)
    data.update(_lists_from_text(cls, parse_overrides(params)))
    return from_dict(cls, data, where=f"{p.name}: ")


def _jobs_param(mod, jobs: int | None) -> list[str]:
    """--jobs N as the `jobs` setting of an experiment that plays games (its Config has the field)."""
    if jobs is None:
        return []
    if "jobs" not in {f.name for f in dataclasses.fields(mod.Config)}:
        raise ConfigError(f"--jobs: experiment {mod.__name__.split('.')[-1].replace('_', '-')} plays no games")
    return [f"jobs={jobs}"]


def rebuild_report(name: str, d: Path, inline: bool = False) -> Path:
    """report.html again from a kept run in `d` (its summary.json and CSVs): nothing is rerun. The summary's
    agreement and headline numbers follow the current code; its date, machine and configuration stay."""
    mod = registry.load(name)
    summary_path = d / "summary.json"
    if not summary_path.exists():
        raise ConfigError(f"{summary_path}: no kept run to rebuild the report from (run the experiment first)")
    summary = json.loads(summary_path.read_text())
    if summary.get("experiment") != name:
        raise ConfigError(f"{summary_path}: a run of {summary.get('experiment')!r}, not {name!r}")
    cfg = from_dict(mod.Config, summary["config"], where=f"{summary_path}: ")
    tables = {Path(t).stem: pd.read_csv(d / t) for t in summary["tables"]}
    outcome = mod.outcome(cfg, tables)
    if (outcome.agreement, outcome.summary, outcome.samples) != (summary.get("agreement"), summary.get("results"),
                                                                 summary.get("samples")):
        # the report's text changed with the code: keep the run's stamp (date, machine, commit), update the words
        summary.update(agreement=outcome.agreement, results=outcome.summary, samples=outcome.samples)
        summary_path.write_text(json.dumps(summary, indent=2, default=float) + "\n")
    report = write_report(name, mod.QUESTION, mod.REFERENCE, summary["config"], outcome, d / "report.html",
                          summary_path, quick=bool(summary.get("quick")), inline=inline)
    print(f"  report rebuilt from {d}: {report}", flush=True)
    return report


def kept(out: Path, tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Write a run's tables to out/NAME.csv before its report is built, and hand them back: a report that
    cannot be made (a cluster node without bokeh, a plotting bug) must not take hours of games with it."""
    out.mkdir(parents=True, exist_ok=True)
    for table, df in tables.items():
        df.to_csv(out / f"{table}.csv", index=False)
    return tables


def run_experiment(name: str, out: str | Path, quick: bool = False, params: list[str] | None = None,
                   inline: bool = False, report_only: bool = False, jobs: int | None = None) -> tuple[Path, dict]:
    """Run (or with report_only rebuild the report of) one experiment in `out`: (report.html, summary)."""
    mod = registry.load(name)
    d = Path(out)
    if report_only:
        return rebuild_report(name, d, inline=inline), json.loads((d / "summary.json").read_text())
    cfg = load_config(name, mod.Config, quick, list(params or []) + _jobs_param(mod, jobs))
    d.mkdir(parents=True, exist_ok=True)
    print(f"experiment {name}{' (quick)' if quick else ''} -> {d}", flush=True)
    t0 = time.monotonic()
    outcome = mod.run(cfg, d)
    wall = time.monotonic() - t0
    for table, df in outcome.tables.items():
        df.to_csv(d / f"{table}.csv", index=False)
    config = dataclasses.asdict(cfg)
    summary = {"experiment": name, "question": mod.QUESTION, "quick": quick, "config": config,
               "wall_s": round(wall, 1), "agreement": outcome.agreement, "results": outcome.summary,
               "samples": outcome.samples,
               "tables": [f"{t}.csv" for t in outcome.tables]}
    summary_path = write_json("summary", summary, directory=d)
    report = write_report(name, mod.QUESTION, mod.REFERENCE, config, outcome, d / "report.html", summary_path,
                          quick=quick, inline=inline)
    print(f"  done in {wall:.0f} s: {report}", flush=True)
    return report, summary
