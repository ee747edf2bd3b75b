"""Live mode: the dashboard process aggregates telemetry records from the ranks into RunData."""

import time

import numpy as np
import pytest
from viz_helpers import Dashboard

import viz.live as live
from engine.telemetry import TelemetrySender
from model.telemetry import Window, encode
from viz.live import LiveAggregator
from viz.synthetic import telemetry_records
from viz.views import VIEWS


def _window(rank, t0, t1, sims, msgs=(), busy=0.5, workers=(), **kw):
    w = Window(rank, t0)
    for dst, kind, nbytes in msgs:
        w.message(dst, kind, nbytes)
    return w.flush(t1, busy_frac=busy, workers_busy=list(workers), sims_done=sims, playouts_done=sims,
                   queue_len=rank + 1, **kw)


def test_aggregator_joins_ranks_and_windows():
    agg = LiveAggregator()
    meta = {"algo": "treesplit", "game": "go", "board": 9, "ranks": {"search": 2, "broadcast": 1}, "threads": 2}
    recs = [
        _window(0, 0.0, 0.2, 10, [(1, "MOVE", 50), (1, "MOVE", 50), (2, "SYNC", 100)], busy=0.9, workers=[0.1, 0.8],
                meta=meta, in_flight=4),
        _window(1, 0.0, 0.2, 4, [(0, "UPDATE", 40)], busy=0.3, in_flight=2),
        _window(0, 0.2, 0.4, 30, [(1, "MOVE", 50)], busy=0.7, workers=[0.2, 0.6], in_flight=5),
        _window(1, 0.2, 0.4, 14, [], busy=0.5, in_flight=1),
        _window(2, 0.2, 0.4, 0, [(0, "BCAST", 100), (1, "BCAST", 100)], busy=0.1),
    ]
    for r in recs:
        assert agg.feed(encode(r))
    assert not agg.feed(b"garbage") and agg.rejected == 1 and agg.received == 5
    d = agg.snapshot()
    assert d is agg.snapshot()  # cached until the next record
    assert d.source == "live" and d.n_ranks == 3 and d.n_search == 2 and d.bin_s == pytest.approx(0.2)
    np.testing.assert_allclose(d.sims, [14, 30])
    np.testing.assert_allclose(d.in_flight, [6, 6])
    np.testing.assert_allclose(d.busy[:, 0], [0.9, 0.3, np.nan])
    np.testing.assert_allclose(d.busy[:, 1], [0.7, 0.5, 0.1])
    assert d.worker_rows == ["0.0", "0.1"]
    np.testing.assert_allclose(d.worker_busy, [[0.1, 0.2], [0.8, 0.6]])
    c, b = d.matrix(-np.inf, np.inf)
    assert c[0, 1] == 3 and b[0, 1] == 150 and c[1, 0] == 1 and c[2, 0] == 1 and c[2, 1] == 1 and c.sum() == 7
    move = d.kinds.index("MOVE")
    np.testing.assert_allclose(d.kind_bins[move], [2, 1])
    assert d.meta["algo"] == "treesplit" and d.board_shape() == (9, 9)
    for cls in VIEWS.values():  # every view draws live data
        cls(d).update(d)


def test_aggregator_keeps_bounded_memory(monkeypatch):
    monkeypatch.setattr(live, "MAX_CELLS", 200)
    agg = LiveAggregator()
    sent = 0
    for step in range(60):
        for rec in telemetry_records(step * 0.2, (step + 1) * 0.2, search=4, broadcast=1, step=step):
            agg.add(live.decode(encode(rec)))
            sent += sum(m[2] for m in rec["messages"])
    d = agg.snapshot()
    assert len(d.msgs) <= 200 and int(d.msgs.count.sum()) == sent  # merged into coarser buckets, none lost


def test_aggregator_takes_tree_snapshots():
    agg = LiveAggregator()
    for rec in telemetry_records(0.0, 0.25, search=2, broadcast=1, with_tree=True):
        agg.add(live.decode(encode(rec)))
    d = agg.snapshot()
    assert 100 <= len(d.tree_at(None)) <= 200 and d.tree["hash"].dtype == np.uint64


def test_live_dashboard_receives_records_from_16_ranks(tmp_path):
    with Dashboard("--live", "127.0.0.1:0", log=tmp_path / "live.log") as dash:
        assert dash.udp_port and dash.status()["live"]["received"] == 0
        n = 0
        with TelemetrySender("127.0.0.1", dash.udp_port) as s:
            for step in range(5):
                for rec in telemetry_records(step * 0.2, (step + 1) * 0.2, search=16, broadcast=4, step=step):
                    assert s.send(rec)
                    n += 1
        deadline = time.time() + 20
        while time.time() < deadline and dash.status()["live"]["received"] < n:
            time.sleep(0.1)
        st = dash.status()["live"]
        assert st["received"] == n and st["rejected"] == 0 and st["ranks"] == list(range(20))
        assert st["t_end"] == pytest.approx(1.0)
        for path in ("/", "/overview", "/traffic"):
            assert dash.get(path)[0] == 200
        assert "Traceback" not in dash.log()


