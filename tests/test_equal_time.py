"""experiments/equal_time.py: pooling the slots' games into one line per run, and its complaints."""

import json

import pandas as pd

from experiments import equal_time


def _games(path, outcomes):
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"game": range(1, len(outcomes) + 1), "outcome": outcomes, "seconds": 7.0, "moves": 60}).to_csv(
        path, index=False)


def test_slots_are_pooled_with_wilson_interval(tmp_path):
    _games(tmp_path / "a" / "slot-0" / "games.csv", ["win"] * 6 + ["loss"] * 3 + ["draw"])
    _games(tmp_path / "a" / "slot-1" / "games.csv", ["win"] * 2 + ["loss"] * 8)
    csvs = sorted((tmp_path / "a").rglob("games.csv"))
    out = equal_time.summarize([("x vs y", "here", csvs)], "eq", "q?", tmp_path / "res")
    run = out["runs"][0]
    assert (run["games"], run["wins"], run["losses"], run["draws"]) == (20, 8, 11, 1)
    assert run["win_rate"] == 8.5 / 20 and run["ci_low"] < 0.425 < run["ci_high"]
    saved = json.loads((tmp_path / "res" / "eq.json").read_text())
    assert saved["runs"][0]["games"] == 20 and "machine" in saved
    assert len(pd.read_csv(tmp_path / "res" / run["games_csv"])) == 20


def test_bad_run_spec_and_missing_games_are_clear_errors(tmp_path, capsys):
    assert equal_time.main(["summarize", "--run", "only-a-label"]) == 2
    assert "LABEL|CONDITIONS|DIR" in capsys.readouterr().err
    assert equal_time.main(["summarize", "--run", f"a|b|{tmp_path}", "--name", "eq-none"]) == 2
    assert "no games.csv" in capsys.readouterr().err


def test_opponent_is_played_with_its_own_layout(tmp_path, monkeypatch):
    started = []

    class Done:
        def __init__(self, cmd, **kw):
            started.append(cmd)

        def poll(self):
            return 0

        def wait(self, timeout=None):
            return 0

    monkeypatch.setattr(equal_time.subprocess, "Popen", Done)
    equal_time.run("treesplit", 1, 3, 0.1, 5.0, tmp_path, False, opponent_algo="treesplit-1x1")
    cmd = started[0]
    assert cmd[cmd.index("--ranks") + 1] == "2"
    opponent = cmd[cmd.index("--opponent") + 1].split()
    assert opponent[opponent.index("--ranks") + 1] == "1" and opponent[opponent.index("--algo") + 1] == "treesplit"


def test_unknown_opponent_is_refused_before_any_match(tmp_path):
    import pytest

    from model.errors import UserError
    with pytest.raises(UserError, match="--opponent must be one of"):
        equal_time.run("treesplit", 1, 3, 0.1, 5.0, tmp_path / "x", False, opponent_algo="gnugo")
    assert not (tmp_path / "x").exists()
