def test_help_lists_and_explains(run_cli):
    r = run_cli("--help", timeout=120)
    assert r.returncode == 0 and "treesplit" in r.stdout


def test_unknown_subcommand_is_one_clear_error(run_cli):
    r = run_cli("no-such-command", timeout=120)
    assert r.returncode == 2
    assert "treesplit: error:" in r.stderr and "Traceback" not in r.stderr
