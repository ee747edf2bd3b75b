"""The match referee and runner: faults, timeouts, outputs, and full games against GNU Go."""

import csv
import json
import sys
import textwrap
import time

import pytest
from sgfmill import sgf

from engine.gtp import GtpEngine
from engine.gtp_client import GtpLocal, GtpProcess, GtpReply, parse_reply, resolve_command
from engine.match import BLACK, WHITE, MatchConfig, Referee, parse_score, run_match
from model.errors import ConfigError, UserError
from test_gtp import RandomPlayer

from conftest import ROOT


def local(seed=0, **kw):
    return GtpLocal(GtpEngine(RandomPlayer(seed, **kw), size=9, komi=7.0), name=f"random{seed}")


class Scripted:
    """An endpoint that answers genmove from a list and accepts everything else (or refuses `play`)."""

    name = "scripted"

    def __init__(self, moves, refuse_play=False):
        self.moves = list(moves)
        self.refuse_play = refuse_play
        self.sent = []

    def send(self, command, timeout=None):
        self.sent.append(command)
        if command.startswith("genmove"):
            return parse_reply(self.moves.pop(0))
        if command.startswith("play") and self.refuse_play:
            return GtpReply(False, "illegal move")
        if command.startswith("known_command"):
            return GtpReply(True, "false")
        return GtpReply(True, "")

    def close(self):
        pass


def referee(black, white, checker=None, cap=60, timeout=10.0):
    return Referee(black, white, checker=checker, size=9, komi=7.0, move_cap=cap, timeout=timeout)


def test_parse_score_and_reply():
    assert parse_score("B+3.5") == 3.5 and parse_score("W+12") == -12 and parse_score("0") == 0
    assert parse_score("W+R") is None and parse_score("?") is None
    assert parse_reply("=12 D4\n\n") == GtpReply(True, "D4")
    assert parse_reply("? illegal move") == GtpReply(False, "illegal move")


def test_random_game_reaches_the_move_cap_and_is_scored():
    res = referee(local(1), local(2), cap=40).play()
    assert res.reason == "move cap" and res.moves == 40
    assert res.score is not None and res.winner in (BLACK, WHITE, None)
    assert res.scores_agree is None  # no checker


def test_two_passes_end_the_game():
    res = referee(Scripted(["= E5", "= pass"]), Scripted(["= pass"])).play()
    assert res.reason == "score" and res.moves == 3 and res.score == 81 - 7 and res.winner == BLACK
    assert res.result == "B+74"


def test_illegal_move_loses_and_is_recorded():
    res = referee(Scripted(["= E5", "= C3"]), Scripted(["= E5"])).play()
    assert res.reason == "illegal" and res.winner == BLACK and res.detail.startswith("W: E5")
    assert res.result == "B+F"


def test_unreadable_move_failed_genmove_and_resign():
    res = referee(Scripted(["= Z99"]), Scripted([])).play()
    assert res.reason == "bad move" and res.winner == WHITE
    res = referee(Scripted(["= E5"]), Scripted(["? out of memory"])).play()
    assert res.reason == "genmove failed" and res.winner == BLACK and "out of memory" in res.detail
    res = referee(Scripted(["= E5"]), Scripted(["= resign"])).play()
    assert res.reason == "resign" and res.winner == BLACK and res.result == "B+R"


def test_refused_move_voids_the_game():
    res = referee(Scripted(["= E5"]), Scripted([], refuse_play=True)).play()
    assert res.reason == "void" and res.winner == -1 and res.outcome() == "void"


def test_scores_disagreement_starts_cleanup_once():
    # The checker says White wins although Tromp-Taylor gives Black the board: play resumes once,
    # then the disagreement is recorded.
    checker = Scripted([])
    checker.send = lambda c, timeout=None: GtpReply(True, "W+10") if c == "final_score" else GtpReply(True, "")
    res = referee(Scripted(["= E5", "= pass", "= pass"]), Scripted(["= pass", "= pass"]), checker=checker).play()
    assert res.cleanup and res.reason == "score" and res.moves == 5
    assert res.scores_agree is False and res.winners_agree is False


def _hanging_engine(tmp_path):
    script = tmp_path / "hang.py"
    script.write_text("import sys, time\nfor line in sys.stdin:\n    time.sleep(60)\n")
    return f"{sys.executable} {script}"


