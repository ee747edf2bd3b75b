"""An experiment's HTML report: its question, configuration, our figures beside the reference's, and where
we agree. One HTML file, no server needed; Bokeh's JavaScript comes from its CDN (a report of ~50 KB
instead of ~2 MB in git), or inlined with `inline=True` (`--inline`) for reading offline.

The source documents' figures reach us as captions and prose, not data, so the reference side of a section is what the
seed states (numbers quoted from its text, or a table it prints) unless the module draws it.
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from bokeh.embed import file_html
from bokeh.layouts import column, row
from bokeh.models import ColumnDataSource, DataTable, Div, HelpTool, TableColumn
from bokeh.resources import CDN, INLINE

from viz.views.common import make_figure


@dataclass
class Section:
    title: str
    ours: Any                  # a Bokeh model (figure, layout, DataTable)
    reference: Any             # HTML text quoting the seed, or a Bokeh model
    note: str = ""             # how to read ours next to the reference (HTML)


@dataclass
class Outcome:
    tables: dict[str, pd.DataFrame]   # name -> table, written as OUT/<name>.csv
    sections: list[Section]
    agreement: str                    # two sentences: where we agree, where not, and why
    summary: dict[str, Any] = field(default_factory=dict)  # headline numbers (summary.json, README)
    samples: str = ""                 # what the results rest on: games per point, runs, seeds (README's index)


ELO_CAP = 800.0  # an infinite Elo (every game went one way) is drawn here


def plot_elo(v, side: float) -> float:
    """Elo for plotting: a missing value (None in JSON, empty in CSV: infinite) drawn at side * ELO_CAP."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return side * ELO_CAP
    return max(-ELO_CAP, min(ELO_CAP, float(v)))


def add_elo_plot_columns(t: pd.DataFrame) -> None:
    """elo_plot, elo_low_plot, elo_high_plot: a match table's Elo and its interval, ready to draw."""
    t["elo_plot"] = [plot_elo(v, 1.0 if w > 0.5 else -1.0) for v, w in zip(t.elo, t.win_rate)]
    t["elo_low_plot"] = [plot_elo(v, -1.0) for v in t.elo_low]
    t["elo_high_plot"] = [plot_elo(v, 1.0) for v in t.elo_high]


def figure(title: str, x_label: str, y_label: str, help_text: str = "", **kw):
    """A figure as the dashboards make them (viz/views/common.py), drawn on canvas so saved PNGs work."""

    kw.setdefault("width", 520)
    kw.setdefault("height", 320)
    return make_figure(title, help_text or title, x_label, y_label, webgl=False, **kw)


def table_widget(df: pd.DataFrame, width: int = 520, height: int | None = None):
    cols = [TableColumn(field=str(c), title=str(c)) for c in df.columns]
    h = height or min(600, 28 + 25 * len(df))
    return DataTable(source=ColumnDataSource(df.astype(object).where(df.notna(), "")), columns=cols,
                     width=width, height=h, index_position=None)


def quote(text: str, where: str) -> str:
    """The reference side: the seed's words, and where they stand."""
    return (f"<blockquote style='margin:4px 0;padding:4px 10px;border-left:3px solid #aaa;color:#333'>"
            f"{text}</blockquote><div style='font-size:9pt;color:#777'>{html.escape(where)}</div>")


def _config_html(config: dict[str, Any]) -> str:
    rows = "".join(f"<tr><td><code>{html.escape(k)}</code></td><td><code>{html.escape(json.dumps(v))}</code>"
                   f"</td></tr>" for k, v in config.items())
    return f"<table style='font-size:9.5pt;border-collapse:collapse'>{rows}</table>"


def write_report(name: str, question: str, reference: str, config: dict[str, Any], outcome: Outcome, out: Path,
                 summary_path: Path, quick: bool = False, inline: bool = False) -> Path:
    stamp = json.loads(summary_path.read_text())
    tables = ", ".join(f"<code>{t}.csv</code>" for t in outcome.tables)
    head = Div(width=1100, text=(
        f"<h2 style='margin:4px 0'>treesplit experiment: {html.escape(name)}{' (quick run)' if quick else ''}</h2>"
        f"<p><b>Question.</b> {html.escape(question)}</p>"
        f"<p><b>Reference.</b> {reference}</p>"
        f"<p><b>Where we agree and where not.</b> {outcome.agreement}</p>"
        f"<p style='color:#555;font-size:9.5pt'>Run {html.escape(stamp['date'])} on {html.escape(stamp['machine'])}"
        f"{' at commit ' + html.escape(stamp['commit']) if stamp.get('commit') else ''}"
        f" in {stamp.get('wall_s', 0):.0f} s{'; ' + html.escape(outcome.samples) if outcome.samples else ''}. Data: {tables}, <code>summary.json</code>. Rerun: "
        f"<code>treesplit experiment {html.escape(name)}{' --quick' if quick else ''}</code>.</p>"
        f"<details><summary><b>Configuration</b> (experiments/configs/{html.escape(name)}.toml"
        f"{' with [quick]' if quick else ''})</summary>{_config_html(config)}</details>"))
    parts = [head]
    for s in outcome.sections:
        ref = s.reference if not isinstance(s.reference, str) else Div(text=s.reference, width=520)
        title = Div(width=1100, text=f"<h3 style='margin:14px 0 2px 0'>{html.escape(s.title)}</h3>"
                                     + (f"<div style='font-size:9.5pt;color:#444'>{s.note}</div>" if s.note else ""))
        parts += [title, row(column(Div(text="<b>ours</b>"), s.ours),
                             column(Div(text="<b>reference (seed)</b>"), ref))]
    root = column(*parts)
    for tool in root.select({"type": HelpTool}):  # no server to link to: the help is the tooltip
        tool.redirect = "about:blank"
    out.write_text(file_html(root, INLINE if inline else CDN, f"treesplit experiment {name}"), encoding="utf-8")
    return out
