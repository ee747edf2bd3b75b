"""The scaling curve: one simulated run per node count, with speedup and efficiency against the smallest.

Efficiency is the simulation rate per search node relative to the smallest configuration's
(rate_N / N) / (rate_N0 / N0), the measure behind "scales uniformly" in Schaefers 2014, Figure 4.8.

The band: the same curve with every value the profile marks uncertain at its low end, and at its high end
(sim/uncertainty.py); at each node count the band spans the three curves' sims/s and efficiency. A sweep
draws one curve per value of one setting instead, each named in the `curve` column.
"""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path
from typing import Any, Callable

from bokeh.embed import file_html
from bokeh.layouts import gridplot
from bokeh.models import ColumnDataSource
from bokeh.palettes import Category10_10
from bokeh.plotting import figure
from bokeh.resources import CDN

from model.errors import UserError
from sim.simulate import SimConfig, simulate

COLUMNS = ("nodes", "bcast_nodes", "search_ranks", "bcast_ranks", "cores", "sims_per_s", "speedup", "efficiency",
           "busy_frac", "hops_per_sim", "messages_per_sim", "bytes_per_sim", "out_gbit_per_rank",
           "bcast_out_gbit_per_rank", "io_busy", "io_turnaround_s", "bcast_busy", "wall_s", "curve",
           "sims_per_s_low", "sims_per_s_high", "efficiency_low", "efficiency_high")
BAND = ("sims_per_s", "efficiency")


def sweep(base: SimConfig, nodes: list[int], on_point: Callable[[dict], None] | None = None,
          profile=None) -> list[dict[str, Any]]:
    """One curve: a simulation per node count (with `profile` instead of base's, when given)."""
    rows = []
    for n in nodes:
        s = simulate(dataclasses.replace(base, nodes=n, trace=None), profile=profile)
        row = {k: s.get(k) for k in COLUMNS if k in s}
        row["cores"] = (n + s["bcast_nodes"]) * (s["workers_per_rank"] + 1) * (s["search_ranks"] // n)
        rows.append(row)
        if on_point:
            on_point(row)
    r0 = rows[0]
    for row in rows:
        row["speedup"] = row["sims_per_s"] / r0["sims_per_s"] if r0["sims_per_s"] else 0.0
        row["efficiency"] = row["speedup"] * r0["nodes"] / row["nodes"]
    return [{k: row.get(k) for k in COLUMNS} for row in rows]


def banded(base: SimConfig, nodes: list[int], on_point: Callable[[dict], None] | None = None,
           name: str = "") -> list[dict[str, Any]]:
    """The curve of base's profile, with sims_per_s_low/high and efficiency_low/high from its two corners
    (equal to the curve where the profile marks nothing uncertain)."""
    from sim.simulate import resolve_profile
    from sim.uncertainty import corner, uncertain

    prof = resolve_profile(base)
    rows = sweep(base, nodes, on_point, profile=prof)
    ends = [sweep(base, nodes, profile=corner(prof, e)) for e in ("low", "high")] if uncertain(prof) else []
    for i, r in enumerate(rows):
        r["curve"] = name or prof.name
        for f in BAND:
            vals = [r[f]] + [c[i][f] for c in ends]
            r[f"{f}_low"], r[f"{f}_high"] = min(vals), max(vals)
    return rows


def parse_sweep(text: str) -> tuple[str, list[str]]:
    """--sweep KEY=a,b,c: (KEY, [a, b, c]); a UserError for anything else."""
    key, eq, vals = str(text).partition("=")
    values = [v.strip() for v in vals.split(",") if v.strip()]
    if not eq or not key.strip() or len(values) < 2:
        raise UserError(f"--sweep: expected KEY=VALUE,VALUE[,...] (two values or more), got {text!r}")
    return key.strip(), values


def swept(base: SimConfig, nodes: list[int], key: str, values: list[str],
          on_point: Callable[[dict], None] | None = None) -> list[dict[str, Any]]:
    """One curve per value of `key` (a --param: algorithm parameter, game field or profile value), named
    KEY=VALUE in the curve column; each curve's band is its own corners'."""
    rows = []
    for v in values:
        cfg = dataclasses.replace(base, params={**base.params, key: v})
        rows += banded(cfg, nodes, on_point, name=f"{key}={v}")
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    head = (f"{'nodes':>9} {'cores':>6} {'sims/s':>10} {'speedup':>8} {'eff':>5} {'busy':>5} {'hops':>5} "
            f"{'Gb/s out':>8} {'bc Gb/s':>8} {'IO busy':>7} {'loop us':>7} {'bc busy':>7} {'wall s':>7}")
    lines = [head]
    curves = len({r.get("curve") for r in rows})
    for i, r in enumerate(rows):
        if curves > 1 and (i == 0 or r.get("curve") != rows[i - 1].get("curve")):
            lines.append(f"{r['curve']}:")
        band = ""
        if r.get("sims_per_s_low") is not None and r["sims_per_s_high"] > r["sims_per_s_low"]:
            band = f"  band {r['sims_per_s_low']:.4g}..{r['sims_per_s_high']:.4g} sims/s"
        lines.append(
            f"{r['nodes']:>5}(+{r['bcast_nodes']}) {r['cores']:>6} {r['sims_per_s']:>10.4g} {r['speedup']:>8.3g} "
            f"{r['efficiency']:>5.2f} {r['busy_frac']:>5.2f} {r['hops_per_sim']:>5.2f} "
            f"{r['out_gbit_per_rank']:>8.3g} {r['bcast_out_gbit_per_rank']:>8.3g} {r['io_busy']:>7.2f} "
            f"{r['io_turnaround_s'] * 1e6:>7.3g} {r['bcast_busy']:>7.2f} {r['wall_s']:>7.3g}{band}")
    return "\n".join(lines)


def write_output(rows: list[dict[str, Any]], path: str | Path, title: str) -> Path:
    p = Path(path)
    if p.suffix == ".csv":
        with p.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS)
            w.writeheader()
            w.writerows(rows)
        return p
    if p.suffix in (".html", ".htm"):
        return _write_html(rows, p, title)
    raise UserError(f"{p}: expected a .csv or .html file name")


