"""Tree shape: the top of the search tree as a layered graph (size = visits, colour = owner rank, diamonds
= duplicated nodes), depth and branching profiles, and the principal variation."""

from __future__ import annotations

import numpy as np
from bokeh.layouts import column, row
from bokeh.models import (ColumnDataSource, DataTable, Div, HoverTool, NumberFormatter, Range1d, Select,
                          SingleIntervalTicker, Spinner, TableColumn)

from viz.rundata import RunData
from viz.treelayout import index_tree, layered_positions, principal_variation, profiles, select_top
from viz.views.base import View
from viz.views.common import caption, fmt_s, make_figure, outside_legend, rank_colors


def tree_key(palette: list[str], shown: int = 16) -> str:
    """The graph's legend: colour = owner rank, shape = duplicated, red = principal variation."""
    dot = "<span style='display:inline-block;width:10px;height:10px;border-radius:5px;background:{c};margin:0 2px 0 8px'></span>{r}"
    ranks = "".join(dot.format(c=c, r=r) for r, c in enumerate(palette[:shown]))
    more = f" &hellip; ({len(palette)} ranks)" if len(palette) > shown else ""
    return (f"<div style='font-size:9pt'><b>owner rank:</b>{ranks}{more} &nbsp; <b>shape:</b> &#9679; stored by its "
            "owner, &#9670; (thick outline) duplicated on every rank &nbsp; <b style='color:#d62728'>red outline and "
            "path:</b> principal variation &nbsp; <b>size:</b> visits</div>")


def no_snapshot_note(d: RunData, t: float | None) -> str:
    """Why the tree view is empty, in the user's terms."""
    if d.source == "live":
        return ("Waiting for a tree snapshot: every search rank sends the top of the tree it holds every 2 s "
                "of the run.")
    times = d.tree_times()
    if len(times):
        return f"No tree snapshot yet at t = {fmt_s(t or 0.0)}: the first one was taken at t = {fmt_s(float(times[0]))}."
    return ("This trace holds no tree snapshot (the engine writes one at the end of a complete run; an "
            "interrupted run or a simulator run without snapshots has none).")

DEFAULT_DEPTH = 5
DEFAULT_CAP = 2000
CAPS = ["500", "2000", "5000", "20000"]


