"""The sequential searcher: right answers on exactly solvable trees, legal Go moves, reuse, reproducibility."""

import itertools

import pytest

from engine.sequential import Position, SearchConfig, SequentialSearcher
from engine.timecontrol import Budget, ThinkPlan, TimeConfig
from model import game, pgame, uct
from model.errors import ConfigError
from model.go import board


def child_values(g, s):
    vals = []
    for a in range(int(game.n_actions(g))):
        c = s.copy()
        game.play(g, c, a)
        vals.append(pgame.minimax(g, c))
    return vals


def contested_trees(n, branching=3, depth=6):
    """P-game seeds whose root has both winning and losing first moves (so a wrong choice can show)."""
    out = []
    for seed in itertools.count(1):
        g, s = game.make_game("pgame", branching=branching, depth=depth, seed=seed)
        vals = child_values(g, s)
        if max(vals) == 1 and min(vals) < 1:
            out.append((g, s, vals))
            if len(out) == n:
                return out


@pytest.mark.parametrize("rave", [False, True])
def test_finds_the_minimax_move_of_small_pgame_trees(rave):
    # The P-game's actions mean different things at different depths, so AMAF cannot stand in for
    # exploration there: these searches need the UCT term (C > 0).
    for g, s, vals in contested_trees(3):
        searcher = SequentialSearcher(SearchConfig(rave=rave, c=0.7, seed=3, tt_mb=8))
        res = searcher.search(Position.initial(g, s), Budget(sims=20000))
        assert vals[res.action] == 1, (vals, [(c.action, c.visits, c.value) for c in res.children])
        assert res.root_visits == res.sims == 20000
        assert res.pv and res.pv[0] == res.action


def test_resigns_a_lost_tree_but_not_a_won_one():
    lost = None
    for seed in itertools.count(1):
        g, s = game.make_game("pgame", branching=3, depth=4, seed=seed)
        if max(child_values(g, s)) == -1:
            lost = (g, s)
            break
    cfg = SearchConfig(resign=0.2, resign_min_visits=100, seed=1, tt_mb=4)
    res = SequentialSearcher(cfg).search(Position.initial(*lost), Budget(sims=5000))
    assert res.resign and res.children[0].value < 0.2
    g, s, _ = contested_trees(1, depth=4)[0]
    assert not SequentialSearcher(cfg).search(Position.initial(g, s), Budget(sims=5000)).resign


def test_same_seed_same_search_and_tree_reuse():
    g, s, _ = contested_trees(1)[0]
    runs = []
    for _ in range(2):
        searcher = SequentialSearcher(SearchConfig(seed=7, tt_mb=8))
        first = searcher.search(Position.initial(g, s), Budget(sims=3000))
        runs.append([(c.action, c.visits, c.value) for c in first.children])
    assert runs[0] == runs[1]
    # play the chosen move: the next search starts from the subtree already grown below it
    s2 = s.copy()
    game.play(g, s2, first.action)
    kept = next(c.visits for c in first.children if c.action == first.action)
    second = searcher.search(Position.initial(g, s2), Budget(sims=1000))
    assert second.sims == 1000 and second.root_visits >= kept + 1000 - 1


def go_position(size=9, black=(), white=(), to_move=0):
    g = board.make_params(size, 7.0, "random")
    s = board.new_state(g)
    for a in black:
        assert board.go_place(g, s, a, 0)
    for a in white:
        assert board.go_place(g, s, a, 1)
    board.set_to_move(s, to_move)
    return g, s


def A(v, size=9):
    """GTP vertex -> action (row 1 at the bottom, no I column)."""
    col = "ABCDEFGHJKLMNOPQRST".index(v[0])
    return (int(v[1:]) - 1) * size + col


