"""experiments.games.play_loa: Lines of Action between two searchers of this process, refereed by model/loa."""

import pandas as pd

from engine.player import PlayerConfig
from experiments.games import play_loa
from model.config import from_dict


def _player(sims: int, seed: int) -> PlayerConfig:
    return from_dict(PlayerConfig, {"algo": "sequential", "sims": sims, "seed": seed, "rave": False})


def test_play_loa_alternates_colours_and_counts_the_cap_as_a_draw(tmp_path):
    row = play_loa(_player(30, 1), _player(30, 2), 2, tmp_path, max_plies=6)
    assert row["games"] == 2 and row["draws"] == 2 and row["win_rate"] == 0.5 and row["mean_moves"] == 6
    g = pd.read_csv(tmp_path / "games.csv")
    assert g.our_color.tolist() == ["black", "white"] and (g.reason == "cap").all()
    assert all(len(m.split()) == 6 for m in g.moves)


def test_play_loa_the_stronger_side_wins_games_to_the_end(tmp_path):
    # 400 simulations a move against 4: the stronger side wins nearly always, whichever colour it has
    row = play_loa(_player(400, 1), _player(4, 2), 2, tmp_path)
    g = pd.read_csv(tmp_path / "games.csv")
    assert row["wins"] == 2
    assert (g.reason == "end").all() and row["seconds_per_move"] > 0
