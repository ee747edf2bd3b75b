"""Teaching: a small run stepped event by event. Each rank is a box of cores; a core lights up (in its
package kind's colour) while it runs a work package; each message in flight is an arrow between ranks;
under each rank, its share of the tree grows and duplicated nodes appear. Works for any algorithm's trace
(root, leaf, tds, treesplit): it only draws packages and messages."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from bokeh.layouts import column, row
from bokeh.models import Arrow, Button, ColumnDataSource, Div, HoverTool, Range1d, Slider, Toggle, VeeHead

from viz.rundata import RunData
from viz.views.base import View
from viz.views.common import fmt_s, make_figure

MAX_EVENTS = 5000  # a teaching run is small; a big trace shows its first MAX_EVENTS events (and says so)
PKG_COLORS = {"select": "#1f77b4", "expand": "#9467bd", "playout": "#ff7f0e", "update": "#2ca02c",
              "sync": "#8c564b", "bcast": "#d62728", "io": "#7f7f7f"}
MSG_COLORS = {"MOVE": "#1f77b4", "UPDATE": "#2ca02c", "SYNC": "#8c564b", "BCAST": "#d62728", "DUP": "#e377c2",
              "PLAYOUT_FWD": "#ff7f0e", "PLAYOUT_RESULT": "#bcbd22"}
IDLE = "#eeeeee"
CORE_W = 0.085


def _events(pk: pd.DataFrame, ms: pd.DataFrame, limit: int) -> pd.DataFrame:
    """Package starts and message sends, merged in time order: (t, is_msg, row), the first `limit`."""
    a = pd.DataFrame({"t": pk["t_start"].to_numpy()[:limit], "is_msg": False, "row": np.arange(min(len(pk), limit))})
    b = pd.DataFrame({"t": ms["t_send"].to_numpy()[:limit], "is_msg": True, "row": np.arange(min(len(ms), limit))})
    ev = pd.concat([a, b], ignore_index=True).sort_values(["t", "is_msg"], kind="stable")
    return ev.iloc[:limit].reset_index(drop=True)


class Teaching(View):
    name = "teaching"
    title = "Teaching"

    def __init__(self, data: RunData, **kw):
        super().__init__(data, **kw)
        self.cores = ColumnDataSource(dict(x=[], y=[], rank=[], worker=[], color=[], kind=[], sim=[], label=[]), name="teaching.cores")
        self.ranks = ColumnDataSource(dict(x=[], y=[], ty=[], name=[], info=[], nodes=[], duplicated=[]), name="teaching.ranks")
        self.arrows = ColumnDataSource(dict(x_start=[], y_start=[], x_end=[], y_end=[], mx=[], my=[], kind=[],
                                            color=[], src=[], dst=[], bytes=[], sim=[], width=[]), name="teaching.arrows")
        self.header = Div(text="", width=820, name="teaching.header")
        self.log = Div(text="", width=300, height=520, styles={"overflow-y": "auto", "font-size": "9pt"})
        self.fig = make_figure(
            "Work and messages, event by event", "Each box is a rank (outer ring: search ranks, inner: broadcast "
            "ranks); its squares are its cores, one per worker id in the trace (IO first when the trace has one). A core is coloured while it runs a "
            "work package (blue select, purple expand, orange playout, green update, red bcast). Arrows are "
            "messages in flight (thick: the message of this step). Under each rank: tree nodes it stores and "
            "how many are duplicated. Step with the slider or the buttons.", "layout x (arbitrary units)",
            "layout y (arbitrary units)", x_range=Range1d(-1.45, 1.45), y_range=Range1d(-1.35, 1.35), width=820,
            height=520, webgl=False, tools="pan,wheel_zoom,reset,save")
        self.fig.grid.visible = False
        self.fig.axis.visible = False
        self.fig.text("x", "ty", text="name", source=self.ranks, text_align="center", text_font_size="9pt",
                      text_font_style="bold")
        self.fig.text("x", "y", text="info", source=self.ranks, y_offset=14, text_align="center",
                      text_baseline="top", text_font_size="8pt", text_color="#444")
        cr = self.fig.rect("x", "y", width=CORE_W * 0.9, height=0.1, color="color", line_color="#555",
                           source=self.cores)
        self.fig.add_layout(Arrow(end=VeeHead(size=9, line_color="#333"), source=self.arrows, x_start="x_start",
                                  y_start="y_start", x_end="x_end", y_end="y_end", line_color="color",
                                  line_width="width"))
        mid = self.fig.scatter("mx", "my", source=self.arrows, size=7, color="color", alpha=0.8)
        self.fig.add_tools(HoverTool(renderers=[cr], tooltips=[("rank", "@rank"), ("core", "@label"),
                                                              ("package", "@kind"), ("simulation", "@sim")]))
        self.fig.add_tools(HoverTool(renderers=[mid], tooltips=[("message", "@kind"), ("from -> to", "@src -> @dst"),
                                                               ("size", "@bytes{0,0} bytes"), ("simulation", "@sim")]))
        self.slider = Slider(title="step", start=0, end=1, value=0, step=1, width=560, name="teaching.step")
        self.prev_btn = Button(label="◀ previous", width=90)
        self.next_btn = Button(label="next ▶", width=90)
        self.play_btn = Toggle(label="▶ play", width=80)
        self._cb = None
        if not self.static:
            self.slider.on_change("value", lambda a, o, n: self.show_step(int(n)))
            self.prev_btn.on_click(lambda: self._nudge(-1))
            self.next_btn.on_click(lambda: self._nudge(+1))
            self.play_btn.on_change("active", lambda a, o, n: self._play(n))
        self._prepare(data)
        self.update(data, t=None)

    # --- static geometry and event list ----------------------------------------------------------
    def _prepare(self, d: RunData) -> None:
        pk = d.packages if d.packages is not None else pd.DataFrame(columns=["t_start", "t_end", "rank", "worker", "kind", "sim_id"])
        ms = d.messages if d.messages is not None else pd.DataFrame(columns=["t_send", "t_recv", "src", "dst", "kind", "bytes", "sim_id"])
        self.ev = _events(pk, ms, MAX_EVENTS)
        self.n_events_total = len(pk) + len(ms)
        t_last = float(self.ev["t"].iloc[-1]) if len(self.ev) else 0.0
        self.pk = pk.iloc[: int(np.searchsorted(pk["t_start"].to_numpy(), t_last, side="right"))]
        self.ms = ms.iloc[: int(np.searchsorted(ms["t_send"].to_numpy(), t_last, side="right"))]
        R, M = max(d.n_ranks, 1), d.n_search
        threads = int(d.meta.get("threads") or 1)
        # the cores the trace uses (the simulator gives its IO core worker -1); without packages, `threads`
        cores: list[set[int]] = [set(range(max(threads, 1))) if r < M else {0} for r in range(R)]
        if len(pk):
            cores = [set() for _ in range(R)]
            seen = pk[["rank", "worker"]].drop_duplicates()
            for r, w in zip(seen["rank"].astype(int), seen["worker"].astype(int)):
                if 0 <= r < R:
                    cores[r].add(w)
        pos = np.zeros((R, 2))
        for r in range(R):
            if r < M or M == R:
                n, i, rad = (M if M else R), r, 1.0
            else:
                n, i, rad = R - M, r - M, (0.0 if R - M == 1 else 0.42)
            a = math.pi / 2 - 2 * math.pi * i / max(n, 1)
            pos[r] = (rad * math.cos(a), rad * math.sin(a))
        self.pos = pos
        cx, cy, rk, wk, lab = [], [], [], [], []
        for r in range(R):
            ws = sorted(cores[r]) or [0]
            for j, w in enumerate(ws):
                cx.append(pos[r, 0] + (j - (len(ws) - 1) / 2) * CORE_W)
                cy.append(pos[r, 1])
                rk.append(r)
                wk.append(w)
                lab.append("IO" if w < 0 else f"worker {w}")
        self.core_x, self.core_y = np.array(cx), np.array(cy)
        self.core_rank, self.core_worker, self.core_label = np.array(rk), np.array(wk), lab
        self.core_of = {(r, w): i for i, (r, w) in enumerate(zip(rk, wk))}
        self.slider.end = max(len(self.ev) - 1, 1)
        self.slider.disabled = len(self.ev) < 2

    @property
    def n_steps(self) -> int:
        return len(self.ev)

    # --- stepping --------------------------------------------------------------------------------
    def update(self, data: RunData | None = None, t: float | None = None, window: float | None = None) -> None:
        if data is not None and data is not self.data:
            self.data = data
            self._prepare(data)
        self.t, self.window = t, window
        if t is None or not len(self.ev):  # a lesson starts at the first step
            self.show_step(0)
            return
        times = self.ev["t"].to_numpy()
        self.show_step(int(np.clip(np.searchsorted(times, t, side="right") - 1, 0, None)))

    def show_step(self, i: int) -> None:
        d = self.data
        n = len(self.ev)
        i = int(np.clip(i, 0, max(n - 1, 0)))
        self.step = i
        if self.slider.value != i:
            self.slider.value = i
        ti = float(self.ev["t"].iloc[i]) if n else 0.0
        cur = self.ev.iloc[i] if n else None
        # cores: packages running at ti (and the package that starts at this step)
        color = np.full(len(self.core_x), IDLE, dtype=object)
        kind = np.full(len(self.core_x), "idle", dtype=object)
        sim = np.full(len(self.core_x), -1, np.int64)
        pk = self.pk
        if len(pk):
            ts, te = pk["t_start"].to_numpy(), pk["t_end"].to_numpy()
            act = (ts <= ti) & (te > ti)
            if cur is not None and not cur["is_msg"]:
                act[int(cur["row"])] = True
            for j in np.flatnonzero(act):
                c = self.core_of.get((int(pk["rank"].iat[j]), int(pk["worker"].iat[j])))
                if c is not None:
                    k = str(pk["kind"].iat[j])
                    color[c], kind[c], sim[c] = PKG_COLORS.get(k, "#333"), k, int(pk["sim_id"].iat[j])
        self.cores.data = dict(x=self.core_x, y=self.core_y, rank=self.core_rank, worker=self.core_worker,
                               color=list(color), kind=list(kind), sim=sim, label=self.core_label)
        # arrows: messages in flight at ti, the current one thick
        ms = self.ms
        if len(ms):
            t0, t1 = ms["t_send"].to_numpy(), ms["t_recv"].to_numpy()
            fly = (t0 <= ti) & (t1 > ti)
            current = np.zeros(len(ms), bool)
            if cur is not None and cur["is_msg"]:
                current[int(cur["row"])] = True
            fly |= current
            idx = np.flatnonzero(fly)
        else:
            idx, current = np.zeros(0, np.int64), np.zeros(0, bool)
        src = ms["src"].to_numpy()[idx].astype(np.int64) if len(idx) else np.zeros(0, np.int64)
        dst = ms["dst"].to_numpy()[idx].astype(np.int64) if len(idx) else np.zeros(0, np.int64)
        R = len(self.pos)
        src, dst = np.clip(src, 0, R - 1), np.clip(dst, 0, R - 1)
        p0, p1 = self.pos[src], self.pos[dst]
        v = p1 - p0
        norm = np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)
        perp = np.stack([-v[:, 1], v[:, 0]], axis=1) / norm * 0.04  # both directions side by side
        a = p0 + v * 0.12 + perp
        b = p1 - v * 0.12 + perp
        kinds = [str(k) for k in ms["kind"].to_numpy()[idx]] if len(idx) else []
        self.arrows.data = dict(x_start=a[:, 0], y_start=a[:, 1], x_end=b[:, 0], y_end=b[:, 1],
                                mx=(a[:, 0] + b[:, 0]) / 2, my=(a[:, 1] + b[:, 1]) / 2, kind=kinds,
                                color=[MSG_COLORS.get(k, "#555") for k in kinds], src=src, dst=dst,
                                bytes=ms["bytes"].to_numpy()[idx] if len(idx) else [],
                                sim=ms["sim_id"].to_numpy()[idx] if len(idx) else [],
                                width=np.where(current[idx], 3.5, 1.2) if len(idx) else [])
        self._update_ranks(d, ti)
        self._update_text(i, ti, cur)

    def _update_ranks(self, d: RunData, ti: float) -> None:
        R, M = len(self.pos), d.n_search
        nodes = np.zeros(R, np.int64)
        dup = np.zeros(R, np.int64)
        sm = d.samples
        if sm is not None and len(sm):
            upto = sm[sm["t"] <= ti]
            if len(upto):
                last = upto.groupby("rank", observed=True).tail(1)
                r = last["rank"].to_numpy().astype(np.int64)
                ok = (r >= 0) & (r < R)
                nodes[r[ok]] = last["nodes_stored"].to_numpy()[ok]
                dup[r[ok]] = last["nodes_duplicated"].to_numpy()[ok]
        names = [f"rank {r}" if r < M else f"bcast {r}" for r in range(R)]
        info = [f"{nodes[r]:,} nodes, {dup[r]:,} dup" if r < M else "" for r in range(R)]
        self.ranks.data = dict(x=self.pos[:, 0], y=self.pos[:, 1], ty=self.pos[:, 1] + 0.07, name=names,
                               info=info, nodes=nodes, duplicated=dup)

    def _describe(self, e) -> str:
        if e["is_msg"]:
            m = self.ms.iloc[int(e["row"])]
            return (f"<span style='color:{MSG_COLORS.get(str(m['kind']), '#555')}'>{m['kind']}</span> "
                    f"{int(m['src'])} &rarr; {int(m['dst'])}, {int(m['bytes'])} B, sim {int(m['sim_id'])}")
        p = self.pk.iloc[int(e["row"])]
        return (f"<span style='color:{PKG_COLORS.get(str(p['kind']), '#333')}'>{p['kind']}</span> on rank "
                f"{int(p['rank'])} core {int(p['worker'])}, {fmt_s(float(p['t_end'] - p['t_start']))}, sim {int(p['sim_id'])}")

    def _update_text(self, i: int, ti: float, cur) -> None:
        n = len(self.ev)
        if not n:
            self.header.text = "This run has no packages or messages to step through."
            self.log.text = ""
            return
        capped = (f" (the first {n:,} of {self.n_events_total:,} events: teaching runs should be small)"
                  if self.n_events_total > n else "")
        self.header.text = (f"<b>Step {i + 1} of {n}</b>{capped} &mdash; t = {fmt_s(ti)}: {self._describe(cur)}")
        lo = max(0, i - 14)
        items = [f"<li{' style=font-weight:bold' if j == i else ''}>#{j + 1} {fmt_s(float(self.ev['t'].iloc[j]))}: "
                 f"{self._describe(self.ev.iloc[j])}</li>" for j in range(i, lo - 1, -1)]
        self.log.text = ("<b>Latest events</b><ul style='padding-left:0;list-style:none'>" + "".join(items)
                         + "</ul>")

    def _nudge(self, delta: int) -> None:
        self.show_step(self.step + delta)

    def _play(self, on: bool) -> None:
        doc = self.slider.document
        if doc is None:
            return
        if on and self._cb is None:
            self.play_btn.label = "❚❚ pause"
            self._cb = doc.add_periodic_callback(self._tick, 300)
        elif not on and self._cb is not None:
            self.play_btn.label = "▶ play"
            doc.remove_periodic_callback(self._cb)
            self._cb = None

    def _tick(self) -> None:
        if self.step >= self.n_steps - 1:
            self.play_btn.active = False
            return
        self.show_step(self.step + 1)

    @property
    def layout(self):
        controls = [] if self.static else [row(self.prev_btn, self.play_btn, self.next_btn, self.slider)]
        return column(*controls, self.header, row(self.fig, self.log))
