"""GTP v2 engine: framing, every command, errors, and `treesplit gtp` in a subprocess."""

import random
import re
import subprocess

import pytest
from sgfmill import sgf

from engine.gtp import GtpEngine, preprocess

from conftest import ROOT, treesplit_cmd

REQUIRED = ["protocol_version", "name", "version", "known_command", "list_commands", "quit", "boardsize",
            "clear_board", "komi", "play", "genmove", "undo", "showboard", "final_score", "final_status_list",
            "time_settings", "time_left", "loadsgf", "kgs-genmove_cleanup", "reg_genmove"]


class RandomPlayer:
    """A stand-in Player: a random legal non-pass move (pass when there is none); records what it was told."""

    def __init__(self, seed=0, resign=False, fail=False):
        self.rng = random.Random(seed)
        self.resign, self.fail = resign, fail
        self.games, self.time_settings, self.calls = [], [], []

    def new_game(self, size, komi):
        self.games.append((size, komi))

    def set_time_settings(self, main, byo, stones):
        self.time_settings.append((main, byo, stones))

    def play(self, action):
        pass

    def undo(self):
        pass

    def close(self):
        pass

    def genmove(self, game, color, cleanup=False, time_left=None, stones_left=0):
        self.calls.append(dict(color=color, cleanup=cleanup, time_left=time_left, stones_left=stones_left))
        if self.fail:
            raise RuntimeError("boom")
        if self.resign:
            return None
        n = game.size * game.size
        moves = [a for a in game.legal_actions() if a != n]
        return self.rng.choice(moves) if moves else n


def send(eng, line):
    r = eng.handle(line)
    assert r is not None and r.endswith("\n\n") and "\n\n" not in r[:-2], repr(r)
    return r


def ok(eng, line):
    r = send(eng, line)
    assert r.startswith("="), (line, r)
    return r[1:].strip()


def err(eng, line):
    r = send(eng, line)
    assert r.startswith("?"), (line, r)
    return r[1:].strip()


@pytest.fixture
def eng():
    return GtpEngine(RandomPlayer(), size=9, komi=7.0)


def board_rows(eng):
    """The showboard rows (9 lines, top row first) as strings of '.', 'X', 'O'."""
    text = ok(eng, "showboard")
    rows = []
    for line in text.split("\n"):
        parts = line.split()
        if parts and parts[0].isdigit():
            rows.append("".join(c for c in parts[1:-1] if c in ".XO+")[:9].replace("+", "."))
    return rows


def test_framing_ids_and_preprocessing(eng):
    assert send(eng, "protocol_version") == "= 2\n\n"
    assert send(eng, "12 protocol_version") == "=12 2\n\n"
    assert send(eng, "7 no_such_command") == "?7 unknown command\n\n"
    assert eng.handle("") is None and eng.handle("   \n") is None and eng.handle("# just a comment") is None
    assert send(eng, "3\tname # trailing comment") == "=3 treesplit\n\n"
    assert preprocess("na\x01me\x7f\r") == "name"
    assert ok(eng, "version")


def test_command_names_are_case_sensitive_arguments_are_not(eng):
    assert err(eng, "PLAY black D4") == "unknown command"
    ok(eng, "play BLACK d4")
    ok(eng, "play W PaSs")
    assert board_rows(eng)[9 - 4][3] == "X"


def test_known_and_list_commands(eng):
    listed = ok(eng, "list_commands").split("\n")
    assert set(REQUIRED) <= set(listed)
    for c in REQUIRED:
        assert ok(eng, f"known_command {c}") == "true"
    assert ok(eng, "known_command frobnicate") == "false"
    assert err(eng, "known_command").startswith("syntax error")


