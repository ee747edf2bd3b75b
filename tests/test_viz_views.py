"""Each dashboard view's update() on a small hand-made trace gives the expected column data."""

import numpy as np
import pytest
from bokeh.models import HelpTool
from bokeh.plotting import figure as Figure

from engine.trace_files import TraceWriter, read_trace
from model.trace import Meta
from viz.rundata import RunData
from viz.views import VIEWS, LoadBalance, MessageTraffic, Overview, Teaching, TreeShape
from viz.views.common import BAR_LIMIT, RankBars
from viz.views.teaching import box_half, rank_positions, segment_hits_box

# 2 search ranks (0, 1) + 1 broadcast rank (2), 2 threads, one simulation (sim 0) hopping 0 -> 1.
SAMPLES = [  # t, rank, queue_len, busy_frac, sims_done, playouts_done, nodes_stored, nodes_duplicated
    (0.5, 0, 4, 0.8, 10, 12, 100, 5), (0.5, 1, 2, 0.4, 6, 7, 50, 5), (0.5, 2, 0, 0.1, 0, 0, 0, 0),
    (1.0, 0, 6, 1.0, 30, 33, 160, 8), (1.0, 1, 0, 0.6, 14, 15, 90, 8), (1.0, 2, 1, 0.3, 0, 0, 0, 0),
]
PACKAGES = [  # t_start, t_end, rank, worker, kind, sim_id
    (0.0, 0.25, 0, 1, "select", 0), (0.1, 0.6, 0, 0, "io", -1), (0.3, 0.4, 1, 1, "select", 0),
    (0.4, 0.9, 1, 1, "playout", 0), (0.6, 0.7, 2, 0, "bcast", -1), (0.9, 0.95, 1, 1, "update", 0),
    (0.95, 1.0, 0, 1, "update", 0),
]
MESSAGES = [  # t_send, t_recv, src, dst, kind, bytes, sim_id
    (0.25, 0.3, 0, 1, "MOVE", 48, 0), (0.5, 0.55, 0, 2, "SYNC", 100, -1), (0.6, 0.65, 2, 1, "BCAST", 100, -1),
    (0.7, 0.75, 1, 0, "PLAYOUT_FWD", 200, 0), (0.8, 0.85, 1, 0, "MOVE", 48, 1), (0.9, 0.95, 1, 0, "UPDATE", 40, 0),
]
# root -> A (E5), B (A1); A -> C (pass), D (B2)
TREE = dict(t=[1.0] * 5, hash=np.array([1, 2, 3, 4, 5], np.uint64), parent=np.array([0, 1, 1, 2, 2], np.uint64),
            move=[-1, 40, 0, 81, 10], depth=[0, 1, 1, 2, 2], visits=[10, 6, 3, 4, 1], wins=[6.0, 4.0, 1.0, 3.0, 0.0],
            owner=[0, 1, 0, 1, 0], duplicated=[True, True, False, False, False])


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("trace")
    meta = Meta(runtime="engine", algo="treesplit", game="go", board=9, ranks={"search": 2, "broadcast": 1},
                threads=2, machine="test", versions={"treesplit": "test"}, t_end=1.0)
    with TraceWriter(d, meta) as w:
        for s in SAMPLES:
            w.sample(*s)
        for p in PACKAGES:
            w.package(*p)
        for m in MESSAGES:
            w.message(*m)
        w.tree(TREE)
    return RunData.from_trace(read_trace(d))


def test_rundata_bins_counters_and_busy(data):
    assert data.bin_s == 0.5 and data.T == 2 and data.n_ranks == 3
    np.testing.assert_allclose(data.sims, [16, 28])
    np.testing.assert_allclose(data.playouts, [19, 29])
    np.testing.assert_allclose(data.nodes, [145, 97])  # unique = sum(stored - dup) + max(dup)
    np.testing.assert_allclose(data.busy, [[0.8, 1.0], [0.4, 0.6], [0.1, 0.3]])
    np.testing.assert_allclose(data.queue, [[4, 6], [2, 0], [0, 1]])
    np.testing.assert_allclose(data.in_flight, [1, 0])
    assert data.worker_rows == ["0.0", "0.1", "1.1", "2.0"]
    np.testing.assert_allclose(data.worker_busy, [[0.8, 0.2], [0.5, 0.1], [0.4, 0.9], [0.0, 0.2]])