def test_timeout_forfeits_and_the_process_is_killed(tmp_path):
    with GtpProcess(_hanging_engine(tmp_path), timeout=1.0) as hang:
        t = time.perf_counter()
        res = referee(local(), hang, timeout=1.0).play()
        assert res.reason == "timeout" and res.winner == BLACK
        assert time.perf_counter() - t < 10
    assert hang.proc.poll() is not None


def test_missing_engine_is_a_user_error():
    with pytest.raises(UserError, match="not found"):
        resolve_command("no-such-engine-xyz --mode gtp")
    with pytest.raises(ConfigError, match="games"):
        MatchConfig(games=0).validate()


@pytest.mark.gnugo
def test_gnugo_is_found_off_path(monkeypatch):
    """Debian's gnugo lives in /usr/games, which a CI shell's PATH may lack: the engine finds it anyway."""
    import os

    monkeypatch.setenv("PATH", os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                                               if "games" not in p))
    argv = resolve_command("gnugo --mode gtp")
    assert os.path.basename(argv[0]) == "gnugo" and os.access(argv[0], os.X_OK) and argv[1:] == ["--mode", "gtp"]


def _random_engine_script(tmp_path, seed):
    """A GTP engine in a subprocess: our GtpEngine around the random stand-in player."""
    script = tmp_path / f"random_engine_{seed}.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / 'tests')!r}]
        from engine.commands.gtp import serve
        from engine.gtp import GtpEngine
        from test_gtp import RandomPlayer
        serve(GtpEngine(RandomPlayer({seed}), size=9, komi=7), sys.stdin, sys.stdout, sys.stderr)
    """))
    return f"{sys.executable} {script}"


def test_run_match_writes_sgf_csv_and_summary(tmp_path):
    cfg = MatchConfig(opponent=_random_engine_script(tmp_path, 5), games=2, board=9, komi=7.0, max_moves=30)
    out = tmp_path / "out"
    summary = run_match(cfg, lambda: local(3), out, engine_info={"algo": "random"}, progress=False)
    assert summary["games_played"] == 2 and summary["reasons"] == {"move cap": 2}
    st = summary["stats"]
    assert st["games"] == 2 and st["wins"] + st["losses"] + st["draws"] == 2
    assert summary["scores_checked"] == 2  # the opponent answered final_score every time
    rows = list(csv.DictReader(open(out / "games.csv")))
    assert [r["our_color"] for r in rows] == ["black", "white"]
    saved = json.loads((out / "summary.json").read_text())
    assert saved["stats"] == st and "machine" in saved
    for i, r in enumerate(rows, 1):
        game = sgf.Sgf_game.from_bytes((out / r["sgf"]).read_bytes())
        assert game.get_size() == 9 and game.get_komi() == 7.0
        assert len(game.get_main_sequence()) - 1 == 30 == int(r["moves"])
        root = game.get_root()
        assert root.get("RE") == r["result"]
        assert root.get("PB" if r["our_color"] == "black" else "PW") == "random3"


@pytest.mark.gnugo
def test_gnugo_against_itself_scores_agree():
    """GNU Go against GNU Go through the referee: after the clean-up phase (if one is needed) our
    Tromp-Taylor count equals GNU Go's (Chinese rules) in every game."""
    for seed in (1, 2, 3):
        cmd = f"gnugo --mode gtp --level 1 --chinese-rules --seed {seed}"
        with GtpProcess(cmd) as b, GtpProcess(cmd) as w:
            res = Referee(b, w, checker=w, size=9, komi=7.0, move_cap=243, timeout=60).play()
        assert res.reason in ("score", "resign"), res
        if res.reason == "score":
            assert res.scores_agree and parse_score(res.opponent_score) == res.score, res


@pytest.mark.gnugo
def test_full_game_against_gnugo(tmp_path):
    """A whole 9x9 game of our engine against GNU Go level 1 through the match runner."""
    from engine.commands.match import _local_engine
    from engine.player import PlayerConfig

    cfg = MatchConfig(opponent="gnugo --mode gtp --level 1 --chinese-rules", games=1, board=9, komi=7.0,
                      move_timeout=60)
    summary = run_match(cfg, lambda: _local_engine(PlayerConfig(sims=300, seed=1), 9, 7.0), tmp_path,
                        progress=False)
    row = next(csv.DictReader(open(tmp_path / "games.csv")))
    assert not summary["our_faults"] and not summary["opponent_faults"], summary
    assert row["reason"] in ("score", "resign"), row
    if row["reason"] == "score":
        assert row["scores_agree"] == "True", row
    assert int(row["moves"]) >= 30  # a whole game, not an early fault
    seq = sgf.Sgf_game.from_bytes((tmp_path / row["sgf"]).read_bytes()).get_main_sequence()
    assert len(seq) - 1 == int(row["moves"])