def test_boardsize_clear_board_komi(eng):
    ok(eng, "play b c3")
    assert err(eng, "boardsize x").startswith("syntax error")
    assert err(eng, "boardsize 1") == "unacceptable size"
    assert err(eng, "boardsize 25") == "unacceptable size"
    ok(eng, "boardsize 13")
    assert eng.game.size == 13 and eng.player.games[-1] == (13, 7.0)
    assert len(board_rows(eng)) == 13
    ok(eng, "play b n13")  # the corner exists on 13x13
    ok(eng, "clear_board")
    assert all(set(r) == {"."} for r in board_rows(eng))
    assert err(eng, "komi abc").startswith("syntax error")
    ok(eng, "komi 6.5")
    assert eng.komi == 6.5 and eng.game.komi == 6.5
    assert ok(eng, "final_score") == "W+6.5"


def test_play_errors(eng):
    assert err(eng, "play").startswith("syntax error")
    assert err(eng, "play b").startswith("syntax error")
    assert err(eng, "play red d4").startswith("syntax error")
    assert err(eng, "play b z99").startswith("syntax error")
    assert err(eng, "play b k5").startswith("syntax error")  # no K on 9x9 (I is skipped: A..H J)
    assert err(eng, "play b i5").startswith("syntax error")  # I is never a column
    ok(eng, "play b e5")
    assert err(eng, "play w e5").startswith("illegal move")
    # Suicide: white plays into a point surrounded by black.
    for v in ("a2", "b1"):
        ok(eng, f"play b {v}")
    assert err(eng, "play w a1").startswith("illegal move")
    # The session goes on normally after errors.
    ok(eng, "play w j9")


def test_genmove_plays_and_reg_genmove_does_not(eng):
    v = ok(eng, "genmove b").upper()
    assert v != "PASS"
    assert err(eng, f"play w {v}").startswith("illegal move")  # the point is taken
    before = board_rows(eng)
    v2 = ok(eng, "reg_genmove w")
    assert board_rows(eng) == before and v2
    ok(eng, "kgs-genmove_cleanup w")
    assert eng.player.calls[-1]["cleanup"] is True and eng.player.calls[-1]["color"] == 1
    assert err(eng, "genmove").startswith("syntax error")


def test_play_goes_on_after_two_passes(eng):
    """Controllers may continue after both pass (KGS clean-up): play and genmove still work."""
    ok(eng, "play b pass")
    ok(eng, "play w pass")
    assert eng.game.is_over
    v = ok(eng, "genmove b")
    assert v.lower() != "pass" and not eng.game.is_over
    ok(eng, "play w pass")
    ok(eng, "play b pass")
    ok(eng, "play w c3")
    ok(eng, "undo")
    assert board_rows(eng)[9 - 3][2] == "."


def test_genmove_resign_and_internal_errors_do_not_end_the_session():
    eng = GtpEngine(RandomPlayer(resign=True), size=9, komi=7.0)
    assert ok(eng, "genmove w") == "resign"
    assert all(set(r) == {"."} for r in board_rows(eng))
    eng = GtpEngine(RandomPlayer(fail=True), size=9, komi=7.0)
    assert err(eng, "3 genmove b").startswith("3 internal error: RuntimeError: boom")
    assert eng.last_traceback and "boom" in eng.last_traceback
    assert ok(eng, "name") == "treesplit"


def test_undo(eng):
    assert err(eng, "undo") == "cannot undo"
    ok(eng, "play b e5")
    ok(eng, "play w c3")
    ok(eng, "undo")
    rows = board_rows(eng)
    assert rows[9 - 5][4] == "X" and rows[9 - 3][2] == "."
    ok(eng, "undo")
    assert all(set(r) == {"."} for r in board_rows(eng))
    assert err(eng, "undo") == "cannot undo"


def test_showboard_and_scores(eng):
    ok(eng, "play b e5")
    text = ok(eng, "showboard")
    assert "\n\n" not in text and "X" in text and "A" in text and "J" in text
    rows = board_rows(eng)
    assert len(rows) == 9 and rows[4][4] == "X" and sum(r.count("X") for r in rows) == 1
    # One black stone owns the whole empty board (Tromp-Taylor): 81 - 7.
    assert ok(eng, "final_score") == "B+74"
    assert ok(eng, "final_status_list alive").upper().split() == ["E5"]
    assert ok(eng, "final_status_list dead") == ""
    ok(eng, "final_status_list seki")
    assert err(eng, "final_status_list zombie").startswith("syntax error")
    ok(eng, "clear_board")
    assert ok(eng, "final_score") == "W+7"


