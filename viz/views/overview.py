"""Overview: how fast the search goes (sims/s, PPS, NPS), how much is in flight, and its answer so far."""

from __future__ import annotations

import numpy as np
from bokeh.layouts import column, row
from bokeh.models import ColumnDataSource, DataRange1d, Div, HoverTool, Range1d

from viz.rundata import RunData
from viz.views.base import View
from viz.views.common import caption, fmt_s, make_figure, mark_ending, outside_legend, plural

MAX_NAMES = 3  # moves named per board cell in the hover (LOA: several moves land on one square)


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
        # sims/s under a thick line, PPS dashed on top: with one playout per simulation they are the same curve
        for col, color, label, width, dash in (("sims", "#1f77b4", "sims/s", 5, "solid"),
                                               ("pps", "#ff7f0e", "PPS", 2, "dashed"),
                                               ("nps", "#2ca02c", "NPS", 2, "solid")):
            lines.append(self.rate_fig.line("t", col, source=self.rates, color=color, line_width=width,
                                            line_dash=dash, alpha=0.7 if col == "sims" else 1.0, legend_label=label))
        self.rate_fig.add_tools(HoverTool(renderers=lines[:1], mode="vline", tooltips=[
            ("t", "@t{0.[0000]} s"), ("sims/s", "@sims{0,0.0}"), ("PPS", "@pps{0,0.0}"), ("NPS", "@nps{0,0.0}")]))
        outside_legend(self.rate_fig)
        mark_ending(self.rate_fig, data)
        self.rate_fig.legend.click_policy = "hide"
        self.flight_fig = make_figure(
            "Simulations in flight", "Simulations started and not yet finished (first package started, last "
            "package not ended) at the end of each time bin. UCT-Treesplit keeps about S_par = (C-1) M O in flight.",
            "time (s)", "simulations (count)", x_range=x,
            y_range=self.shared("flight_y", lambda: DataRange1d(start=0)), height=200)
        mark_ending(self.flight_fig, data)
        fl = self.flight_fig.step("t", "in_flight", source=self.flight, mode="after", line_width=2, color="#9467bd")
        self.flight_fig.add_tools(HoverTool(renderers=[fl], mode="vline",
                                            tooltips=[("t", "@t{0.[0000]} s"), ("in flight", "@in_flight{0,0}")]))
        self.board = data.board_shape()
        self.board_fig = None
        if self.board or data.source == "live":  # live: the game and board arrive with the first meta record
            self._make_board()
        self.update(data)

    def _make_board(self) -> None:
        self.grid = ColumnDataSource(dict(x0=[], y0=[], x1=[], y1=[]))
        p = make_figure(
            "Answer so far", "The root's children on the board, each at the point it plays (Go) or the square "
            "its piece lands on (LOA): circle area = visits (summed over the moves to one square), red = where "
            "the most visited move (the one the search would play) goes. Hover for the moves, exact visits and "
            "value (wins / visits).",
            "column", "row", x_range=Range1d(-0.8, 18.8), y_range=Range1d(-0.8, 18.8), width=330,
            height=330, tools="hover,save", webgl=False)
        p.background_fill_color = "#dcb35c"
        p.segment("x0", "y0", "x1", "y1", source=self.grid, color="black", line_width=1)
        p.grid.visible = False
        st = p.scatter("x", "y", size="size", color="color", alpha=0.75, line_color="black", source=self.stones)
        p.select_one(HoverTool).renderers = [st]
        p.select_one(HoverTool).tooltips = [("move", "@move"), ("visits", "@visits{0,0}"),
                                            ("share of root visits", "@share{0.0%}"), ("value", "@value{0.000}")]
        self.board_fig = p
        self._set_board(self.data.board_axes() or ([str(i) for i in range(19)],) * 2)

    def _set_board(self, axes: tuple[list[str], list[str]]) -> None:
        cols, rows = axes
        w, h = len(cols), len(rows)
        self.board = (w, h)
        xs, ys = np.arange(w, dtype=float), np.arange(h, dtype=float)
        self.grid.data = dict(x0=np.concatenate([xs, np.zeros(h)]), y0=np.concatenate([np.zeros(w), ys]),
                              x1=np.concatenate([xs, np.full(h, w - 1.0)]),
                              y1=np.concatenate([np.full(w, h - 1.0), ys]))
        p = self.board_fig
        p.x_range.end, p.y_range.end = w - 0.2, h - 0.2
        p.xaxis.axis_label, p.yaxis.axis_label = f"column ({cols[0]}..{cols[-1]})", f"row ({rows[0]}..{rows[-1]})"
        p.xaxis.ticker = list(range(w))
        p.xaxis.major_label_overrides = dict(enumerate(cols))
        p.yaxis.ticker = list(range(h))
        p.yaxis.major_label_overrides = dict(enumerate(rows))

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
        self.summary.text = run_summary(d, k, best)

    def _update_board(self, d: RunData, t: float | None) -> str | None:
        tree = d.tree_at(t)
        axes = d.board_axes()
        if self.board_fig is not None and axes and (len(axes[0]), len(axes[1])) != self.board:
            self._set_board(axes)  # live: the meta record has named the game
        empty = {k: [] for k in self.stones.data}
        if self.board_fig is not None:
            self.board_fig.title.text = "Answer so far" + board_when(d, t)
        if not len(tree):
            self.stones.data = empty
            return None
        root, kids = root_children(tree)
        moves = tree["move"].to_numpy()[kids]
        visits = tree["visits"].to_numpy()[kids].astype(np.float64)
        wins = tree["wins"].to_numpy()[kids].astype(np.float64)
        best_i = int(np.argmax(visits)) if len(visits) else -1
        best = d.action_label(int(moves[best_i])) if best_i >= 0 else None
        if self.board_fig is None or not axes:  # no board (P-game): the answer is named in the summary only
            self.stones.data = empty
            return best
        # one circle per cell, summing the moves that go there (LOA: every piece that can land on a square)
        cells: dict[tuple[int, int], list[int]] = {}
        for i in np.argsort(-visits, kind="stable"):
            cell = d.action_cell(int(moves[i]))
            if cell is not None:
                cells.setdefault(cell, []).append(int(i))
        groups = list(cells.values())
        vi = np.array([visits[g].sum() for g in groups], np.float64)
        wi = np.array([wins[g].sum() for g in groups], np.float64)
        names = [", ".join([d.action_label(int(moves[i])) for i in g[:MAX_NAMES]] + ["..."] * (len(g) > MAX_NAMES))
                 for g in groups]
        root_v = max(float(tree["visits"].to_numpy()[root]), 1.0)
        vmax = max(vi.max(initial=1.0), 1.0)
        self.stones.data = dict(
            x=[c[0] for c in cells], y=[c[1] for c in cells], move=names, visits=vi,
            value=np.divide(wi, vi, out=np.zeros_like(wi), where=vi > 0), share=vi / root_v,
            size=4 + 26 * np.sqrt(vi / vmax), color=["#d62728" if best_i in g else "#1f77b4" for g in groups])
        return best

    @property
    def layout(self):
        right = [self.board_fig] if self.board_fig is not None else []
        when = ("live: one point per time bin of the telemetry received so far" if self.data.source == "live"
                else "one point per time bin of the replay, up to the time slider")
        return column(self.summary, row(column(self.rate_fig, self.flight_fig), *right),
                      caption("Rates are per second of run time (wall time for the engine, simulated time for "
                              f"the simulator), {when}."))


