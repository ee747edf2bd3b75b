"""Load balance: who is busy when, where work queues up, and how much playout work is forwarded."""

from __future__ import annotations

import warnings

import numpy as np
from bokeh.layouts import column, row
from bokeh.models import ColorBar, ColumnDataSource, HoverTool, LinearColorMapper, Range1d
from bokeh.palettes import Viridis256

from viz.rundata import RunData
from viz.views.base import View
from viz.views.common import (RankBars, caption, integer_ticks, make_figure, mark_ending, window_bounds,
                               window_caption)

FORWARD_KINDS = ["PLAYOUT_FWD"]


class LoadBalance(View):
    name = "load"
    title = "Load balance"

    def __init__(self, data: RunData, **kw):
        super().__init__(data, **kw)
        self.mapper = LinearColorMapper(palette=Viridis256, low=0.0, high=1.0, nan_color="rgba(0,0,0,0)")
        x = self.time_range()
        live = data.source == "live"  # rows arrive with the telemetry: room for a few from the start
        self.heat = ColumnDataSource(dict(image=[], x=[], y=[], dw=[], dh=[]), name="load.heat")
        self.worker_heat = ColumnDataSource(dict(image=[], x=[], y=[], dw=[], dh=[]), name="load.worker_heat")
        self.rank_fig = self._heat_fig(
            "Busy fraction per rank", "Mean busy fraction of each rank's workers per time bin (from the ranks' "
            "samples): 1 = every worker computing all the time. A bright row is a hot spot, a dark one an idle "
            "rank.", "rank (id)", x, self.heat, max(data.n_ranks, 6 if live else 1))
        self.worker_fig = self._heat_fig(
            "Busy fraction per worker", "Fraction of each time bin that each thread spent working: rows are "
            "rank.worker for a worker thread and rank.io for the rank's IO thread (the packages it runs itself with "
            "one thread per rank, and its handling of arrived messages). Recorded: from packages.parquet; live: "
            "from the ranks' telemetry.", "thread (rank.worker, rank.io)", x,
            self.worker_heat, max(len(data.worker_rows), 12 if live else 1))
        self.busy = RankBars("Mean busy fraction (window)", "Mean busy fraction of each rank over the time "
                             "window.", "busy fraction (0-1)", "busy", name="load.busy")
        self.queue = RankBars("Mean queue length (window)", "Mean length of each rank's work queue (MOVE "
                              "messages waiting) over the time window.", "queue length (messages)", "queue",
                              color="#dd8452", name="load.queue")
        self.forward = RankBars("Playouts forwarded (window)", "PLAYOUT_FWD messages sent by each rank in the "
                                "time window: an overloaded rank (more than K S_par / M MOVE messages) forwards "
                                "playouts to random ranks.", "forwarded playouts (count)", "forwarded",
                                color="#55a868", name="load.forward")
        self.update(data)

    def _heat_fig(self, title, help_text, y_label, x, source, rows):
        p = make_figure(title, help_text, "time (s)", y_label, x_range=x, y_range=Range1d(-0.5, rows - 0.5),
                        height=min(520, 150 + 12 * rows), width=760, webgl=False)
        img = p.image(image="image", x="x", y="y", dw="dw", dh="dh", source=source, color_mapper=self.mapper)
        p.add_tools(HoverTool(renderers=[img], tooltips=[("time", "$x{0.[0000]} s"), (y_label, "$y{0}"),
                                                         ("busy fraction", "@image{0.000}")]))
        p.add_layout(ColorBar(color_mapper=self.mapper, width=10, title="busy"), "right")
        integer_ticks(p.yaxis)
        p.grid.visible = False
        mark_ending(p, self.data)
        return p

    def update(self, data: RunData | None = None, t: float | None = None, window: float | None = None) -> None:
        d = self.data = data or self.data
        self.t, self.window = t, window
        self.time_range()
        t0, t1 = window_bounds(d, t, window)
        k = d.bins_upto(t1)
        k0 = 0 if not np.isfinite(t0) else min(d.bins_upto(t0), max(k - 1, 0))
        for src, arr, fig in ((self.heat, d.busy, self.rank_fig), (self.worker_heat, d.worker_busy, self.worker_fig)):
            rows = arr.shape[0]
            if k and rows:
                src.data = dict(image=[arr[:, :k]], x=[0.0], y=[-0.5], dw=[k * d.bin_s], dh=[float(rows)])
            else:
                src.data = dict(image=[], x=[], y=[], dw=[], dh=[])
            fig.y_range.end = max(rows, 1) - 0.5
        if len(d.worker_rows) <= 64:
            self.worker_fig.yaxis.ticker = list(range(len(d.worker_rows)))
            self.worker_fig.yaxis.major_label_overrides = {i: r for i, r in enumerate(d.worker_rows)}
        self.worker_fig.title.text = "Busy fraction per worker" + (
            "" if len(d.worker_rows) else (": waiting for the ranks' first per-thread figures" if d.source == "live"
                                           else ": no per-worker data (the trace has no packages)"))
        with warnings.catch_warnings():  # a rank with no sample in the window is all-nan: shown as 0
            warnings.simplefilter("ignore", RuntimeWarning)
            self.busy.set(np.nanmean(d.busy[:, k0:k], axis=1) if k > k0 else np.zeros(d.n_ranks))
            self.queue.set(np.nanmean(d.queue[:, k0:k], axis=1) if k > k0 else np.zeros(d.n_ranks))
        self.forward.set(d.sent_per_rank(t0, t1, FORWARD_KINDS))

    @property
    def layout(self):
        # (no nested Tabs: Bokeh 3.9 collapses a figure in Tabs inside a row, as the dashboard's layout is)
        return column(self.rank_fig, self.worker_fig, row(self.busy.fig, self.queue.fig, self.forward.fig),
                      caption("Bars: " + window_caption(self.data)))
