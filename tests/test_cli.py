from pathlib import Path

import pytest


def test_help_lists_and_explains(run_cli):
    r = run_cli("--help", timeout=120)
    assert r.returncode == 0 and "treesplit" in r.stdout


def test_unknown_subcommand_is_one_clear_error(run_cli):
    r = run_cli("no-such-command", timeout=120)
    assert r.returncode == 2
    assert "treesplit: error:" in r.stderr and "Traceback" not in r.stderr


# --- one flag convention, results outside the checkout, examples in every --help -------------------------------
def _subparsers(parser):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices
    return {}


def _commands():
    """(name, parser) of every subcommand and every `bench` kind."""
    from treesplit.cli import build_parser

    out = []
    for name, p in _subparsers(build_parser()).items():
        out.append((name, p))
        out += [(f"{name} {kind}", q) for kind, q in _subparsers(p).items()]
    return out


RESULT_MAKERS = ["bench playouts", "bench search", "bench parallel", "bench kernels", "bench sim", "bench viz",
                 "bench soak", "validate", "experiment", "predict"]


def test_result_making_commands_share_one_flag_convention():
    cmds = dict(_commands())
    for name in RESULT_MAKERS:
        flags = {s for a in cmds[name]._actions for s in a.option_strings}
        assert {"--out", "--json", "--no-save", "--quiet"} <= flags, name
        assert "--results-dir" not in flags and "-o" not in flags, name


def test_every_subcommand_help_shows_examples_that_parse():
    import shlex

    from treesplit.cli import build_parser

    for name, p in _commands():
        if name == "bench":  # the kinds carry their own
            continue
        text = p.format_help()
        assert "examples:" in text, name
        shown = text.split("examples:")[1].replace("\\\n", " ")  # a shell line continued on the next
        examples = [line.split("#")[0].strip() for line in shown.splitlines()
                    if line.strip().startswith(f"treesplit {name} ")]
        assert 2 <= len(examples) <= 4, (name, examples)
        for ex in examples:
            args = build_parser().parse_args(shlex.split(ex)[1:])  # a real command line: it parses
            assert args.func is not None, ex


def test_output_flags_and_where_results_go(tmp_path):
    import argparse

    from model.errors import UserError
    from model.results import REFERENCE_DIR, add_output_flags, output_dir

    p = argparse.ArgumentParser()
    add_output_flags(p, "experiments")
    assert output_dir(p.parse_args([]), "x") == Path("results/experiments/x")
    assert output_dir(p.parse_args(["--out", str(tmp_path)]), "x") == tmp_path
    assert output_dir(p.parse_args(["--no-save"]), "x") is None
    assert output_dir(p.parse_args(["--update-reference"]), "x") == REFERENCE_DIR / "x"
    for bad in (["--no-save", "--out", "d"], ["--update-reference", "--out", "d"]):
        with pytest.raises(UserError):
            output_dir(p.parse_args(bad), "x")


def test_write_csv_takes_rows_with_different_columns(tmp_path):
    """validate's rows: only the shared-memory ones have speedup_predicted (`validate --quick --json` died on it)."""
    import csv

    from engine.results import write_csv

    path = write_csv("t", [{"config": "treesplit 2x1", "a": 1}, {"config": "sequential", "a": 2,
                                                                 "speedup_predicted": 1.0}], tmp_path)
    rows = list(csv.DictReader(path.open()))
    assert rows[0]["speedup_predicted"] == "" and rows[1]["speedup_predicted"] == "1.0"


def test_a_runs_stamps_name_the_commit_the_checkout_held_as_it_started(monkeypatch):
    """A run that refreshes the committed reference results changes tracked files as it goes: its later
    stamps still name the commit its code came from, not that commit +dirty."""
    import subprocess

    import engine.machine as m

    answers = iter(["abc1234\n", "", "abc1234\n", " M experiments/results/x.json\n"])
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, next(answers), ""))
    m.git_commit.cache_clear()
    try:
        assert m.git_commit() == "abc1234" and m.git_commit() == "abc1234"
        m.git_commit.cache_clear()  # a new process sees the checkout as it is now
        assert m.git_commit() == "abc1234+dirty"
    finally:
        m.git_commit.cache_clear()


def test_a_benchmark_writes_to_results_of_the_working_directory_not_the_checkout(tmp_path):
    """bench playouts as README runs it, from another directory: its file lands in ./results/ there, and the
    checkout (experiments/results/ included) is as it was; --no-save writes nothing."""
    import json
    import subprocess

    from conftest import ROOT, treesplit_cmd

    def status():
        return subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout

    before = status()
    base = ["bench", "playouts", "--board", "5", "--runs", "1", "--seconds", "0.02"]
    r = subprocess.run(treesplit_cmd() + base, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "results" / "bench-playouts-5-random.json").read_text())["board"] == 5
    r = subprocess.run(treesplit_cmd() + base + ["--no-save", "--json", "--quiet"], cwd=tmp_path / "results",
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and json.loads(r.stdout)["board"] == 5
    assert not (tmp_path / "results" / "results").exists()
    assert status() == before
