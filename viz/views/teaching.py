"""Teaching: a recorded run stepped one event at a time, built around one simulation, in the style of the HPC
timeline tools (Vampir, Paraver, Perfetto).

Left, the timeline: one lane per thread (each rank's IO thread, then its workers; search ranks first, the
broadcast ranks set apart below them), work packages as boxes on their thread's lane, messages as labelled
arrows (kind, bytes) from the sender's IO thread to the receiver's, which alone call MPI. Right, the ranks as
boxes on one circle (search ranks on one arc, broadcast ranks on the other), so an arrow between two ranks
never crosses a third; the messages in flight at the current event fly between them, and under each rank its
node counter counts the EXPAND packages it has run so far. "Follow simulation N" highlights that
simulation's packages and messages; the buttons step through its events, its messages, or on to the next
simulation. Every event gets one plain sentence (viz.teaching_text). Any part of a long run can be shown:
the timeline draws only the events near the current one.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from bokeh.layouts import column, row
from bokeh.models import (Arrow, Button, ColumnDataSource, Div, HoverTool, NormalHead, Range1d, Slider, Span,
                          Spinner, Toggle)

from viz.rundata import RunData, lane_label
from viz.teaching_text import message_sentence, package_sentence, rank_name
from viz.views.base import View
from viz.views.common import fmt_s, make_figure, plural

PKG_COLORS = {"select": "#1f77b4", "expand": "#9467bd", "playout": "#ff7f0e", "update": "#2ca02c",
              "sync": "#8c564b", "bcast": "#d62728", "io": "#bbbbbb"}
MSG_COLORS = {"MOVE": "#1f77b4", "UPDATE": "#2ca02c", "SYNC": "#8c564b", "BCAST": "#d62728", "DUP": "#e377c2",
              "PLAYOUT_FWD": "#ff7f0e", "PLAYOUT_RESULT": "#bcbd22", "CONTROL": "#7f7f7f", "MERGE": "#17becf",
              "JOB": "#9467bd", "RESULT": "#8c564b"}
IDLE = "#f2f2f2"
AROUND = 12  # events shown on either side of the current one when no simulation is followed
MAX_DRAWN = 4000  # boxes or arrows drawn at most (a window of a huge run is thinned to its latest ones)
LABEL_ALL = 60  # up to this many arrows in the window, every one is labelled; above, the followed ones only
BCAST_GAP = 0.8  # extra space between the search ranks' lanes and the broadcast ranks'
TIMELINE_W, TOPO_W = 880, 400

_EMPTY_PK = pd.DataFrame({"t_start": [], "t_end": [], "rank": [], "worker": [], "kind": [], "sim_id": []})
_EMPTY_MS = pd.DataFrame({"t_send": [], "t_recv": [], "src": [], "dst": [], "kind": [], "bytes": [], "sim_id": []})


def rank_positions(n_search: int, n_bcast: int) -> np.ndarray:
    """(R, 2) places of the ranks on the unit circle: search ranks clockwise from the top, broadcast ranks
    together on the arc opposite. Points on a circle are in convex position, so the chord between two ranks
    passes no third one."""
    R = n_search + n_bcast
    if R == 1:
        return np.zeros((1, 2))
    a = math.pi / 2 - 2 * math.pi * np.arange(R) / R
    return np.stack([np.cos(a), np.sin(a)], axis=1)


def box_half(R: int) -> float:
    """Half the side of a rank's box on the circle: small enough that a chord between two other ranks
    (at least 1 - cos(2 pi / R) from any third rank's centre) stays clear of it."""
    if R <= 2:
        return 0.22
    return float(min(0.2, 0.45 * (1 - math.cos(2 * math.pi / R))))


def segment_hits_box(p0: np.ndarray, p1: np.ndarray, centre: np.ndarray, half: float) -> bool:
    """Whether the segment p0-p1 enters the axis-aligned square of half side `half` around centre (the
    slab method; used by the tests of the layout)."""
    lo, hi = centre - half, centre + half
    d = p1 - p0
    t0, t1 = 0.0, 1.0
    for k in range(2):
        if abs(d[k]) < 1e-12:
            if p0[k] < lo[k] or p0[k] > hi[k]:
                return False
            continue
        a, b = (lo[k] - p0[k]) / d[k], (hi[k] - p0[k]) / d[k]
        t0, t1 = max(t0, min(a, b)), min(t1, max(a, b))
        if t0 > t1:
            return False
    return True


class Teaching(View):
    name = "teaching"
    title = "Teaching"

    def __init__(self, data: RunData, **kw):
        super().__init__(data, **kw)
        self.boxes = ColumnDataSource(dict(left=[], right=[], bottom=[], top=[], color=[], kind=[], sim=[], rank=[],
                                           worker=[], lane=[], line_color=[], line_width=[], alpha=[]),
                                      name="teaching.boxes")
        self.arrows = ColumnDataSource(dict(x_start=[], y_start=[], x_end=[], y_end=[], mx=[], my=[], kind=[],
                                            color=[], src=[], dst=[], src_lane=[], dst_lane=[], bytes=[], sim=[],
                                            width=[], label=[], alpha=[]), name="teaching.arrows")
        self.ranks = ColumnDataSource(dict(x=[], y=[], ty=[], ly=[], w=[], name=[], nodes=[], info=[], fill=[]),
                                      name="teaching.ranks")
        self.cores = ColumnDataSource(dict(x=[], y=[], size=[], rank=[], worker=[], color=[], kind=[], sim=[],
                                           label=[]), name="teaching.cores")
        self.flight = ColumnDataSource(dict(x_start=[], y_start=[], x_end=[], y_end=[], mx=[], my=[], kind=[],
                                            color=[], label=[], width=[], sim=[]), name="teaching.flight")
        self.header = Div(text="", width=TIMELINE_W + TOPO_W, name="teaching.header")
        self.path = Div(text="", width=TIMELINE_W + TOPO_W, name="teaching.path")
        self.log = Div(text="", width=TIMELINE_W + TOPO_W, styles={"font-size": "9pt"})
        self.legend = Div(text="", width=TIMELINE_W + TOPO_W)
        self._make_timeline()
        self._make_topology()
        self.slider = Slider(title="event", start=1, end=2, value=1, step=1, width=420, name="teaching.step")
        self.prev_btn = Button(label="◀ previous", width=95, name="teaching.prev")
        self.next_btn = Button(label="next event ▶", width=105, name="teaching.next")
        self.next_msg_btn = Button(label="next message ▶", width=125, name="teaching.next_message")
        self.next_sim_btn = Button(label="next simulation ▶▶", width=150, name="teaching.next_simulation")
        self.play_btn = Toggle(label="▶ play", width=70)
        self.follow_input = Spinner(title="follow simulation (-1: none)", low=-1, step=1, value=-1, width=170,
                                    name="teaching.follow")
        self._cb = None
        if not self.static:
            self.slider.on_change("value", lambda a, o, n: self.show_step(int(n) - 1))
            self.prev_btn.on_click(lambda: self.step_by(-1))
            self.next_btn.on_click(lambda: self.step_by(+1))
            self.next_msg_btn.on_click(self.next_message)
            self.next_sim_btn.on_click(self.next_simulation)
            self.play_btn.on_change("active", lambda a, o, n: self._play(n))
            self.follow_input.on_change("value", lambda a, o, n: self.follow(-1 if n is None else int(n)))
        self.step = 0
        self.followed = -1
        self._prepare(data)
        self.update(data, t=None)

    # --- figures ---------------------------------------------------------------------------------
    def _make_timeline(self) -> None:
        p = make_figure(
            "Timeline: threads, packages, messages", "One lane per thread: each rank's IO thread (the only one "
            "that sends and receives), then its workers; broadcast ranks below the search ranks. A box is a work "
            "package on the thread that ran it (colour: its kind, see the legend above); an arrow is a message "
            "from the sender's IO thread at its send time to the receiver's at its receive time, labelled with "
            "its kind and size. The followed simulation's boxes and arrows are drawn bold, the rest pale; the "
            "black line is the current event.", "time (s)", "thread (rank, IO or worker)", x_range=Range1d(0, 1),
            y_range=Range1d(-1, 1),
            width=TIMELINE_W, height=300, webgl=False, tools="xpan,xwheel_zoom,reset,save")
        p.ygrid.visible = False
        bx = p.quad(left="left", right="right", bottom="bottom", top="top", fill_color="color", line_color="line_color",
                    line_width="line_width", fill_alpha="alpha", line_alpha="alpha", source=self.boxes)
        p.add_layout(Arrow(end=NormalHead(size=7, line_color="color", fill_color="color"), source=self.arrows,
                           x_start="x_start", y_start="y_start", x_end="x_end", y_end="y_end", line_color="color",
                           line_width="width", line_alpha="alpha"))
        p.text("mx", "my", text="label", source=self.arrows, text_font_size="8pt", text_align="center",
               text_baseline="bottom", text_color="color", text_alpha="alpha", y_offset=-2)
        mid = p.scatter("mx", "my", source=self.arrows, size=6, color="color", alpha="alpha")
        p.add_tools(HoverTool(renderers=[bx], tooltips=[("package", "@kind"), ("thread", "@lane"),
                                                        ("simulation", "@sim"), ("from", "@left{0.000000} s"),
                                                        ("to", "@right{0.000000} s")]))
        p.add_tools(HoverTool(renderers=[mid], tooltips=[("message", "@kind"), ("from -> to", "@src_lane -> @dst_lane"),
                                                         ("size", "@bytes{0,0} bytes"), ("simulation", "@sim")]))
        self.now_line = Span(location=0, dimension="height", line_color="black", line_width=1.5, line_dash="dashed")
        p.add_layout(self.now_line)
        self.timeline = p

    def _make_topology(self) -> None:
        p = make_figure(
            "Ranks and messages in flight", "The ranks on one circle (search ranks on one arc, broadcast ranks "
            "on the other, so no arrow passes a rank it does not visit). Inside a rank, a square per thread (IO "
            "first), coloured while it runs a package. Arrows: the messages in flight at the current event, "
            "labelled with kind and size. Under each search rank: the nodes it has expanded so far.", "", "",
            x_range=Range1d(-1.55, 1.55), y_range=Range1d(-1.55, 1.55), width=TOPO_W, height=TOPO_W, webgl=False,
            tools="save")
        p.grid.visible = False
        p.axis.visible = False
        p.rect("x", "y", width="w", height="w", source=self.ranks, fill_color="fill", line_color="#444")
        p.text("x", "ty", text="name", source=self.ranks, text_align="center", text_baseline="bottom",
               text_font_size="8pt", text_font_style="bold")
        p.text("x", "ly", text="info", source=self.ranks, text_align="center", text_baseline="top",
               text_font_size="8pt", text_color="#333")
        cr = p.scatter("x", "y", size="size", marker="square", color="color", line_color="#555", source=self.cores)
        p.add_layout(Arrow(end=NormalHead(size=8, line_color="color", fill_color="color"), source=self.flight,
                           x_start="x_start", y_start="y_start", x_end="x_end", y_end="y_end", line_color="color",
                           line_width="width"))
        p.text("mx", "my", text="label", source=self.flight, text_font_size="8pt", text_align="center",
               text_color="color")
        p.add_tools(HoverTool(renderers=[cr], tooltips=[("rank", "@rank"), ("thread", "@label"),
                                                        ("package", "@kind"), ("simulation", "@sim")]))
        self.topology = p

    # --- the run as events -----------------------------------------------------------------------
    def _prepare(self, d: RunData) -> None:
        pk = d.packages if d.packages is not None else _EMPTY_PK
        ms = d.messages if d.messages is not None else _EMPTY_MS
        self.pk, self.ms = pk, ms
        self.recorded = d.packages is not None
        self.p_ts, self.p_te = pk["t_start"].to_numpy(np.float64), pk["t_end"].to_numpy(np.float64)
        self.p_rank, self.p_worker = pk["rank"].to_numpy().astype(np.int64), pk["worker"].to_numpy().astype(np.int64)
        self.p_kind = pk["kind"].astype(str).to_numpy() if len(pk) else np.zeros(0, object)
        self.p_sim = pk["sim_id"].to_numpy().astype(np.int64)
        self.m_ts, self.m_tr = ms["t_send"].to_numpy(np.float64), ms["t_recv"].to_numpy(np.float64)
        self.m_src, self.m_dst = ms["src"].to_numpy().astype(np.int64), ms["dst"].to_numpy().astype(np.int64)
        self.m_kind = ms["kind"].astype(str).to_numpy() if len(ms) else np.zeros(0, object)
        self.m_bytes, self.m_sim = ms["bytes"].to_numpy().astype(np.int64), ms["sim_id"].to_numpy().astype(np.int64)
        self.legend.text = _legend_html(set(self.p_kind.tolist()), set(self.m_kind.tolist()))
        self.p_maxdur = float((self.p_te - self.p_ts).max()) if len(pk) else 0.0
        self.m_maxlat = float((self.m_tr - self.m_ts).max()) if len(ms) else 0.0
        # events: package starts and message sends in time order (a package before a message at one instant)
        t = np.concatenate([self.p_ts, self.m_ts])
        is_msg = np.concatenate([np.zeros(len(pk), bool), np.ones(len(ms), bool)])
        order = np.lexsort((is_msg, t))
        self.ev_t, self.ev_msg = t[order], is_msg[order]
        self.ev_row = np.concatenate([np.arange(len(pk)), np.arange(len(ms))])[order]
        self.ev_sim = np.concatenate([self.p_sim, self.m_sim])[order]
        # simulations in the order they start
        sims = self.ev_sim[self.ev_sim >= 0]
        _, first = np.unique(sims, return_index=True)
        self.sim_order = sims[np.sort(first)]
        # lanes: every rank's IO thread (messages leave and arrive there), then the workers its packages ran on
        self.M, R = d.n_search, max(d.n_ranks, 1)
        threads: list[set[int]] = [{-1} for _ in range(R)]
        if len(pk):
            seen = np.unique(np.stack([self.p_rank, self.p_worker]), axis=1)
            for r, w in seen.T.tolist():
                if 0 <= r < R:
                    threads[r].add(w)
        self.lane_of: dict[tuple[int, int], int] = {}
        ys, labels, y = [], [], 0.0
        for r in range(R):
            if r == self.M and r > 0:
                y -= BCAST_GAP
            for w in sorted(threads[r]):
                self.lane_of[(r, w)] = len(ys)
                ys.append(y)
                labels.append(f"{'rank' if r < self.M else 'bcast'} {r} " + ("IO" if w < 0 else f"w{w}"))
                y -= 1.0
        self.lane_y = np.array(ys)
        self.lane_names = [lane_label(r, w) for (r, w) in self.lane_of]
        self.threads = threads
        tl = self.timeline
        tl.yaxis.ticker = list(self.lane_y)
        tl.yaxis.major_label_overrides = {float(v): lab for v, lab in zip(self.lane_y, labels)}
        tl.y_range.start, tl.y_range.end = float(self.lane_y.min(initial=0)) - 0.7, 0.7
        tl.height = int(min(640, max(240, 70 + 26 * len(ys))))
        # node counters: EXPAND packages per rank, by start time
        ex = self.p_kind == "expand"
        self.expand_times = [np.sort(self.p_ts[ex & (self.p_rank == r)]) for r in range(R)]
        self.n_expand = int(ex.sum())
        self._place_ranks(R)
        n = len(self.ev_t)
        self.slider.end = max(n, 2)
        self.slider.disabled = n < 2
        self.follow_input.high = int(self.sim_order.max()) if len(self.sim_order) else -1
        self.followed = self._default_follow()
        self._follow_events = self._events_of(self.followed)
        self.follow_input.value = self.followed

    def _default_follow(self) -> int:
        """A simulation worth following: the first that moved between ranks (a MOVE), else the first one."""
        if not len(self.sim_order):
            return -1
        moved = self.m_sim[(self.m_kind == "MOVE") & (self.m_sim >= 0)]
        if len(moved):
            firsts = {int(s): i for i, s in enumerate(self.sim_order.tolist())}
            return int(min(set(moved.tolist()), key=lambda s: firsts.get(s, 1 << 60)))
        return int(self.sim_order[0])

    def _events_of(self, sim: int) -> np.ndarray:
        return np.flatnonzero(self.ev_sim == sim) if sim >= 0 else np.zeros(0, np.int64)

    def _place_ranks(self, R: int) -> None:
        pos = rank_positions(self.M, R - self.M)
        self.pos, self.half = pos, box_half(R)
        h = self.half
        tp = self.topology
        tp.y_range.start, tp.y_range.end = float(pos[:, 1].min()) - h - 0.35, float(pos[:, 1].max()) + h + 0.3
        tp.height = int(min(TOPO_W, max(220, TOPO_W * (tp.y_range.end - tp.y_range.start) / 3.1)))
        cx, cy, sz, rk, wk, lab = [], [], [], [], [], []
        for r in range(R):
            ws = sorted(self.threads[r])
            step = 2 * h / (len(ws) + 1)
            for j, w in enumerate(ws):
                cx.append(pos[r, 0] - h + step * (j + 1))
                cy.append(pos[r, 1])
                sz.append(max(4.0, min(14.0, step * TOPO_W / 3.1 * 0.8)))
                rk.append(r)
                wk.append(w)
                lab.append("IO thread" if w < 0 else f"worker {w}")
        self.core_x, self.core_y, self.core_size = np.array(cx), np.array(cy), np.array(sz)
        self.core_rank, self.core_worker, self.core_label = np.array(rk, np.int64), np.array(wk, np.int64), lab
        self.core_of = {(r, w): i for i, (r, w) in enumerate(zip(rk, wk))}

    @property
    def n_steps(self) -> int:
        return len(self.ev_t)

    # --- navigation ------------------------------------------------------------------------------
    def update(self, data: RunData | None = None, t: float | None = None, window: float | None = None) -> None:
        if data is not None and data is not self.data:
            self.data = data
            self._prepare(data)
            self.t = None
        if t is None or not self.n_steps:
            if self.t is None:  # a lesson starts at the followed simulation's first event
                self.show_step(int(self._follow_events[0]) if len(self._follow_events) else 0)
        elif t != self.t:  # the replay's time slider moved: the last event at or before it
            self.show_step(int(np.searchsorted(self.ev_t, t, side="right")) - 1)
        self.t, self.window = t, window

    def follow(self, sim: int) -> None:
        """Highlight simulation `sim` (-1: none) and go to its first event."""
        self.followed = int(sim)
        self._follow_events = self._events_of(self.followed)
        if self.follow_input.value != self.followed:
            self.follow_input.value = self.followed
        self.show_step(int(self._follow_events[0]) if len(self._follow_events) else self.step)

    def step_by(self, delta: int) -> None:
        """The followed simulation's previous/next event (any event's when none is followed)."""
        ev = self._follow_events
        if len(ev):
            j = int(np.searchsorted(ev, self.step, side="right" if delta > 0 else "left"))
            j = j if delta > 0 else j - 1
            if 0 <= j < len(ev):
                self.show_step(int(ev[j]))
            return
        self.show_step(self.step + delta)

    def next_message(self) -> None:
        """The next message event (of the followed simulation, if one is followed)."""
        cand = self._follow_events if len(self._follow_events) else np.arange(self.n_steps)
        later = cand[(cand > self.step) & self.ev_msg[cand]] if len(cand) else cand
        if len(later):
            self.show_step(int(later[0]))

    def next_simulation(self) -> None:
        """Follow the simulation that started after the followed one (or after the current event)."""
        if not len(self.sim_order):
            return
        if self.followed >= 0 and self.followed in set(self.sim_order.tolist()):
            i = int(np.flatnonzero(self.sim_order == self.followed)[0]) + 1
        else:
            started = self.ev_sim[: self.step + 1]
            i = len(np.unique(started[started >= 0]))
        if i < len(self.sim_order):
            self.follow(int(self.sim_order[i]))

    # --- drawing ---------------------------------------------------------------------------------
    def show_step(self, i: int) -> None:
        n = self.n_steps
        i = int(np.clip(i, 0, max(n - 1, 0)))
        self.step = i
        if self.slider.value != i + 1:
            self.slider.value = i + 1
        if not n:
            for src in (self.boxes, self.arrows, self.cores, self.flight):
                src.data = {k: [] for k in src.data}
            self._update_ranks(0.0)
            self.header.text = self._empty_text()
            self.path.text = self.log.text = ""
            return
        ti = float(self.ev_t[i])
        a, b = self._window(i)
        self.timeline.x_range.start, self.timeline.x_range.end = a, b
        self.now_line.location = ti
        self._draw_boxes(a, b, i)
        self._draw_arrows(a, b, i)
        self._draw_topology(ti, i)
        self._update_ranks(ti)
        self._update_text(i, ti)

    def _window(self, i: int) -> tuple[float, float]:
        """The timeline's time span: the followed simulation's life if the event is in it, else the events
        around the current one."""
        ev = self._follow_events
        if len(ev) and ev[0] <= i <= ev[-1]:
            rows = ev
        else:
            rows = np.arange(max(0, i - AROUND), min(self.n_steps, i + AROUND + 1))
        a = float(self.ev_t[rows].min())
        ends = [self.ev_t[rows].max()]
        pr, mr = self.ev_row[rows][~self.ev_msg[rows]], self.ev_row[rows][self.ev_msg[rows]]
        if len(pr):
            ends.append(self.p_te[pr].max())
        if len(mr):
            ends.append(self.m_tr[mr].max())
        b = float(max(ends))
        pad = max((b - a) * 0.06, 1e-7)
        return a - pad, b + pad

    def _draw_boxes(self, a: float, b: float, i: int) -> None:
        lo = int(np.searchsorted(self.p_ts, a - self.p_maxdur, side="left"))
        hi = int(np.searchsorted(self.p_ts, b, side="right"))
        idx = np.arange(lo, hi)
        idx = idx[self.p_te[idx] >= a][-MAX_DRAWN:]
        lanes = np.array([self.lane_of.get((r, w), -1) for r, w in zip(self.p_rank[idx].tolist(),
                                                                       self.p_worker[idx].tolist())], np.int64)
        idx, lanes = idx[lanes >= 0], lanes[lanes >= 0]
        y = self.lane_y[lanes] if len(lanes) else np.zeros(0)
        kinds = self.p_kind[idx]
        mine = self.p_sim[idx] == self.followed if self.followed >= 0 else np.ones(len(idx), bool)
        cur = (idx == self.ev_row[i]) & (not self.ev_msg[i])
        self.boxes.data = dict(
            left=self.p_ts[idx], right=np.maximum(self.p_te[idx], self.p_ts[idx] + (b - a) * 2e-3), bottom=y - 0.38,
            top=y + 0.38, color=[PKG_COLORS.get(k, "#333") for k in kinds], kind=list(kinds), sim=self.p_sim[idx],
            rank=self.p_rank[idx], worker=self.p_worker[idx], lane=[self.lane_names[k] for k in lanes.tolist()],
            line_color=np.where(cur, "black", np.where(mine, "#333", "#999")),
            line_width=np.where(cur, 3.0, np.where(mine & (self.followed >= 0), 1.5, 0.5)),
            alpha=np.where(mine, 1.0, 0.25))

    def _draw_arrows(self, a: float, b: float, i: int) -> None:
        lo = int(np.searchsorted(self.m_ts, a - self.m_maxlat, side="left"))
        hi = int(np.searchsorted(self.m_ts, b, side="right"))
        idx = np.arange(lo, hi)
        idx = idx[self.m_tr[idx] >= a][-MAX_DRAWN:]
        sl = np.array([self.lane_of.get((r, -1), -1) for r in self.m_src[idx].tolist()], np.int64)
        dl = np.array([self.lane_of.get((r, -1), -1) for r in self.m_dst[idx].tolist()], np.int64)
        ok = (sl >= 0) & (dl >= 0)
        idx, sl, dl = idx[ok], sl[ok], dl[ok]
        x0, x1 = self.m_ts[idx], self.m_tr[idx]
        y0, y1 = (self.lane_y[sl], self.lane_y[dl]) if len(idx) else (np.zeros(0), np.zeros(0))
        kinds = self.m_kind[idx]
        mine = self.m_sim[idx] == self.followed if self.followed >= 0 else np.ones(len(idx), bool)
        cur = (idx == self.ev_row[i]) & bool(self.ev_msg[i])
        # labels for the followed simulation's messages and the current one (every message's in a small window
        # when none is followed): overlapping labels of unrelated messages would hide them
        labelled = mine | cur if self.followed >= 0 or len(idx) > LABEL_ALL else np.ones(len(idx), bool)
        labels = [f"{k} {nb:,} B" if on else "" for k, nb, on in zip(kinds, self.m_bytes[idx].tolist(), labelled)]
        self.arrows.data = dict(
            x_start=x0, y_start=y0, x_end=x1, y_end=y1, mx=(x0 + x1) / 2, my=(y0 + y1) / 2, kind=list(kinds),
            color=[MSG_COLORS.get(k, "#555") for k in kinds], src=self.m_src[idx], dst=self.m_dst[idx],
            src_lane=[self.lane_names[k] for k in sl.tolist()], dst_lane=[self.lane_names[k] for k in dl.tolist()],
            bytes=self.m_bytes[idx], sim=self.m_sim[idx], width=np.where(cur, 3.5, np.where(mine, 2.0, 1.0)),
            label=labels, alpha=np.where(mine | cur, 1.0, 0.3))

    def _draw_topology(self, ti: float, i: int) -> None:
        # threads: the package each one runs at ti (the current event's package included)
        color = np.full(len(self.core_x), IDLE, dtype=object)
        kind = np.full(len(self.core_x), "idle", dtype=object)
        sim = np.full(len(self.core_x), -1, np.int64)
        lo = int(np.searchsorted(self.p_ts, ti - self.p_maxdur, side="left"))
        hi = int(np.searchsorted(self.p_ts, ti, side="right"))
        run = np.arange(lo, hi)
        run = run[self.p_te[run] > ti]
        if not self.ev_msg[i]:
            run = np.append(run, self.ev_row[i])
        for j in run.tolist():
            c = self.core_of.get((int(self.p_rank[j]), int(self.p_worker[j])))
            if c is not None:
                k = str(self.p_kind[j])
                color[c], kind[c], sim[c] = PKG_COLORS.get(k, "#333"), k, int(self.p_sim[j])
        self.cores.data = dict(x=self.core_x, y=self.core_y, size=self.core_size, rank=self.core_rank,
                               worker=self.core_worker, color=list(color), kind=list(kind), sim=sim,
                               label=self.core_label)
        # messages in flight at ti, and the current one
        lo = int(np.searchsorted(self.m_ts, ti - self.m_maxlat, side="left"))
        hi = int(np.searchsorted(self.m_ts, ti, side="right"))
        fly = np.arange(lo, hi)
        fly = fly[self.m_tr[fly] > ti]
        cur_row = int(self.ev_row[i]) if self.ev_msg[i] else -1
        if cur_row >= 0 and cur_row not in set(fly.tolist()):
            fly = np.append(fly, cur_row)
        fly = fly[self.m_src[fly] != self.m_dst[fly]][-200:]
        R = len(self.pos)
        s, d = np.clip(self.m_src[fly], 0, R - 1), np.clip(self.m_dst[fly], 0, R - 1)
        p0, p1 = self.pos[s], self.pos[d]
        v = p1 - p0
        norm = np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)
        u = v / norm
        perp = np.stack([-u[:, 1], u[:, 0]], axis=1) * self.half * 0.25  # the two directions side by side
        gap = self.half * 1.45
        a, b = p0 + u * gap + perp, p1 - u * gap + perp
        kinds = self.m_kind[fly]
        cur = fly == cur_row
        self.flight.data = dict(x_start=a[:, 0], y_start=a[:, 1], x_end=b[:, 0], y_end=b[:, 1],
                                mx=(a[:, 0] + b[:, 0]) / 2 + perp[:, 0], my=(a[:, 1] + b[:, 1]) / 2 + perp[:, 1],
                                kind=list(kinds), color=[MSG_COLORS.get(k, "#555") for k in kinds],
                                label=[f"{k} {nb:,} B" for k, nb in zip(kinds, self.m_bytes[fly].tolist())],
                                width=np.where(cur, 3.5, 1.5), sim=self.m_sim[fly])

    def _update_ranks(self, ti: float) -> None:
        R, M = len(self.pos), self.M
        nodes = np.array([int(np.searchsorted(e, ti, side="right")) for e in self.expand_times], np.int64)
        self.ranks.data = dict(x=self.pos[:, 0], y=self.pos[:, 1], ty=self.pos[:, 1] + self.half + 0.03,
                               ly=self.pos[:, 1] - self.half - 0.04,
                               w=np.full(R, 2 * self.half), name=[rank_name(r, M).replace("broadcast", "bcast")
                                                                 for r in range(R)],
                               nodes=nodes, info=[plural(int(nodes[r]), "node") if r < M else "" for r in range(R)],
                               fill=["#ffffff" if r < M else "#fff4e6" for r in range(R)])

    # --- words -----------------------------------------------------------------------------------
    def sentence(self, i: int) -> str:
        j = int(self.ev_row[i])
        algo = str(self.data.meta.get("algo", ""))
        if self.ev_msg[i]:
            return message_sentence(str(self.m_kind[j]), int(self.m_src[j]), int(self.m_dst[j]),
                                    int(self.m_bytes[j]), int(self.m_sim[j]), self.M, algo)
        return package_sentence(str(self.p_kind[j]), int(self.p_rank[j]), int(self.p_worker[j]),
                                int(self.p_sim[j]), self.M, algo)

    def _short(self, i: int) -> str:
        j = int(self.ev_row[i])
        if self.ev_msg[i]:
            k = str(self.m_kind[j])
            return (f"<span style='color:{MSG_COLORS.get(k, '#555')}'>{k}</span> "
                    f"{self.m_src[j]}&rarr;{self.m_dst[j]}")
        k = str(self.p_kind[j])
        return f"<span style='color:{PKG_COLORS.get(k, '#333')}'>{k}</span>@{self.p_rank[j]}"

    def _empty_text(self) -> str:
        if self.data.source == "live":
            return ("<b>The teaching view steps through a recorded trace</b>, and live telemetry only carries sums. "
                    "Record one with <code>treesplit search ... --trace DIR</code> (or <code>treesplit simulate "
                    "... --trace DIR</code>), then open it with <code>treesplit dashboard --trace DIR</code>; a "
                    "small run (e.g. <code>--sims 40</code>) makes a good lesson.")
        return "This trace has no packages or messages to step through."

    def _update_text(self, i: int, ti: float) -> None:
        n = self.n_steps
        f = self.followed
        ev = self._follow_events
        where = ""
        if len(ev):
            k = int(np.searchsorted(ev, i))
            where = (f" &mdash; simulation {f}: event {k + 1} of {len(ev)}" if k < len(ev) and ev[k] == i
                     else f" &mdash; following simulation {f}")
        self.header.text = (f"<b>Event {i + 1:,} of {n:,}</b>, t = {fmt_s(ti)}{where}<br>"
                            f"<span style='font-size:12pt'>{self.sentence(i)}</span>")
        if len(ev):
            steps = " &rarr; ".join(f"<b>{self._short(e)}</b>" if e == i else self._short(e) for e in ev[:80].tolist())
            more = f" &hellip; ({len(ev) - 80} more)" if len(ev) > 80 else ""
            self.path.text = f"<b>Simulation {f}'s path:</b> {steps}{more}"
        else:
            self.path.text = "Follow a simulation (its number above) to see its whole path."
        lo = max(0, i - 6)
        items = [f"<li{' style=font-weight:bold' if j == i else ''}>#{j + 1} {fmt_s(float(self.ev_t[j]))}: "
                 f"{self.sentence(j)}</li>" for j in range(i, lo - 1, -1)]
        self.log.text = ("<b>Latest events</b><ul style='padding-left:1em;margin:2px 0'>" + "".join(items) + "</ul>")

    # --- play ------------------------------------------------------------------------------------
    def _play(self, on: bool) -> None:
        doc = self.slider.document
        if doc is None:
            return
        if on and self._cb is None:
            self.play_btn.label = "❚❚ pause"
            self._cb = doc.add_periodic_callback(self._tick, 400)
        elif not on and self._cb is not None:
            self.play_btn.label = "▶ play"
            doc.remove_periodic_callback(self._cb)
            self._cb = None

    def _tick(self) -> None:
        before = self.step
        self.step_by(+1)
        if self.step == before:
            self.play_btn.active = False

    @property
    def layout(self):
        if self.data.source == "live":  # nothing to step through: the header says how to record a trace
            return column(self.header)
        controls = [] if self.static else [row(self.prev_btn, self.next_btn, self.next_msg_btn, self.next_sim_btn,
                                               self.play_btn, self.follow_input, self.slider)]
        return column(*controls, self.header, self.legend, row(self.timeline, self.topology), self.path, self.log)


def _legend_html(packages: set[str], messages: set[str]) -> str:
    """The colours of the package and message kinds this run has."""
    sw = ("<span style='display:inline-block;width:11px;height:11px;background:{c};border:1px solid #555;"
          "margin:0 3px 0 9px;vertical-align:middle'></span>{k}")
    ar = "<span style='color:{c};font-weight:bold;margin-left:9px'>&#10230;</span> {k}"
    pk = "".join(sw.format(c=c, k=k) for k, c in PKG_COLORS.items() if k in packages)
    ms = "".join(ar.format(c=c, k=k) for k, c in MSG_COLORS.items() if k in messages)
    return f"<div style='font-size:9pt'><b>packages:</b>{pk} &nbsp; <b>messages:</b>{ms}</div>"
