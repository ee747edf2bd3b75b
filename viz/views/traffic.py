"""Message traffic: who sends how much to whom (rank x rank matrix), rates per kind over time, and the
broadcast network as a graph with the load of each link."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
from bokeh.layouts import column, row
from bokeh.models import (ColorBar, ColumnDataSource, CustomJS, DataRange1d, Div, HoverTool, LogColorMapper,
                          RadioButtonGroup, Range1d, Select)
from bokeh.palettes import Category20, Inferno256

from viz.rundata import RunData
from viz.views.base import View
from viz.views.common import (caption, integer_ticks, make_figure, mark_ending, outside_legend, rank_colors,
                               window_bounds, window_caption)

BROADCAST_KINDS = ["SYNC", "BCAST", "DUP"]
MAX_MATRIX_SIDE = 128  # above this many ranks, the matrix sums blocks of ranks (and says so)
SPRING_LIMIT = 300  # above this many ranks the graph keeps its shell layout (spring layout is O(n^2))

_SWITCH_JS = """
const key = sel.value, bytes = metric.active == 1;
const d = src.data, n = d['n_' + key], b = d['b_' + key];
if (n === undefined) return;
d['count'] = n; d['bytes'] = b; d['value'] = bytes ? b : n;
let hi = 1; for (const v of d['value']) if (v > hi) hi = v;
mapper.high = hi;
src.change.emit();
"""


def _key(kind: str) -> str:
    return kind.split(" ")[0]


class MessageTraffic(View):
    name = "traffic"
    title = "Message traffic"

    def __init__(self, data: RunData, **kw):
        super().__init__(data, **kw)
        self.kind_select = Select(title="kind", value="all", options=["all"], width=200)
        self.metric = RadioButtonGroup(labels=["messages", "bytes"], active=0, width=160)
        self.matrix = ColumnDataSource(dict(src=[], dst=[], count=[], bytes=[], value=[], w=[]), name="traffic.matrix")
        self.mapper = LogColorMapper(palette=Inferno256[::-1][30:], low=1, high=10, low_color="rgba(0,0,0,0)")
        n = max(data.n_ranks, 1)
        self.mat_fig = make_figure(
            "Messages sender -> receiver (window)", "Messages (or bytes) sent from each rank (x) to each rank (y) "
            "in the time window, for the kind chosen above. Colour is on a log scale; empty cells sent nothing.",
            "sender rank (id)", "receiver rank (id)", x_range=Range1d(-0.5, n - 0.5), y_range=Range1d(-0.5, n - 0.5),
            width=470, height=440)
        cells = self.mat_fig.rect("src", "dst", width="w", height="w", source=self.matrix,
                                  fill_color={"field": "value", "transform": self.mapper}, line_color=None)
        self.mat_fig.add_tools(HoverTool(renderers=[cells], tooltips=[
            ("from rank", "@src"), ("to rank", "@dst"), ("messages", "@count{0,0}"), ("bytes", "@bytes{0,0}")]))
        self.mat_fig.add_layout(ColorBar(color_mapper=self.mapper, width=10), "right")
        integer_ticks(self.mat_fig.xaxis)
        integer_ticks(self.mat_fig.yaxis)
        self.mat_note = Div(text="", width=470)
        js = CustomJS(args=dict(sel=self.kind_select, metric=self.metric, src=self.matrix, mapper=self.mapper),
                      code=_SWITCH_JS)
        self.kind_select.js_on_change("value", js)
        self.metric.js_on_change("active", js)

        self.rates = ColumnDataSource(dict(t=[], **{k: [] for k in data.kinds}), name="traffic.rates")
        self.rate_fig = make_figure(
            "Message rates by kind", "Messages sent per second of run time, per kind, summed over all ranks. "
            "Click a legend entry to hide its line.", "time (s)", "rate (messages/s)", x_range=self.time_range(),
            y_range=self.shared("msg_rate_y", DataRange1d), width=700, height=300)
        palette = Category20[20]
        self.rate_lines = {}
        for i, k in enumerate(data.kinds):
            self.rate_lines[k] = self.rate_fig.line("t", k, source=self.rates, line_width=2, legend_label=k,
                                                    color=palette[(2 * i) % 20 + (i // 10) % 2], visible=False)
        mark_ending(self.rate_fig, data)
        self.rate_hover = HoverTool(mode="vline", renderers=[], tooltips=[("t", "@t{0.[0000]} s")])
        self.rate_fig.add_tools(self.rate_hover)
        legend = self.rate_fig.legend[0]
        legend.click_policy = "hide"
        legend.label_text_font_size = "8pt"
        self.rate_fig.add_layout(legend, "right")

        self.nodes = ColumnDataSource(dict(x=[], y=[], rank=[], role=[], sent=[], received=[], color=[], size=[]), name="traffic.nodes")
        self.links = ColumnDataSource(dict(x0=[], y0=[], x1=[], y1=[], a=[], b=[], count=[], bytes=[], width=[]), name="traffic.links")
        self.graph_fig = make_figure(
            "Broadcast network (window)", "Ranks as nodes (large: broadcast ranks, small: search ranks), drawn with "
            "a networkx layout; a link for each pair that exchanged SYNC/BCAST/DUP messages (all kinds if the run "
            "has none), its width proportional to the messages it carried in the window.",
            "", "", width=470, height=440, x_range=Range1d(-1.25, 1.25), y_range=Range1d(-1.25, 1.25))
        lk = self.graph_fig.segment("x0", "y0", "x1", "y1", source=self.links, line_width="width", color="#888",
                                    alpha=0.7)
        nd = self.graph_fig.scatter("x", "y", size="size", color="color", source=self.nodes, line_color="black",
                                    legend_field="role")
        self.graph_fig.text("x", "y", text="rank", source=self.nodes, x_offset=8, y_offset=-4, text_font_size="8pt",
                            text_color="#333")
        self.graph_fig.axis.visible = False  # a drawing of the topology: its coordinates mean nothing
        outside_legend(self.graph_fig, "above")
        self.graph_fig.legend.orientation = "horizontal"
        self.graph_fig.legend.title = "link width = messages in the window"
        self.graph_fig.add_tools(HoverTool(renderers=[nd], tooltips=[
            ("rank", "@rank (@role)"), ("sent", "@sent{0,0} messages"), ("received", "@received{0,0} messages")]))
        self.graph_fig.add_tools(HoverTool(renderers=[lk], line_policy="interp", tooltips=[
            ("link", "@a <-> @b"), ("messages", "@count{0,0}"), ("bytes", "@bytes{0,0}")]))
        self.graph_fig.grid.visible = False
        self.graph_note = Div(text="", width=470)
        self._layout_cache: dict = {}
        self._full_links_key: tuple | None = None
        self._full_links: tuple = ()
        self.update(data)

    # --- update -----------------------------------------------------------------------------------
    def update(self, data: RunData | None = None, t: float | None = None, window: float | None = None) -> None:
        d = self.data = data or self.data
        self.t, self.window = t, window
        t0, t1 = window_bounds(d, t, window)
        cells = d.cells(t0, t1)  # one pass over the window's messages feeds the matrix and the graph
        whole = not np.isfinite(t0) and t1 >= d.t_end
        present = [k for i, k in enumerate(d.kinds) if d.kind_bins[i].any()]
        self._update_matrix(d, cells, present)
        self._update_rates(d, t1)
        self._update_graph(d, cells, present, whole)

    def kind_options(self, present: list[str]) -> dict[str, list[str] | None]:
        opts: dict[str, list[str] | None] = {"all": None}
        for k in present:
            opts[k] = [k]
        if any(k in present for k in BROADCAST_KINDS):
            opts["broadcast (SYNC+BCAST+DUP)"] = BROADCAST_KINDS
        return opts

    def _update_matrix(self, d: RunData, cells, present: list[str]) -> None:
        opts = self.kind_options(present)
        self.kind_select.options = list(opts)
        if self.kind_select.value not in opts:
            self.kind_select.value = "all"
        R = max(d.n_ranks, 1)
        g = math.ceil(R / MAX_MATRIX_SIDE)
        src, dst, n, b = cells
        if g > 1:  # sum the sparse cells into blocks of g ranks
            nb = math.ceil(R / g)
            blocks, inv = np.unique((src // g) * nb + dst // g, return_inverse=True)
            K, C = n.shape[0], len(blocks)
            key = (np.arange(K)[:, None] * C + inv.ravel()[None, :]).ravel()
            n = np.bincount(key, weights=n.ravel(), minlength=K * C).reshape(K, C)
            b = np.bincount(key, weights=b.ravel(), minlength=K * C).reshape(K, C)
            src, dst = blocks // nb, blocks % nb
        cols = {"src": src * g + (g - 1) / 2, "dst": dst * g + (g - 1) / 2, "w": np.full(len(src), float(g))}
        for name, kinds in opts.items():
            rows = slice(None) if kinds is None else [d.kinds.index(k) for k in kinds if k in d.kinds]
            cols[f"n_{_key(name)}"] = n[rows].sum(axis=0)
            cols[f"b_{_key(name)}"] = b[rows].sum(axis=0)
        key = _key(self.kind_select.value)
        cols["count"], cols["bytes"] = cols[f"n_{key}"], cols[f"b_{key}"]
        cols["value"] = cols["bytes"] if self.metric.active == 1 else cols["count"]
        self.matrix.data = cols
        self.mapper.high = float(max(cols["value"].max(initial=1), 1.0)) + 1e-9
        self.mat_fig.x_range.end = self.mat_fig.y_range.end = R - 0.5
        note = f"{cols['n_all'].sum():,.0f} messages, {cols['b_all'].sum():,.0f} bytes in the window."
        if g > 1:
            note += f" <b>Blocks of {g} ranks</b> (more than {MAX_MATRIX_SIDE} ranks): each cell sums a block."
        self.mat_note.text = note

    def _update_rates(self, d: RunData, t1: float) -> None:
        k = d.bins_upto(t1)
        cols = {"t": d.centers[:k]}
        visible = []
        for i, kind in enumerate(d.kinds):
            if kind not in self.rate_lines:  # a kind first seen live: no line was made for it
                continue
            cols[kind] = d.kind_bins[i, :k] / d.bin_s
            on = bool(d.kind_bins[i].any())
            self.rate_lines[kind].visible = on
            if on:
                visible.append(kind)
        self.rates.data = cols
        self.time_range()
        for item in self.rate_fig.legend[0].items:  # no legend entries for kinds the run never sent
            item.visible = any(r.visible for r in item.renderers)
        self.rate_hover.renderers = [self.rate_lines[k] for k in visible[:1]]
        self.rate_hover.tooltips = [("t", "@t{0.[0000]} s")] + [(k, f"@{{{k}}}{{0,0.0}} /s") for k in visible]

    def _graph_layout(self, R: int, M: int, edges: tuple) -> np.ndarray:
        key = (R, M, edges)
        if key in self._layout_cache:
            return self._layout_cache[key]
        ranks = list(range(R))
        bc, sr = [r for r in ranks if r >= M], [r for r in ranks if r < M]
        shells = [bc, sr] if bc and sr else [ranks]
        G = nx.Graph()
        G.add_nodes_from(ranks)
        G.add_edges_from(edges)
        pos = nx.shell_layout(G, nlist=shells, scale=1.0)
        if R <= SPRING_LIMIT and G.number_of_edges():
            pos = nx.spring_layout(G, pos=pos, seed=1, iterations=60, k=1.5 / math.sqrt(R))
            xy = np.array([pos[r] for r in ranks])
            xy -= xy.mean(axis=0)
            xy /= max(np.abs(xy).max(), 1e-9)
        else:
            xy = np.array([pos[r] for r in ranks])
        self._layout_cache = {key: xy}
        return xy

    @staticmethod
    def _links(R: int, cells, rows) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Undirected links (a < b) with the messages and bytes of both directions, from sparse cells."""
        src, dst, n, b = cells
        c, nb = n[rows].sum(axis=0), b[rows].sum(axis=0)
        lo, hi = np.minimum(src, dst), np.maximum(src, dst)
        keep = (lo != hi) & (c > 0)
        pair, inv = np.unique(lo[keep] * R + hi[keep], return_inverse=True)
        inv = inv.ravel()
        return (pair // R, pair % R, np.bincount(inv, weights=c[keep], minlength=len(pair)),
                np.bincount(inv, weights=nb[keep], minlength=len(pair)))

    def _update_graph(self, d: RunData, cells, present: list[str], whole: bool) -> None:
        R, M = max(d.n_ranks, 1), d.n_search
        bk = [k for k in BROADCAST_KINDS if k in present]
        rows = [d.kinds.index(k) for k in bk] if bk else slice(None)
        a_idx, b_idx, cnt, nbytes = self._links(R, cells, rows)
        # the layout uses the links of the whole run, so it does not jump while the replay moves
        key = (id(d), d.version, tuple(bk))
        if self._full_links_key != key:
            full = cells if whole else d.cells(-np.inf, np.inf)
            fa, fb, _, _ = self._links(R, full, rows)
            self._full_links = tuple(zip(fa.tolist(), fb.tolist()))
            self._full_links_key = key
        xy = self._graph_layout(R, M, self._full_links)
        self.links.data = dict(x0=xy[a_idx, 0], y0=xy[a_idx, 1], x1=xy[b_idx, 0], y1=xy[b_idx, 1], a=a_idx,
                               b=b_idx, count=cnt, bytes=nbytes,
                               width=0.5 + 7.5 * cnt / max(cnt.max(initial=1), 1))
        src, dst, n, _ = cells
        total = n.sum(axis=0)
        colors = rank_colors(2)
        role = np.where(np.arange(R) < M, "search", "broadcast")
        self.nodes.data = dict(x=xy[:, 0], y=xy[:, 1], rank=np.arange(R), role=role,
                               sent=np.bincount(src, weights=total, minlength=R)[:R],
                               received=np.bincount(dst, weights=total, minlength=R)[:R],
                               color=np.where(role == "search", colors[0], colors[1]),
                               size=np.where(role == "search", 9, 15))
        what = "SYNC/BCAST/DUP" if bk else "all"
        self.graph_note.text = (f"{len(a_idx)} links carried {what} messages in the window; blue: search ranks, "
                                f"orange: broadcast ranks.")

    @property
    def layout(self):
        return column(row(self.kind_select, self.metric),
                      row(column(self.mat_fig, self.mat_note), column(self.graph_fig, self.graph_note)),
                      self.rate_fig,
                      caption(window_caption(self.data)))
