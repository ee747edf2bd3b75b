import pytest

from experiments.tree_sharing import main, measure


def test_tree_sharing_measures_all_three_and_their_ratios():
    (row,) = measure([9], 2, 0.1, 1)
    assert row["sequential_sims_per_s"] > 0 and row["tree_sims_per_s"] > 0 and row["independent_sims_per_s"] > 0
    assert row["tree_vs_sequential"] == pytest.approx(row["tree_sims_per_s"] / row["sequential_sims_per_s"], rel=0.01)
    assert 0 < row["tree_vs_independent"] < 3


def test_tree_sharing_bad_flags_are_one_clear_error(capsys):
    assert main(["--threads", "1", "--no-save"]) == 2
    assert "error" in capsys.readouterr().err


def test_validate_turns_the_comparison_into_the_profiles_tree_share(monkeypatch):
    import experiments.tree_sharing as ts
    from experiments.validate import measure_tree_share

    # a shared tree at 0.8 of the independent searches' rate: each simulation takes 1/0.8 = 1.25x as long
    monkeypatch.setattr(ts, "one_round", lambda board, threads, seconds: {"tree": 80.0, "independent": 100.0})
    assert measure_tree_share(2, 0.1) == pytest.approx(0.25)
    assert measure_tree_share(3, 0.1) == pytest.approx(0.125)  # per other thread
    monkeypatch.setattr(ts, "one_round", lambda board, threads, seconds: {"tree": 110.0, "independent": 100.0})
    assert measure_tree_share(2, 0.1) == 0.0  # a faster shared tree is the host's noise, not a saving
    monkeypatch.undo()
    assert 0.0 <= measure_tree_share(2, 0.1, rounds=1) <= 1.0  # the real searches
