"""A dashboard session's controls: the replay slider and play button (recorded), polling (live)."""

import numpy as np
from bokeh.document import Document

from model.telemetry import encode
from engine.trace_files import read_trace
from viz.app import ALL_VIEWS, Session, TraceProvider
from viz.live import LiveAggregator, LiveProvider
from viz.rundata import RunData
from viz.synthetic import telemetry_records, write_synthetic_trace


def _session(tmp_path, names=ALL_VIEWS, compare=False):
    d = RunData.from_trace(read_trace(write_synthetic_trace(tmp_path / "a", sims=300, tree_nodes=500)))
    providers = [TraceProvider(d)] + ([TraceProvider(d)] if compare else [])
    doc = Document()
    return Session(doc, list(names), providers, live=False), doc, d


def test_slider_replays_every_view(tmp_path):
    s, doc, d = _session(tmp_path)
    assert len(doc.roots) == 1 and s.slider.end == d.t_end and s.slider.value == d.t_end
    overview = s.views[0][0]
    full = len(overview.rates.data["t"])
    s.slider.value = d.t_end / 2
    s.refresh()
    assert 0 < len(overview.rates.data["t"]) < full
    assert max(overview.rates.data["t"]) <= d.t_end / 2 + d.bin_s
    traffic = s.views[0][ALL_VIEWS.index("traffic")]
    assert traffic.matrix.data["n_all"].sum() == d.matrix(-np.inf, d.t_end / 2)[0].sum()
    s.window.value = list(s.win_opts)[1]  # a trailing window: fewer messages than since the start
    assert traffic.matrix.data["n_all"].sum() < d.matrix(-np.inf, d.t_end / 2)[0].sum()
    assert "replay at t" in s.status.text


def test_play_advances_and_stops_at_the_end(tmp_path):
    s, doc, d = _session(tmp_path, names=["overview"])
    s.play.active = True  # from the end: starts over
    assert s.slider.value == 0.0 and s._play_cb is not None
    s._tick()
    assert s.slider.value > 0
    s.slider.value = s.slider.end
    s._tick()
    assert not s.play.active and s._play_cb is None


def test_compare_session_shares_the_time_axis(tmp_path):
    s, _, _ = _session(tmp_path, names=["load"], compare=True)
    a, b = s.views[0][0], s.views[1][0]
    assert a is not b and a.rank_fig.x_range is b.rank_fig.x_range


def test_live_session_redraws_when_telemetry_arrives():
    agg = LiveAggregator()
    doc = Document()
    s = Session(doc, ["overview", "traffic"], [LiveProvider(agg, ("127.0.0.1", 1))], live=True)
    assert len(s.views[0][0].rates.data["t"]) <= 1
    for step in range(5):
        for rec in telemetry_records(step * 0.2, (step + 1) * 0.2, search=4, broadcast=1, step=step):
            agg.feed(encode(rec))
    s.poll()
    assert len(s.views[0][0].rates.data["t"]) == 5 and s.views[0][1].matrix.data["n_all"].sum() > 0
    assert "25 records from 5 ranks" in s.status.text


def test_a_failed_run_is_marked_where_it_stopped(tmp_path):
    import json

    from bokeh.models import Span

    d = write_synthetic_trace(tmp_path / "a", sims=300, tree_nodes=0)
    meta = json.loads((d / "meta.json").read_text())
    meta["extra"].update(complete=False, failure={"rank": 2, "cause": "killed by SIGKILL", "t": 0.5, "t_stop": 0.6,
                                                  "what": "rank 2 (pid 7 on n1) was killed by SIGKILL"})
    (d / "meta.json").write_text(json.dumps(meta))
    data = RunData.from_trace(read_trace(d))
    doc = Document()
    s = Session(doc, ["overview", "load", "traffic"], [TraceProvider(data)], live=False)
    assert "rank 2 (pid 7 on n1) was killed by SIGKILL" in s.status.text and "t = 0.5 s" in s.status.text
    spans = list(doc.select({"type": Span, "name": "ending"}))
    assert len(spans) == 5 and {sp.location for sp in spans} == {0.5}  # every time plot
    finished = RunData.from_trace(read_trace(write_synthetic_trace(tmp_path / "b", sims=300, tree_nodes=0)))
    assert finished.ending is None
