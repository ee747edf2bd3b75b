"""LOA knowledge and the serial agents of Christoph 2020 (progressive unpruning / first-play urgency), the round-robin
driver, and LOA through the generic game interface and sequential search."""

from __future__ import annotations

import math

import numpy as np
import pytest

from experiments.loa_roundrobin import play_game, schedule, summarize
from model import game, tt, uct
from model.loa import board as B
from model.loa import rules as R
from model.loa.game import LoaGame, parse_square
from model.loa.knowledge import CATEGORY_P, REGION, move_evaluation, transition_probability
from model.loa.policy import AGENTS, NO_HISTORY, Agent
from model.uct import unpruned
from model.rng import new_rng


def sq(name: str) -> int:
    return parse_square(name)


def root_of(agent: Agent, g, s):
    slot = int(uct.find_node(agent.table, g, s))
    t = agent.table
    n = int(t.n_children[slot])
    return slot, t.child_move[slot, :n].astype(int), t.prior[slot, :n].astype(float), t.child_visits[slot, :n]


def test_regions_and_table_a1():
    assert REGION[sq("a1")] == REGION[sq("h8")] == 0                    # A: corners
    assert REGION[sq("d1")] == REGION[sq("a5")] == 1                    # B: the rest of the rim
    assert REGION[sq("b2")] == REGION[sq("c6")] == 2                    # C: the rings of the 6x6 and 4x4
    assert REGION[sq("d4")] == REGION[sq("e5")] == 3                    # D: the centre
    assert np.bincount(REGION, minlength=4).tolist() == [4, 24, 32, 4]
    assert CATEGORY_P.shape == (32,) and CATEGORY_P.max() == pytest.approx(0.3833)   # A -> D capture
    s = LoaGame().state
    assert transition_probability(s, sq("b1") * 64 + sq("b3")) == pytest.approx(0.0453)   # B -> C quiet
    assert transition_probability(s, sq("b1") * 64 + sq("h1")) == pytest.approx(0.0052)   # B -> A quiet


def test_concentration_prefers_gathering_moves():
    gm = LoaGame()
    inward = move_evaluation(gm.state, sq("b1") * 64 + sq("b3"))
    outward = move_evaluation(gm.state, sq("b1") * 64 + sq("h1"))     # into the far corner
    assert inward > outward


def test_unpruning_window():
    assert unpruned(0, 1, 2.5365) == 1 and unpruned(1, 1, 2.5365) == 1
    assert unpruned(2, 1, 2.5365) == 1 and unpruned(3, 1, 2.5365) == 2
    for n in (10, 100, 1000, 12345):
        assert unpruned(n, 2, 2.6011) == 2 + math.floor(math.log(n) / math.log(2.6011))


@pytest.mark.parametrize("name", ["pu-mc", "pu-ef"])
def test_pu_expands_children_by_knowledge_and_keeps_to_the_window(name):
    ap = AGENTS[name]
    g = B.make_params("random", ap.knowledge)
    s = B.new_state(g)
    agent = Agent(ap, tt_slots=1 << 12, seed=3)
    agent.choose(g, s, 300)
    slot, moves, pri, visits = root_of(agent, g, s)
    assert len(moves) == 36
    want = np.zeros(len(moves))
    B.loa_priors(g, s, moves.astype(np.int64), len(moves), want)
    assert np.allclose(pri, want.astype(np.float32))
    assert np.all(np.diff(pri) <= 0)                                    # best knowledge first
    n_root = int(agent.table.visits[slot])
    used = np.flatnonzero(visits > 0)
    assert len(used) <= unpruned(n_root, ap.u0, ap.mu)
    assert used.tolist() == list(range(len(used)))                     # a prefix of the ordering


def test_fpu_urgency_decides_how_soon_new_children_are_tried():
    from dataclasses import replace

    g = B.make_params("random", "mc")
    s = B.new_state(g)
    tried = {}
    for fpu in (10.0, AGENTS["fpu-mc"].fpu):
        agent = Agent(replace(AGENTS["fpu-mc"], fpu=fpu), tt_slots=1 << 12, seed=3)
        agent.choose(g, s, 100)
        tried[fpu] = int((root_of(agent, g, s)[3] > 0).sum())
    assert tried[10.0] == 36                   # urgency above any UCT score: every child first, as plain UCT
    assert tried[AGENTS["fpu-mc"].fpu] < 36    # Table 5.1's: visited children keep winning for a while


