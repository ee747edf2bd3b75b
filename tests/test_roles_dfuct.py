"""df-UCT roles on the loopback runtime: nothing lost or doubled after the final flush, delayed and merged
reports, jobs that stay below a node while its best child stays best, and the role's single transitions."""

from collections import Counter

import numpy as np
import pytest

from model import game, pgame
from model.errors import ConfigError
from model.game import make_game
from model.roles import Layout, Setup, make_role, make_roles
from model.roles.base import SELECT, UPDATE
from model.roles.dfuct import F_POP, F_REPORT, fold_result
from model.roles.invariants import treesplit_problems
from model.roles.loopback import Loopback
from model.roles.messages import FRAME, MOVE, STEP, Message, Result, Steps, decode
from model.roles.messages import UPDATE as UPDATE_MSG
from model.uct import UctParams

PGAME = dict(branching=4, depth=8, seed=3)
GAMES = {"pgame": ("pgame", PGAME, 1200), "go9": ("go", dict(size=9, komi=7.0), 240)}


def _run(algo, game_name, M, sims, seed, W=2, serialize=False, params=None, stop_after=None):
    name, kw, _ = GAMES[game_name]
    g, s = make_game(name, **kw)
    p = {"table_mb": 4}
    if algo == "tds":
        p.update(c=0.7, rave=False)  # the same in-tree policy as dfuct's default
    p.update(params or {})
    roles = make_roles(algo, Layout(M, 0, workers=W), Setup(g, s, sims=sims, seed=seed), p)
    run = Loopback(roles, workers=W, seed=seed, keep=True, serialize=serialize).run(stop_after=stop_after)
    return roles, run, g


@pytest.mark.parametrize("which", sorted(GAMES))
@pytest.mark.parametrize("M", [1, 2, 4, 8])
def test_nothing_lost_or_doubled(which, M):
    sims = GAMES[which][2]
    roles, run, g = _run("dfuct", which, M, sims, seed=M, serialize=M == 4)
    assert treesplit_problems(roles, run.sent) == []
    holders = [r for r in roles if r.holds_root()]
    assert len(holders) == 1 and holders[0].root_stats()["visits"] == sims
    assert sum(r.done for r in roles) == sims
    assert sum(r.counts["jobs_ended"] for r in roles) == sum(r.counts["jobs"] for r in roles) > 0
    move = holders[0].best_move()
    legal = np.empty(int(game.n_actions(g)), np.int64)
    assert move in legal[:game.legal_actions(g, roles[0].root.copy(), legal)].tolist()
    assert [("root" in r.report()) for r in roles].count(True) == 1
    if M > 1:
        assert run.message_counts()[MOVE] > 0 and run.message_counts()[UPDATE_MSG] > 0


def _dfuct_roles(which, M, sims, params):
    roles, run, _ = _run("dfuct", which, M, sims, seed=7, params=params)
    assert treesplit_problems(roles, run.sent) == []
    return roles, run


@pytest.mark.parametrize("which", sorted(GAMES))
def test_reports_to_the_root_are_delayed_and_merged(which):
    M, sims = 4, GAMES[which][2]
    roles, run = _dfuct_roles(which, M, sims, {})
    tds_roles, tds_run, _ = _run("tds", which, M, sims, seed=7)
    assert treesplit_problems(tds_roles, tds_run.sent) == []
    root_reports = sum(r.counts["root_reports"] for r in roles)
    assert 0 < root_reports < sims  # TDS: one per simulation
    assert run.message_counts()[UPDATE_MSG] < tds_run.message_counts()[UPDATE_MSG]
    records = sum(r.counts["report_records"] for r in roles)
    assert records < sum(r.counts["records_finished"] for r in roles)  # merged: several results per record


def test_jobs_stay_deeper_with_a_switch_margin_and_partial_reports_bound_the_delay():
    depth, root_reports, partial = {}, {}, {}
    for margin, every in ((0.0, 0), (0.1, 0), (0.1, 2)):
        roles, _ = _dfuct_roles("pgame", 4, 1200, {"switch_margin": margin, "report_every": every})
        c = sum((r.counts for r in roles), Counter())
        depth[margin, every] = c["resume_depth"] / c["resumes"]
        root_reports[margin, every] = c["root_reports"]
        partial[margin, every] = c["partial_reports"]
    assert depth[0.1, 0] > 1 > depth[0.0, 0]  # mean depth where jobs select again (TDS: 0)
    assert root_reports[0.1, 0] * 3 < 1200 and root_reports[0.1, 0] < root_reports[0.0, 0]
    assert partial[0.1, 0] == 0 < partial[0.1, 2] and root_reports[0.1, 2] > root_reports[0.1, 0]


