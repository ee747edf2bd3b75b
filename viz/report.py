"""A standalone HTML report of one or two traces: the dashboard's views at the end of the run, with
Bokeh's JavaScript inlined, so the file opens anywhere without a server or a network."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd
from bokeh.embed import file_html
from bokeh.layouts import column, row
from bokeh.models import ColumnDataSource, Div, HelpTool, HoverTool, TabPanel, Tabs
from bokeh.palettes import Category10_10
from bokeh.plotting import figure
from bokeh.resources import INLINE

from engine.trace_files import read_trace
from model.errors import UserError
from viz.rundata import RunData, trace_labels
from viz.views import VIEWS

# Teaching steps through events with server callbacks; a static page shows the other views.
REPORT_VIEWS = ["overview", "load", "traffic", "tree"]


def scaling_panel(csv_paths: Path | list[Path]) -> TabPanel:
    """A "Prediction" tab from scaling curve CSVs (`treesplit predict`'s ALGO-PROFILE.csv): rate and efficiency,
    one line per curve (a file, or each `curve` of a --sweep), each with its band shaded (the profile's
    uncertain values at their low and high ends; files written before predict drew a band have none)."""
    paths = csv_paths if isinstance(csv_paths, list) else [csv_paths]
    curves = []
    for path in paths:
        try:
            df = pd.read_csv(path)
        except (OSError, ValueError) as e:
            raise UserError(f"--scaling {path}: not a readable CSV ({e})") from None
        need = {"nodes", "bcast_nodes", "sims_per_s", "efficiency", "busy_frac"}
        if not need <= set(df.columns) or df.empty:
            raise UserError(f"--scaling {path}: expected the columns of `treesplit predict`'s CSV "
                            f"({', '.join(sorted(need))})")
        if "curve" not in df or df["curve"].isna().all():
            df["curve"] = Path(path).stem
        for f in ("sims_per_s", "efficiency"):
            for end in ("low", "high"):
                if f"{f}_{end}" not in df or df[f"{f}_{end}"].isna().all():
                    df[f"{f}_{end}"] = df[f]
        curves += [d.sort_values("nodes") for _, d in df.groupby("curve", sort=False)]
    hover = HoverTool(tooltips=[("curve", "@curve"), ("nodes", "@label"), ("sims/s", "@sims_per_s{0,0}"),
                                ("band", "@sims_per_s_low{0,0} .. @sims_per_s_high{0,0}"),
                                ("efficiency", "@efficiency{0.00}"), ("worker busy", "@busy_frac{0.00}")])
    opts = dict(width=520, height=340, x_axis_type="log", x_axis_label="search nodes (+ broadcast nodes)")
    f1 = figure(title="predicted simulation rate", y_axis_type="log", y_axis_label="simulations / s",
                tools=[hover, "pan,wheel_zoom,reset,save"], **opts)
    f2 = figure(title="parallel efficiency and worker workload", y_range=(0, 1.05), y_axis_label="fraction",
                tools=[hover.clone(), "pan,wheel_zoom,reset,save"], **opts)
    for i, df in enumerate(curves):
        color = Category10_10[i % 10]
        df = df.assign(ideal=df["sims_per_s"].iloc[0] * df["nodes"] / df["nodes"].iloc[0],
                       label=[f"{n}(+{b})" for n, b in zip(df["nodes"], df["bcast_nodes"])])
        src = ColumnDataSource(df, name=f"prediction.{i}")
        name = str(df["curve"].iloc[0])
        if i == 0:
            f1.line("nodes", "ideal", source=src, line_dash="dashed", color="gray", legend_label="linear")
        f1.varea("nodes", "sims_per_s_low", "sims_per_s_high", source=src, color=color, fill_alpha=0.2,
                 legend_label=name)
        f1.line("nodes", "sims_per_s", source=src, line_width=2, color=color, legend_label=name)
        f1.scatter("nodes", "sims_per_s", source=src, size=7, color=color, legend_label=name)
        f2.varea("nodes", "efficiency_low", "efficiency_high", source=src, color=color, fill_alpha=0.2)
        f2.line("nodes", "efficiency", source=src, line_width=2, color=color, legend_label=f"efficiency, {name}")
        f2.line("nodes", "busy_frac", source=src, line_width=2, color=color, line_dash="dotted",
                legend_label=f"worker busy, {name}")
    f1.legend.location = "top_left"
    f2.legend.location = "bottom_left"
    note = Div(text="<p>Scaling predicted by the simulator (<code>treesplit predict</code>), from "
                    + ", ".join(f"<code>{html.escape(Path(p).name)}</code>" for p in paths)
                    + ". The shaded band spans the profile's uncertain values (assumed ranges, measured spreads) "
                      "at their low and at their high ends.</p>")
    return TabPanel(title="Prediction", child=column(note, row(f1, f2)))


def build_report(dirs: list[Path], out: Path, scaling: Path | list[Path] | None = None, notes: list[str] = ()) -> Path:
    datas = [RunData.from_trace(read_trace(d), label=lab) for d, lab in zip(dirs, trace_labels(dirs))]
    ranges: dict = {}
    views = [[VIEWS[n](d, ranges=ranges, static=True) for n in REPORT_VIEWS] for d in datas]
    tabs = []
    for j, name in enumerate(REPORT_VIEWS):
        cols = [column(Div(text=f"<h3 style='margin:4px 0'>{d.label}</h3>"), vs[j].layout) if len(datas) > 1
                else vs[j].layout for d, vs in zip(datas, views)]
        tabs.append(TabPanel(title=VIEWS[name].title, child=row(*cols)))
    if scaling:
        tabs.append(scaling_panel(scaling))
    title = "treesplit report: " + " vs ".join(d.label for d in datas)
    paragraphs = "".join(f"<p>{html.escape(n)}</p>" for n in notes)
    head = Div(text=f"<h2 style='margin:4px 0'>{title}</h2><p>Whole run, from the start to t_end. Made by "
                    f"<code>treesplit report</code>; open the dashboard for the replay and teaching views.</p>"
                    + paragraphs)
    root = column(head, Tabs(tabs=tabs))
    for tool in root.select({"type": HelpTool}):  # no server to link to: the help is the tooltip
        tool.redirect = "about:blank"
    page = file_html(root, INLINE, title)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return out
