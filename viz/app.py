"""One dashboard session: the views for one or two runs, the replay controls (recorded mode) or the
periodic refresh from telemetry (live mode). `make_app` gives the Bokeh document factory for one URL."""

from __future__ import annotations

import html
from typing import Callable, Protocol

from bokeh.document import Document
from bokeh.layouts import column, row
from bokeh.models import Div, Select, Slider, TabPanel, Tabs, Toggle

from viz.compare import banner_html
from viz.rundata import RunData
from viz.views import VIEWS
from viz.views.common import fmt_s

ALL_VIEWS = list(VIEWS)
LIVE_REFRESH_MS = 200  # with 100-250 ms telemetry windows, an event is on screen well within 1 s
PLAY_MS = 250
PLAY_STEPS = 150  # a replay crosses the run in this many ticks


class Provider(Protocol):
    """Where a session gets its RunData: a loaded trace (fixed), or the live aggregator (growing)."""

    version: int

    def current(self) -> RunData: ...

    def status_html(self) -> str: ...


class TraceProvider:
    def __init__(self, data: RunData):
        self.data, self.version = data, 0

    def current(self) -> RunData:
        return self.data

    def status_html(self) -> str:
        d = self.data
        text = (f"recorded {d.meta.get('runtime', '?')} trace <b>{d.label}</b> ({d.meta.get('algo', '?')}, "
                f"{d.n_search}+{d.n_bcast} ranks, {fmt_s(d.t_end)})")
        if d.ending is not None:
            text += f" <span style='color:#d62728'><b>{html.escape(d.ending[2])}</b></span>"
        return text


def _nav(current: str, names: list[str]) -> str:
    links = [("/", "all")] + [(f"/{n}", VIEWS[n].title) for n in ALL_VIEWS]
    return " | ".join(f"<b>{t}</b>" if p == current else f"<a href='{p}'>{t}</a>" for p, t in links)


def window_options(span: float, bin_s: float, live: bool) -> dict[str, float | None]:
    """'since start' plus a few trailing windows that fit the run."""
    opts: dict[str, float | None] = {"since start": None}
    cands = [1.0, 5.0, 30.0, 300.0] if live else [10 * bin_s, 30 * bin_s, 100 * bin_s]
    for w in cands:
        if live or w < span:
            opts[f"last {fmt_s(w)}"] = w
    return opts


class Session:
    """The models of one browser session. Views of two runs share their axis ranges (compare mode)."""

    def __init__(self, doc: Document, names: list[str], providers: list[Provider], live: bool, path: str = "/"):
        self.doc, self.names, self.providers, self.live = doc, names, providers, live
        self.datas = [p.current() for p in providers]
        self.versions = [p.version for p in providers]
        ranges: dict = {}
        self.views = [[VIEWS[n](d, ranges=ranges) for n in names] for d in self.datas]
        span = max(d.t_end for d in self.datas)
        bin_s = min(d.bin_s for d in self.datas)
        self.win_opts = window_options(span, bin_s, live)
        self.window = Select(title="window for matrices and bars", value="since start", options=list(self.win_opts),
                             width=200)
        self.window.on_change("value", lambda a, o, n: self.refresh())
        self.status = Div(text="", width=1300, name="status")
        nav = Div(text=_nav(path, names))
        controls = [self.window]
        if not live:
            self.slider = Slider(title="time (s)", start=0.0, end=span, value=span, step=bin_s, width=560,
                                 format="0[.]0000")
            self.slider.on_change("value_throttled", lambda a, o, n: self.refresh())
            self.play = Toggle(label="▶ play", width=80)
            self.play.on_change("active", lambda a, o, n: self._play(n))
            self._play_cb = None
            controls = [self.play, self.slider, self.window]
        else:
            doc.add_periodic_callback(self.poll, LIVE_REFRESH_MS)
        self._set_status()
        doc.add_root(column(nav, self.status, row(*controls), self._content()))
        doc.title = "treesplit: " + (VIEWS[names[0]].title if len(names) == 1 else "dashboard")

    def _content(self):
        """One view per run; in compare mode the runs stacked (each full width, within 1400 px), each under its
        label, after a banner that says how their configurations differ."""
        labelled = len(self.views) > 1

        def one(i: int, j: int):
            v = self.views[i][j]
            head = [Div(text=f"<h3 style='margin:8px 0 2px 0;border-top:2px solid #999'>{self.datas[i].label}</h3>")
                    ] if labelled else []
            return column(*head, v.layout)

        def runs(j: int):
            return column(*[one(i, j) for i in range(len(self.views))])

        banner = [Div(text=banner_html(self.datas[0], self.datas[1]), name="compare.banner")] if labelled else []
        if len(self.names) == 1:
            return column(*banner, runs(0))
        return column(*banner, Tabs(tabs=[TabPanel(title=VIEWS[n].title, child=runs(j))
                                          for j, n in enumerate(self.names)]))

    def _set_status(self) -> None:
        parts = [p.status_html() for p in self.providers]
        t = "" if self.live else f" &mdash; replay at t = {fmt_s(self.slider.value)}"
        self.status.text = " &nbsp;vs&nbsp; ".join(parts) + t

    def refresh(self) -> None:
        t = None if self.live else float(self.slider.value)
        w = self.win_opts.get(self.window.value)
        for d, views in zip(self.datas, self.views):
            for v in views:
                v.update(d, t, w)
        self._set_status()

    def poll(self) -> None:
        """Live mode: redraw when telemetry has arrived since the last look."""
        changed = False
        for i, p in enumerate(self.providers):
            if p.version != self.versions[i]:
                self.datas[i], self.versions[i] = p.current(), p.version
                changed = True
        if changed:
            self.refresh()
        else:
            self._set_status()

    def _play(self, on: bool) -> None:
        if on and self._play_cb is None:
            if self.slider.value >= self.slider.end:
                self.slider.value = 0.0
            self.play.label = "❚❚ pause"
            self._play_cb = self.doc.add_periodic_callback(self._tick, PLAY_MS)
        elif not on and self._play_cb is not None:
            self.play.label = "▶ play"
            self.doc.remove_periodic_callback(self._play_cb)
            self._play_cb = None

    def _tick(self) -> None:
        v = min(self.slider.end, self.slider.value + self.slider.end / PLAY_STEPS)
        self.slider.value = v
        self.refresh()
        if v >= self.slider.end:
            self.play.active = False


def make_app(names: list[str], providers: list[Provider], live: bool, path: str) -> Callable[[Document], None]:
    def modify(doc: Document) -> None:
        Session(doc, names, providers, live, path)

    return modify