def _write_html(rows: list[dict[str, Any]], p: Path, title: str) -> Path:
    first = [r for r in rows if r.get("curve") == rows[0].get("curve")]
    src = ColumnDataSource({k: [r[k] for r in first] for k in COLUMNS})
    n = [r["nodes"] for r in first]
    ideal = ColumnDataSource({"nodes": n, "ideal": [first[0]["sims_per_s"] * x / first[0]["nodes"] for x in n]})
    opts = dict(width=460, height=320, x_axis_type="log", x_axis_label="search nodes")
    f1 = figure(title="simulation rate (band: the profile's uncertain values at their ends)", y_axis_type="log",
                y_axis_label="sims/s", **opts)
    f1.line("nodes", "ideal", source=ideal, line_dash="dashed", color="gray", legend_label="linear")
    for i, name in enumerate(dict.fromkeys(r.get("curve") for r in rows)):
        c = ColumnDataSource({k: [r[k] for r in rows if r.get("curve") == name] for k in COLUMNS})
        color = Category10_10[i % 10]
        f1.varea("nodes", "sims_per_s_low", "sims_per_s_high", source=c, fill_alpha=0.2, color=color)
        f1.line("nodes", "sims_per_s", source=c, line_width=2, color=color, legend_label=str(name))
        f1.scatter("nodes", "sims_per_s", source=c, size=7, color=color)
    f1.legend.location = "top_left"
    f2 = figure(title="worker busy fraction and efficiency", y_range=(0, 1.05), **opts)
    f2.line("nodes", "busy_frac", source=src, line_width=2, legend_label="busy")
    f2.line("nodes", "efficiency", source=src, line_width=2, color="firebrick", legend_label="efficiency")
    f3 = figure(title="outgoing bandwidth per rank", y_axis_label="Gbit/s", **opts)
    f3.line("nodes", "out_gbit_per_rank", source=src, line_width=2, legend_label="search rank")
    f3.line("nodes", "bcast_out_gbit_per_rank", source=src, line_width=2, color="green", legend_label="broadcast rank")
    f4 = figure(title="IO loop turnaround", y_axis_label="seconds", **opts)
    f4.line("nodes", "io_turnaround_s", source=src, line_width=2)
    p.write_text(file_html(gridplot([[f1, f2], [f3, f4]]), CDN, title))
    return p
