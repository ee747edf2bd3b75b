"""Memory across games: one GTP session plays five short games per MPI algorithm (engine/benchmarks/soak.py,
the code of `treesplit bench soak`), and no rank may hold more memory after the fifth than after the first.
A leak of one transposition table per game (64 MiB here) shows as +20% or more by game 5."""

import pytest

from engine.benchmarks.soak import soak
from model.roles import ALGORITHMS
from treesplit.cli import build_parser

pytestmark = [pytest.mark.mpi, pytest.mark.timeout(300)]


@pytest.mark.parametrize("algo", ALGORITHMS)
def test_rank_memory_stays_flat_over_five_games(algo):
    args = build_parser().parse_args(["bench", "soak", "--algo", algo, "--ranks", "2", "--threads", "1",
                                      "--sims", "60", "--param", "tt_mb=64", "--games", "5", "--moves", "3"])
    rows = soak(args)
    first, fifth = rows[0]["rss_mib"], rows[4]["rss_mib"]
    assert sorted(first) == sorted(fifth) == [0, 1]  # both ranks' memory read, every game
    for rank, mib in first.items():
        assert fifth[rank] <= 1.10 * mib, f"rank {rank}: {mib:.0f} MiB after game 1, {fifth[rank]:.0f} after game 5"