def test_overview_rates_flight_and_board(data):
    v = Overview(data)
    np.testing.assert_allclose(v.rates.data["t"], [0.25, 0.75])
    np.testing.assert_allclose(v.rates.data["sims"], [32, 56])
    np.testing.assert_allclose(v.rates.data["pps"], [38, 58])
    np.testing.assert_allclose(v.flight.data["in_flight"], [1, 0])
    st = v.stones.data
    assert list(st["move"]) == ["E5", "A1"] and list(st["x"]) == [4, 0] and list(st["y"]) == [4, 0]
    np.testing.assert_allclose(st["visits"], [6, 3])
    np.testing.assert_allclose(st["value"], [4 / 6, 1 / 3])
    np.testing.assert_allclose(st["share"], [0.6, 0.3])
    assert list(st["color"])[0] != list(st["color"])[1]  # the best move stands out
    assert "Best move: <b>E5</b>" in v.summary.text
    v.update(data, t=0.5)  # replay at t = 0.5: one bin
    np.testing.assert_allclose(v.rates.data["sims"], [32])


def test_load_heat_map_bars_and_forwarding(data):
    v = LoadBalance(data)
    np.testing.assert_allclose(v.heat.data["image"][0], data.busy)
    assert v.heat.data["dw"] == [1.0] and v.heat.data["dh"] == [3.0]
    np.testing.assert_allclose(v.worker_heat.data["image"][0], data.worker_busy)
    np.testing.assert_allclose(v.busy.bars.data["value"], [0.9, 0.5, 0.2])
    np.testing.assert_allclose(v.queue.bars.data["value"], [5, 1, 0.5])
    np.testing.assert_allclose(v.forward.bars.data["value"], [0, 1, 0])
    v.update(data, t=0.5)
    assert v.heat.data["image"][0].shape == (3, 1)
    np.testing.assert_allclose(v.busy.bars.data["value"], [0.8, 0.4, 0.1])
    np.testing.assert_allclose(v.forward.bars.data["value"], [0, 0, 0])
    v.update(data, t=1.0, window=0.5)  # the last half second only
    np.testing.assert_allclose(v.queue.bars.data["value"], [6, 0, 1])


def test_rank_bars_become_a_histogram_above_the_limit():
    rb = RankBars("t", "h", "busy fraction (0-1)", "busy")
    rb.set(np.linspace(0, 1, BAR_LIMIT + 36))
    assert rb.hist_r.visible and not rb.bar_r.visible
    assert sum(rb.hist.data["ranks"]) == BAR_LIMIT + 36 and len(rb.bars.data["rank"]) == 0
    rb.set(np.ones(4))
    assert rb.bar_r.visible and not rb.hist_r.visible and list(rb.bars.data["rank"]) == [0, 1, 2, 3]


def _cells(v):
    m = v.matrix.data
    return {(int(s), int(d)): (int(c), int(b)) for s, d, c, b in zip(m["src"], m["dst"], m["count"], m["bytes"]) if c}


