"""Leaf parallelisation roles on the loopback runtime: the master's tree, the workers' playouts."""

import numpy as np
import pytest

from model import game
from model.game import make_game
from model.rng import new_rng
from model.roles import Layout, Setup, make_role, make_roles
from model.roles.base import PLAYOUT
from model.roles.invariants import treesplit_problems
from model.roles.leaf import LeafMaster
from model.roles.loopback import Loopback
from model.roles.messages import JOB, RESULT, STEP, Message, Result, Steps
from model.roles.params import LeafParams
from model.tt import new_table
from model.uct import N_COUNTERS, UctParams, history_array, run_simulations

PGAME = dict(branching=4, depth=8, seed=3)


@pytest.mark.parametrize("game_name", ["pgame", "go"])
@pytest.mark.parametrize("M,W,variant", [(2, 1, "mlmp"), (4, 2, "mlmp"), (3, 2, "slmp"), (4, 1, "slmp")])
def test_every_playout_backed_up_once(game_name, M, W, variant):
    g, s = make_game(game_name, **(PGAME if game_name == "pgame" else dict(size=9, komi=7.0)))
    sims = 301
    roles = make_roles("leaf", Layout(M, 0, workers=W), Setup(g, s, sims=sims, seed=2),
                       {"table_mb": 8, "variant": variant})
    run = Loopback(roles, workers=W, seed=2, keep=True, serialize=True).run()
    assert treesplit_problems(roles[:1], run.sent, roles) == []
    master = roles[0]
    assert master.done == sims and master.root_stats()["visits"] == sims
    counts = run.message_counts()
    assert counts[JOB] == counts[RESULT] == sims  # no tree move ended the game: every simulation had a playout
    assert sum(r.playouts for r in roles[1:]) == sims
    if variant == "mlmp":
        per = [r.playouts for r in roles[1:]]
        assert max(per) - min(per) <= max(per) // 2 + W * 5  # least-loaded dealing keeps workers even


@pytest.mark.parametrize("M,W", [(2, 1), (3, 1)])
def test_a_master_with_full_playout_ranks_plays_leaves_out_itself(M, W):
    """master_playouts: each playout rank gets its W playout_jobs jobs first, then the master plays the
    leaves of its O W more simulations in flight itself; every simulation is still backed up once."""
    g, s = make_game("pgame", **PGAME)
    sims = 301
    params = {"table_mb": 8, "master_playouts": True, "playout_jobs": 3, "overload": 2}
    roles = make_roles("leaf", Layout(M, 0, workers=W), Setup(g, s, sims=sims, seed=2), params)
    assert roles[0].target == LeafParams(**params).master_in_flight(W, M) == W * (3 * (M - 1) + 2)
    run = Loopback(roles, workers=W, seed=2, keep=True, serialize=True).run()
    assert treesplit_problems(roles[:1], run.sent, roles) == []
    master = roles[0]
    assert master.done == sims and master.root_stats()["visits"] == sims
    counts = run.message_counts()
    jobs = sum(r.playouts for r in roles[1:])
    assert counts[JOB] == counts[RESULT] == jobs and 0 < jobs < sims  # the rest the master played out
    solo = make_roles("leaf", Layout(M, 0, workers=W), Setup(g, s, sims=sims, seed=2),
                      {"table_mb": 8, "playout_jobs": 3, "overload": 2, "master_playouts": False})
    Loopback(solo, workers=W, seed=2).run()
    assert sum(r.playouts for r in solo[1:]) == sims  # the thesis's master plays nothing out


def test_slmp_sends_each_leaf_to_every_worker_thread():
    g, s = make_game("pgame", **PGAME)
    roles = make_roles("leaf", Layout(3, 0, workers=2), Setup(g, s, sims=40, seed=1),
                       {"table_mb": 1, "variant": "slmp"})
    run = Loopback(roles, workers=2, seed=1).run()
    by_sim = {}
    for kind, src, dst, _, sim_id in run.messages:
        if kind == JOB:
            by_sim.setdefault(sim_id, []).append(dst)
    assert all(sorted(d) == [1, 1, 2, 2] for d in by_sim.values()) and len(by_sim) == 10


def test_one_rank_is_the_sequential_search():
    g, s = make_game("go", size=9, komi=7.0)
    na = int(game.n_actions(g))
    t_seq = new_table(4096, na)
    run_simulations(t_seq, g, s, history_array([game.position_hash(g, s)]), UctParams().to_array(),
                    new_rng(3 * 1000003), 200, np.zeros(N_COUNTERS, np.int64))
    role = LeafMaster(0, Layout(1, 0, workers=1), Setup(g, s, sims=200, seed=3), UctParams(),
                      LeafParams(overload=1), new_table(4096, na))
    Loopback([role], seed=0).run()
    assert np.array_equal(role.t.child_visits, t_seq.child_visits)
    assert np.array_equal(role.t.child_value, t_seq.child_value)


def test_worker_turns_a_job_into_a_playout_and_a_result():
    g, s = make_game("pgame", **PGAME)
    w = make_role("leaf", 2, Layout(3, 0), Setup(g, s, sims=10, seed=0), {})
    steps = np.zeros(2, STEP)
    steps["action"] = [1, 3]
    steps["idx"] = [1, 3]
    acts = w.on_message(Message(JOB, 0, 2, Steps(steps), sim_id=6))
    assert [p.kind for p in acts.pkgs] == [PLAYOUT] and not w.idle()
    out = w.on_work_done(acts.pkgs[0], w.execute(acts.pkgs[0]))
    (m,) = out.msgs
    assert (m.kind, m.dst, m.sim_id) == (RESULT, 0, 6) and w.idle()
    assert isinstance(m.payload.result, float) and len(m.payload.steps) == 0  # the result, no path
    with pytest.raises(ValueError):
        w.on_message(Message(RESULT, 0, 2, m.payload))
