"""Lines of Action on the parallel runtimes: every engine algorithm (the shared-tree one and the MPI ones on
real ranks) returns a legal LOA move, and the simulator's functional fidelity runs the roles on LOA and
loses nothing. The algorithms learn about LOA only through model/game.py."""

from __future__ import annotations

import json

import numpy as np
import pytest

from model import game
from model.game import make_game

ALGOS = {
    # algo: (ranks, bcast ranks, threads, extra arguments)
    "tree": (None, None, 2, []),
    "leaf": (2, 0, 1, []),
    "root": (2, 0, 1, []),
    "tds": (2, 0, 1, []),
    "dfuct": (2, 0, 1, []),
    "treesplit": (2, 1, 1, ["--param", "n_dup=16"]),
    "hybrid": (2, 0, 1, []),
}


def _loa_start_moves() -> set[int]:
    g, s = make_game("loa")
    out = np.empty(int(game.n_actions(g)), np.int64)
    return set(out[: int(game.legal_actions(g, s, out))].tolist())


@pytest.mark.mpi
@pytest.mark.timeout(300)
@pytest.mark.parametrize("algo", sorted(ALGOS))
def test_every_algorithm_returns_a_legal_loa_move(algo, tmp_path, run_cli):
    ranks, bcast, threads, extra = ALGOS[algo]
    sims = 150
    layout = [] if ranks is None else ["--ranks", str(ranks), "--bcast-ranks", str(bcast)]
    r = run_cli("search", "--algo", algo, "--game", "loa", "--sims", str(sims), "--threads", str(threads),
                *layout, *extra, "--json", timeout=280, env={"TMPDIR": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    from model.loa.game import action_name

    legal = _loa_start_moves()
    assert len(legal) == 36
    # MPI searches report the action and its name, the shared-tree search the name only
    assert res.get("move_str", res["move"]) in {action_name(a) for a in legal}
    if algo != "tree":
        assert res["move"] in legal
    assert res["root_visits"] == sims
    assert res["game"] == "loa"


def test_simulator_runs_the_roles_on_loa():
    from sim.simulate import SimConfig, prepare, run

    cfg = SimConfig(algo="treesplit", nodes=1, seconds=0.003, fidelity="functional", game="loa", drain=True,
                    params={"table_mb": 2, "n_dup": 16})
    p = prepare(cfg)
    s = run(p)
    d = s["drain"]
    M = p.layout.search_ranks
    assert s["game"] == "loa" and p.meta.game == "loa"
    assert d["messages_sent"] == d["messages_received"] > 0
    done = sum(p.roles[r].stats().sims_done for r in range(M))
    assert done == d["sims_done"] > 0
    roots = [p.roles[r].root_stats() for r in range(M)]
    assert [rs["visits"] for rs in roots] == [done] * M
    assert set(roots[0]["moves"]) == _loa_start_moves()   # the root's children: LOA's 36 opening moves


def test_simulate_command_takes_loa(run_cli):
    r = run_cli("simulate", "--game", "loa", "--algo", "tds", "--nodes", "1", "--seconds", "0.002", "--json",
                timeout=240)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout[r.stdout.index("{"):])
    assert res["game"] == "loa" and res["sims"] > 0


@pytest.mark.parametrize("agent", ["pu-mc", "fpu-ef"])
def test_one_treesplit_rank_runs_the_serial_agent_exactly(agent):
    # The Table 5.1 agents are UctParams (model/uct.py's knowledge hooks), so the distributed roles run them
    # too: one rank with one simulation in flight builds the agent's own tree.
    from model.loa.policy import AGENTS, NO_HISTORY
    from model.rng import new_rng
    from model.roles import Layout, Setup
    from model.roles.loopback import Loopback
    from model.roles.params import TreesplitParams
    from model.roles.treesplit import TreesplitSearch
    from model.tt import new_table
    from model.uct import N_COUNTERS, run_simulations

    up = AGENTS[agent].uct_params()
    g, s = make_game("loa", knowledge=AGENTS[agent].knowledge)
    k, sims, seed = int(game.max_children(g)), 300, 5
    t_seq = new_table(1 << 12, k)
    run_simulations(t_seq, g, s, NO_HISTORY, up.to_array(), new_rng(seed * 1000003), sims,
                    np.zeros(N_COUNTERS, np.int64))
    role = TreesplitSearch(0, Layout(1, 0, workers=1), Setup(g, s, history=NO_HISTORY, sims=sims, seed=seed), up,
                           TreesplitParams(overload=1), new_table(1 << 12, k))
    Loopback([role], seed=seed).run()
    for f in ("key", "visits", "value", "n_children", "child_move", "child_visits", "child_value", "prior"):
        assert np.array_equal(getattr(role.t, f), getattr(t_seq, f)), f
    assert role.done == sims
