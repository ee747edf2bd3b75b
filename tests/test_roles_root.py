"""Root parallelisation roles on the loopback runtime: independent trees, merged near-root statistics."""

import numpy as np
import pytest

from model import game
from model.game import make_game
from model.rng import new_rng
from model.roles import Layout, Setup, make_roles
from model.roles.invariants import treesplit_problems
from model.roles.loopback import Loopback
from model.roles.messages import MERGE
from model.roles.params import RootParams
from model.roles.root import RootSearch
from model.tt import new_table
from model.uct import N_COUNTERS, UctParams, history_array, run_simulations

PGAME = dict(branching=4, depth=8, seed=3)


@pytest.mark.parametrize("chain", [1, 64])
@pytest.mark.parametrize("game_name,M,W,depth", [("pgame", 2, 1, 1), ("pgame", 4, 2, 2), ("pgame", 3, 1, 3),
                                                 ("go", 3, 2, 2)])
def test_merged_statistics_add_up(game_name, M, W, depth, chain):
    g, s = make_game(game_name, **(PGAME if game_name == "pgame" else dict(size=9, komi=7.0)))
    sims, every = 900, 40
    roles = make_roles("root", Layout(M, 0, workers=W), Setup(g, s, sims=sims, seed=M),
                       {"table_mb": 8, "merge_every": every, "merge_depth": depth, "merge_min_visits": 8,
                        "chain": chain})
    run = Loopback(roles, workers=W, seed=M, keep=True, serialize=True).run()
    assert treesplit_problems(roles, run.sent) == []
    assert all(r.root_stats()["visits"] == sims for r in roles)
    assert len({tuple(r.root_stats()["child_visits"]) for r in roles}) == 1
    merges = sum(r.counts["merges"] for r in roles)
    if chain == 1:  # a merge every `every` simulations exactly, each its own message to every other rank
        assert merges >= sum(r.done // every for r in roles)
        assert run.message_counts()[MERGE] >= merges * (M - 1)
    else:  # a package chains at most `every` simulations: no period goes by without a merge
        assert all(r.chain == every for r in roles)
        assert run.message_counts()[MERGE] >= sum(r.done // (2 * every) for r in roles) * (M - 1)
    assert set(run.message_counts()) == {MERGE}  # nothing but merges: simulations never leave their rank
    if depth > 1 and game_name == "pgame":
        assert sum(r.counts["dups"] for r in roles) > 0  # nodes below the root were shared too


def test_trees_stay_independent_below_the_merged_levels():
    g, s = make_game("pgame", **PGAME)
    roles = make_roles("root", Layout(2, 0, workers=1), Setup(g, s, sims=600, seed=9),
                       {"table_mb": 8, "merge_every": 50, "merge_depth": 1})
    Loopback(roles, seed=9).run()
    own = [set(r.t.key[(r.t.stamp == r.t.meta[0]) & (r.dt.row_of < 0)].tolist()) for r in roles]
    deep = [sum(int(r.t.visits[i]) for i in np.flatnonzero((r.t.stamp == r.t.meta[0]) & (r.dt.row_of < 0)))
            for r in roles]
    assert own[0] and own[1] and deep[0] != deep[1]  # each grew its own tree under the shared root


def test_one_rank_is_the_sequential_search():
    g, s = make_game("pgame", **PGAME)
    na = int(game.n_actions(g))
    t_seq = new_table(4096, na)
    run_simulations(t_seq, g, s, history_array([game.position_hash(g, s)]), UctParams().to_array(),
                    new_rng(5 * 1000003), 300, np.zeros(N_COUNTERS, np.int64))
    role = RootSearch(0, Layout(1, 0, workers=1), Setup(g, s, sims=300, seed=5), UctParams(),
                      RootParams(overload=1), new_table(4096, na))
    Loopback([role], seed=0).run()
    assert np.array_equal(role.t.child_visits, t_seq.child_visits)
    assert np.array_equal(role.t.visits, t_seq.visits)


def test_root_rank_rejects_other_messages():
    g, s = make_game("pgame", **PGAME)
    role = make_roles("root", Layout(2, 0), Setup(g, s, sims=10), {"table_mb": 1})[0]
    role.start()
    from model.roles.messages import MOVE, STEP, Message, Steps

    with pytest.raises(ValueError):
        role.on_message(Message(MOVE, 1, 0, Steps(np.zeros(0, STEP))))