@pytest.mark.gnugo
def test_match_command(run_cli, tmp_path):
    r = run_cli("match", "--opponent", "gnugo --mode gtp --level 1 --chinese-rules", "--games", "1",
                "--sims", "50", "--max-moves", "20", "--out", str(tmp_path), "--quiet", timeout=300)
    assert r.returncode == 0, r.stderr
    assert "1 games (+0 void)" in r.stdout and "win rate" in r.stdout and "Elo" in r.stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["reasons"] == {"move cap": 1} and summary["engine"]["sims"] == 50
    assert (tmp_path / "games" / "game-0001.sgf").exists()
    r = run_cli("match", "--opponent", "no-such-engine-xyz", "--games", "1", timeout=120)
    assert r.returncode == 2 and "not found" in r.stderr and "Traceback" not in r.stderr


def test_run_match_with_an_in_process_opponent_reuses_it(tmp_path):
    opponents = []

    def make_opponent():
        opponents.append(local(7))
        return opponents[-1]

    cfg = MatchConfig(opponent="random7 (in-process)", games=3, board=9, komi=7.0, max_moves=20)
    summary = run_match(cfg, lambda: local(3), tmp_path, progress=False, make_opponent=make_opponent)
    assert summary["games_played"] == 3 and summary["stats"]["games"] == 3
    assert len(opponents) == 1 and len(opponents[0].engine.player.games) >= 3  # one opponent for the three games
    rows = list(csv.DictReader(open(tmp_path / "games.csv")))
    game = sgf.Sgf_game.from_bytes((tmp_path / rows[0]["sgf"]).read_bytes())
    assert {game.get_root().get("PB"), game.get_root().get("PW")} == {"random3", "random7"}
    assert not (tmp_path / "opponent.stderr.log").exists()  # no process was started


def _timed_game(index, our_color, ours, theirs):
    """A finished game whose sides took `ours` / `theirs` seconds a move (lists), from the referee's view."""
    from engine.match import GameResult

    r = GameResult(index=index, our_color=our_color, winner=BLACK, reason="score", moves=len(ours) + len(theirs))
    mine = BLACK if our_color == "black" else WHITE
    for color, times in ((mine, ours), (1 - mine, theirs)):
        side = "black" if color == BLACK else "white"
        setattr(r, f"time_{side}", sum(times))
        setattr(r, f"genmoves_{side}", len(times))
        setattr(r, f"max_{side}", max(times))
    return r


def test_a_side_over_its_time_budget_is_flagged():
    from engine.match import csv_row, summarize
    from engine.move_times import flag_text, over_budget

    assert over_budget(0.275, 0.25) and not over_budget(0.2575, 0.25)  # +10% is flagged, +3% is not
    assert not over_budget(0.5, None) and not over_budget(None, 0.25)  # no budget known: nothing to check
    cfg = MatchConfig(opponent="x", games=2, budget=0.25, opponent_budget=0.25)
    # we overshoot by 10% on average (one long move), the opponent by 3%
    results = [_timed_game(0, "black", [0.25, 0.25, 0.325], [0.2575] * 3),
               _timed_game(1, "white", [0.275] * 3, [0.25, 0.265, 0.2575])]
    s = summarize(cfg, results)
    ours, theirs = s["time"]["ours"], s["time"]["opponent"]
    assert ours["moves"] == 6 and ours["mean_s"] == pytest.approx(0.275) and ours["max_s"] == 0.325
    assert ours["budget_s"] == 0.25 and ours["over_budget"]
    assert theirs["mean_s"] == pytest.approx(0.2575) and not theirs["over_budget"]
    assert s["our_seconds_per_move"] == pytest.approx(0.275)
    assert "+10%" in flag_text("We", ours["mean_s"], 0.25) and flag_text("They", theirs["mean_s"], 0.25) == ""
    row = csv_row(results[1])  # per game, from our side's view whatever our colour
    assert (row["our_moves"], row["our_mean_s"], row["opponent_max_s"]) == (3, 0.275, 0.265)
    # the experiments' tables and words say the same
    import pandas as pd

    from experiments.games import _row, time_check

    r = _row(s["stats"], 0, 0, 30.0, s["time"], 10.0)
    assert r["over_budget"] and not r["opponent_over_budget"] and r["opponent_seconds_per_move"] == pytest.approx(0.2575)
    words = time_check(pd.DataFrame([{**r, "algo": "root"}]), lambda x: x["algo"])
    assert "root: our side 0.275 s" in words and "opponent" not in words.split("root:")[1]
    ok = time_check(pd.DataFrame([{**r, "seconds_per_move": 0.255}]), str)
    assert "kept within 5%" in ok
    # an older table with our time only says the opponent's was not recorded
    assert "not recorded" in time_check(pd.DataFrame([{"seconds_per_move": 0.3}]), str, budget=0.25)


