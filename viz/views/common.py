"""Pieces every view uses: figures with help and units, rank colours, per-rank bars that turn into
distributions for many ranks, and the time window of a replay."""

from __future__ import annotations

import numpy as np
from bokeh.models import BasicTicker, ColumnDataSource, Div, HelpTool, HoverTool, Label, Span
from bokeh.palettes import Category10, Category20, Turbo256
from bokeh.plotting import figure

from viz.rundata import RunData

# Above this many ranks, per-rank bars become histograms (a bar per rank is unreadable beyond it).
BAR_LIMIT = 64
TOOLS = "pan,wheel_zoom,box_zoom,reset,save"
# Every plot's help, by title: the '?' tool shows it on hover and links to /help (the server's help page).
HELP: dict[str, str] = {}


def help_anchor(title: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in title.lower())


def make_figure(title: str, help_text: str, x_label: str, y_label: str, *, x_range=None, y_range=None,
                height: int = 260, width: int = 560, webgl: bool = True, tools: str = TOOLS, **kw):
    """A figure with a help tool (the '?' in its toolbar shows `help_text`) and labelled axes."""
    opts = dict(title=title, height=height, width=width, tools=tools, toolbar_location="right",
                output_backend="webgl" if webgl else "canvas", **kw)
    if x_range is not None:
        opts["x_range"] = x_range
    if y_range is not None:
        opts["y_range"] = y_range
    p = figure(**opts)
    HELP[title] = help_text
    p.add_tools(HelpTool(description=help_text, redirect=f"/help#{help_anchor(title)}"))
    p.xaxis.axis_label = x_label
    p.yaxis.axis_label = y_label
    p.title.text_font_size = "11pt"
    return p


def outside_legend(p, place: str = "right") -> None:
    """Move a figure's legend beside the plot, where it covers no data."""
    leg = p.legend[0]
    p.center = [c for c in p.center if c is not leg]
    p.add_layout(leg, place)


def integer_ticks(axis) -> None:
    """Rank axes: ticks on whole numbers only."""
    axis.ticker = BasicTicker(min_interval=1)


def rank_colors(n: int) -> list[str]:
    """One colour per rank (owner, sender), stable for a given number of ranks."""
    if n <= 10:
        return list(Category10[10][:max(n, 1)])
    if n <= 20:
        return list(Category20[20][:n])
    return [Turbo256[int(i)] for i in np.linspace(20, 235, n)]


def mark_ending(fig, data: RunData) -> None:
    """A red line across a time plot where a run that did not finish stopped (RunData.ending)."""
    end = data.ending
    if end is None:
        return
    t, label, sentence = end
    fig.add_layout(Span(location=t, dimension="height", line_color="#d62728", line_dash="dashed", line_width=2,
                        name="ending"))
    fig.add_layout(Label(x=t, y=5, y_units="screen", text=label, text_color="#d62728", text_font_size="9pt",
                         text_align="right", x_offset=-4))


def caption(text: str, width: int = 560) -> Div:
    return Div(text=f"<div style='font-size:9.5pt;color:#555;max-width:{width}px'>{text}</div>", width=width)


def window_caption(data: RunData) -> str:
    """What 'the window' means for the plots that sum over one, in this mode."""
    if data.source == "live":
        return ("the window is the one chosen above: since the run started, or the last seconds of the telemetry "
                "received so far.")
    return "the window is the replay's window (default: from the start to the time slider's time)."


def window_bounds(data: RunData, t: float | None, window: float | None) -> tuple[float, float]:
    """(t0, t1] for a replay at time t showing the last `window` seconds (None: since the start)."""
    t1 = data.t_end if t is None else float(t)
    t0 = -np.inf if window is None else t1 - float(window)
    return t0, t1


def plural(n: int, word: str, many: str | None = None) -> str:
    """ "1 thread", "2 threads" (n with thousands separators)."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def fmt_s(t: float) -> str:
    """A time for people: 12.3 µs, 4.56 ms, 7.89 s."""
    a = abs(t)
    if a == 0:
        return "0 s"
    if a < 1e-3:
        return f"{t * 1e6:.3g} µs"
    if a < 1:
        return f"{t * 1e3:.3g} ms"
    return f"{t:.3g} s"


class RankBars:
    """One number per rank: bars (with exact hover) up to BAR_LIMIT ranks, a histogram above that."""

    def __init__(self, title: str, help_text: str, y_label: str, value_name: str, color: str = "#4c72b0",
                 width: int = 420, height: int = 220, name: str | None = None):
        self.value_name = value_name
        self.bars = ColumnDataSource(dict(rank=[], value=[]), name=f"{name}.bars" if name else None)
        self.hist = ColumnDataSource(dict(left=[], right=[], ranks=[]), name=f"{name}.hist" if name else None)
        self.fig = make_figure(title, help_text + f" Above {BAR_LIMIT} ranks the bars become a histogram "
                               "(how many ranks have each value).", "rank (id)", y_label, width=width, height=height)
        self.bar_r = self.fig.vbar(x="rank", top="value", width=0.8, source=self.bars, color=color)
        self.hist_r = self.fig.quad(left="left", right="right", bottom=0, top="ranks", source=self.hist,
                                    color=color, alpha=0.7, visible=False)
        self.fig.add_tools(HoverTool(renderers=[self.bar_r], tooltips=[("rank", "@rank"), (value_name, "@value{0,0.[000]}")]))
        self.fig.add_tools(HoverTool(renderers=[self.hist_r], tooltips=[(value_name, "@left{0,0.[000]} to @right{0,0.[000]}"),
                                                                      ("ranks", "@ranks")]))
        self.x_label, self.y_label = "rank (id)", y_label
        self.rank_ticker = BasicTicker(min_interval=1)
        self.value_ticker = BasicTicker()

    def set(self, values: np.ndarray) -> None:
        values = np.nan_to_num(np.asarray(values, dtype=np.float64))
        per_rank = len(values) <= BAR_LIMIT
        self.bar_r.visible, self.hist_r.visible = per_rank, not per_rank
        if per_rank:
            self.bars.data = dict(rank=np.arange(len(values)), value=values)
            self.hist.data = dict(left=[], right=[], ranks=[])
            self.fig.xaxis.axis_label, self.fig.yaxis.axis_label = self.x_label, self.y_label
            self.fig.xaxis.ticker = self.rank_ticker  # ranks are whole numbers
        else:
            counts, edges = np.histogram(values, bins=min(40, max(5, len(values) // 8)))
            self.hist.data = dict(left=edges[:-1], right=edges[1:], ranks=counts)
            self.bars.data = dict(rank=[], value=[])
            self.fig.xaxis.axis_label, self.fig.yaxis.axis_label = self.y_label, "ranks (count)"
            self.fig.xaxis.ticker = self.value_ticker
