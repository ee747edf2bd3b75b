"""Messages of the roles: exact sizes, byte round trips (no pickle), merging of statistics rows."""

import numpy as np
import pytest

from model.roles.messages import (BCAST, DUP, MERGE, MOVE, NODE_ROW, PLAYOUT_FWD, RESULT, STAT, STEP, SYNC, UPDATE,
                                  Message, Result, Stats, Steps, decode, merge_stats)


def _steps(n, seed=0):
    rng = np.random.default_rng(seed)
    s = np.zeros(n, STEP)
    s["hash"] = rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    s["action"] = rng.integers(0, 361, n)
    s["rank"] = rng.integers(0, 64, n)
    s["idx"] = rng.integers(-1, 100, n)
    s["player"] = rng.integers(0, 2, n)
    return s


def _rows(n, seed=0, hashes=3):
    rng = np.random.default_rng(seed)
    r = np.zeros(n, STAT)
    r["hash"] = rng.integers(0, hashes, n).astype(np.uint64) + np.uint64(2**63)
    r["idx"] = rng.integers(-1, 5, n)
    r["move"] = r["idx"] * 3
    r["n"] = rng.integers(0, 20, n)
    r["w"] = r["n"] * 0.5
    r["an"] = rng.integers(0, 5, n)
    r["aw"] = r["an"] * 0.25
    return r


@pytest.mark.parametrize("kind,payload", [
    (MOVE, Steps(_steps(7))),
    (PLAYOUT_FWD, Steps(_steps(0))),
    (UPDATE, Result(-3.5, _steps(5), None)),
    (RESULT, Result(1.0, _steps(3), np.array([-1, 0, 1, 1, -1], np.int8))),
    (SYNC, Stats(_rows(9), -1, -1)),
    (DUP, Stats(_rows(4), -1, -1)),
    (BCAST, Stats(_rows(11), 5, 2)),
    (MERGE, Stats(_rows(2))),
])
def test_round_trip_and_exact_size(kind, payload):
    m = Message(kind, 3, 9, payload, sim_id=12345)
    data = m.encode()
    assert isinstance(data, bytes) and len(data) == m.nbytes
    back = decode(kind, 3, 9, 12345, data)
    assert (back.kind, back.src, back.dst, back.sim_id) == (kind, 3, 9, 12345)
    for name in payload.__slots__:
        a, b = getattr(payload, name), getattr(back.payload, name)
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and np.array_equal(a, b)
        else:
            assert a == b


def test_truncated_or_unknown_is_an_error():
    data = Message(MOVE, 0, 1, Steps(_steps(4))).encode()
    with pytest.raises(ValueError):
        decode(MOVE, 0, 1, -1, data[:-3])
    with pytest.raises(ValueError):
        decode("CONTROL", 0, 1, -1, data)
    with pytest.raises(ValueError):
        decode(SYNC, 0, 1, -1, b"\x01")


def test_merge_sums_rows_of_the_same_node_and_child():
    a, b = _rows(40, 1), _rows(25, 2)
    m = merge_stats(np.concatenate([a, b]))
    keys = list(zip(m["hash"].tolist(), m["idx"].tolist()))
    assert len(keys) == len(set(keys))
    for col in ("n", "w", "an", "aw"):
        assert np.isclose(m[col].sum(), a[col].sum() + b[col].sum())
    for h, j in keys[:5]:
        sel = lambda r: r[(r["hash"] == h) & (r["idx"] == j)]  # noqa: E731
        assert m[(m["hash"] == h) & (m["idx"] == j)]["n"][0] == sel(a)["n"].sum() + sel(b)["n"].sum()
    # rows of one node are contiguous, node row first
    for h in set(m["hash"].tolist()):
        where = np.flatnonzero(m["hash"] == h)
        assert np.all(np.diff(where) == 1)
        assert m["idx"][where[0]] == NODE_ROW or NODE_ROW not in m["idx"][where]


def test_merge_keeps_a_full_child_list_mark():
    dup = np.zeros(3, STAT)
    dup["hash"] = 7
    dup["idx"] = [NODE_ROW, 0, 1]
    dup["move"] = [2, 10, 11]
    sync = dup[:2].copy()
    sync["move"][0] = -1
    m = merge_stats(np.concatenate([sync, dup]))
    assert m["move"][m["idx"] == NODE_ROW][0] == 2