def test_time_settings_and_time_left_reach_the_player(eng):
    assert err(eng, "time_settings 10 x 1").startswith("syntax error")
    assert err(eng, "time_settings 10").startswith("syntax error")
    ok(eng, "time_settings 300 30 5")
    assert eng.player.time_settings[-1] == (300, 30, 5)
    ok(eng, "genmove b")
    assert eng.player.calls[-1]["time_left"] == 300
    ok(eng, "time_left w 25 3")
    assert err(eng, "time_left w x 3").startswith("syntax error")
    assert err(eng, "time_left green 1 1").startswith("syntax error")
    ok(eng, "genmove w")
    assert eng.player.calls[-1]["time_left"] == 25 and eng.player.calls[-1]["stones_left"] == 3
    ok(eng, "time_settings 0 1 0")  # byo-yomi time without stones: no time limit
    ok(eng, "genmove b")
    assert eng.player.calls[-1]["time_left"] is None


@pytest.mark.parametrize("line", ["time_left b -5 0", "time_left w nan 0", "time_left b inf 1", "time_left b 1e12 0",
                                  "time_left w 30 -1", "time_left b 30 100000", "time_settings 99999999 0 0",
                                  "time_settings 60 30 5000"])
def test_impossible_clocks_are_refused(eng, line):
    """A negative, NaN or absurd time (or stones) is a malformed argument like any other, and changes nothing."""
    ok(eng, "time_settings 300 30 5")
    assert err(eng, line).startswith("syntax error")
    ok(eng, "genmove b")
    assert eng.player.calls[-1]["time_left"] == 300 and eng.player.calls[-1]["stones_left"] == 0


def test_clock_runs_down_without_time_left():
    """A controller that sends only time_settings: the engine charges its own thinking time."""
    t = [0.0]
    spend = iter([3.0, 8.0, 1.0, 1.0, 1.0])

    def now():
        return t[0]

    class SlowPlayer(RandomPlayer):
        def genmove(self, game, color, **kw):
            a = super().genmove(game, color, **kw)
            t[0] += next(spend)
            return a

    eng = GtpEngine(SlowPlayer(), size=9, komi=7.0, now=now)
    ok(eng, "time_settings 10 5 2")
    seen = []
    for _ in range(5):
        ok(eng, "genmove b")
        ok(eng, "play w pass")
        seen.append((eng.player.calls[-1]["time_left"], eng.player.calls[-1]["stones_left"]))
    # 10 s main; 3 s spent; 8 s more runs out of main time: byo-yomi of 2 stones in 5 s; after two stones
    # a fresh period starts.
    assert seen == [(10, 0), (7, 0), (5, 2), (4, 1), (5, 2)]
    assert eng.clock.left[1] == 10  # White did not think


def _write_sgf(path, size=9, komi=6.5, moves=(("b", "c3"), ("w", "g7"), ("b", "e5"))):
    game = sgf.Sgf_game(size=size)
    game.root.set("KM", komi)
    for color, v in moves:
        col = "ABCDEFGHJKLMNOPQRST".index(v[0].upper())
        row = int(v[1:]) - 1
        game.extend_main_sequence().set_move(color, (row, col))
    path.write_bytes(game.serialise())