def test_go_prefers_an_obvious_capture():
    # a capturing race: Black's chain A5-H5 (only liberty J5) lies on White's chain A4-H4 (only liberty J4),
    # walled in by White on row 6 and Black on row 3. Whoever moves captures eight stones and wins.
    cols = "ABCDEFGH"
    black = [A(c + "5") for c in cols] + [A(c + "3") for c in cols + "J"]
    white = [A(c + "4") for c in cols] + [A(c + "6") for c in cols + "J"]
    for to_move, capture in ((0, "J4"), (1, "J5")):
        g, s = go_position(black=black, white=white, to_move=to_move)
        res = SequentialSearcher(SearchConfig(seed=2, tt_mb=32)).search(Position.initial(g, s), Budget(sims=2000))
        assert res.action == A(capture)
        assert res.children[0].visits > 0.5 * res.sims


def test_go_moves_are_legal_through_a_short_game():
    g = board.make_params(9, 7.0, "random")
    s = board.new_state(g)
    history = [game.position_hash(g, s)]
    searcher = SequentialSearcher(SearchConfig(seed=4, tt_mb=16))
    for _ in range(16):
        res = searcher.search(Position(g, s, uct.history_array(history)), Budget(sims=300))
        a = res.action
        assert 0 <= a < game.n_actions(g)
        assert board.go_is_legal(g, s, a)
        assert not uct.repeats_history(g, s, a, uct.history_array(history))
        assert game.play(g, s, a)
        history.append(game.position_hash(g, s))
        if game.is_terminal(g, s):
            break


def test_timed_search_with_an_injected_clock():
    ticks = itertools.count()
    clock = lambda: next(ticks) * 0.001  # noqa: E731  every reading advances a millisecond
    g, s, _ = contested_trees(1)[0]
    searcher = SequentialSearcher(SearchConfig(seed=1, tt_mb=4), clock=clock)
    res = searcher.search(Position.initial(g, s), Budget(seconds=0.05))
    assert res.sims > 0 and 0.05 <= res.seconds < 0.2


def test_think_longer_when_behind():
    for seed in itertools.count(1):
        g, s = game.make_game("pgame", branching=3, depth=4, seed=seed)
        if max(child_values(g, s)) == -1:
            break
    searcher = SequentialSearcher(SearchConfig(seed=1, tt_mb=4))
    plan = ThinkPlan(TimeConfig(unstable=False), Budget(sims=500))
    res = searcher.search(Position.initial(g, s), Budget(sims=500), plan)
    assert res.extensions == ["behind"] and res.sims == 1000


def test_bad_settings_are_config_errors():
    with pytest.raises(ConfigError, match="threads"):
        SequentialSearcher(SearchConfig(threads=2))
    with pytest.raises(ConfigError, match="rave_schedule"):
        SequentialSearcher(SearchConfig(rave_schedule="x"))
    with pytest.raises(ConfigError, match="budget"):
        SequentialSearcher(SearchConfig(tt_mb=1)).search(Position.initial(*game.make_game("pgame")), Budget())


def test_search_command(run_cli):
    import json

    r = run_cli("search", "--sims", "300", "--seed", "3", "--json", timeout=600)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["sims"] == 300 == out["root_visits"] and out["algo"] == "sequential"
    assert out["move"] == "pass" or out["move"][0] in "ABCDEFGHJ"
    r = run_cli("search", "--game", "pgame", "--depth", "4", "--algo", "tree", "--threads", "2", "--sims", "200",
                timeout=600)
    assert r.returncode == 0 and "sims/s" in r.stdout and "root visits 200" in r.stdout, r.stderr
    for bad, msg in ((["--algo", "nosuch"], "unknown algorithm 'nosuch'"), (["--param", "nope=1"], "nope"),
                     (["--threads", "2"], "threads")):
        r = run_cli("search", "--sims", "10", *bad, timeout=600)
        assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_bench_search_command(run_cli):
    import json

    r = run_cli("bench", "search", "--board", "9", "--sims", "300", "--repeats", "1", "--no-save", "--json",
                timeout=600)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    med = out["medians"]
    assert med["playouts_per_s"] > 0 and med["sequential_per_s"] > 0 and med["tree_per_s"] > 0
    assert out["tree_overhead_ratio"] == med["sequential_per_s"] / med["playouts_per_s"]
