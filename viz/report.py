"""A standalone HTML report of one or two traces: the dashboard's views at the end of the run, with
Bokeh's JavaScript inlined, so the file opens anywhere without a server or a network."""

from __future__ import annotations

from pathlib import Path

from bokeh.embed import file_html
from bokeh.layouts import column, row
from bokeh.models import Div, HelpTool, TabPanel, Tabs
from bokeh.resources import INLINE

from model.trace import read_trace
from viz.rundata import RunData, trace_labels
from viz.views import VIEWS

# Teaching steps through events with server callbacks; a static page shows the other views.
REPORT_VIEWS = ["overview", "load", "traffic", "tree"]


def build_report(dirs: list[Path], out: Path) -> Path:
    datas = [RunData.from_trace(read_trace(d), label=lab) for d, lab in zip(dirs, trace_labels(dirs))]
    ranges: dict = {}
    views = [[VIEWS[n](d, ranges=ranges, static=True) for n in REPORT_VIEWS] for d in datas]
    tabs = []
    for j, name in enumerate(REPORT_VIEWS):
        cols = [column(Div(text=f"<h3 style='margin:4px 0'>{d.label}</h3>"), vs[j].layout) if len(datas) > 1
                else vs[j].layout for d, vs in zip(datas, views)]
        tabs.append(TabPanel(title=VIEWS[name].title, child=row(*cols)))
    title = "treesplit report: " + " vs ".join(d.label for d in datas)
    head = Div(text=f"<h2 style='margin:4px 0'>{title}</h2><p>Whole run, from the start to t_end. Made by "
                    f"<code>treesplit report</code>; open the dashboard for the replay and teaching views.</p>")
    root = column(head, Tabs(tabs=tabs))
    for tool in root.select({"type": HelpTool}):  # no server to link to: the help is the tooltip
        tool.redirect = "about:blank"
    html = file_html(root, INLINE, title)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html, encoding="utf-8")
    return out