def test_loadsgf(eng, tmp_path):
    f = tmp_path / "g.sgf"
    _write_sgf(f)
    assert err(eng, f"loadsgf {tmp_path / 'missing.sgf'}").startswith("cannot load file")
    bad = tmp_path / "bad.sgf"
    bad.write_text("this is not sgf")
    assert err(eng, f"loadsgf {bad}").startswith("cannot load file")
    ok(eng, f"loadsgf {f}")
    rows = board_rows(eng)
    assert rows[9 - 3][2] == "X" and rows[9 - 7][6] == "O" and rows[9 - 5][4] == "X"
    assert eng.komi == 6.5 and eng.player.games[-1] == (9, 6.5)
    ok(eng, f"loadsgf {f} 3")  # the position before move 3
    rows = board_rows(eng)
    assert rows[9 - 3][2] == "X" and rows[9 - 7][6] == "O" and rows[9 - 5][4] == "."
    assert eng.game.to_move == 0
    ok(eng, "undo")
    assert board_rows(eng)[9 - 7][6] == "."


def test_printsgf(eng, tmp_path):
    ok(eng, "play b c3")
    ok(eng, "play w g7")
    text = ok(eng, "printsgf")
    game = sgf.Sgf_game.from_string(text)
    assert game.get_size() == 9 and [n.get_move() for n in game.get_main_sequence()[1:]] == [("b", (2, 2)),
                                                                                             ("w", (6, 6))]
    assert ok(eng, f"printsgf {tmp_path / 'g.sgf'}") == ""
    assert sgf.Sgf_game.from_bytes((tmp_path / "g.sgf").read_bytes()).get_size() == 9
    assert err(eng, f"printsgf {tmp_path / 'no' / 'such' / 'dir.sgf'}").startswith("cannot write")


# --- analysis: lz-analyze / kgs-analyze / kata-analyze ----------------------------------------------------------
def _analyse(eng, lines: list[tuple[str, float]]) -> list[str]:
    """Feed `lines` (each followed by a pause of so many seconds) through the real I/O loop; the responses."""
    import io
    import os
    import threading
    import time

    from engine.commands.gtp import serve

    r, w = os.pipe()
    with os.fdopen(r, "r") as rf, os.fdopen(w, "w") as wf:
        def feed():
            for line, pause in lines:
                wf.write(line + "\n")
                wf.flush()
                time.sleep(pause)
            wf.close()

        t = threading.Thread(target=feed)
        t.start()
        out = io.StringIO()
        serve(eng, rf, out, io.StringIO())
        t.join()
    return out.getvalue().split("\n\n")[:-1]


def _infos(response: str) -> list[list[dict]]:
    """The info lines of an analysis response: per line, per candidate, its fields."""
    lines = response.split("\n")
    assert lines[0].startswith("=")
    out = []
    for line in lines[1:]:
        cands = []
        for chunk in line.split("info ")[1:]:
            words = chunk.split()
            pv_at = words.index("pv")
            fields = dict(zip(words[:pv_at:2], words[1:pv_at:2]))
            fields["pv"] = words[pv_at + 1:]
            cands.append(fields)
        out.append(cands)
    return out


def _real_engine(algo: str, **kw):
    from engine.commands.gtp import make_gtp_engine
    from engine.player import PlayerConfig

    return make_gtp_engine(PlayerConfig(algo=algo, sims=50, seed=1, **kw), size=9, komi=7.0)


@pytest.mark.parametrize("algo,kw", [("sequential", {}), ("tree", {"threads": 2})])
def test_warming_up_at_start_leaves_the_player_as_it_was(algo, kw):
    """make_gtp_engine loads the kernels before the first command with a search of a searcher of its own: the
    first move, and every root child's visits, are those of a player that never warmed up."""
    from engine.player import Player, PlayerConfig
    from engine.sequential import WARM_UP_SIMS

    warm = _real_engine(algo, **kw)
    cold = GtpEngine(Player(PlayerConfig(algo=algo, sims=50, seed=1, **kw)), size=9, komi=7.0)
    try:
        moves = [ok(e, "genmove b") for e in (warm, cold)]
        stats = [sorted((c.action, c.visits) for c in e.player.last_result.children) for e in (warm, cold)]
    finally:
        warm.close()
        cold.close()
    if algo == "sequential":  # one thread: the same search, simulation for simulation
        assert moves[0] == moves[1] and stats[0] == stats[1]
    assert all(0 < sum(v for _, v in s) < 50 + WARM_UP_SIMS for s in stats)  # no warm-up visits in the tree


