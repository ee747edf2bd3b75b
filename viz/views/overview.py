"""Overview: how fast the search goes (sims/s, PPS, NPS), how much is in flight, and its answer so far."""

from __future__ import annotations

import numpy as np
from bokeh.layouts import column, row
from bokeh.models import ColumnDataSource, DataRange1d, Div, HoverTool, Range1d

from viz.rundata import RunData
from viz.views.base import View
from viz.views.common import caption, fmt_s, make_figure

GTP_LETTERS = "ABCDEFGHJKLMNOPQRSTUVWXYZ"  # GTP skips I


def move_name(move: int, board: int | None) -> str:
    """GTP name of a Go move index (row-major from A1, the last index is pass); other games: the number.
    The trace's `move` is the game's action index (model/game.py: Go has size*size + 1 actions)."""
    if move < 0:
        return "root"
    if not board:
        return str(move)
    if move >= board * board:
        return "pass"
    return f"{GTP_LETTERS[move % board]}{move // board + 1}"


def root_children(tree) -> tuple[int, np.ndarray]:
    """(index of the root, indices of its children) in a tree snapshot; root = most visited shallowest node."""
    depth = tree["depth"].to_numpy()
    shallow = np.flatnonzero(depth == depth.min())
    root = int(shallow[np.argmax(tree["visits"].to_numpy()[shallow])])
    kids = np.flatnonzero(tree["parent"].to_numpy() == tree["hash"].to_numpy()[root])
    return root, kids[kids != root]  # (an engine root may have hash 0 and parent 0: not its own child)