@pytest.mark.parametrize("stop_after", [400, 3000])
def test_stop_request_flushes_every_job(stop_after):
    roles, run, _ = _run("dfuct", "pgame", 4, None, seed=3, stop_after=stop_after)
    done = sum(r.done for r in roles)
    assert done > 0
    assert treesplit_problems(roles, run.sent) == []
    assert next(r for r in roles if r.holds_root()).root_stats()["visits"] == done
    assert sum(r.counts["jobs_ended"] for r in roles) == sum(r.counts["jobs"] for r in roles)
    assert all(r.idle() and r.finished() for r in roles)


def _winning_root_moves(seed):
    g, s = make_game("pgame", branching=4, depth=6, seed=seed)
    vals = []
    for a in range(4):
        c = s.copy()
        game.play(g, c, a)
        vals.append(pgame.minimax(g, c))
    return g, s, vals


def test_finds_the_only_winning_move_of_small_p_games():
    tried = 0
    for seed in range(1, 40):
        g, s, vals = _winning_root_moves(seed)
        if vals.count(1) != 1:  # the first player, to move, wins with exactly one move
            continue
        roles = make_roles("dfuct", Layout(4, 0, workers=2), Setup(g, s, sims=1500, seed=1), {"table_mb": 1})
        Loopback(roles, workers=2, seed=1).run()
        assert vals[next(r for r in roles if r.holds_root()).best_move()] == 1, seed
        tried += 1
        if tried == 3:
            break
    assert tried == 3


# --- kernels and single transitions ------------------------------------------------------------------------------

def _stack(n):
    steps = np.zeros(n, STEP)
    steps["hash"] = np.arange(1, n + 1, dtype=np.uint64)
    steps["idx"] = 0
    steps["player"] = np.arange(n) % 2
    frames = np.zeros(n, FRAME)
    frames["visits"] = 100
    frames["second"] = 1
    frames["n_best"], frames["w_best"] = 50, 40     # mean 0.8
    frames["n_second"], frames["w_second"] = 50, 20  # mean 0.4
    return steps, frames


def test_fold_keeps_the_job_below_while_the_best_stays_best():
    p = UctParams(rave=False, c=0.7).to_array()
    g, _ = make_game("pgame", **PGAME)
    steps, frames = _stack(3)
    assert fold_result(g, p, steps, frames, 3, 1.0, 0.0) == 2  # no switch: select again at the deepest node
    assert frames["dn"].tolist() == [1, 1, 1]
    assert frames["dw"].tolist() == [1.0, 0.0, 1.0]  # a first-player win, seen by each node's player
    assert frames["n_best"].tolist() == [51, 51, 51] and frames["visits"].tolist() == [101, 101, 101]
    frames[1]["w_second"] = frames[1]["w_best"]  # node 1's second child now as good: one more loss for
    frames[1]["n_second"] = frames[1]["n_best"]  # node 1's player there tips it
    assert fold_result(g, p, steps.copy(), frames.copy(), 3, 1.0, 0.5) == 2  # within the margin: stays
    assert fold_result(g, p, steps, frames, 3, 1.0, 0.0) == 1
    frames[0]["w_second"] = frames[0]["w_best"] + 1.0  # a switch higher up wins
    frames[0]["n_second"] = frames[0]["n_best"]
    assert fold_result(g, p, steps, frames, 3, 1.0, 0.0) == 0


