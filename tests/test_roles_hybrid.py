"""Hybrid roles on the loopback runtime: treesplit groups joined by root parallelisation. Each group keeps
treesplit's invariants, the merged near-root statistics end up the same on every search rank and sum all
groups' simulations, G = 1 is treesplit, and a search returns a legal move."""

import numpy as np
import pytest

from model import game
from model.errors import ConfigError
from model.game import make_game
from model.roles import Actions, Layout, Setup, make_role, make_roles
from model.roles.hybrid import hybrid_problems, merged_positions
from model.roles.loopback import Loopback
from model.roles.messages import MERGE

PGAME = dict(branching=4, depth=8, seed=3)


def _run(M, B, G, W=1, sims=1200, seed=1, game_name="pgame", stop_after=None, **params):
    g, s = make_game(game_name, **(PGAME if game_name == "pgame" else dict(size=9, komi=7.0)))
    p = dict(table_mb=4, groups=G, merge_every=40, n_dup=48)
    p.update(params)
    roles = make_roles("hybrid", Layout(M, B, workers=W), Setup(g, s, sims=sims, seed=seed), p)
    run = Loopback(roles, workers=[W] * M + [1] * B, seed=seed, keep=True, serialize=True).run(stop_after=stop_after)
    return roles, run, g, s


@pytest.mark.parametrize("M,B,G,W,depth", [(2, 0, 2, 1, 1), (4, 0, 2, 2, 2), (8, 2, 2, 1, 2), (4, 0, 4, 1, 3),
                                           (16, 4, 2, 1, 2)])
