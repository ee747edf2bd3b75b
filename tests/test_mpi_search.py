"""`treesplit search` with the real MPI algorithms (model/roles hosted by engine/mpi) under mpiexec:
a legal move on the P-game and on 9x9 Go, nothing lost or doubled (checked against the trace), a clean
exit, and the search run inside an mpiexec the user started."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, mpiexec, treesplit_cmd
from model import game
from model.game import make_game
from engine.trace_files import read_trace

CASES = {
    # name: (game args, ranks, bcast ranks, threads, algorithm)
    "pgame-2x2": (["--game", "pgame", "--branching", "4", "--depth", "8"], 2, 0, 2, "treesplit"),
    "go9-2+1": (["--game", "go", "--board", "9"], 2, 1, 2, "treesplit"),
    "go9-4+1-inline": (["--game", "go", "--board", "9"], 4, 1, 1, "treesplit"),
    "pgame-4+1": (["--game", "pgame", "--branching", "4", "--depth", "8"], 4, 1, 1, "treesplit"),
    "go9-tds-2": (["--game", "go", "--board", "9"], 2, 0, 2, "tds"),
    "go9-root-2": (["--game", "go", "--board", "9"], 2, 0, 1, "root"),
    "go9-leaf-3": (["--game", "go", "--board", "9"], 3, 0, 1, "leaf"),
    "go9-dfuct-2": (["--game", "go", "--board", "9"], 2, 0, 2, "dfuct"),
    "pgame-hybrid-4+2": (["--game", "pgame", "--branching", "4", "--depth", "8"], 4, 2, 1, "hybrid"),
    "go9-2-python-io": (["--game", "go", "--board", "9"], 2, 0, 1, "treesplit"),
}
# what a case runs with beyond its row: the IO loop in Python (engine/mpi/rank.py's batch loop, not the
# compiled turn), with S_par raised where simulations hop
EXTRA = {"go9-2-python-io": ({"TREESPLIT_PYTHON_IO": "1"}, ["--param", "min_in_flight=40"])}
# algorithms whose every search rank holds the whole root after the final synchronisation
ROOT_EVERYWHERE = ("treesplit", "root", "hybrid")


def _legal(args: list[str]) -> set[int]:
    if "pgame" in args:
        g, s = make_game("pgame", branching=4, depth=8)
    else:
        g, s = make_game("go", size=9, komi=7.0)
    out = np.empty(int(game.n_actions(g)), np.int64)
    return set(out[: int(game.legal_actions(g, s, out))].tolist())


def _alive(tmp_path: Path) -> list[int]:
    """Rank processes (engine.mpi.main or .session) started by a test with TMPDIR=tmp_path."""
    pids, mark = [], f"TMPDIR={tmp_path}".encode()
    for proc in Path("/proc").iterdir():
        try:
            args = (proc / "cmdline").read_bytes()
            if b"engine.mpi" in args and mark in (proc / "environ").read_bytes().split(b"\0"):
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


@pytest.mark.mpi
@pytest.mark.timeout(240)
@pytest.mark.parametrize("case", sorted(CASES))
def test_search_returns_a_legal_move_and_loses_nothing(case, tmp_path, run_cli):
    game_args, ranks, bcast, threads, algo = CASES[case]
    trace = tmp_path / "trace"
    sims = 400
    env, extra = EXTRA.get(case, ({}, []))
    params = ["--param", "n_dup=8"] if algo == "treesplit" else []
    r = run_cli("search", "--algo", algo, *game_args, "--ranks", str(ranks), "--bcast-ranks", str(bcast),
                "--threads", str(threads), "--sims", str(sims), "--trace", str(trace), *params, *extra, "--json",
                timeout=200, env={"TMPDIR": str(tmp_path), **env})
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["move"] in _legal(game_args)
    # the budget is spent exactly, and every simulation reached the root once on every rank
    assert res["sims"] == sims
    assert res["root_visits"] == sims
    # treesplit, root and hybrid share the root; under tds and dfuct its owner alone holds it, under leaf
    # the master
    assert res["root_visits_by_rank"] == [sims] * (ranks if algo in ROOT_EVERYWHERE else 1)
    assert res.get("dup_consistent", True)
    if env:  # the Python IO loop ran: only the compiled turn reports where its time went
        assert not any("loop" in r for r in res["per_rank"])
    if algo == "treesplit" and ranks > 1:
        assert res["messages_by_kind"].get("DUP", {}).get("count", 0) > 0  # n_dup=8: nodes were shared
    if bcast:  # broadcast ranks pass SYNCs on to each other (BCAST) when there are several of them
        per_group = bcast // 2 if algo == "hybrid" else bcast
        assert res["messages_by_kind"]["BCAST" if per_group > 1 else "SYNC"]["count"] > 0
    t = read_trace(trace)
    sent = {}
    for src, dst, kind, count, _ in t.meta["extra"]["messages_sent"]:
        sent[(src, dst, kind)] = sent.get((src, dst, kind), 0) + count
    got = t.messages.groupby(["src", "dst", "kind"], observed=True).size().to_dict()
    assert got == sent  # every message sent was received once
    playouts = t.packages[t.packages.kind == "playout"]
    if algo == "dfuct":  # a df-UCT job (its sim_id) runs many simulations before it reports
        assert len(playouts) == res["playouts"]
    else:
        assert playouts.sim_id.is_unique and len(playouts) == res["playouts"] <= sims
    # every part says the tree steps it covered: under the algorithms whose simulations' updates back up
    # the records their selects added, the two add up per simulation (on every rank together)
    pk = t.packages
    kind = pk["kind"].astype(str)
    assert (pk.loc[kind == "io", "steps"] == -1).all() and (pk.loc[kind == "playout", "steps"] == 0).all()
    assert (pk.loc[kind.isin(["select", "expand", "update"]), "steps"] >= 0).all()
    if algo in ("treesplit", "tds", "root", "hybrid"):
        by_sim = pk[kind.isin(["select", "expand"])].groupby("sim_id")["steps"].sum()
        assert (by_sim > 0).all()
        assert by_sim.to_dict() == pk[kind == "update"].groupby("sim_id")["steps"].sum().reindex(
            by_sim.index, fill_value=0).to_dict()
    assert len(t.tree) > 1 and t.tree["visits"].iloc[0] == sims  # the snapshot starts at the root
    assert (t.tree["wins"] <= t.tree["visits"]).all()  # a row's visits and wins are the same move's
    if algo == "treesplit":
        assert t.tree["visits"][t.tree["depth"] == 1].sum() == sims
    assert t.meta["board"] == (9 if "go" in game_args else None)  # the P-game has no board
    assert set(t.samples["rank"]) == set(range(ranks + bcast))
    assert not _alive(tmp_path)  # every rank is gone


@pytest.mark.mpi
@pytest.mark.timeout(240)
def test_search_inside_a_user_started_mpiexec(tmp_path):
    """Under `mpiexec -n 3 treesplit search ...` every process is a rank; only rank 0 prints."""
    cmd = [mpiexec(), "-n", "3", *treesplit_cmd(), "search", "--algo", "treesplit", "--ranks", "2",
           "--bcast-ranks", "1", "--sims", "300", "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=200, cwd=ROOT,
                       env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert r.returncode == 0, r.stderr
    lines = [line for line in r.stdout.splitlines() if line.strip()]
    assert len(lines) == 1
    res = json.loads(lines[0])
    assert res["sims"] == 300 and res["root_visits"] == 300 and res["move"] >= 0


@pytest.mark.mpi
@pytest.mark.timeout(120)
def test_wrong_world_size_is_a_clear_error(tmp_path):
    cmd = [mpiexec(), "-n", "2", *treesplit_cmd(), "search", "--algo", "treesplit", "--ranks", "2",
           "--bcast-ranks", "1", "--sims", "100"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=100, cwd=ROOT)
    assert r.returncode != 0
    assert "the MPI job has 2 ranks but the search needs 3" in r.stderr


def test_bad_parameters_fail_before_any_rank_starts(run_cli):
    r = run_cli("search", "--algo", "treesplit", "--ranks", "2", "--sims", "10", "--param", "n_dupp=3")
    assert r.returncode == 2 and "n_dupp" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("search", "--algo", "tds", "--ranks", "2", "--bcast-ranks", "1", "--sims", "10")
    assert r.returncode == 2 and "broadcast" in r.stderr


@pytest.mark.mpi
@pytest.mark.timeout(240)
def test_many_duplicated_nodes_stay_consistent_and_the_run_ends(run_cli, tmp_path):
    """Small N_dup on a longer search: sync jobs queue while their rank's buffers grow (room for arrived rows,
    for the outbox); nothing of theirs may be lost and the final sync must end."""
    sims = 20000
    r = run_cli("search", "--algo", "treesplit", "--board", "9", "--ranks", "2", "--threads", "1",
                "--sims", str(sims), "--param", "n_dup=64", "--json", timeout=200, env={"TMPDIR": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["root_visits_by_rank"] == [sims, sims] and res["dup_consistent"]


@pytest.mark.mpi
@pytest.mark.timeout(240)
def test_ranks_load_the_kernels_together_once_a_run_of_their_kind_cached_them(run_cli, tmp_path):
    """The first run of a kind builds rank 0's host first (it may compile the kernels) and leaves a stamp in
    numba's cache; the next run's ranks all load at once. Both ways give a whole search."""
    from engine.mpi.config import DistributedConfig
    from engine.mpi.rank import warm_stamp

    stamp = warm_stamp(DistributedConfig(algo="tds", board=9, ranks=2, threads=1, sims=300))
    assert stamp is not None and stamp.parent == Path(os.environ["NUMBA_CACHE_DIR"])
    assert warm_stamp(DistributedConfig(algo="tds", board=9, ranks=2, threads=2, sims=300)) != stamp
    stamp.unlink(missing_ok=True)
    for _ in range(2):
        r = run_cli("search", "--algo", "tds", "--board", "9", "--ranks", "2", "--threads", "1", "--sims", "300",
                    "--json", timeout=200, env={"TMPDIR": str(tmp_path)})
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["sims"] == 300
        assert stamp.exists()


def test_a_caller_timeout_allows_for_compiling_where_no_run_of_the_kind_left_kernels_cached(monkeypatch, tmp_path):
    """A cold cache lengthens a caller's timeout by the compile allowance (validate's 120 s runs timed out on a
    fresh machine while rank 0 compiled); once a run of the kind stamped the cache it does not."""
    from engine.mpi.config import DistributedConfig
    from engine.mpi.launch import COMPILE_ALLOWANCE, allowing_compile
    from engine.mpi.rank import warm_stamp

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    cfg = DistributedConfig(algo="treesplit", board=9, ranks=2, threads=1, sims=300)
    assert allowing_compile(cfg, None) is None
    assert allowing_compile(cfg, 120.0) == 120.0 + COMPILE_ALLOWANCE
    warm_stamp(cfg).touch()
    assert allowing_compile(cfg, 120.0) == 120.0


def _gtp_moves(stdout: str) -> list[str]:
    return [line[2:].strip() for line in stdout.splitlines() if line.startswith("= ") and line[2:].strip()]


@pytest.mark.mpi
@pytest.mark.timeout(240)
@pytest.mark.parametrize("inside", [False, True], ids=["launcher", "user-mpiexec"])
def test_gtp_player_keeps_one_mpi_session_across_moves(inside, tmp_path):
    """The Player's MPI searcher runs every genmove in one session; inside a user-started mpiexec only
    rank 0 speaks GTP and the other ranks serve until it quits."""
    script = "boardsize 9\nclear_board\ngenmove b\nplay w E5\ngenmove b\ngenmove w\nquit\n"
    cmd = [*treesplit_cmd(), "gtp", "--algo", "treesplit", "--ranks", "2", "--threads", "1", "--sims", "200"]
    if inside:
        cmd = [mpiexec(), "-n", "2", *cmd]
    r = subprocess.run(cmd, input=script, capture_output=True, text=True, timeout=200, cwd=ROOT,
                       env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert r.returncode == 0, r.stderr
    moves = _gtp_moves(r.stdout)
    assert len(moves) == 3 and "E5" not in moves[1:]
    cols = "ABCDEFGHJ"
    assert all(m == "pass" or (m[0] in cols and 1 <= int(m[1:]) <= 9) for m in moves)
    assert not _alive(tmp_path)


def test_a_sessions_first_search_on_a_board_does_not_count_as_overhead(monkeypatch):
    """The searcher gives a timed search its seconds less what recent searches cost beyond their search phase;
    a session's first search, which loads the kernels, is not one of them (inside a user-started mpiexec the
    session exists before it: counted, it cut the next moves to a fifth of their time), nor is its first on
    another board, which sets up a table for that size (a GTP engine warms up on 19x19 and then plays 9x9:
    counted, it cut the next five moves to a fifth of their time)."""
    import time

    from engine import algorithms
    from engine.mpi.algorithms import DistributedSearcher
    from engine.sequential import Position
    from engine.timecontrol import Budget

    class Session:  # the ranks' side: a board's first search takes 0.3 s beyond its search phase, later ones nothing
        boards: set = set()

        def command(self, cmd):
            board = cmd["config"]["board"]
            time.sleep(0.0 if board in Session.boards else 0.3)
            Session.boards.add(board)
            return {"ok": True, "result": {"children": [[0, 1, 0.5]], "sims": 1, "playouts": 1, "nodes": 1,
                                           "move": 0, "move_value": 0.5, "move_visits": 1, "root_visits": 1,
                                           "root_value": 0.5, "pv": [0], "seconds": 0.0}}

    searcher = DistributedSearcher("treesplit", algorithms.make_config("treesplit", {}, ranks=2, threads=1))
    searcher.session = Session()  # as a Leader is, from the constructor on
    for size in (19, 9):
        g, s = make_game("go", size=size, komi=7.0)
        for _ in range(3):
            searcher.search(Position(g, s), Budget(seconds=1.0))
    assert searcher._search_seconds(1.0) > 0.9


def _cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds the processes have used so far."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of proc(5))
    return total / os.sysconf("SC_CLK_TCK")


@pytest.mark.mpi
@pytest.mark.timeout(180)
def test_a_session_waiting_for_its_next_move_leaves_the_cores_to_others(tmp_path, monkeypatch):
    """Between two moves (the opponent's turn, a person thinking) a session's ranks wait for rank 0's next
    command without spinning a core: MPI's blocking broadcast did, and slowed whichever engine was thinking."""
    import time

    from engine import algorithms
    from engine.mpi.algorithms import DistributedSearcher
    from engine.sequential import Position
    from engine.timecontrol import Budget

    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the session's ranks inherit it: _alive finds them
    searcher = DistributedSearcher("treesplit", algorithms.make_config("treesplit", {}, ranks=2, threads=1))
    try:
        g, s = make_game("go", size=9, komi=7.0)
        assert searcher.search(Position(g, s), Budget(sims=50)).action in _legal(["--board", "9"])
        pids = _alive(tmp_path)
        time.sleep(0.5)
        before = _cpu_seconds(pids)
        time.sleep(2.0)
        used = _cpu_seconds(pids) - before
    finally:
        searcher.close()
    assert len(pids) >= 2 and used < 0.3, (pids, used)


@pytest.mark.mpi
@pytest.mark.timeout(240)
@pytest.mark.parametrize("algo", ["treesplit", "root"])
def test_each_move_starts_from_what_the_session_kept_and_analysis_counts_it_once(algo, tmp_path, monkeypatch):
    """Tree reuse across a session's searches: treesplit's root owner brings the root's statistics from the
    earlier search (the next position's node, or the same one again), root parallelisation starts afresh.
    Analysis searches one position in stretches; either way each stretch's simulations count once in the
    candidates it reports (kept at the root, or added up by the player)."""
    from engine.player import Player, PlayerConfig
    from model.go.game import GoGame

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    p = Player(PlayerConfig(algo=algo, sims=300, ranks=2, threads=1))
    results = []
    search = p.searcher.search
    p.searcher.search = lambda *a, **k: results.append(search(*a, **k)) or results[-1]
    try:
        g = GoGame(9, 7.0)
        p.new_game(9, 7.0)
        for color in (0, 1):  # self-play: the second root is a child of the first
            g.play(p.genmove(g, color), color)
        second = results[-1]
        assert second.sims == 300 and (second.root_visits > 300) == (algo == "treesplit")
        assert p.searcher.keeps_root_visits == (algo == "treesplit")
        children = None
        for k in range(1, 4):
            children, _ = p.analyze(g, 0, 0.2, children)
            base = results[-k].root_visits - results[-k].sims  # what the first stretch found at the root
            total, sims = sum(c.visits for c in children), base + sum(r.sims for r in results[-k:])
            assert sims - k <= total <= sims, (k, total, [(r.sims, r.root_visits) for r in results])
            assert results[-1].root_visits == (sims if algo == "treesplit" else results[-1].sims)
    finally:
        p.close()
    assert not _alive(tmp_path)


@pytest.mark.mpi
@pytest.mark.timeout(240)
def test_a_player_whose_mpi_session_died_starts_new_ranks(tmp_path, monkeypatch, capfd):
    """A GTP player or a match side whose session job died (here: killed between two moves) goes on with new
    ranks at its next search or new game, saying so on stderr, rather than failing every later move."""
    import signal

    from engine.player import Player, PlayerConfig
    from model.go.game import GoGame

    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the session's ranks inherit it: _alive finds them
    legal = _legal(["--board", "9"])
    p = Player(PlayerConfig(algo="treesplit", sims=100, ranks=2, threads=1))
    try:
        p.new_game(9, 7.0)
        assert p.genmove(GoGame(9, 7.0), 0) in legal
        for again in (lambda: p.genmove(GoGame(9, 7.0), 0), lambda: p.new_game(9, 7.0)):
            dead = p.searcher.session
            os.killpg(dead.proc.pid, signal.SIGKILL)
            dead.proc.wait()
            again()
            assert p.searcher.session is not dead
        assert p.genmove(GoGame(9, 7.0), 0) in legal  # the new game's first search, on the third job
    finally:
        p.close()
    assert capfd.readouterr().err.count("the MPI session had ended") == 2
    assert not _alive(tmp_path)


@pytest.mark.mpi
@pytest.mark.timeout(120)
def test_gtp_mpi_player_resigns_by_the_players_rule(tmp_path):
    """An MPI searcher resigns as the sequential one does (engine.sequential.wants_resign): at resign 0.99 after
    one root visit every position is lost; at 0 (never) the same search plays a move. Before, an MPI side
    never resigned while its sequential opponent did."""
    script = "boardsize 9\nclear_board\ngenmove b\nquit\n"
    outs = []
    for resign in ("0.99", "0"):
        cmd = [*treesplit_cmd(), "gtp", "--algo", "treesplit", "--ranks", "2", "--threads", "1", "--sims", "200",
               "--param", f"resign={resign}", "--param", "resign_min_visits=1"]
        r = subprocess.run(cmd, input=script, capture_output=True, text=True, timeout=100, cwd=ROOT,
                           env=dict(os.environ, TMPDIR=str(tmp_path)))
        assert r.returncode == 0, r.stderr
        outs.append(_gtp_moves(r.stdout))
    assert outs[0] == ["resign"] and len(outs[1]) == 1 and outs[1][0] != "resign"
    assert not _alive(tmp_path)
