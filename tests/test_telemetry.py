"""The live-telemetry wire format and the sender that must never block a rank."""

import json
import pickle
import socket
import time

import pytest

from engine.telemetry import TelemetrySender
from model.telemetry import MAX_DATAGRAM, TelemetryError, Window, decode, encode


def _record(**kw):
    w = Window(rank=3, t0=1.0)
    w.package("select")
    w.package("select")
    w.message(1, "MOVE", 56)
    w.message(1, "MOVE", 64)
    w.message(4, "SYNC", 112)
    return w.flush(1.25, queue_len=7, busy_frac=0.75, workers_busy=[0.1, 0.9], sims_done=120, playouts_done=118,
                   nodes_stored=900, nodes_duplicated=12, in_flight=9, **kw)


@pytest.mark.parametrize("fmt", ["msgpack", "json"])
def test_round_trip(fmt):
    rec = _record(meta={"algo": "treesplit", "board": 9, "secret": "dropped"})
    out = decode(encode(rec, fmt))
    assert out["rank"] == 3 and out["t0"] == 1.0 and out["t1"] == 1.25
    assert out["packages"] == {"select": 2}
    assert sorted(out["messages"]) == [[1, "MOVE", 2, 120], [4, "SYNC", 1, 112]]
    assert out["busy_frac"] == 0.75 and out["workers_busy"] == [0.1, 0.9] and out["sims_done"] == 120
    assert out["meta"] == {"algo": "treesplit", "board": 9} and out["tree"] is None


def test_window_restarts_at_flush():
    w = Window(0, 0.0)
    w.package("playout")
    first = w.flush(0.2)
    second = w.flush(0.4)
    assert first["packages"] == {"playout": 1} and second["packages"] == {} and second["t0"] == 0.2


@pytest.mark.parametrize("bad", [
    b"", b"\xc1", b"{not json", encode([1, 2, 3]), encode({"v": 99, "rank": 0, "t0": 0, "t1": 1}),
    encode({"v": 1, "rank": -1, "t0": 0, "t1": 1}), encode({"v": 1, "rank": 0, "t0": 1, "t1": 1}),
    encode({"v": 1, "rank": 0, "t0": 0, "t1": float("nan")}),
    encode({"v": 1, "rank": 0, "t0": 0, "t1": 1, "messages": [[1, "NOPE", 1, 1]]}),
    encode({"v": 1, "rank": 0, "t0": 0, "t1": 1, "messages": [[1, "MOVE", -1, 1]]}),
    encode({"v": 1, "rank": 0, "t0": 0, "t1": 1, "packages": {"select": "many"}}),
    encode({"v": 1, "rank": 0, "t0": 0, "t1": 1, "tree": {"hash": [1]}}),
    json.dumps({"v": 1, "rank": "0", "t0": 0, "t1": 1}).encode(),
])
def test_invalid_datagrams_are_refused(bad):
    with pytest.raises(TelemetryError):
        decode(bad)


def test_pickle_is_never_unpickled():
    class Boom:
        def __reduce__(self):
            return (exec, ("raise SystemExit('unpickled!')",))

    with pytest.raises(TelemetryError):
        decode(pickle.dumps(Boom()))


def _free_udp_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_sender_without_listener_neither_blocks_nor_raises():
    port = _free_udp_port()  # nobody listens there
    with TelemetrySender("127.0.0.1", port) as s:
        t = time.perf_counter()
        for _ in range(2000):
            s.send(_record())
        elapsed = time.perf_counter() - t
    assert s.sent + s.dropped == 2000
    assert elapsed < 5.0  # 2000 non-blocking sendto calls; a blocking connect would hang instead
    bad = TelemetrySender("no-such-host.invalid", 9)
    assert bad.send(_record()) is False and bad.dropped == 1
    s2 = TelemetrySender("127.0.0.1", port)
    assert s2.send({"v": 1, "x": "y" * (MAX_DATAGRAM + 10)}) is False and s2.dropped == 1
    assert s2.send({"v": 1, "x": object()}) is False  # unencodable: dropped, not raised
    s2.close()
    assert s2.send(_record()) is False


def test_sender_reaches_a_listener():
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    rx.settimeout(5)
    with TelemetrySender("127.0.0.1", rx.getsockname()[1], fmt="json") as s:
        assert s.send(_record())
    got = decode(rx.recv(65536))
    rx.close()
    assert got["rank"] == 3 and got["queue_len"] == 7