class TreeShape(View):
    name = "tree"
    title = "Tree shape"

    def __init__(self, data: RunData, max_depth: int = DEFAULT_DEPTH, max_nodes: int = DEFAULT_CAP, **kw):
        super().__init__(data, **kw)
        self.max_depth, self.max_nodes = max_depth, max_nodes
        self.nodes = ColumnDataSource(dict(x=[], y=[], size=[], color=[], marker=[], line_color=[], line_width=[],
                                           move=[], depth=[], visits=[], value=[], owner=[], duplicated=[],
                                           children=[], hash=[], pv=[]), name="tree.nodes")
        self.edges = ColumnDataSource(dict(x0=[], y0=[], x1=[], y1=[], color=[], width=[]), name="tree.edges")
        self.depth_profile = ColumnDataSource(dict(depth=[], nodes=[], visits=[], duplicated=[], branching=[]), name="tree.depth_profile")
        self.pv = ColumnDataSource(dict(step=[], move=[], visits=[], value=[], owner=[], duplicated=[]), name="tree.pv")
        self.note = Div(text="", width=900)
        self.graph_fig = make_figure(
            "Top of the tree", "The most visited nodes near the root, one layer per depth. Circle area = visits, "
            "colour = owner rank (the rank whose share of the hash space holds the node), diamond with a thick "
            "outline = duplicated (shared with all ranks), red path = principal variation. Hover for exact "
            "numbers. Only the top of a big tree is drawn: the note above says how much.",
            "position in layer (share of drawn leaves)", "depth (moves from the root)",
            x_range=Range1d(-0.02, 1.02), y_range=Range1d(-max_depth - 0.5, 0.5), width=900, height=420)
        self.graph_fig.segment("x0", "y0", "x1", "y1", color="color", line_width="width", source=self.edges,
                               alpha=0.6)
        nd = self.graph_fig.scatter("x", "y", size="size", color="color", marker="marker", line_color="line_color",
                                    line_width="line_width", source=self.nodes, alpha=0.85)
        self.graph_fig.add_tools(HoverTool(renderers=[nd], tooltips=[
            ("move", "@move"), ("depth", "@depth"), ("visits", "@visits{0,0}"), ("value", "@value{0.000}"),
            ("owner rank", "@owner"), ("duplicated", "@duplicated"), ("children", "@children"), ("hash", "@hash")]))
        self.graph_fig.yaxis.ticker = SingleIntervalTicker(interval=1)
        self.graph_fig.yaxis.major_label_overrides = {-i: str(i) for i in range(0, 65)}
        self.key = Div(text="", width=900, name="tree.key")
        self.graph_fig.xgrid.visible = False

        self.depth_fig = make_figure(
            "Nodes per depth", "How many nodes of the snapshot sit at each depth (moves from the root, along "
            "parent links), and how many of them are duplicated.", "depth (moves from the root)",
            "nodes (count)", width=440, height=250, webgl=False)
        b1 = self.depth_fig.vbar(x="depth", top="nodes", width=0.8, source=self.depth_profile, color="#4c72b0",
                                 legend_label="nodes")
        self.depth_fig.vbar(x="depth", top="duplicated", width=0.5, source=self.depth_profile, color="#c44e52",
                            legend_label="duplicated")
        self.depth_fig.add_tools(HoverTool(renderers=[b1], tooltips=[
            ("depth", "@depth"), ("nodes", "@nodes{0,0}"), ("duplicated", "@duplicated{0,0}"),
            ("visits", "@visits{0,0}")]))
        outside_legend(self.depth_fig, "above")
        self.depth_fig.legend.orientation = "horizontal"
        self.branch_fig = make_figure(
            "Branching by depth", "Mean number of children of the nodes that have any, per depth: how wide the "
            "search is at each level.", "depth (moves from the root)", "children per expanded node (count)",
            width=440, height=250, webgl=False)
        bl = self.branch_fig.line("depth", "branching", source=self.depth_profile, line_width=2, color="#55a868")
        self.branch_fig.scatter("depth", "branching", source=self.depth_profile, size=7, color="#55a868")
        self.branch_fig.add_tools(HoverTool(renderers=[bl], mode="vline", tooltips=[
            ("depth", "@depth"), ("children per expanded node", "@branching{0.00}")]))
        self.pv_table = DataTable(source=self.pv, width=420, height=250, index_position=None, reorderable=False, columns=[
            TableColumn(field="step", title="step"), TableColumn(field="move", title="move"),
            TableColumn(field="visits", title="visits", formatter=NumberFormatter(format="0,0")),
            TableColumn(field="value", title="value", formatter=NumberFormatter(format="0.000")),
            TableColumn(field="owner", title="owner"), TableColumn(field="duplicated", title="dup")])
        self.depth_input = Spinner(title="depth shown", low=1, high=32, step=1, value=max_depth, width=110)
        self.cap_input = Select(title="max nodes drawn", value=str(max_nodes),
                                options=sorted(set(CAPS + [str(max_nodes)]), key=int), width=130)
        if not self.static:
            self.depth_input.on_change("value", lambda a, o, n: self._set(depth=n))
            self.cap_input.on_change("value", lambda a, o, n: self._set(cap=n))
        self.update(data)

    def _set(self, depth=None, cap=None) -> None:
        """A new depth or cap from the widgets; an emptied field (None) keeps the current value."""
        if depth is not None:
            self.max_depth = max(1, int(depth))
        elif self.depth_input.value is None:
            self.depth_input.value = self.max_depth  # show the depth still drawn
        if cap is not None:
            self.max_nodes = int(cap)
        self.update(self.data, self.t, self.window)

    def update(self, data: RunData | None = None, t: float | None = None, window: float | None = None) -> None:
        d = self.data = data or self.data
        self.t, self.window = t, window
        snap = d.tree_at(t)
        if not len(snap):
            for s in (self.nodes, self.edges, self.depth_profile, self.pv):
                s.data = {k: [] for k in s.data}
            self.note.text = no_snapshot_note(d, t)
            return
        ti = index_tree(snap)
        rows = select_top(ti, self.max_depth, self.max_nodes)
        x, y = layered_positions(ti, rows)
        pv = principal_variation(ti)
        on_pv = np.zeros(len(ti), bool)
        on_pv[pv] = True
        owners = max(d.n_search, int(ti.owner.max()) + 1 if len(ti) else 1)
        palette = np.array(rank_colors(owners))
        self.key.text = tree_key(list(palette))
        vis = ti.visits[rows].astype(np.float64)
        vmax = max(vis.max(initial=1.0), 1.0)
        dup = ti.duplicated[rows]
        self.nodes.data = dict(
            x=x, y=y, size=4 + 30 * np.sqrt(vis / vmax), color=palette[np.clip(ti.owner[rows], 0, owners - 1)],
            marker=np.where(dup, "diamond", "circle"), line_color=np.where(on_pv[rows], "#d62728", "black"),
            line_width=np.where(dup, 2.5, 0.5) + 1.5 * on_pv[rows], move=[d.action_label(int(m)) for m in ti.move[rows]],
            depth=ti.level[rows], visits=vis, value=np.divide(ti.wins[rows], vis, out=np.zeros(len(rows)), where=vis > 0),
            owner=ti.owner[rows], duplicated=dup, children=ti.children[rows],
            hash=[f"{int(h):016x}" for h in ti.hash[rows]], pv=on_pv[rows])
        loc = np.full(len(ti), -1, np.int64)
        loc[rows] = np.arange(len(rows))
        child = np.flatnonzero(ti.parent[rows] >= 0)
        par = loc[ti.parent[rows][child]]
        pv_edge = on_pv[rows][child] & on_pv[rows][par]
        self.edges.data = dict(x0=x[par], y0=y[par], x1=x[child], y1=y[child],
                               color=np.where(pv_edge, "#d62728", "#999999"), width=np.where(pv_edge, 3.0, 1.0))
        self.graph_fig.y_range.start = -min(self.max_depth, int(ti.level[rows].max(initial=0))) - 0.5
        self.depth_profile.data = profiles(ti)
        pvv = ti.visits[pv].astype(np.float64)
        self.pv.data = dict(step=np.arange(len(pv)), move=[d.action_label(int(m)) for m in ti.move[pv]],
                            visits=pvv, value=np.divide(ti.wins[pv], pvv, out=np.zeros(len(pv)), where=pvv > 0),
                            owner=ti.owner[pv], duplicated=ti.duplicated[pv])
        reach = int((ti.level >= 0).sum())
        capped = len(rows) < int(((ti.level >= 0) & (ti.level <= self.max_depth)).sum())
        deepest = int(ti.level.max(initial=0))
        shallow = (f" The snapshot ends at depth {deepest}: the tree was no deeper, or (a big tree) the runtime "
                   f"recorded only its most visited top, so depth {self.max_depth} shows no more."
                   if deepest < self.max_depth else "")
        live = " Live: the ranks' latest parts of the tree, joined." if d.source == "live" else ""
        self.note.text = (
            f"Snapshot at t = {fmt_s(float(snap['t'].iloc[0]))}: <b>{len(ti):,}</b> nodes ({reach:,} reachable "
            f"from the root, {int(ti.duplicated.sum()):,} duplicated, depth 0 to {deepest}). "
            f"Drawing <b>{len(rows):,}</b> nodes: depth &le; {self.max_depth}"
            + (f", <b>capped</b> at the {self.max_nodes:,} most visited." if capped else ", all of them.")
            + shallow + live)

    @property
    def layout(self):
        controls = [] if self.static else [row(self.depth_input, self.cap_input)]
        return column(*controls, self.note, self.key, self.graph_fig,
                      row(self.depth_fig, self.branch_fig, column(Div(text="<b>Principal variation</b>"), self.pv_table)),
                      caption("Depth counts moves from the root along the snapshot's parent links (a transposition "
                              "is drawn under the parent the snapshot gives it)."))