def test_traffic_matrix_kinds_rates_and_graph(data):
    v = MessageTraffic(data)
    assert _cells(v) == {(0, 1): (1, 48), (1, 0): (3, 288), (0, 2): (1, 100), (2, 1): (1, 100)}
    assert {"all", "MOVE", "UPDATE", "SYNC", "BCAST", "PLAYOUT_FWD"} <= set(v.kind_select.options)
    v.kind_select.value = "MOVE"
    v.update(data)
    assert _cells(v) == {(0, 1): (1, 48), (1, 0): (1, 48)}
    v.metric.active = 1
    v.update(data)
    assert sorted(v.matrix.data["value"][v.matrix.data["count"] > 0]) == [48, 48]
    r = v.rates.data
    np.testing.assert_allclose(r["MOVE"], [2, 2])
    np.testing.assert_allclose(r["UPDATE"], [0, 2])
    np.testing.assert_allclose(r["SYNC"], [0, 2])  # sent at t = 0.5: the second bin [0.5, 1)
    assert v.rate_lines["MOVE"].visible and not v.rate_lines["DUP"].visible
    links = {(int(a), int(b)): int(c) for a, b, c in zip(*(v.links.data[k] for k in ("a", "b", "count")))}
    assert links == {(0, 2): 1, (1, 2): 1}  # the broadcast network: SYNC/BCAST links only
    np.testing.assert_allclose(v.nodes.data["sent"], [2, 3, 1])
    v.kind_select.value, v.metric.active = "all", 0
    v.update(data, t=0.5)  # messages sent up to t = 0.5
    assert _cells(v) == {(0, 1): (1, 48), (0, 2): (1, 100)}


def test_traffic_matrix_sums_blocks_for_many_ranks(tmp_path):
    from viz.synthetic import write_synthetic_trace
    from viz.views.traffic import MAX_MATRIX_SIDE

    d = RunData.from_trace(read_trace(write_synthetic_trace(tmp_path, search=200, broadcast=8, sims=3000,
                                                            tree_nodes=50)))
    v = MessageTraffic(d)
    assert v.matrix.data["w"][0] == 2 and max(v.matrix.data["src"]) < 208
    assert len(v.matrix.data["src"]) <= MAX_MATRIX_SIDE**2 and "Blocks of 2 ranks" in v.mat_note.text
    assert v.matrix.data["n_all"].sum() == len(d.msgs)


def test_tree_graph_pv_profiles_and_cap(data):
    v = TreeShape(data)
    n = v.nodes.data
    assert list(n["move"]) == ["root", "E5", "A1", "pass", "B2"]
    np.testing.assert_allclose(n["x"], [0.5, 1 / 3, 2.5 / 3, 0.5 / 3, 1.5 / 3])
    np.testing.assert_allclose(n["y"], [0, -1, -1, -2, -2])
    assert list(n["marker"]) == ["diamond", "diamond", "circle", "circle", "circle"]
    assert list(n["pv"]) == [True, True, False, True, False]
    assert len(v.edges.data["x0"]) == 4
    p = v.depth_profile.data
    assert list(p["nodes"]) == [1, 2, 2] and list(p["duplicated"]) == [1, 1, 0]
    np.testing.assert_allclose(p["branching"], [2, 2, 0])
    assert list(v.pv.data["move"]) == ["root", "E5", "pass"]
    np.testing.assert_allclose(v.pv.data["value"], [0.6, 4 / 6, 0.75])
    assert "all of them" in v.note.text
    v._set(cap=2)
    assert list(v.nodes.data["move"]) == ["root", "E5"] and "capped" in v.note.text
    v._set(depth=1, cap=2000)
    assert len(v.nodes.data["move"]) == 3


def test_tree_view_caps_a_big_tree(tmp_path):
    from viz.synthetic import write_synthetic_trace

    d = RunData.from_trace(read_trace(write_synthetic_trace(tmp_path, sims=200, tree_nodes=100_000, board=19)))
    v = TreeShape(d, max_nodes=1000)
    assert len(d.tree_at(None)) > 90_000
    assert len(v.nodes.data["x"]) <= 1000 and "<b>capped</b>" in v.note.text
    assert sum(v.depth_profile.data["nodes"]) == len(d.tree_at(None))


