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