class Overview(View):
    name = "overview"
    title = "Overview"

    def __init__(self, data: RunData, **kw):
        super().__init__(data, **kw)
        self.rates = ColumnDataSource(dict(t=[], sims=[], pps=[], nps=[]), name="overview.rates")
        self.flight = ColumnDataSource(dict(t=[], in_flight=[]), name="overview.flight")
        self.stones = ColumnDataSource(dict(x=[], y=[], move=[], visits=[], value=[], share=[], size=[], color=[]), name="overview.stones")
        self.summary = Div(text="", width=560)
        x = self.time_range()
        self.rate_fig = make_figure(
            "Search speed", "Simulations completed, playouts finished (PPS) and unique tree nodes created (NPS) "
            "per second, summed over all ranks, per time bin. Counts come from the ranks' samples.",
            "time (s)", "rate (1/s)", x_range=x, y_range=self.shared("rate_y", DataRange1d))
        lines = []
        for col, color, label in (("sims", "#1f77b4", "sims/s"), ("pps", "#ff7f0e", "PPS"), ("nps", "#2ca02c", "NPS")):
            lines.append(self.rate_fig.line("t", col, source=self.rates, color=color, line_width=2, legend_label=label))
        self.rate_fig.add_tools(HoverTool(renderers=lines[:1], mode="vline", tooltips=[
            ("t", "@t{0.[0000]} s"), ("sims/s", "@sims{0,0.0}"), ("PPS", "@pps{0,0.0}"), ("NPS", "@nps{0,0.0}")]))
        self.rate_fig.legend.location = "top_left"
        self.rate_fig.legend.click_policy = "hide"
        self.flight_fig = make_figure(
            "Simulations in flight", "Simulations started and not yet finished (first package started, last "
            "package not ended) at the end of each time bin. UCT-Treesplit keeps about S_par = (C-1) M O in flight.",
            "time (s)", "simulations (count)", x_range=x, y_range=self.shared("flight_y", DataRange1d), height=200)
        fl = self.flight_fig.step("t", "in_flight", source=self.flight, mode="after", line_width=2, color="#9467bd")
        self.flight_fig.add_tools(HoverTool(renderers=[fl], mode="vline",
                                            tooltips=[("t", "@t{0.[0000]} s"), ("in flight", "@in_flight{0,0}")]))
        self.board = data.board_size()
        self.board_fig = None
        if self.board or data.source == "live":  # live: the board size arrives with the first meta record
            self._make_board(self.board or 19)
        self.update(data)

    def _make_board(self, n: int) -> None:
        self.grid = ColumnDataSource(dict(x0=[], y0=[], x1=[], y1=[]))
        p = make_figure(
            "Answer so far", "The root's children on the board: circle area = visits, red = the most visited "
            "move (the one the search would play). Hover for exact visits and value (wins / visits).",
            "column (A..)", "row (1..)", x_range=Range1d(-0.8, n - 0.2), y_range=Range1d(-0.8, n - 0.2), width=330,
            height=330, tools="hover,save", webgl=False)
        p.background_fill_color = "#dcb35c"
        p.segment("x0", "y0", "x1", "y1", source=self.grid, color="black", line_width=1)
        p.grid.visible = False
        st = p.scatter("x", "y", size="size", color="color", alpha=0.75, line_color="black", source=self.stones)
        p.select_one(HoverTool).renderers = [st]
        p.select_one(HoverTool).tooltips = [("move", "@move"), ("visits", "@visits{0,0}"),
                                            ("share of root visits", "@share{0.0%}"), ("value", "@value{0.000}")]
        self.board_fig = p
        self._set_board(n)

    def _set_board(self, n: int) -> None:
        self.board = n
        lines = np.arange(n, dtype=float)
        self.grid.data = dict(x0=np.concatenate([lines, np.zeros(n)]), y0=np.concatenate([np.zeros(n), lines]),
                              x1=np.concatenate([lines, np.full(n, n - 1.0)]),
                              y1=np.concatenate([np.full(n, n - 1.0), lines]))
        p = self.board_fig
        p.x_range.end = p.y_range.end = n - 0.2
        p.xaxis.ticker = list(range(n))
        p.xaxis.major_label_overrides = {i: GTP_LETTERS[i] for i in range(n)}
        p.yaxis.ticker = list(range(n))
        p.yaxis.major_label_overrides = {i: str(i + 1) for i in range(n)}

    def update(self, data: RunData | None = None, t: float | None = None, window: float | None = None) -> None:
        d = self.data = data or self.data
        self.t, self.window = t, window
        k = d.bins_upto(d.t_end if t is None else t)
        c = d.centers[:k]
        self.time_range()
        self.rates.data = dict(t=c, sims=d.sims[:k] / d.bin_s, pps=d.playouts[:k] / d.bin_s,
                               nps=d.nodes[:k] / d.bin_s)
        self.flight.data = dict(t=d.edges[1:k + 1], in_flight=d.in_flight[:k])
        best = self._update_board(d, t)
        m = d.meta
        total = float(d.sims[:k].sum())
        span = k * d.bin_s
        self.summary.text = (
            f"<b>{d.label}</b>: {m.get('runtime', '?')} run of <b>{m.get('algo', '?')}</b> on "
            f"{m.get('game', '?')} {m.get('board', '')}, {d.n_search} search + {d.n_bcast} broadcast ranks, "
            f"{m.get('threads', '?')} threads per rank.<br>At t = {fmt_s(span)}: {total:,.0f} simulations "
            f"({total / span if span else 0:,.0f}/s), {float(d.playouts[:k].sum()):,.0f} playouts, "
            f"{float(d.in_flight[k - 1]) if k else 0:,.0f} in flight." + (f" Best move: <b>{best}</b>." if best else ""))

    def _update_board(self, d: RunData, t: float | None) -> str | None:
        tree = d.tree_at(t)
        if self.board_fig is not None and d.board_size() and d.board_size() != self.board:
            self._set_board(d.board_size())
        if not len(tree):
            self.stones.data = {k: [] for k in self.stones.data}
            return None
        root, kids = root_children(tree)
        n = self.board
        moves = tree["move"].to_numpy()[kids]
        visits = tree["visits"].to_numpy()[kids].astype(np.float64)
        wins = tree["wins"].to_numpy()[kids]
        best_i = int(np.argmax(visits)) if len(visits) else -1
        best = move_name(int(moves[best_i]), n if self.board_fig is not None else None) if best_i >= 0 else None
        if self.board_fig is None:  # not Go: the answer is named in the summary only
            return best
        on_board = (moves >= 0) & (moves < n * n)
        root_v = max(float(tree["visits"].to_numpy()[root]), 1.0)
        mv, vi, wi = moves[on_board], visits[on_board], wins[on_board]
        is_best = np.zeros(len(kids), bool)
        if best_i >= 0:
            is_best[best_i] = True
        vmax = max(vi.max(initial=1.0), 1.0)
        self.stones.data = dict(
            x=mv % n, y=mv // n, move=[move_name(int(a), n) for a in mv], visits=vi,
            value=np.divide(wi, vi, out=np.zeros_like(wi), where=vi > 0), share=vi / root_v,
            size=4 + 26 * np.sqrt(vi / vmax), color=np.where(is_best[on_board], "#d62728", "#1f77b4"))
        return best

    @property
    def layout(self):
        right = [self.board_fig] if self.board_fig is not None else []
        return column(self.summary, row(column(self.rate_fig, self.flight_fig), *right),
                      caption("Rates are per second of run time (wall time for the engine, simulated time for "
                              "the simulator), one point per time bin of the replay."))
