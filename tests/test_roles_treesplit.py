"""UCT-Treesplit and TDS roles on the loopback runtime: nothing lost or doubled, M = 1 is the sequential
search, stop requests drain cleanly, and the role's single transitions."""

import numpy as np
import pytest

from model import game
from model.game import make_game
from model.rng import new_rng
from model.roles import Layout, Setup, make_role, make_roles
from model.roles.base import CONTINUE, EXPAND, PART_KINDS, PLAYOUT, SELECT, SYNC, UPDATE
from model.roles.invariants import treesplit_problems
from model.roles.loopback import Loopback
from model.roles.messages import DUP, MOVE, PLAYOUT_FWD, STEP, Message, Record, Result, Steps
from model.roles.messages import UPDATE as UPDATE_MSG
from model.roles.params import TreesplitParams, thesis_rules
from model.roles.core import F_SELECT
from model.roles.steps import ST_MOVE, ST_PLAYOUT
from model.roles.treesplit import TreesplitSearch
from model.tt import lookup, new_table
from model.uct import C_SUPERKO, N_COUNTERS, UctParams, history_array, run_simulations

PGAME = dict(branching=4, depth=8, seed=3)


GAMES = {"pgame": ("pgame", PGAME, 400), "go9": ("go", dict(size=9, komi=7.0), 400),
         "go3": ("go", dict(size=3, komi=0.5), 3000)}  # 3x3: tree moves that repeat a position (superko)


@pytest.mark.parametrize("record,stamps,chain", [(False, False, 8), (True, False, 8), (True, True, 8),
                                                (False, False, 1)])
@pytest.mark.parametrize("which", sorted(GAMES))
def test_one_rank_builds_the_sequential_tree(which, record, stamps, chain):
    """Whether a fused package's parts run as one kernel call, one call each (a runtime that records every
    part) or one call with a stamped log, and however many simulations a package chains, one rank builds the
    sequential tree."""
    name, kw, sims = GAMES[which]
    g, s = make_game(name, **kw)
    na = int(game.n_actions(g))
    seed = 7
    t_seq = new_table(1 << 14, na)
    counters = np.zeros(N_COUNTERS, np.int64)
    run_simulations(t_seq, g, s, history_array([game.position_hash(g, s)]), UctParams().to_array(),
                    new_rng(seed * 1000003), sims, counters)
    if which == "go3":
        assert counters[C_SUPERKO] > 0
    role = TreesplitSearch(0, Layout(1, 0, workers=1), Setup(g, s, sims=sims, seed=seed), UctParams(),
                           TreesplitParams(overload=1, chain=chain), new_table(1 << 14, na))
    role.record_parts(record, stamps)
    Loopback([role], seed=seed).run()
    for f in ("key", "visits", "value", "n_children", "child_move", "child_visits", "child_value",
              "amaf_visits", "amaf_value", "vloss"):
        assert np.array_equal(getattr(role.t, f), getattr(t_seq, f)), f
    assert role.done == sims and int(role.t.visits[role.root_slot]) == sims


@pytest.mark.parametrize("M,B,W", [(2, 0, 1), (3, 0, 2), (4, 1, 2), (8, 2, 1), (16, 4, 1)])
def test_nothing_lost_or_doubled_pgame(M, B, W):
    g, s = make_game("pgame", **PGAME)
    lay = Layout(M, B, workers=W)
    roles = make_roles("treesplit", lay, Setup(g, s, sims=1500, seed=M), {"n_dup": 48, "table_mb": 1})
    for r in roles[:M:2]:
        r.record_parts(True)  # every other rank one call per part: both ways of running packages meet
    run = Loopback(roles, workers=[W] * M + [1] * B, seed=M, keep=True).run()
    assert treesplit_problems(roles[:M], run.sent, roles) == []
    counts = run.message_counts()
    assert counts[DUP] > 0 and counts["SYNC"] > 0 and counts[MOVE] > 0
    if B > 1:
        assert counts["BCAST"] > 0
    assert sum(r.done for r in roles[:M]) == 1500
    assert len({tuple(r.root_stats()["child_visits"]) for r in roles[:M]}) == 1