def test_teaching_follows_one_simulation_on_thread_lanes(data):
    v = Teaching(data)
    assert v.n_steps == len(PACKAGES) + len(MESSAGES)
    assert v.followed == 0 and v.step == 0  # the first simulation that moved between ranks, from its start
    assert v.slider.value == 1 and "Event 1 of 13" in v.header.text  # slider and text count alike
    lit = [(r, w, k) for r, w, k in zip(v.cores.data["rank"], v.cores.data["worker"], v.cores.data["kind"])
           if k != "idle"]
    assert lit == [(0, 1, "select")]
    v.next_message()  # simulation 0's MOVE 0 -> 1, from rank 0's IO thread to rank 1's, labelled
    a = v.arrows.data
    i = list(a["width"]).index(max(a["width"]))
    assert (a["kind"][i], a["src_lane"][i], a["dst_lane"][i], a["label"][i]) == ("MOVE", "0.io", "1.io", "MOVE 48 B")
    assert "rank 1 owns the next node on simulation 0's path" in v.header.text
    v.step_by(+1)  # simulation 0's next event: its select on rank 1, worker 1
    b = v.boxes.data
    j = list(b["line_width"]).index(max(b["line_width"]))
    assert (b["kind"][j], b["lane"][j], b["sim"][j]) == ("select", "1.1", 0)
    assert all(s == 0 for s, al in zip(b["sim"], b["alpha"]) if al == 1.0)  # the others are pale
    v.next_simulation()
    assert v.followed == 1 and v.ev_sim[v.step] == 1
    v.update(data, t=0.65)  # the BCAST 2 -> 1 is in flight, the bcast package runs, rank 1 is in its playout
    kinds = dict(zip(zip(v.cores.data["rank"], v.cores.data["worker"]), v.cores.data["kind"]))
    assert kinds[(2, 0)] == "bcast" and kinds[(1, 1)] == "playout"
    assert "BCAST" in list(v.flight.data["kind"])


def test_teaching_node_counters_count_expand_packages(tmp_path):
    meta = Meta(runtime="engine", algo="treesplit", machine="m", versions={"x": "y"}, ranks={"search": 2, "broadcast": 1},
                threads=1, t_end=1.0)
    with TraceWriter(tmp_path, meta) as w:
        for i, (t, r) in enumerate([(0.1, 0), (0.2, 1), (0.3, 1), (0.4, 0), (0.5, 1)]):
            w.package(t, t + 0.05, r, -1, "expand", i)
        w.sample(0.9, 0, 0, 0.5, 5, 5, 0, 0)  # counters of a sample tick that came too late for the lesson
    v = Teaching(RunData.from_trace(read_trace(tmp_path)))
    v.show_step(2)
    assert list(v.ranks.data["nodes"]) == [1, 2, 0] and v.ranks.data["info"][1] == "2 nodes"
    v.show_step(v.n_steps - 1)
    assert int(v.ranks.data["nodes"].sum()) == v.n_expand == 5


@pytest.mark.parametrize("M,B", [(2, 1), (3, 1), (4, 1), (4, 2), (6, 2), (8, 2), (12, 3)])
def test_teaching_arrows_between_two_ranks_cross_no_third(M, B):
    pos, h = rank_positions(M, B), box_half(M + B)
    for a in range(M + B):
        for b in range(M + B):
            for c in range(M + B):
                if len({a, b, c}) == 3:
                    assert not segment_hits_box(pos[a], pos[b], pos[c], h), (a, b, c)
    assert segment_hits_box(np.array([-1.0, 0.0]), np.array([1.0, 0.0]), np.zeros(2), 0.1)  # the check can fail


def test_teaching_windows_any_part_of_a_long_run(tmp_path):
    from viz.synthetic import write_synthetic_trace

    d = RunData.from_trace(read_trace(write_synthetic_trace(tmp_path / "t", packages=20_000, messages=8_000, seed=2)))
    v = Teaching(d)
    assert v.n_steps == 28_000 and v.slider.end == 28_000
    v.follow(-1)
    v.show_step(25_000)
    t = v.ev_t[25_000]
    assert v.timeline.x_range.start <= t <= v.timeline.x_range.end
    assert 0 < len(v.boxes.data["left"]) and min(v.boxes.data["right"]) >= v.timeline.x_range.start
    assert "Event 25,001 of 28,000" in v.header.text