def test_a_real_short_match_records_both_sides_times_per_move(tmp_path):
    """Two in-process sequential players at 0.05 s a move: each side's wall time per move is recorded, per game
    and over the match, and with the measured overhead subtracted it lands near the budget."""
    import functools

    from engine.player import PlayerConfig
    from experiments.games import endpoint

    budget = 0.05
    cfg = MatchConfig(opponent="sequential (in-process)", games=2, board=9, komi=7.0, max_moves=16, budget=budget,
                      opponent_budget=budget)
    us = functools.partial(endpoint, PlayerConfig(seconds=budget, seed=1, tt_mb=16), 9, 7.0, "us")
    them = functools.partial(endpoint, PlayerConfig(seconds=budget, seed=2, tt_mb=16), 9, 7.0, "them")
    s = run_match(cfg, us, tmp_path, progress=False, make_opponent=them)
    for side in ("ours", "opponent"):
        t = s["time"][side]
        assert t["moves"] == 16 and t["budget_s"] == budget
        assert 0.6 * budget < t["mean_s"] <= t["max_s"], t
        assert t["mean_s"] < 1.3 * budget, t  # overhead subtracted (a loaded machine may still push a side over 5%)
    rows = list(csv.DictReader(open(tmp_path / "games.csv")))
    assert [int(r["our_moves"]) for r in rows] == [8, 8] and all(float(r["opponent_mean_s"]) > 0 for r in rows)
    assert json.loads((tmp_path / "summary.json").read_text())["time"]["ours"]["moves"] == 16


def test_a_match_counts_the_simulations_of_every_move_where_an_engine_reports_them(tmp_path):
    """Two sequential players of fixed simulations: every move's search is counted, per game and over the
    match; an engine whose player never searches (RandomPlayer: treesplit-last_search answers an error) is not."""
    import functools

    from engine.player import PlayerConfig
    from experiments.games import endpoint

    cfg = MatchConfig(opponent="sequential (in-process)", games=2, board=9, komi=7.0, max_moves=12)
    us = functools.partial(endpoint, PlayerConfig(sims=40, seed=1, tt_mb=16), 9, 7.0, "us")
    them = functools.partial(endpoint, PlayerConfig(sims=25, seed=2, tt_mb=16), 9, 7.0, "them")
    s = run_match(cfg, us, tmp_path, progress=False, make_opponent=them)
    assert s["sims_per_move"] == {"ours": 40.0, "opponent": 25.0}
    rows = list(csv.DictReader(open(tmp_path / "games.csv")))
    assert [(float(r["our_sims_per_move"]), float(r["opponent_sims_per_move"])) for r in rows] == [(40.0, 25.0)] * 2
    s = run_match(MatchConfig(opponent="random", games=1, board=9, komi=7.0, max_moves=6), us, None,
                  progress=False, make_opponent=lambda: local(5))
    assert s["sims_per_move"] == {"ours": 40.0, "opponent": None}


def test_last_search_before_and_after_a_genmove():
    from engine.player import Player, PlayerConfig

    e = GtpEngine(Player(PlayerConfig(sims=30, seed=1, tt_mb=16)), size=9, komi=7.0)
    try:
        assert e.handle("known_command treesplit-last_search") == "= true\n\n"
        assert e.handle("treesplit-last_search").startswith("? no search yet")
        e.handle("genmove b")
        words = e.handle("treesplit-last_search").split()
        assert words[:3] == ["=", "sims", "30"] and words[3] == "seconds" and float(words[4]) > 0
    finally:
        e.close()