@pytest.mark.parametrize("rave", [True, False])
def test_nothing_lost_or_doubled_go9_serialised(rave):
    M, B = 4, 1
    g, s = make_game("go", size=9, komi=7.0)
    # n_dup 3: 300 simulations on a 9x9 tree of 82 children leave few nodes with 4 visits (whether one gets
    # there depends on the interleaving), and the test is about DUPs being exact
    roles = make_roles("treesplit", Layout(M, B, workers=2), Setup(g, s, sims=300, seed=4),
                       {"n_dup": 3, "table_mb": 16, "rave": rave, "min_in_flight": 1})  # 4 x 80 in flight: no DUP
    run = Loopback(roles, workers=[2] * M + [1], seed=4, keep=True, serialize=True).run()
    assert treesplit_problems(roles[:M], run.sent, roles) == []
    assert run.message_counts()[DUP] > 0
    move = roles[0].best_move()
    assert 0 <= move < int(game.n_actions(g))
    assert all(r.best_move() == move for r in roles[:M])


def test_tds_duplicates_nothing_and_keeps_the_root_on_its_owner():
    M = 4
    g, s = make_game("pgame", **PGAME)
    roles = make_roles("tds", Layout(M, 0, workers=2), Setup(g, s, sims=800, seed=2), {"table_mb": 1})
    run = Loopback(roles, workers=2, seed=2, keep=True).run()
    assert treesplit_problems(roles, run.sent) == []
    counts = run.message_counts()
    assert counts[DUP] == 0 and counts["SYNC"] == 0 and counts[MOVE] >= 800 - 200
    holders = [r for r in roles if r.holds_root()]
    assert len(holders) == 1 and int(holders[0].t.visits[holders[0].root_slot]) == 800
    assert [("root" in r.report()) for r in roles].count(True) == 1


@pytest.mark.parametrize("stop_after", [300, 2500])
def test_stop_request_drains_and_synchronises(stop_after):
    M, B = 4, 1
    g, s = make_game("pgame", **PGAME)
    roles = make_roles("treesplit", Layout(M, B, workers=2), Setup(g, s, sims=None, seed=3),
                       {"n_dup": 32, "table_mb": 1})
    run = Loopback(roles, workers=[2] * M + [1], seed=3, keep=True).run(stop_after=stop_after)
    done = sum(r.done for r in roles[:M])
    assert 0 < done
    assert treesplit_problems(roles[:M], run.sent, roles) == []
    assert all(r.idle() and r.finished() for r in roles)


def test_checker_catches_a_lost_update():
    M = 3
    g, s = make_game("pgame", **PGAME)
    roles = make_roles("treesplit", Layout(M, 0, workers=1), Setup(g, s, sims=600, seed=1),
                       {"n_dup": 32, "table_mb": 1})
    run = Loopback(roles, seed=1, keep=True).run()
    assert treesplit_problems(roles, run.sent) == []
    t = roles[1].t
    live = np.flatnonzero((t.stamp == t.meta[0]) & (t.n_children > 0) & (roles[1].dt.row_of < 0))
    slot = int(live[np.argmax(t.child_visits[live].sum(axis=1))])
    j = int(np.argmax(t.child_visits[slot]))
    t.child_visits[slot, j] -= 1  # one update lost
    assert any("edge visits" in p for p in treesplit_problems(roles, run.sent))
    t.child_visits[slot, j] += 1
    roles[2].t.child_visits[roles[2].root_slot, 0] += 1  # one rank's duplicate drifts
    assert any("differ" in p for p in treesplit_problems(roles, run.sent))


def test_shuffled_delivery_is_deterministic_per_seed():
    def once(seed):
        g, s = make_game("pgame", **PGAME)
        roles = make_roles("treesplit", Layout(4, 1, workers=2), Setup(g, s, sims=400, seed=seed),
                           {"n_dup": 32, "table_mb": 1})
        run = Loopback(roles, workers=[2] * 4 + [1], seed=seed).run()
        return run.messages, roles[0].root_stats()

    assert once(5) == once(5)


