"""The `tree` algorithm: threads on one shared table lose no visit, and search as well as one thread.

Tolerance for AMAF: AMAF counters are updated with plain adds (model/uct.py), so two threads adding to
the same child counter within the same few nanoseconds can lose one sample. The root's own move of a
simulation always counts as an AMAF sample of that move (the backup marks it before the AMAF pass), so
without losses amaf_visits >= visits for every root child; we accept a 1% shortfall in the total. Visits,
value sums and virtual losses are atomic: for them nothing may be lost.
"""

import numpy as np

from engine.algorithms import make_config, make_searcher
from engine.sequential import Position
from engine.timecontrol import Budget
from engine.tree_parallel import TreeSearcher
from model import game, pgame, tt, uct


def test_two_threads_lose_no_visit_on_go():
    g, s = game.make_game("go", size=9, komi=7.0)
    searcher = TreeSearcher(make_config("tree", threads=2, seed=5, tt_mb=32))
    searcher.search(Position.initial(g, s), Budget(sims=50))  # compile outside the race
    searcher.reset()
    res = searcher.search(Position.initial(g, s), Budget(sims=6000))
    t = searcher.table
    root = uct.find_node(t, g, s)
    assert res.sims == 6000 == res.root_visits == int(t.visits[root])
    assert sum(searcher.last_thread_sims) == 6000 and min(searcher.last_thread_sims) > 0  # both threads worked
    assert int(t.child_visits[root].sum()) == 6000
    assert np.isclose(float(t.value[root]), float(t.child_value[root].sum()), atol=1e-3)
    assert not t.vloss.any()  # every virtual loss taken back
    # every stored node: the visits of its children never exceed its own (atomic adds, nothing doubled)
    live = np.nonzero((t.stamp == t.meta[tt.M_SEARCH]) & (t.n_children > 0))[0]
    for slot in live:
        assert t.child_visits[slot].sum() <= t.visits[slot]
    n = int(t.n_children[root])
    assert t.amaf_visits[root, :n].sum() >= 0.99 * t.child_visits[root, :n].sum()
    assert 0 <= res.action < game.n_actions(g)


def test_threads_find_the_minimax_move():
    found = 0
    for seed in range(1, 40):
        g, s = game.make_game("pgame", branching=3, depth=6, seed=seed)
        vals = []
        for a in range(3):
            c = s.copy()
            game.play(g, c, a)
            vals.append(pgame.minimax(g, c))
        if not (max(vals) == 1 and min(vals) < 1):
            continue
        searcher = make_searcher("tree", make_config("tree", threads=2, seed=3, tt_mb=8, c=0.7, rave=False))
        res = searcher.search(Position.initial(g, s), Budget(sims=20000))
        assert vals[res.action] == 1
        assert res.root_visits == 20000
        found += 1
        if found == 2:
            break
    assert found == 2


def test_timed_search_stops_all_threads():
    g, s = game.make_game("pgame", branching=4, depth=10, seed=1, cost=2000)
    searcher = TreeSearcher(make_config("tree", threads=2, seed=1, tt_mb=8))
    searcher.search(Position.initial(g, s), Budget(sims=10))
    res = searcher.search(Position.initial(g, s), Budget(seconds=0.3))
    assert 0.3 <= res.seconds < 1.5 and res.sims > 0
    assert res.root_visits == res.sims + 10  # the first search's visits are reused