@pytest.mark.mpi
@pytest.mark.timeout(300)
def test_an_mpi_gtp_engine_starts_its_ranks_before_the_first_command():
    """The session's ranks are up (and their kernels loaded) when make_gtp_engine returns, and the warm-up's
    tree is forgotten: the first search's root counts its own visits only. A new board size is warmed up when
    it is set."""
    eng = _real_engine("treesplit", ranks=2, threads=1)
    try:
        searcher = eng.player.searcher
        assert searcher.session is not None and searcher.session.ended() is None
        ok(eng, "genmove b")
        assert not searcher.keeps_root_visits
        assert eng.player.last_result.root_visits == eng.player.last_result.sims >= 50
        ok(eng, "boardsize 13")  # a new size is warmed up as it is set: its first search is not the move's
        assert searcher._searched_on == ("go", 13) and not searcher.keeps_root_visits
    finally:
        eng.close()


@pytest.mark.parametrize("algo,kw", [("sequential", {}), ("tree", {"threads": 2})])
def test_lz_analyze_streams_candidates_until_the_next_command(algo, kw):
    eng = _real_engine(algo, **kw)
    try:
        eng.handle("genmove b")  # loads the kernels: the analysis below then reports at its pace
        responses = _analyse(eng, [("1 lz-analyze w 10", 2.0), ("2 kata-analyze b interval 10 maxmoves 3", 1.0),
                                   ("3 name", 0.0), ("quit", 0.0)])
    finally:
        eng.close()
    assert responses[0].startswith("=1\ninfo move ") and responses[2] == "=3 treesplit", responses
    lz, kata = _infos(responses[0]), _infos(responses[1])
    assert len(lz) >= 3 and len(kata) >= 2  # a line every 0.1 s until the next command
    totals = [sum(int(c["visits"]) for c in line) for line in lz]
    assert totals == sorted(totals) and totals[-1] > totals[0]  # the search goes on: visits add up
    for line in lz:
        visits = [int(c["visits"]) for c in line]
        assert visits == sorted(visits, reverse=True) and [int(c["order"]) for c in line] == list(range(len(line)))
        for c in line:
            assert 0 <= int(c["lcb"]) <= int(c["winrate"]) <= 10000 and c["pv"][0] == c["move"]
    assert len(lz[-1][0]["pv"]) >= 2  # the best move's line goes on beyond it
    assert all(len(line) <= 3 and all(0.0 <= float(c["winrate"]) <= 1.0 for c in line) for line in kata)


def test_analyze_arguments_are_checked(eng):
    eng.player.analyze = lambda *a: ([], {})
    for line in ("lz-analyze b 0", "lz-analyze green 10", "lz-analyze 10 interval", "lz-analyze 10 ownership true",
                 "kgs-analyze w maxmoves x"):
        assert err(eng, line).startswith("syntax error"), line
    assert eng.handle("7 kgs-analyze b 50") == "=7\n" and eng.analysis.interval == 0.5  # the response stays open
    assert "lz-analyze" in ok(eng, "list_commands").split("\n")