# --- single transitions ----------------------------------------------------------------------------------------

def _role(rank=1, M=3, B=0, W=1, **params):
    g, s = make_game("pgame", **PGAME)
    p = dict(table_mb=1, **thesis_rules("treesplit"))  # the thesis's S_par / M = W O and forwarding: tests count
    #                                                    packages against them
    p.update(params)
    return make_role("treesplit", rank, Layout(M, B, workers=W), Setup(g, s, sims=10, seed=0), p), g, s


def test_start_keeps_overload_times_workers_in_flight():
    role, _, _ = _role(rank=0, W=2, overload=3)
    acts = role.start()
    assert [p.kind for p in acts.pkgs] == [SELECT] * 4  # quota 10 // 3 + 1 (rank 0 < 10 % 3) caps W*O = 6
    assert role.started == 4 and role.in_flight == 4 and not acts.msgs


def _ran(role, pkg, stop, st=0, arg=0, result=0.0):
    """Mark a package's slot as execute() leaves it when the kernel stopped so (a transition, without the tree)."""
    sim = role.a.sims[pkg.payload]
    sim["stop"], sim["st"], sim["arg"], sim["result"] = stop, st, arg, result


def test_move_message_becomes_a_select_and_may_leave_as_a_move():
    role, g, s = _role()
    role.start()
    steps = np.zeros(1, STEP)
    steps[0]["hash"] = game.hash(g, s)
    steps[0]["action"], steps[0]["rank"], steps[0]["idx"] = 2, 0, 2
    acts = role.on_message(Message(MOVE, 0, 1, Steps(steps), sim_id=3))
    assert [p.kind for p in acts.pkgs] == [SELECT] and role.moves_held == 1
    pkg = acts.pkgs[0]
    _ran(role, pkg, F_SELECT, ST_MOVE, 2)
    out = role.on_work_done(pkg, None)
    assert role.moves_held == 0
    assert [(m.kind, m.dst, m.sim_id) for m in out.msgs] == [(MOVE, 2, 3)] and not out.pkgs
    assert out.msgs[0].payload.steps.tolist() == steps.tolist()  # the path it came with, on to its next rank