def test_final_record_is_the_finished_state_not_a_sample():
    agg = LiveAggregator()
    meta = {"algo": "treesplit", "game": "go", "board": 9, "ranks": {"search": 1, "broadcast": 0}, "threads": 2}
    agg.feed(encode(_window(0, 0.0, 0.2, 50, workers=[0.7], meta=meta, io_busy=0.25)))
    w = Window(0, 0.2)
    agg.feed(encode(w.flush(0.3, final={"t_end": 0.3, "seconds": 0.29, "sims": 64, "sims_per_s": 220.7,
                                        "move": "E5", "stop_reason": "64 simulations"})))
    d = agg.snapshot()
    np.testing.assert_allclose(d.sims.sum(), 50)  # the final record's absent counters are not zeros
    assert d.worker_rows == ["0.io", "0.0"]  # the IO thread's share is a row of its own
    np.testing.assert_allclose(d.worker_busy[:, -1], [0.25, 0.7])
    assert d.final["move"] == "E5" and d.final["sims"] == 64
    text = VIEWS["overview"](d).summary.text
    assert "Finished at t = 300 ms: 64 simulations (221/s), move E5" in text
    status = live.LiveProvider(agg, ("127.0.0.1", 7777)).status_html()
    assert "finished at t = 0.30 s, 64 simulations" in status and "move E5" in status


def test_live_views_before_any_record_say_what_they_wait_for():
    d = LiveAggregator().snapshot()
    views = {n: cls(d) for n, cls in VIEWS.items()}
    summary = views["overview"].summary.text
    assert "waiting for the first telemetry record" in summary and "None" not in summary and "?" not in summary
    assert "tree.parquet" not in views["tree"].note.text and "Waiting for a tree snapshot" in views["tree"].note.text
    assert "--trace DIR" in views["teaching"].header.text  # the one view that needs a recorded trace says so
    for v in views.values():  # live mode has no replay slider to speak of
        assert "slider" not in str([m.text for m in v.layout.references() if hasattr(m, "text")]).lower()
    status = live.LiveProvider(LiveAggregator(), ("127.0.0.1", 7777)).status_html()
    assert "waiting for telemetry" in status and "--telemetry 127.0.0.1:7777" in status


def test_engine_live_fields_shares_meta_and_tree():
    from engine.mpi.config import DistributedConfig
    from engine.mpi.live import META_EVERY, LiveFields

    cfg = DistributedConfig(algo="treesplit", ranks=2, threads=3, board=9)

    class Role:  # a role without a tree (a broadcast rank's): no tree field
        pass

    f = LiveFields(cfg)
    first = f.fields(0.2, [0.1, 0.05], 0.02, Role())
    assert first["meta"]["ranks"] == {"search": 2, "broadcast": cfg.resolved_bcast_ranks()} and "tree" not in first
    second = f.fields(0.4, [0.2, 0.05], 0.12, None)  # worker 0 busy 0.1 s of 0.2 s, the IO thread 0.1 s
    assert second["workers_busy"] == pytest.approx([0.5, 0.0]) and second["io_busy"] == pytest.approx(0.5)
    assert "meta" not in second and f.records == 2 and META_EVERY > 2

def test_engine_live_fields_send_the_first_tree_as_soon_as_there_is_one(monkeypatch):
    """A rank whose tree is still empty asks again next window: the dashboard's tree view fills within a window
    of the first node, then refreshes every TREE_EVERY s."""
    from engine.mpi import live as engine_live
    from engine.mpi.config import DistributedConfig

    trees = iter([None, {"hash": [1]}, {"hash": [1, 2]}, {"hash": [1, 2, 3]}])
    monkeypatch.setattr(engine_live, "tree_of", lambda role: next(trees))
    f = engine_live.LiveFields(DistributedConfig(algo="treesplit", ranks=2, threads=1, board=9))
    sent = [t for t in (0.0, 0.2, 0.4, 0.2 + engine_live.TREE_EVERY) if "tree" in f.fields(t, [0.0], 0.0, object())]
    assert sent == [0.2, 0.2 + engine_live.TREE_EVERY]


def test_engine_live_final_record_carries_the_move():
    from engine.mpi.live import final_fields

    rec = _window(0, 0.0, 0.2, 1, **final_fields({"sims": 40, "seconds": 0.1, "move_str": "D4",
                                                  "sims_per_s": 400.0}, 0.12))
    assert live.decode(encode(rec))["final"]["move"] == "D4"