@pytest.mark.parametrize("seed", range(5))
def test_a_frame_names_the_best_other_child_by_the_folds_score(seed):
    """fill_frames scores the node's children as fold_result does (uct._score: no AMAF, no prior, ln N as
    the exploration term), unvisited ones and other jobs' virtual loss included, and keeps the best but the
    chosen one."""
    import math

    from model.roles.dfuct_kernels import fill_frames
    from model.tt import lookup, new_table
    from model.uct import _score

    rng = np.random.default_rng(seed)
    p = UctParams(rave=False, c=0.7, vloss=1.0).to_array()
    K = 40
    t = new_table(64, K)
    slot, _ = lookup(t, np.uint64(12345), True)
    t.n_children[slot] = K
    t.child_visits[slot, :] = rng.integers(0, 30, K) * (rng.random(K) < 0.8)
    t.child_value[slot, :] = rng.random(K) * t.child_visits[slot, :]
    t.vloss[slot, :] = rng.integers(0, 3, K)
    t.visits[slot] = int(t.child_visits[slot].sum()) + 1
    j = int(rng.integers(K))
    t.vloss[slot, j] += 1  # this job's own
    steps, frames = np.zeros(2, STEP), np.zeros(2, FRAME)
    steps[0]["hash"], steps[0]["idx"], steps[1]["idx"] = 12345, j, -1
    fill_frames(t, p, steps, frames, 0, 2, np.array([slot, 0]), np.zeros(K))
    log_n = math.log(t.visits[slot])
    n = t.child_visits[slot].astype(float) + t.vloss[slot]
    scores = [_score(n[c], t.child_value[slot, c], 0.0, 0.0, 0.0, log_n, p) if c != j else -np.inf for c in range(K)]
    second = int(np.argmax(scores))
    assert frames[0]["second"] == second and frames[0]["visits"] == t.visits[slot]
    assert frames[0]["n_second"] == np.float32(n[second]) and frames[0]["n_best"] == np.float32(n[j] - 1)
    assert frames[1]["second"] == -1 and frames[1]["visits"] == 0  # a leaf record has no frame to fill


def test_a_job_arriving_with_its_report_applies_it_before_selecting():
    g, s = make_game("pgame", **PGAME)
    lay = Layout(2, 0, workers=1)
    role = make_role("dfuct", 1, lay, Setup(g, s, sims=10, seed=0), {"table_mb": 1})
    role.start()
    path, frames = _stack(2)
    path["hash"][0] = game.hash(g, s)
    path["rank"] = [0, 1]
    path["action"] = [2, 1]
    path["idx"] = [2, 1]
    path["flags"] = [0, F_REPORT | F_POP]
    frames["dn"], frames["dw"] = 3, 2.0
    acts = role.on_message(Message(MOVE, 0, 1, Steps(path, frames, 7), sim_id=4))
    assert [p.kind for p in acts.pkgs] == [UPDATE] and role.moves_held == 1
    pkg = acts.pkgs[0]
    sims = role.a.sims
    job = int(sims[pkg.payload]["carry"])  # the update package carries the job on
    assert sims[job]["n"] == 1 and sims[job]["tickets"] == 7 and sims[pkg.payload]["n"] == 1
    out = role.on_work_done(pkg, role.execute(pkg))
    assert [p.kind for p in out.pkgs] == [SELECT] and out.pkgs[0].front and out.pkgs[0].payload == job
    assert role.counts["updates"] == 1 == role.counts["updates_local"]


def test_job_and_report_messages_round_trip_with_exact_size():
    steps, frames = _stack(5)
    for kind, payload in ((MOVE, Steps(steps, frames, 12)), (UPDATE_MSG, Result(0.0, steps, None, frames))):
        m = Message(kind, 0, 1, payload, sim_id=9)
        data = m.encode()
        plain = Steps(steps) if kind == MOVE else Result(0.0, steps)  # what other algorithms send
        assert len(data) == m.nbytes == Message(kind, 0, 1, plain, sim_id=9).nbytes + frames.nbytes
        back = decode(kind, 0, 1, 9, data).payload
        assert np.array_equal(back.frames, frames) and np.array_equal(back.steps, steps)
        if kind == MOVE:
            assert back.tickets == 12
        with pytest.raises(ValueError):
            decode(kind, 0, 1, 9, data[:-3])


def test_rave_is_refused():
    g, s = make_game("pgame", **PGAME)
    with pytest.raises(ConfigError, match="rave"):
        make_role("dfuct", 0, Layout(2), Setup(g, s, sims=10), {"rave": "on"})
    role = make_role("dfuct", 0, Layout(2), Setup(g, s, sims=10), {"table_mb": 1})
    assert not role.uct.rave and role.uct.c == 0.7