@pytest.mark.parametrize("name", ["pu-mc", "pu-ef", "fpu-mc", "fpu-ef"])
def test_agents_take_the_one_winning_move(name):
    # Black to move has 25 moves; only e7-e4 joins e7, d3, f3, d4 (found by a search over random positions).
    # Table 5.1's FPU agents try new children too rarely to find it in 400 simulations (which is why they
    # lose to PU); with an urgency above any UCT score they try every child and must find it.
    from dataclasses import replace

    ap = AGENTS[name] if name.startswith("pu") else replace(AGENTS[name], fpu=10.0)
    g = B.make_params("random", ap.knowledge)
    board = np.zeros(64, dtype=np.int64)
    board[[sq(x) for x in "e7 d3 f3 d4".split()]] = 1
    board[[sq(x) for x in "a7 e3 h1 a6 e2 g8".split()]] = 2
    s = B.state_of(board, 0)
    out = np.empty(R.N_ACTIONS, np.int64)
    n = B.loa_legal_actions(g, s, out)
    wins = []
    for a in out[:n]:
        c = s.copy()
        B.loa_play(g, c, a)
        wins += [int(a)] if c[R.S_STATUS] == R.BLACK_WINS else []
    assert n == 25 and wins == [sq("e7") * 64 + sq("e4")]
    agent = Agent(ap, tt_slots=1 << 12, seed=5)
    assert agent.choose(g, s, 400) == wins[0]


def test_agent_simulations_count_and_are_reproducible():
    ap = AGENTS["pu-mc"]
    g = B.make_params("random", "mc")
    s = B.new_state(g)
    moves = []
    for _ in range(2):
        t = tt.new_table(1 << 12, int(game.max_children(g)))
        tt.new_search(t)
        counters = np.zeros(uct.N_COUNTERS, np.int64)
        uct.run_simulations(t, g, s, NO_HISTORY, ap.uct_params().to_array(), new_rng(9), 200, counters)
        slot = int(uct.find_node(t, g, s))
        assert t.visits[slot] == 200 == counters[uct.C_SIMS]
        moves.append([c.action for c in uct.root_children(t, slot)])
    assert moves[0] == moves[1]


def test_round_robin_pieces():
    sch = schedule(["pu-mc", "fpu-ef", "pu-ef"], 4)
    assert len(sch) == 12
    pair = [(b, w) for b, w, _ in sch if {b, w} == {"pu-mc", "fpu-ef"}]
    assert pair.count(("pu-mc", "fpu-ef")) == pair.count(("fpu-ef", "pu-mc")) == 2
    assert len({seed for _, _, seed in sch}) == 12
    rec = play_game("pu-mc", "fpu-mc", sims=30, seed=1, max_plies=16)
    assert rec["plies"] <= 16 and rec["result"] in (1.0, -1.0, 0.0) and len(rec["moves"].split()) == rec["plies"]
    replay = LoaGame()
    for m in rec["moves"].split():
        replay.play_name(m)
    assert replay.result() == rec["result"]
    fake = [{"black": "a", "white": "b", "result": 1.0, "plies": 10, "seconds": 1.0},
            {"black": "b", "white": "a", "result": 1.0, "plies": 10, "seconds": 1.0},
            {"black": "a", "white": "b", "result": 0.0, "plies": 10, "seconds": 1.0}]
    sm = summarize(["a", "b"], fake)
    assert sm["wins"] == {"a": {"b": 1}, "b": {"a": 1}} and sm["draws"]["a"]["b"] == 1
    assert sm["pairs"][0]["win_rate"] == pytest.approx(0.5) and sm["score"] == {"a": 1.5, "b": 1.5}
    fake += [{"black": "a", "white": "b", "result": 1.0, "plies": 10, "seconds": 1.0}]
    st = summarize(["a", "b"], fake)["standings"]           # each agent against the field, best first
    assert [s["agent"] for s in st] == ["a", "b"] and [s["rank"] for s in st] == [1, 2]
    assert (st[0]["wins"], st[0]["losses"], st[0]["draws"]) == (2, 1, 1)
    assert st[0]["win_rate"] == pytest.approx(0.625) and st[0]["ci_low"] < 0.625 < st[0]["ci_high"]
    assert st[0]["elo"] == pytest.approx(-st[1]["elo"]) and st[0]["elo"] > 0


def test_loa_through_the_generic_interface_and_sequential_search():
    from engine.sequential import Position, SearchConfig, SequentialSearcher
    from engine.timecontrol import Budget

    g, s = game.make_game("loa")
    out = np.empty(game.n_actions(g), np.int64)
    assert game.legal_actions(g, s, out) == 36 and not game.is_terminal(g, s) and game.to_move(g, s) == 0
    pri = np.zeros(36)
    assert game.priors(g, s, out, 36, pri) and pri.max() > 0
    searcher = SequentialSearcher(SearchConfig(tt_mb=16, seed=2))
    res = searcher.search(Position.initial(g, s), Budget(sims=200))
    assert res.sims == 200 and res.action in set(out[:36].tolist())
    assert res.counters["superko"] == 0    # LOA has no repetition rule


def test_fpu_bias_option_orders_first_visits_by_knowledge():
    from dataclasses import replace

    g = B.make_params("random", "ef")
    s = B.new_state(g)
    firsts = set()
    for bias in (True, False):
        for seed in range(6):
            agent = Agent(replace(AGENTS["fpu-ef"], fpu_bias=bias), tt_slots=1 << 10, seed=seed)
            agent.choose(g, s, 1)
            _, moves, pri, visits = root_of(agent, g, s)
            j = int(np.flatnonzero(visits)[0])
            if bias:
                assert pri[j] == pri.max()     # the best-valued child first, whatever the seed
            else:
                firsts.add(j)
    assert len(firsts) > 1                     # without the bias, the first child is a random one
