"""Lines of Action as the game interface sees it (model/game.py): params, state, and the loa_* kernels.

    g = make_params("random", "mc")      # int64 params: game id, playout policy, knowledge for priors, ply cap
    s = new_state(g)                     # int64 state: the start position, Black to move
    loa_play(g, s, 1 * 64 + 17)          # b1 -> b3

Actions are from * 64 + to (squares 8 * row + col, a1 = 0, h8 = 63) and PASS = 4096 (legal only for a player
without a move); n_actions is 4097, but no position has more than 96 legal moves (12 pieces, 8 directions),
which is what loa_max_children says. The rules are in model/loa/rules.py, the playouts in
model/loa/playout.py, the knowledge (move categories, Table A.1, concentration) in model/loa/knowledge.py.

LOA has no repetition rule: positions may recur. loa_position_hash (the search's superko key) therefore
mixes in the ply number, so that no position ever counts as a repetition.
"""

from __future__ import annotations

import numpy as np
from numba import njit, uint64

from model.errors import ConfigError
from model.loa.knowledge import loa_priors  # noqa: F401  (part of the interface)
from model.loa.playout import playout, playout_batch
from model.loa.rules import (A_BOARD, G_GAME, G_KNOWLEDGE, G_LEN, G_MAX_PLIES, G_POLICY, GAME_ID, KNOWLEDGE_EF,
                             KNOWLEDGE_MC, KNOWLEDGE_NONE, MAX_MOVES, N_ACTIONS, ONGOING, PASS, POLICY_KNOWLEDGE,
                             POLICY_RANDOM, S_HASH, S_PLY, S_STATUS, S_TO_MOVE, generate_moves, is_legal,
                             play_action, start_board, state_from_board)

POLICIES = {"random": POLICY_RANDOM, "knowledge": POLICY_KNOWLEDGE}
KNOWLEDGE = {"none": KNOWLEDGE_NONE, "mc": KNOWLEDGE_MC, "ef": KNOWLEDGE_EF}
DEFAULT_MAX_PLIES = 1000


def make_params(policy: str = "random", knowledge: str = "mc", max_plies: int = DEFAULT_MAX_PLIES) -> np.ndarray:
    """LOA params g (int64): game id, playout policy (random | knowledge), the knowledge the priors use
    (none | mc: move categories | ef: concentration evaluation), and the playout ply cap."""
    if policy not in POLICIES:
        raise ConfigError(f"LOA playout policy: expected one of {', '.join(POLICIES)}, got {policy!r}")
    if knowledge not in KNOWLEDGE:
        raise ConfigError(f"LOA knowledge: expected one of {', '.join(KNOWLEDGE)}, got {knowledge!r}")
    if isinstance(max_plies, bool) or not isinstance(max_plies, (int, np.integer)) or max_plies < 1:
        raise ConfigError(f"LOA max_plies: must be an integer >= 1, got {max_plies!r}")
    g = np.zeros(G_LEN, dtype=np.int64)
    g[G_GAME] = GAME_ID
    g[G_POLICY] = POLICIES[policy]
    g[G_KNOWLEDGE] = KNOWLEDGE[knowledge]
    g[G_MAX_PLIES] = int(max_plies)
    return g


def new_state(g: np.ndarray) -> np.ndarray:
    """The start position, Black to move."""
    return state_from_board(start_board(), 0)


def state_of(board, to_move: int = 0) -> np.ndarray:
    """A position from 64 colours (0 empty, 1 Black, 2 White; index 8 * row + col) and the side to move."""
    b = np.asarray(board, dtype=np.int64).reshape(-1)
    if b.shape != (64,) or not np.isin(b, (0, 1, 2)).all():
        raise ConfigError("LOA board: expected 64 values in {0, 1, 2}")
    if (b == 1).sum() > 12 or (b == 2).sum() > 12 or (b == 1).sum() == 0 or (b == 2).sum() == 0:
        raise ConfigError("LOA board: each colour needs 1 to 12 pieces")
    return state_from_board(b, int(to_move))


@njit(cache=True, nogil=True, _nrt=False)
def loa_n_actions(g):
    return N_ACTIONS


@njit(cache=True, nogil=True, _nrt=False)
def loa_max_children(g):
    return MAX_MOVES


@njit(cache=True, nogil=True, _nrt=False)
def loa_legal_actions(g, s, out):
    """Every legal action to out (PASS alone when there is no move, nothing when the game is over)."""
    if s[S_STATUS] != ONGOING:
        return 0
    n = generate_moves(s, out)
    if n == 0:
        out[0] = PASS
        return 1
    return n


@njit(cache=True, nogil=True, _nrt=False)
def loa_play(g, s, a):
    if not is_legal(s, a):
        return False
    play_action(s, a)
    return True


@njit(cache=True, nogil=True, _nrt=False)
def loa_hash(g, s):
    return uint64(s[S_HASH])


@njit(cache=True, nogil=True, _nrt=False)
def loa_position_hash(g, s):
    x = uint64(s[S_HASH]) ^ (uint64(s[S_PLY] + 1) * uint64(0x9E3779B97F4A7C15))
    x = (x ^ (x >> uint64(31))) * uint64(0xBF58476D1CE4E5B9)
    return x ^ (x >> uint64(29))


@njit(cache=True, nogil=True, _nrt=False)
def loa_to_move(g, s):
    return s[S_TO_MOVE]


@njit(cache=True, nogil=True, _nrt=False)
def loa_is_terminal(g, s):
    return s[S_STATUS] != ONGOING


@njit(cache=True, nogil=True)
def loa_playout(g, s, rng, amaf):
    return playout(g, s, rng, amaf)


@njit(cache=True, nogil=True)
def loa_playout_batch(g, s0, rng, n):
    return playout_batch(g, s0, rng, n)


def board_colors(s: np.ndarray) -> np.ndarray:
    """8 x 8 array of 0 empty / 1 Black / 2 White, row 0 (rank 1) first."""
    return np.asarray(s[A_BOARD:A_BOARD + 64]).reshape(8, 8).copy()