def test_every_plot_has_help_and_units(data):
    for name, cls in VIEWS.items():
        v = cls(data)
        figs = [m for m in v.layout.references() if isinstance(m, Figure)]
        assert figs, name
        for f in figs:
            helps = [t for t in f.tools if isinstance(t, HelpTool)]
            assert helps and len(helps[0].description) > 40, (name, f.title.text)
            if f.axis[0].visible:
                for ax in f.axis:
                    assert ax.axis_label and "(" in ax.axis_label, (name, f.title.text, ax.axis_label)
            assert any(type(t).__name__ == "HoverTool" for t in f.tools), (name, f.title.text)


def test_compare_views_share_axes(data):
    ranges: dict = {}
    a, b = Overview(data, ranges=ranges), Overview(data, ranges=ranges)
    assert a.rate_fig.x_range is b.rate_fig.x_range and a.rate_fig.y_range is b.rate_fig.y_range
    la, lb = LoadBalance(data, ranges=ranges), LoadBalance(data, ranges=ranges)
    assert la.rank_fig.x_range is a.rate_fig.x_range is lb.rank_fig.x_range


def test_views_cope_with_an_empty_trace(tmp_path):
    with TraceWriter(tmp_path, Meta(runtime="sim", algo="root", versions={"x": "y"}, machine="m")):
        pass
    d = RunData.from_trace(read_trace(tmp_path))
    for cls in VIEWS.values():
        cls(d).update(d, t=0.0)


def test_engine_style_root_with_hash_zero_is_not_its_own_child(tmp_path):
    """The engine writes the root with hash 0 and parent 0; the answer must be a real move."""
    tree = dict(TREE, hash=np.array([0, 2, 3, 4, 5], np.uint64), parent=np.array([0, 0, 0, 2, 2], np.uint64))
    meta = Meta(runtime="engine", algo="treesplit", game="go", board=9, machine="m", versions={"x": "y"}, t_end=1.0)
    with TraceWriter(tmp_path, meta) as w:
        w.tree(tree)
    d = RunData.from_trace(read_trace(tmp_path))
    assert "Best move: <b>E5</b>" in Overview(d).summary.text
    assert list(TreeShape(d).pv.data["move"]) == ["root", "E5", "pass"]


def test_bins_follow_each_ranks_sampling_interval(tmp_path):
    """Ranks sampling every 100 ms at different offsets: bins are not cut at the 25 ms between offsets."""
    meta = Meta(runtime="engine", algo="tds", machine="m", versions={"x": "y"}, ranks={"search": 4, "broadcast": 0},
                t_end=2.0)
    with TraceWriter(tmp_path, meta) as w:
        for k in range(20):
            for r in range(4):
                t = 0.1 * (k + 1) - 0.025 * r
                w.sample(t, r, 0, 0.5, 10 * (k + 1), 10 * (k + 1), 0, 0)
    d = RunData.from_trace(read_trace(tmp_path))
    assert d.bin_s == pytest.approx(0.1)
    assert np.count_nonzero(d.sims[1:-1] == 0) == 0  # no empty bins between samples