def test_a_walk_back_to_a_node_of_its_path_ends_there():
    """LOA has no repetition rule: four plies can lead back to the root's position. Selection then stops
    (played out from there), so no node is updated twice for one simulation and root visits stay equal to
    the simulations done."""
    from model.roles.steps import new_kids, select_steps

    g, s = make_game("loa")
    h0 = game.hash(g, s)
    out = np.empty(int(game.n_actions(g)), np.int64)
    s2 = s.copy()
    a = out[: int(game.legal_actions(g, s2, out))]
    back = None

    def legal(x):
        return set(out[: int(game.legal_actions(g, x, out))].tolist())

    for m in a.tolist():  # each side moves a piece and moves it back (action = from * 64 + to)
        t = s.copy()
        game.play(g, t, np.int64(m))
        for r in sorted(legal(t)):
            w = t.copy()
            game.play(g, w, np.int64(r))
            ok = True
            for x in ((m % 64) * 64 + m // 64, (r % 64) * 64 + r // 64):
                ok = ok and x in legal(w)
                if ok:
                    game.play(g, w, np.int64(x))
            if ok and game.hash(g, w) == h0:
                back = w
                break
        if back is not None:
            break
    assert back is not None and game.hash(g, back) == h0
    role = make_role("treesplit", 0, Layout(1, 0, workers=1), Setup(g, s, sims=10, seed=0), {"table_mb": 1})
    role.start()
    steps = np.zeros(8, STEP)
    steps[0]["hash"], steps[0]["idx"] = h0, 0
    path_pos = np.zeros(8, np.uint64)
    kids = new_kids(role.t.child_move.shape[1])
    st, n, _ = select_steps(role.t, role.dt, g, back, role.p, new_rng(1), steps, 1, path_pos, role.history, 0, 1,
                            role.local_slots, True, np.zeros(8, np.int64),
                            np.zeros(role.t.child_move.shape[1]), s, kids)
    assert (st, n) == (ST_PLAYOUT, 1)  # no record added: the root is not selected (nor updated) again
    st, n, _ = select_steps(role.t, role.dt, g, s.copy(), role.p, new_rng(1), steps, 0, path_pos, role.history, 0, 1,
                            role.local_slots, True, np.zeros(8, np.int64),
                            np.zeros(role.t.child_move.shape[1]), s, kids)
    assert n >= 1 or st != ST_PLAYOUT  # from the root itself selection goes on as usual


def test_playouts_are_forwarded_only_when_moves_pile_up():
    role, g, s = _role(W=1, overload=1, balance_k=1.5)
    role.start()
    steps = np.zeros(1, STEP)
    steps[0]["hash"] = game.hash(g, s)
    sel = [role.on_message(Message(MOVE, 0, 1, Steps(steps), sim_id=3 * k)).pkgs[0] for k in range(3)]
    assert role.moves_held == 3 > role.balance_limit
    _ran(role, sel[0], F_SELECT, ST_PLAYOUT)
    out = role.on_work_done(sel[0], None)
    assert [m.kind for m in out.msgs] == [PLAYOUT_FWD] and out.msgs[0].dst in (0, 2)
    _ran(role, sel[1], F_SELECT, ST_PLAYOUT)
    out = role.on_work_done(sel[1], None)  # 1 MOVE left: under the limit, playout here
    assert [p.kind for p in out.pkgs] == [PLAYOUT] and not out.msgs


@pytest.mark.parametrize("balance_load", [1, 8, 0])
def test_a_playout_goes_to_the_rank_with_fewer_packages_to_run(balance_load):
    """Each MOVE, UPDATE and PLAYOUT_FWD says how many packages its sender has to run; with balance_load k a
    rank sends a playout to the least loaded rank it knows of when that one has at most 1/k of its packages
    and two fewer, and counts it there until that rank says otherwise."""
    role, g, s = _role(W=1, overload=1, balance_k=100.0, balance_load=balance_load)
    role.start()  # one simulation of its own: 1 package
    steps = np.zeros(1, STEP)
    steps[0]["hash"] = game.hash(g, s)
    sel = [role.on_message(Message(MOVE, src, 1, Steps(steps, load=load), sim_id=3 * k + src)).pkgs[0]
           for k, (src, load) in enumerate([(0, 9), (2, 0), (0, 9), (0, 9)])]
    assert role.moves_held == 4 < role.balance_limit  # the thesis's rule would keep every playout here
    out = []
    for pkg in sel[:3]:
        _ran(role, pkg, F_SELECT, ST_PLAYOUT)
        acts = role.on_work_done(pkg, None)
        out.append([(m.kind, m.dst, Record(m.record()).load) for m in acts.msgs] + [p.kind for p in acts.pkgs])
    # 4 to run here (rank 2: 0, rank 0: 9), then 3 (rank 2: 1 from here), then 2 (rank 2: 2)
    if balance_load == 1:  # two fewer suffice
        assert out == [[(PLAYOUT_FWD, 2, 4)], [(PLAYOUT_FWD, 2, 3)], [PLAYOUT]]
    elif balance_load == 8:  # 0 of 4 is at most an eighth, 1 of 3 is not
        assert out == [[(PLAYOUT_FWD, 2, 4)], [PLAYOUT], [PLAYOUT]]
    else:
        assert out == [[PLAYOUT]] * 3
    if balance_load:  # a playout forwarded here is played here, however light another rank says it is
        acts = role.on_message(Message(PLAYOUT_FWD, 2, 1, Steps(steps, load=0), sim_id=99))
        assert [p.kind for p in acts.pkgs] == [PLAYOUT] and not acts.msgs


def test_updates_wait_while_a_node_is_being_duplicated():
    role, g, s = _role(fuse=False)  # one package per step (the fused path: test_fused_update_waits_for_a_dup)
    role.start()
    steps = np.zeros(1, STEP)
    steps[0]["hash"], steps[0]["rank"], steps[0]["idx"] = game.hash(g, s), 1, 0
    first = role.on_message(Message(UPDATE_MSG, 0, 1, Result(1.0, steps), sim_id=3)).pkgs[0]
    assert first.kind == UPDATE and role.updates_running == 1
    role.sync_pending(role.root_slot)  # the update found a node to duplicate
    held = role.on_message(Message(UPDATE_MSG, 2, 1, Result(1.0, steps), sim_id=5))
    assert not held.pkgs and role.held_updates == 1
    out = role.on_work_done(first, role.execute(first))  # last running update done -> the DUP snapshot runs
    assert [p.kind for p in out.pkgs] == [SYNC] and role.dup_running
    sync = out.pkgs[0]
    out = role.on_work_done(sync, role.execute(sync))
    assert [p.kind for p in out.pkgs] == [UPDATE] and not role.held_updates and not role.dup_running


def test_expand_then_select_again():
    role, g, s = _role(rank=0, M=1, fuse=False)
    acts = role.start()
    pkg = acts.pkgs[0]
    res = role.execute(pkg)
    out = role.on_work_done(pkg, res)
    assert [p.kind for p in out.pkgs] == [EXPAND] and out.pkgs[0].front
    e = out.pkgs[0]
    out = role.on_work_done(e, role.execute(e))
    assert [p.kind for p in out.pkgs] == [SELECT]


def _run_parts(role, pkg):
    """Run a package as a runtime does, returning the kinds of the parts it ran (in order, from its log when
    the role logs; else in PART_KINDS order from its counts) and the result."""
    kind = pkg.kind
    res = role.execute(pkg)
    if pkg.log is not None:
        return [PART_KINDS[k] for k in pkg.log[0]], res
    if pkg.parts is None:
        return [kind], res
    return [k for k, n in zip(PART_KINDS, pkg.parts.tolist()) for _ in range(n)], res


def test_fused_package_runs_a_local_simulation_to_its_update():
    role, g, s = _role(rank=0, M=1, overload=1, chain=1)
    role.record_parts(True)  # a log of the parts, in the order they ran
    pkg = role.start().pkgs[0]
    assert role.updates_running == 1  # a fused package that may update counts as a running update
    kinds, res = _run_parts(role, pkg)
    assert kinds == [SELECT, EXPAND, SELECT, PLAYOUT, UPDATE]
    assert [PART_KINDS[k] for k in pkg.log[0]] == kinds
    out = role.on_work_done(pkg, res)
    assert role.done == 1 and role.updates_running == 1 and role.counts["playouts"] == 1
    assert role.counts["expands"] == 1 and role.t.visits[role.root_slot] == 1
    assert [p.kind for p in out.pkgs] == [SELECT] and not out.msgs  # the next simulation
    kinds, res = _run_parts(role, out.pkgs[0])
    assert kinds[-1] == UPDATE and role.t.visits[role.root_slot] == 2  # the root is no longer expanded


def test_chaining_package_finishes_local_simulations_and_starts_the_next():
    role, g, s = _role(rank=0, M=1, overload=1, chain=4)  # quota 10, one in flight: 3 more may chain
    role.record_parts(True)
    pkg = role.start().pkgs[0]
    first = pkg.sim_id
    assert role.reserved == 3 and role.started == 1
    kinds, res = _run_parts(role, pkg)
    assert kinds.count(UPDATE) == 4 and kinds.count(PLAYOUT) == 4 and kinds[-1] == UPDATE
    assert pkg.sim_id != first and pkg.log[3][0] == first  # the trace sees each part under its simulation's id
    assert len(set(pkg.log[3])) == 4
    assert role.done == 0  # nothing counted before on_work_done takes the package back
    out = role.on_work_done(pkg, res)
    assert role.done == 4 and role.started == 5 and role.in_flight == 1 and role.reserved == 3
    assert role.counts["playouts"] == 4 and role.t.visits[role.root_slot] == 4
    # the rest of the quota: 5 more simulations, of which the next package may chain 3
    while out.pkgs:
        (nxt,) = out.pkgs
        out = role.on_work_done(nxt, _run_parts(role, nxt)[1])
    assert role.done == role.started == 10 and role.reserved == 0 and role.in_flight == 0
    assert role.t.visits[role.root_slot] == 10 and role.idle()


def test_stamped_log_lists_every_part_of_a_chaining_package():
    from engine.mpi.recorder import LOGGED, package_columns, run_recorded

    role, g, s = _role(rank=0, M=1, overload=1, chain=4)
    role.record_parts(True, stamps=True)
    pkg = role.start().pkgs[0]
    first = pkg.sim_id
    ticks = iter(range(100))
    records = []
    res, start, end = run_recorded(pkg, role.execute, lambda p: (p.kind, p.sim_id), lambda: float(next(ticks)),
                                   3, records)
    assert (start, end) == (0.0, 1.0) and pkg.log is None
    assert len(records) == 1 and records[0][3] is LOGGED  # one call: its parts as columns
    records.append((1.0, 1.5, 3, SELECT, 99, -1))  # a plain record beside it
    cols = package_columns(records)
    # plain records come first, then each logged call's parts (a finished trace is sorted by time)
    assert cols["kind"][0] == SELECT and cols["sim_id"][0] == 99 and cols["t_end"][0] == 1.5
    assert cols["steps"][0] == -1
    kinds, ids = list(cols["kind"][1:]), cols["sim_id"][1:].tolist()
    assert kinds.count(UPDATE) == kinds.count(PLAYOUT) == 4 and kinds[-1] == UPDATE
    assert ids[0] == first and len(set(ids)) == 4
    assert all(ids[i] == ids[i + 1] or kinds[i] == UPDATE for i in range(len(ids) - 1))  # one sim after another
    t0, t1 = cols["t_start"][1:], cols["t_end"][1:]
    assert t0[0] == 0.0 and t1[-1] == 1.0 and (cols["worker"] == 3).all()
    assert (t1[:-1] == t0[1:]).all() and (t0 <= t1).all()  # back to back, in order
    # each part's tree steps: one rank, so an update backs up every record its simulation's selects added
    steps = cols["steps"][1:]
    kinds_a = np.asarray(kinds)
    assert (steps[kinds_a == PLAYOUT] == 0).all() and (steps[kinds_a == SELECT] >= 0).all()
    assert steps[kinds_a == UPDATE].sum() == steps[kinds_a == SELECT].sum() + steps[kinds_a == EXPAND].sum() > 0
    role.on_work_done(pkg, res)
    assert role.done == 4


def test_chain_leaves_room_for_s_par_in_flight():
    role, _, _ = _role(rank=0, M=1, W=2, overload=3, chain=8)  # quota 10, W*O = 6 in flight
    acts = role.start()
    assert len(acts.pkgs) == 6 and role.reserved <= 10 - 6


def test_fused_update_waits_for_a_dup():
    role, g, s = _role(rank=0, M=1, overload=1)
    role.record_parts(True)
    role.sync_pending(1)  # a node waits to be duplicated: a package handed out now stops before updating
    pkg = role.start().pkgs[0]
    assert role.updates_running == 0
    kinds, res = _run_parts(role, pkg)
    assert kinds == [SELECT, EXPAND, SELECT, PLAYOUT]
    role.on_work_done(pkg, res)
    assert role.held_updates == 1 and role.done == 0  # its update is held back like any other


def test_tree_snapshot_rows_hang_together():
    from model.roles.snapshot import tree_rows

    M = 4
    g, s = make_game("pgame", **PGAME)
    roles = make_roles("treesplit", Layout(M, 1, workers=2), Setup(g, s, sims=1500, seed=6),
                       {"n_dup": 64, "table_mb": 1})
    Loopback(roles, workers=[2] * M + [1], seed=6).run()
    rows = tree_rows(roles[:M], max_depth=3)
    assert rows["depth"][0] == 0 and rows["visits"][0] == 1500 and rows["duplicated"][0]
    assert rows["visits"][rows["depth"] == 1].sum() == 1500
    hashes = set(rows["hash"].tolist())
    assert all(p in hashes for p in rows["parent"][1:].tolist()) and rows["depth"].max() == 3
    assert set(rows["owner"].tolist()) <= set(range(M)) and rows["duplicated"].sum() > 1
    one = tree_rows(roles[1:2], max_depth=3)  # one rank sees the shared top and its own nodes only
    assert 1 <= len(one["hash"]) < len(rows["hash"])
    assert len(tree_rows(roles[:M], max_depth=3, max_nodes=10)["hash"]) == 10


@pytest.mark.parametrize("M", [2, 3])
def test_a_kept_table_starts_a_new_search_with_the_roots_statistics(M):
    """Tree reuse: a search on the tables an earlier one left starts from the root's kept statistics (its
    owner brings them, the other ranks' copies start from zero and hear of them in the first sync), so
    after the second search every rank's root holds both searches' visits, the same everywhere."""
    g, s = make_game("pgame", **PGAME)
    lay = Layout(M, 0, workers=1)
    tables = [new_table(4096, 4) for _ in range(M)]
    for seed, expect in ((1, 300), (2, 600)):
        roles = [make_role("treesplit", r, lay, Setup(g, s, sims=300, seed=seed), {"n_dup": 32}, tables[r])
                 for r in range(M)]
        run = Loopback(roles, seed=seed, keep=True).run()
        assert sorted(r.root_kept for r in roles) == [0] * (M - 1) + [expect - 300]
        assert all(int(r.t.visits[r.root_slot]) == expect for r in roles)
        assert len({tuple(r.root_stats()["child_visits"]) for r in roles}) == 1
        assert sum(roles[0].root_stats()["child_visits"]) in (expect, expect - 1)  # the first visit may expand
        assert not [p for p in treesplit_problems(roles, run.sent) if "root visits" in p or "unsent" in p]
        assert all(r.idle() for r in roles) and run.message_counts()[DUP] > 0


def test_a_kept_tables_root_is_a_node_the_earlier_search_grew():
    """The next move's search (the root one move down) starts from what the earlier search gave that node."""
    g, s = make_game("pgame", **PGAME)
    lay = Layout(2, 0, workers=1)
    tables = [new_table(4096, 4) for _ in range(2)]
    roles = [make_role("treesplit", r, lay, Setup(g, s, sims=600, seed=1), {"n_dup": 32}, tables[r])
             for r in range(2)]
    Loopback(roles, seed=1, keep=True).run()
    st = roles[0].root_stats()
    best = int(np.argmax(st["child_visits"]))
    child = s.copy()
    game.play(g, child, int(st["moves"][best]))
    slots = [lookup(r.t, np.uint64(game.hash(g, child)), False)[0] for r in roles]
    visits = max(int(r.t.visits[x]) for r, x in zip(roles, slots) if x)  # its owner's (the whole count)
    roles = [make_role("treesplit", r, lay, Setup(g, child, sims=200, seed=2), {"n_dup": 32}, tables[r])
             for r in range(2)]
    Loopback(roles, seed=2, keep=True).run()
    assert max(r.root_kept for r in roles) == visits > 0
    assert all(int(r.t.visits[r.root_slot]) == visits + 200 for r in roles)


def test_few_parts_are_placed_as_the_kernel_places_them():
    from engine.mpi.recorder import _few_parts, _logged_parts

    rng = np.random.default_rng(3)
    for n in (1, 3, 8, 20):
        kinds = rng.integers(0, 4, n).astype(np.int8)
        sims = np.sort(rng.integers(0, 3, n)).astype(np.int32)
        stamps = np.concatenate([[100], 100 + np.cumsum(rng.integers(0, 50, n))]).astype(np.int64)
        stamps[n // 2] -= 5  # a counter that went back for a moment (another core's)
        for st in (stamps, np.full(n + 1, 7, np.int64)):  # and one that did not move
            steps = rng.integers(0, 6, n).astype(np.int64)
            log = (kinds, sims, st, [11, 22, 33], steps)
            s, e, k, ids, sts = _logged_parts(2.0, 3.0, log)
            rows = _few_parts(2.0, 3.0, 5, log)
            assert [r[0] for r in rows] == pytest.approx(s.tolist())
            assert [r[1] for r in rows] == pytest.approx(e.tolist())
            assert [r[3] for r in rows] == [PART_KINDS[c] for c in k] and [r[4] for r in rows] == ids.tolist()
            assert [r[5] for r in rows] == sts.tolist() == steps.tolist()
            assert rows[0][0] == 2.0 and rows[-1][1] == 3.0 and all(r[2] == 5 for r in rows)
            assert all(a[1] == b[0] and a[0] <= a[1] for a, b in zip(rows, rows[1:]))


def test_growing_the_pool_grows_every_slot_array_and_keeps_the_search_going():
    """A rank that runs out of simulation slots grows them all (core.PER_SLOT: every array with a row per
    slot) and loses nothing: a run that must grow its pool many times still keeps its invariants."""
    from model.roles import core as K

    g, s = make_game("pgame", **PGAME)
    roles = make_roles("treesplit", Layout(4, 0, workers=2), Setup(g, s, sims=1200, seed=5),
                       {"n_dup": 32, "table_mb": 1, "overload": 12})
    P = len(roles[0].a.sims)
    per_slot = {f for f in K.Arrays._fields
                if getattr(getattr(roles[0].a, f), "shape", ())[:1] == (P,)} - {"free", "held"}
    assert per_slot == set(K.PER_SLOT)
    run = Loopback(roles, workers=2, seed=5, keep=True).run()
    assert treesplit_problems(roles, run.sent) == []
    grown = [r for r in roles if len(r.a.sims) > P]
    assert grown and all(getattr(r.a, f).shape[0] == len(r.a.sims) for r in grown for f in K.PER_SLOT)


def test_growing_the_sync_intake_keeps_the_rows_a_queued_sync_job_holds():
    """Rows a sync job took (jrows) wait in the queue until it runs; arrivals that outgrow rows_in meanwhile
    must not wipe them (they are other ranks' deltas: lost, the duplicated nodes would disagree)."""
    from model.roles import core as K

    g, s = make_game("pgame", **PGAME)
    role = make_roles("treesplit", Layout(2, 0, workers=1), Setup(g, s, sims=10, seed=5), {"n_dup": 4})[0]
    n = len(role.a.rows_in)
    rng = np.random.default_rng(1)
    role.a.jrows.view(np.uint8)[:] = rng.integers(0, 255, role.a.jrows.nbytes, dtype=np.uint8)
    role.a.rows_in.view(np.uint8)[:] = rng.integers(0, 255, role.a.rows_in.nbytes, dtype=np.uint8)
    before_j, before_in = role.a.jrows.copy(), role.a.rows_in.copy()
    role.a.cs[0]["need"], role.a.cs[0]["need_size"] = K.N_ROWS_IN, 2 * n
    role.grow()
    assert len(role.a.rows_in) >= 2 * n and len(role.a.jrows) == len(role.a.rows_in)
    assert role.a.jrows[:n].tobytes() == before_j.tobytes() and role.a.rows_in[:n].tobytes() == before_in.tobytes()


@pytest.mark.parametrize("algo,M,B,params", [("treesplit", 2, 1, {}), ("tds", 2, 0, {}), ("dfuct", 2, 0, {}),
                                             ("root", 2, 0, {}), ("leaf", 2, 0, {}), ("hybrid", 4, 0, {"groups": 2})])
def test_sims_done_is_what_stats_counts(algo, M, B, params):
    """Runtimes read a rank's simulation count every few milliseconds through sims_done(), which must agree
    with the full stats(): after a search stopped early and after a whole one."""
    g, s = make_game("pgame", **PGAME)
    for stop_after in (150, None):
        roles = make_roles(algo, Layout(M, B, workers=1), Setup(g, s, sims=600, seed=2), {"table_mb": 4, **params})
        Loopback(roles, seed=2).run(stop_after=stop_after)
        counts = [r.sims_done() for r in roles]
        assert counts == [r.stats().sims_done for r in roles]
        assert sum(counts) == 600 if stop_after is None else 0 < sum(counts) <= 600