def board_when(d: RunData, t: float | None) -> str:
    """When the board's snapshot was taken, or why there is none (the title of the board)."""
    times = d.tree_times()
    if not len(times):
        return (": waiting for the ranks' first tree snapshot" if d.source == "live"
                else ": no tree snapshot in this trace")
    t1 = d.t_end if t is None else t
    i = int(np.searchsorted(times, t1 + 1e-9, side="right")) - 1
    if i < 0:
        return f": none yet (first snapshot at t = {fmt_s(float(times[0]))})"
    return f" (snapshot at t = {fmt_s(float(times[i]))})"


def describe_config(m: dict, n_search: int, n_bcast: int) -> str:
    """ "engine run of treesplit on go 9, 2 search + 1 broadcast rank, 2 threads per rank" """
    game = f"{m.get('game')} {m.get('board') or ''}".strip()
    threads = m.get("threads")
    return (f"{m.get('runtime', '?')} run of <b>{m.get('algo', '?')}</b> on {game}, {n_search:,} search + "
            f"{plural(n_bcast, 'broadcast rank')}"
            + (f", {plural(int(threads), 'thread')} per rank" if threads else ""))


def run_summary(d: RunData, k: int, best: str | None) -> str:
    """The overview's first lines: what the run is, and where it stands at the replay's time (or now, live)."""
    m = d.meta
    if d.source == "live" and m.get("algo", "?") == "?":
        return (f"<b>{d.label}</b>: waiting for the first telemetry record (the ranks send one every 0.2 s "
                "once the search starts).")
    total = float(d.sims[:k].sum())
    span = min(k * d.bin_s, d.t_end)
    head = f"<b>{d.label}</b>: {describe_config(m, d.n_search, d.n_bcast)}."
    if d.final:
        f = d.final
        return (head + f"<br><b>Finished at t = {fmt_s(f['t_end'])}: {f['sims']:,} simulations "
                f"({f['sims_per_s']:,.0f}/s), move {f['move']}.</b>")
    now = "So far" if d.source == "live" else "At"
    return (head + f"<br>{now} t = {fmt_s(span)}: {total:,.0f} simulations "
            f"({total / span if span else 0:,.0f}/s), {float(d.playouts[:k].sum()):,.0f} playouts, "
            f"{float(d.in_flight[k - 1]) if k else 0:,.0f} in flight."
            + (f" Best move: <b>{best}</b>." if best else ""))