def test_simulator_io_core_worker_minus_one(tmp_path):
    """The simulator records its IO core as worker -1: a row "r.io" and a core labelled IO."""
    meta = Meta(runtime="sim", algo="treesplit", machine="m", versions={"x": "y"}, ranks={"search": 2, "broadcast": 0},
                threads=3, t_end=1.0)
    with TraceWriter(tmp_path, meta) as w:
        w.package(0.0, 0.5, 0, -1, "io", -1)
        w.package(0.0, 1.0, 0, 0, "playout", 1)
        w.package(0.5, 1.0, 1, 1, "select", 2)
    d = RunData.from_trace(read_trace(tmp_path))
    assert d.worker_rows == ["0.io", "0.0", "1.1"]
    np.testing.assert_allclose(d.worker_busy.mean(axis=1), [0.5, 1.0, 0.5], atol=1e-9)
    v = Teaching(d)
    cores = list(zip(v.cores.data["rank"], v.cores.data["label"]))
    assert cores == [(0, "IO thread"), (0, "worker 0"), (1, "IO thread"), (1, "worker 1")]
    assert v.lane_names == ["0.io", "0.0", "1.io", "1.1"]  # the same names as the load view's rows


def test_tree_depth_field_emptied_keeps_drawing(data):
    v = TreeShape(data, max_depth=3)
    v.depth_input.value = None  # the user clears the field: no TypeError, the last depth stays
    v._set(depth=None)
    assert v.max_depth == 3 and v.depth_input.value == 3 and len(v.nodes.data["x"]) == 5
    v._set(depth=8)  # deeper than the snapshot: the note says why no more is drawn
    assert "The snapshot ends at depth 2" in v.note.text
    assert "owner rank" in v.key.text and "duplicated" in v.key.text  # the graph's colours and shapes explained


def test_board_and_tree_follow_the_replay_time(data):
    o = Overview(data)
    o.update(data, t=0.5)  # before the trace's only snapshot (t = 1.0): no answer yet, and the title says so
    assert len(o.stones.data["x"]) == 0 and "none yet (first snapshot at t = 1 s)" in o.board_fig.title.text
    assert "Best move" not in o.summary.text
    o.update(data, t=1.0)
    assert len(o.stones.data["x"]) == 2 and "snapshot at t = 1 s" in o.board_fig.title.text
    v = TreeShape(data)
    v.update(data, t=0.5)
    assert "first one was taken at t = 1 s" in v.note.text


def test_overview_words_and_axes(data):
    o = Overview(data)
    assert "2 search + 1 broadcast rank, 2 threads per rank" in o.summary.text
    assert o.flight_fig.y_range.start == 0  # a level line is not blown up to fill the plot
    leg = o.rate_fig.legend[0]
    assert leg in o.rate_fig.right and leg not in o.rate_fig.center  # beside the plot, covering no data
    sims, pps = [r for r in o.rate_fig.renderers if r.glyph.y in ("sims", "pps")]
    assert sims.glyph.line_width > pps.glyph.line_width and pps.glyph.line_dash  # equal curves both visible


def test_compare_stacks_runs_under_a_banner_of_differences(data, tmp_path):
    from bokeh.document import Document
    from bokeh.layouts import Column

    from viz.app import Session, TraceProvider
    from viz.compare import differences

    meta = Meta(runtime="sim", algo="treesplit", game="go", board=9, ranks={"search": 2, "broadcast": 1},
                threads=1, machine="oculus", versions={"x": "y"}, t_end=1.0)
    with TraceWriter(tmp_path, meta) as w:
        for s in SAMPLES:
            w.sample(s[0], s[1], s[2], s[3], s[4] * 3, s[5] * 3, s[6], s[7])
    other = RunData.from_trace(read_trace(tmp_path))
    diff = differences(data, other)
    assert "runtime (engine vs sim)" in diff and "threads per rank (2 vs 1)" in diff and "machine (test vs oculus)" in diff
    doc = Document()
    Session(doc, ["overview"], [TraceProvider(data), TraceProvider(other)], live=False)
    banner = doc.get_model_by_name("compare.banner")
    assert "threads per rank (2 vs 1)" in banner.text and "3.0x the simulations per second" in banner.text
    content = doc.roots[0].children[-1]
    assert isinstance(content, Column) and isinstance(content.children[-1], Column)  # runs stacked, not side by side
    boards = [m for m in doc.models if isinstance(m, Figure) and "Answer so far" in m.title.text]
    assert len(boards) == 2  # a board per run
