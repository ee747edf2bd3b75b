"""The Go board as the game interface sees it (model/game.py): params, state, and the go_* kernels.

    g = make_params(9, 7.0, "light")        # int64 params: game id, size, komi in half points, policy, move cap
    s = new_state(g)                        # int64 state: the whole position; copy with s.copy()
    go_play(g, s, go_n_actions(g) - 1)      # pass

All go_* functions are numba kernels (@njit(cache=True, nogil=True)) callable from Python and from other
kernels. Those that allocate nothing are compiled with _nrt=False: numba then emits no reference counting
on their array arguments, which would otherwise be atomic increments on every call (costly per move, and
contended between worker threads sharing g). The position layout and the rules are in model/go/rules.py,
the playout policies in model/go/playout.py. Positional superko needs history, so it is not here: it is the
game record's (model/go/game.py) and the search's business, through go_position_hash.

Numba's cache does not notice when a kernel's callees change in another file: after editing rules.py or
playout.py, delete the *.nbi/*.nbc files under model/ (and those of any cached kernel that calls these).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, uint64

from model.errors import ConfigError
from model.go.playout import ownership, playout, playout_batch, policy_move
from model.go.rules import (A_COLOR, A_EMPTY, A_HEAD, G_GAME, G_KOMI2, G_LEN, G_MAX_MOVES, G_P, G_POLICY,
                            G_SIZE, G_W, GAME_ID, HEADER, MAX_SIZE, MIN_SIZE, POLICY_LIGHT, POLICY_RANDOM, S_HASH,
                            S_KO, S_MOVE_LIMIT, S_MOVES, S_N_EMPTY, S_PASSES, S_TO_MOVE, ZOBRIST_SIDE, action_of,
                            area_owner, area_score, init_state, is_eye, is_legal_point, liberty_count, place_stone,
                            play_pass, play_point, point_of)

POLICIES = {"random": POLICY_RANDOM, "light": POLICY_LIGHT}
MAX_ABS_KOMI = 1000.0


def make_params(size: int, komi: float, policy: str = "random") -> np.ndarray:
    """Go params g (int64): g[0] game id, size, komi*2, policy code, move cap 3*size^2, W, P."""
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or not MIN_SIZE <= size <= MAX_SIZE:
        raise ConfigError(f"board size: must be an integer from {MIN_SIZE} to {MAX_SIZE}, got {size!r}")
    try:
        k = float(komi)
    except (TypeError, ValueError):
        raise ConfigError(f"komi: expected a number, got {komi!r}") from None
    if not math.isfinite(k) or abs(k) > MAX_ABS_KOMI or k * 2 != int(k * 2):
        raise ConfigError(f"komi: must be a multiple of 0.5 within +-{MAX_ABS_KOMI:g}, got {komi!r}")
    if policy not in POLICIES:
        raise ConfigError(f"playout policy: expected one of {', '.join(POLICIES)}, got {policy!r}")
    size = int(size)
    g = np.zeros(G_LEN, dtype=np.int64)
    g[G_GAME] = GAME_ID
    g[G_SIZE] = size
    g[G_KOMI2] = int(k * 2)
    g[G_POLICY] = POLICIES[policy]
    g[G_MAX_MOVES] = 3 * size * size
    g[G_W] = size + 2
    g[G_P] = (size + 2) ** 2
    return g


def new_state(g: np.ndarray) -> np.ndarray:
    """The empty board of g, Black to move."""
    return init_state(g)


@njit(cache=True, nogil=True, _nrt=False)
def go_n_actions(g):
    """size*size points, then pass."""
    return g[G_SIZE] * g[G_SIZE] + 1


@njit(cache=True, nogil=True, _nrt=False)
def go_legal_actions(g, s, out):
    """Writes every legal action (no suicide, no simple-ko retake; pass always last) to out; returns the count."""
    size = g[G_SIZE]
    W = size + 2
    P = W * W
    col = s[S_TO_MOVE] + 1
    E = HEADER + A_EMPTY * P
    k = 0
    for i in range(s[S_N_EMPTY]):
        p = s[E + i]
        if is_legal_point(s, P, W, p, col):
            out[k] = action_of(size, p)
            k += 1
    out[k] = size * size
    return k + 1


@njit(cache=True, nogil=True, _nrt=False)
def go_is_legal(g, s, a):
    size = g[G_SIZE]
    if a == size * size:
        return True
    if a < 0 or a > size * size:
        return False
    W = size + 2
    return is_legal_point(s, W * W, W, point_of(size, a), s[S_TO_MOVE] + 1)


@njit(cache=True, nogil=True, _nrt=False)
def go_play(g, s, a):
    """Side to move plays action a; False (s unchanged) if illegal."""
    size = g[G_SIZE]
    if a == size * size:
        play_pass(s)
        return True
    if a < 0 or a > size * size:
        return False
    W = size + 2
    P = W * W
    p = point_of(size, a)
    if not is_legal_point(s, P, W, p, s[S_TO_MOVE] + 1):
        return False
    play_point(s, P, W, p)
    return True


@njit(cache=True, nogil=True, _nrt=False)
def go_place(g, s, a, player):
    """Setup: put a stone of player (0 Black, 1 White) on empty point a without a move (SGF AB/AW,
    handicap). Returns False if a is not an empty point."""
    size = g[G_SIZE]
    if a < 0 or a >= size * size:
        return False
    W = size + 2
    P = W * W
    p = point_of(size, a)
    if s[HEADER + A_COLOR * P + p] != 0:
        return False
    place_stone(s, P, W, p, player + 1)
    s[S_KO] = -1  # a setup stone never creates a ko
    return True


@njit(cache=True, nogil=True, _nrt=False)
def go_hash(g, s):
    """Zobrist hash of the position and the side to move (the transposition-table key)."""
    h = uint64(s[S_HASH])
    if s[S_TO_MOVE] == 1:
        h ^= uint64(ZOBRIST_SIDE)
    return h


@njit(cache=True, nogil=True, _nrt=False)
def go_position_hash(g, s):
    """Zobrist hash of the stones alone (positional superko)."""
    return uint64(s[S_HASH])


@njit(cache=True, nogil=True, _nrt=False)
def go_to_move(g, s):
    return s[S_TO_MOVE]


@njit(cache=True, nogil=True, _nrt=False)
def go_is_terminal(g, s):
    """Two consecutive passes, or the move cap reached: 3 x board points from the empty board, or from the
    game position the record (GoGame) last handed out, whichever is later."""
    return s[S_PASSES] >= 2 or s[S_MOVES] >= s[S_MOVE_LIMIT]


@njit(cache=True, nogil=True, _nrt=True)  # allocates, also when called from an _nrt=False kernel
def go_score(g, s):
    """Tromp-Taylor area score, Black minus White minus komi."""
    return area_score(g, s)


@njit(cache=True, nogil=True, _nrt=True)  # allocates, also when called from an _nrt=False kernel
def go_owner(g, s, out):
    """out[a] = +1 Black's, -1 White's, 0 neither (Tromp-Taylor, all stones alive); returns Black - White."""
    return area_owner(g, s, out)


@njit(cache=True, nogil=True, _nrt=False)
def go_playout(g, s, rng, amaf):
    """Play s to the end in place with g's policy; returns the final score (Black view, komi included).
    amaf[a] := player (0/1) of the first playout move on a, where amaf[a] == -1; passes are not recorded."""
    return playout(g, s, rng, amaf)


@njit(cache=True, nogil=True, _nrt=True)  # allocates, also when called from an _nrt=False kernel
def go_playout_batch(g, s0, rng, n):
    """n playouts from fresh copies of s0 (s0 unchanged), for benchmarks and cost calibration; returns the
    total number of moves played."""
    return playout_batch(g, s0, rng, n)


@njit(cache=True, nogil=True, _nrt=False)
def go_policy_move(g, s, rng):
    """The action g's playout policy would choose now (pass if nothing else), s unchanged."""
    return policy_move(g, s, rng)