@pytest.mark.mpi
@pytest.mark.timeout(300)
def test_lz_analyze_with_an_mpi_algorithm():
    """For MPI algorithms each interval is one search of the ranks' session; the candidates add up across them."""
    import threading
    import time

    p = subprocess.Popen(treesplit_cmd() + ["gtp", "--algo", "treesplit", "--ranks", "2", "--threads", "1",
                                            "--sims", "50"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=ROOT)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(p.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        p.stdin.write("boardsize 9\nlz-analyze b 20\n")
        p.stdin.flush()
        deadline = time.monotonic() + 200
        while sum(x.startswith("info ") for x in lines) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        p.stdin.write("quit\n")
        p.stdin.flush()
        assert p.wait(120) == 0, p.stderr.read()[-2000:]
    finally:
        if p.poll() is None:
            p.kill()
    reader.join(10)
    infos = _infos("".join(lines).split("\n\n")[1])
    assert len(infos) >= 3
    totals = [sum(int(c["visits"]) for c in line) for line in infos]
    assert totals == sorted(totals) and totals[-1] > totals[0]


def test_quit(eng):
    assert send(eng, "5 quit") == "=5 \n\n" and eng.quit


def test_treesplit_gtp_subprocess():
    script = "\n".join([
        "1 protocol_version", "2 name", "boardsize 9", "komi 7", "3 play b e5", "4 play w e5",
        "5 genmove w", "6 showboard", "7 bogus", "8 undo", "9 final_score",
    ]) + "\n"  # then EOF: the engine must exit cleanly
    r = subprocess.run(treesplit_cmd() + ["gtp", "--sims", "50", "--seed", "1"], input=script,
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    responses = r.stdout.split("\n\n")
    assert responses[-1] == ""
    responses = responses[:-1]
    assert len(responses) == 11, r.stdout
    assert responses[0] == "=1 2" and responses[1] == "=2 treesplit"
    assert responses[4].startswith("=3") and responses[5].startswith("?4 illegal move")
    move = responses[6].split()[1].upper()
    assert move == "PASS" or move[0] in "ABCDEFGHJ" and move != "E5"
    assert responses[7].startswith("=6 \n") and "X" in responses[7] and "O" in responses[7]
    assert responses[8] == "?7 unknown command"
    assert responses[9].startswith("=8")
    assert responses[10] == "=9 B+74"


def test_treesplit_gtp_quit_and_bad_flags(run_cli):
    r = run_cli("gtp", input="quit\nname\n", timeout=300)
    assert r.returncode == 0 and r.stdout == "= \n\n"
    r = run_cli("gtp", "--param", "no_such_setting=1", input="", timeout=300)
    assert r.returncode == 2 and "treesplit: error:" in r.stderr and "Traceback" not in r.stderr


def test_an_algorithms_own_policy_defaults_win_unless_set():
    """df-UCT's ranks merge no AMAF data: the player's flags leave it its rave=off and c=0.7, unless set; an
    explicit rave=on is refused when the player is configured, before any rank starts."""
    import argparse

    from engine.commands.gtp import player_config
    from model.errors import ConfigError

    def config(algo, *params):
        return player_config(argparse.Namespace(algo=algo, sims=50, seconds=None, threads=1, ranks=2, seed=None,
                                                param=list(params))).algo_config()

    dfuct = config("dfuct")
    assert (dfuct.rave, dfuct.c) == (False, 0.7)
    assert config("dfuct", "c=0.4").c == 0.4
    assert config("treesplit").rave is True and config("sequential", "rave=off").rave is False
    with pytest.raises(ConfigError, match="rave: dfuct"):
        config("dfuct", "rave=on")


@pytest.mark.mpi
@pytest.mark.timeout(300)
def test_treesplit_gtp_dfuct_plays(run_cli):
    r = run_cli("gtp", "--algo", "dfuct", "--ranks", "2", "--threads", "1", "--sims", "50",
                input="boardsize 9\ngenmove b\nquit\n", timeout=240)
    assert r.returncode == 0, r.stderr[-2000:]
    replies = r.stdout.split("\n\n")
    assert re.fullmatch(r"= ([A-HJ][1-9]|pass|resign)", replies[1], re.I), r.stdout  # was "? the MPI session ..."
    r = run_cli("gtp", "--algo", "dfuct", "--param", "rave=on", input="boardsize 9\ngenmove b\n", timeout=120)
    assert r.returncode == 2 and "rave: dfuct" in r.stderr and "Traceback" not in r.stderr
    assert r.stdout == ""  # refused before the first command was read