def test_groups_keep_their_invariants_and_merged_nodes_sum_all_groups(M, B, G, W, depth):
    sims = 1200
    roles, run, g, s = _run(M, B, G, W, sims=sims, seed=M, merge_depth=depth)
    assert hybrid_problems(roles, run.sent) == []
    search = roles[:M]
    assert all(r.root_stats()["visits"] == sims for r in search)
    assert len({tuple(r.root_stats()["child_visits"]) for r in search}) == 1
    assert len(search[0].merged) == len(merged_positions(g, s, depth, 10**6))
    counts = run.message_counts()
    merges = sum(r.counts["merges"] for r in search)
    assert merges > 0 and counts[MERGE] == merges * (M - M // G)  # one to every search rank of the others
    m = M // G
    for grp in range(G):  # each group did its share, and its treesplit traffic stayed inside it
        assert sum(r.inner.done for r in search[grp * m:(grp + 1) * m]) == sims // G
    groups = search[0].groups
    for m_ in run.sent:  # treesplit traffic stays inside a group, MERGEs go between search ranks of two
        same = groups.group(m_.src) == groups.group(m_.dst)
        assert same != (m_.kind == MERGE) and (m_.kind != MERGE or max(m_.src, m_.dst) < M)
    if m > 1:
        assert counts["SYNC"] > 0 and counts["MOVE"] > 0


def test_one_group_is_treesplit():
    M, B = 4, 1
    g, s = make_game("pgame", **PGAME)
    p = dict(table_mb=4, n_dup=48)
    hy = make_roles("hybrid", Layout(M, B, workers=2), Setup(g, s, sims=800, seed=2), dict(p, groups=1))
    ts = make_roles("treesplit", Layout(M, B, workers=2), Setup(g, s, sims=800, seed=2), p)
    a = Loopback(hy, workers=[2] * M + [1], seed=2).run()
    b = Loopback(ts, workers=[2] * M + [1], seed=2).run()
    assert a.messages == b.messages
    assert [r.root_stats() for r in hy[:M]] == [r.root_stats() for r in ts[:M]]


def test_groups_grow_their_own_trees_below_the_merged_nodes():
    M, G = 4, 2
    roles, run, _, _ = _run(M, 0, G, sims=1000, seed=5, merge_depth=1)
    assert hybrid_problems(roles, run.sent) == []
    merged = set(roles[0].merged.tolist())
    own = []
    for grp in range(G):
        keys, visits = set(), 0
        for r in roles[grp * 2:(grp + 1) * 2]:
            t = r.t
            live = np.flatnonzero(t.stamp == t.meta[0])
            keys |= {int(t.key[i]) for i in live if int(t.key[i]) not in merged}
            visits += int(sum(t.visits[i] for i in live if int(t.key[i]) not in merged and r.dt.row_of[i] < 0))
        own.append((keys, visits))
    assert own[0][0] and own[1][0] and own[0][0] != own[1][0] and own[0][1] != own[1][1]


def test_go_search_returns_a_legal_move_agreed_by_every_rank():
    M = 4
    roles, run, g, s = _run(M, 0, 2, W=2, sims=300, seed=3, game_name="go", n_dup=16, merge_depth=2)
    assert hybrid_problems(roles, run.sent) == []
    moves = {r.best_move() for r in roles[:M]}
    legal = np.empty(int(game.n_actions(g)), np.int64)
    assert len(moves) == 1 and moves.pop() in legal[:game.legal_actions(g, s.copy(), legal)].tolist()
    assert all("root" in r.report() and r.report()["group"] in (0, 1) for r in roles[:M])


@pytest.mark.parametrize("stop_after", [300, 3000])
def test_stop_request_drains_and_merges(stop_after):
    M, B = 8, 2
    roles, run, _, _ = _run(M, B, 2, W=2, sims=None, seed=4, stop_after=stop_after)
    done = sum(r.inner.done for r in roles[:M])
    assert done > 0 and hybrid_problems(roles, run.sent) == []
    assert all(r.root_stats()["visits"] == done for r in roles[:M])
    assert all(r.idle() and r.finished() for r in roles)


def test_checker_catches_a_lost_merge_and_a_drifting_rank():
    M = 4
    roles, run, _, _ = _run(M, 0, 2, sims=600, seed=6)
    assert hybrid_problems(roles, run.sent) == []
    r = roles[3]
    r.t.child_visits[r.inner.root_slot, 0] -= 1  # one rank's merged statistics drift
    assert any("differ" in p for p in hybrid_problems(roles, run.sent))

    g, s = make_game("pgame", **PGAME)
    roles = make_roles("hybrid", Layout(M, 0), Setup(g, s, sims=600, seed=6),
                       dict(table_mb=4, groups=2, merge_every=40))
    deliver, lost = roles[2].on_message, []

    def lossy(msg):  # the network loses the first MERGE for rank 2
        if msg.kind == MERGE and not lost:
            lost.append(msg)
            return Actions()
        return deliver(msg)

    roles[2].on_message = lossy
    run = Loopback(roles, seed=6, keep=True).run()
    problems = hybrid_problems(roles, run.sent)
    assert lost and any("rank 2: root visits" in p for p in problems) and any("differ" in p for p in problems)
    assert any("MERGE messages sent" in p for p in problems)


def test_impossible_groupings_are_refused():
    g, s = make_game("pgame", **PGAME)
    with pytest.raises(ConfigError, match="groups"):
        make_role("hybrid", 0, Layout(6, 0), Setup(g, s, sims=10), {"groups": 4})
    with pytest.raises(ConfigError, match="groups"):
        make_role("hybrid", 0, Layout(8, 3), Setup(g, s, sims=10), {"groups": 2})
    with pytest.raises(ConfigError, match="merge_depth"):
        make_role("hybrid", 0, Layout(2, 0), Setup(g, s, sims=10), {"groups": 2, "merge_depth": 0})
    g9, s9 = make_game("go", size=9, komi=7.0)
    with pytest.raises(ConfigError, match="merge_depth"):  # 82 * 81 nodes at depth 2 > dup_rows
        make_role("hybrid", 0, Layout(2, 0), Setup(g9, s9, sims=10), {"groups": 2, "merge_depth": 3,
                                                                        "dup_rows": 1000, "table_mb": 1})