@njit(cache=True, nogil=True, _nrt=True)  # allocates, also when called from an _nrt=False kernel
def go_ownership(g, s, n, rng):
    """Mean owner (+1 Black .. -1 White) of every point over n playouts from s; s is unchanged."""
    return ownership(g, s, n, rng)


@njit(cache=True, nogil=True, _nrt=False)
def go_is_eye(g, s, a, player):
    """Point a is a single-point (true) eye of player."""
    size = g[G_SIZE]
    W = size + 2
    return is_eye(s, W * W, W, point_of(size, a), player + 1)


@njit(cache=True, nogil=True, _nrt=False)
def go_color(g, s, a):
    """0 empty, 1 Black, 2 White at action a."""
    size = g[G_SIZE]
    W = size + 2
    return s[HEADER + A_COLOR * W * W + point_of(size, a)]


def board_colors(g: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Colours (0 empty, 1 Black, 2 White) as a size x size array, row 0 at the bottom."""
    size = int(g[G_SIZE])
    W = size + 2
    grid = s[HEADER + A_COLOR * W * W: HEADER + (A_COLOR + 1) * W * W].reshape(W, W)
    return grid[1:-1, 1:-1].copy()


def set_to_move(s: np.ndarray, player: int) -> None:
    """Hand the move to player (0/1) out of turn (GTP `play` of either colour); the ko ban then lapses."""
    if int(s[S_TO_MOVE]) != player:
        s[S_TO_MOVE] = player
        s[S_KO] = -1


def move_count(s: np.ndarray) -> int:
    return int(s[S_MOVES])


def consecutive_passes(s: np.ndarray) -> int:
    return int(s[S_PASSES])



def ko_action(g: np.ndarray, s: np.ndarray) -> int:
    """The point the side to move may not take back (simple ko), as an action; -1 if none."""
    ko = int(s[S_KO])
    if ko < 0:
        return -1
    size = int(g[G_SIZE])
    return int(action_of(size, ko))


def state_with_stones(g: np.ndarray, black: list[int], white: list[int], to_move: int = 0) -> np.ndarray:
    """A position set up from stone lists (actions); a stone on an occupied point is a ConfigError."""
    s = new_state(g)
    for player, stones in ((0, black), (1, white)):
        for a in stones:
            if not go_place(g, s, int(a), player):
                raise ConfigError(f"setup stone at action {a}: not an empty point of the board")
    size = int(g[G_SIZE])
    W = size + 2
    P = W * W
    for player, stones in ((0, black), (1, white)):
        for a in stones:
            p = int(point_of(size, int(a)))
            head = s[HEADER + A_HEAD * P + p]
            if s[HEADER + A_COLOR * P + p] != player + 1 or liberty_count(s, P, head) == 0:
                raise ConfigError(f"setup stone at action {a}: its chain has no liberty")
    s[S_TO_MOVE] = to_move
    return s
