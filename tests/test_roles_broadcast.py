"""Broadcast ranks: every search rank's synchronisation rows reach every other search rank exactly once,
never echo back, and merge per node while delayed; the role's single transitions."""

from collections import Counter, defaultdict

import numpy as np
import pytest

from model.roles.base import BCAST as BCAST_PKG
from model.roles.base import Actions, Layout, Role
from model.roles.broadcast import TreesplitBroadcast
from model.roles.loopback import Loopback
from model.roles.messages import BCAST, DUP, NODE_ROW, STAT, SYNC, Message, Stats
from model.roles.params import TreesplitParams

SHARED = 99


class Sink(Role):
    """A search rank that sends one SYNC (its own node + one shared node) and records what it hears."""

    def __init__(self, rank, layout, rounds=1):
        self.rank, self.layout, self.rounds = rank, layout, rounds
        self.got = defaultdict(int)
        self.messages = Counter()

    def start(self):
        out = Actions()
        for k in range(self.rounds):
            rows = np.zeros(2, STAT)
            rows["hash"] = [1000 + self.rank, SHARED]
            rows["idx"] = NODE_ROW
            rows["move"] = -1
            rows["n"] = 1
            out.msgs.append(Message(SYNC, self.rank, self.layout.partner(self.rank), Stats(rows)))
        return out

    def on_message(self, msg):
        assert msg.kind in (SYNC, DUP) and not self.layout.is_search(msg.src)
        self.messages[msg.kind] += 1
        for row in msg.payload.rows:
            self.got[int(row["hash"])] += int(row["n"])
        return Actions()


def _run(M, B, peers, delay, rounds=1, seed=0):
    lay = Layout(M, B, peers=peers)
    params = TreesplitParams(bcast_delay=delay)
    roles = [Sink(s, lay, rounds) for s in range(M)] + [TreesplitBroadcast(M + b, lay, params) for b in range(B)]
    run = Loopback(roles, seed=seed, serialize=True).run()
    return roles, run


@pytest.mark.parametrize("M,B,peers", [(4, 1, 12), (16, 4, 12), (16, 16, 6), (32, 8, 12), (64, 32, 12),
                                       (27, 27, 3), (24, 24, 6), (10, 5, 1)])
@pytest.mark.parametrize("delay", [0.0, 0.002])
def test_each_row_reaches_every_other_search_rank_once(M, B, peers, delay):
    rounds = 2
    roles, run = _run(M, B, peers, delay, rounds, seed=M + B)
    for s in range(M):
        got = roles[s].got
        assert got.get(1000 + s, 0) == 0, "a search rank heard its own rows back"
        for o in range(M):
            if o != s:
                assert got[1000 + o] == rounds
        assert got[SHARED] == rounds * (M - 1)
    hops = Counter(m[0] for m in run.messages)
    assert hops[BCAST] <= rounds * M * (B - 1)  # at most one BCAST per broadcast and receiving rank
    for b in roles[M:]:
        assert b.idle() and b.finished()
        if delay == 0:  # nothing merged: each broadcast rank hears every other one's broadcasts exactly once
            assert b.received[BCAST] == rounds * (M - len(b.clients))


def test_delay_merges_messages_for_the_same_node():
    M, B = 16, 4
    direct, _ = _run(M, B, 12, 0.0, rounds=3, seed=1)
    merged, _ = _run(M, B, 12, 0.01, rounds=3, seed=1)
    n_direct = sum(sum(r.messages.values()) for r in direct[:M])
    n_merged = sum(sum(r.messages.values()) for r in merged[:M])
    assert n_merged < n_direct
    assert all(r.got[SHARED] == 3 * (M - 1) for r in merged[:M])


def _rows(h, full=False):
    rows = np.zeros(3, STAT)
    rows["hash"] = h
    rows["idx"] = [NODE_ROW, 0, 1]
    rows["move"] = [2 if full else -1, 5, 6]
    rows["n"] = [2, 1, 1]
    return rows


def test_delay_asks_for_one_timer_and_flushes_in_one_package():
    lay = Layout(8, 2, peers=12)  # broadcast rank 8 serves search ranks 0-3, rank 9 serves 4-7
    b = TreesplitBroadcast(8, lay, TreesplitParams(bcast_delay=0.005))
    a1 = b.on_message(Message(SYNC, 1, 8, Stats(_rows(7))))
    assert a1.timers == [(0.005, "flush")] and not a1.pkgs and not a1.msgs
    a2 = b.on_message(Message(DUP, 2, 8, Stats(_rows(7, full=True))))
    assert not a2.timers and not a2.pkgs and not b.idle()
    a3 = b.on_timer("flush")
    assert [p.kind for p in a3.pkgs] == [BCAST_PKG]
    out = b.on_work_done(a3.pkgs[0], b.execute(a3.pkgs[0]))
    by_dst = {m.dst: m for m in out.msgs}
    assert sorted(by_dst) == [0, 1, 2, 3, 9]
    assert by_dst[9].kind == BCAST and by_dst[9].payload.origin == 0
    assert by_dst[0].kind == DUP  # rows of 1 and 2, merged: carries the full child list
    assert by_dst[1].kind == DUP and by_dst[2].kind == SYNC  # 2 does not hear its own DUP back
    node = by_dst[0].payload.rows
    assert node["n"][node["idx"] == NODE_ROW][0] == 4 and len(node) == 3
    assert b.idle()


def test_stop_flushes_at_once():
    lay = Layout(4, 2, peers=12)
    b = TreesplitBroadcast(4, lay, TreesplitParams(bcast_delay=1.0))
    assert b.on_message(Message(SYNC, 0, 4, Stats(_rows(3)))).timers
    acts = b.stop()
    assert [p.kind for p in acts.pkgs] == [BCAST_PKG]
    acts = b.on_message(Message(BCAST, 5, 4, Stats(_rows(4), origin=1, dim=1)))
    assert [p.kind for p in acts.pkgs] == [BCAST_PKG] and not acts.timers


def test_rejects_messages_it_cannot_route():
    lay = Layout(4, 2)
    b = TreesplitBroadcast(4, lay)
    with pytest.raises(ValueError):
        b.on_message(Message("MOVE", 0, 4, None))
    with pytest.raises(ValueError):
        b.on_message(Message(SYNC, 5, 4, Stats(_rows(1))))
