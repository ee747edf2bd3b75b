"""The game interface: the one place where search, roles, simulator and viz learn about a game.

A game is a set of numba kernels over two flat arrays, so that every search kernel can be compiled once,
cached, and run without the GIL:

    g  int64[:]   the game's parameters; g[0] is the game id (GO, PGAME, ...), the rest is game-specific
                  (for Go: size, komi, playout policy, ...). Made by the game's make_params().
    s  int64[:]   one position, the whole of it (board, chains, hash, side to move, ko, move count...),
                  so copying a position is `s.copy()`. Made by the game's new_state(g).

Kernels (all @njit(cache=True, nogil=True)), dispatched on g[0] below:

    n_actions(g) -> int               size of the action space (Go: size*size + 1, the last is pass)
    legal_actions(g, s, out) -> int   writes the legal actions to out[:n] and returns n
    play(g, s, a) -> bool             plays action a in place; False (and s unchanged) if illegal
    hash(g, s) -> uint64              Zobrist hash of position + side to move (the TT key, decides owner rank)
    to_move(g, s) -> int              0 = first player (Black), 1 = second player
    is_terminal(g, s) -> bool
    playout(g, s, rng, amaf) -> float plays s to the end in place; returns the result from the first
                                      player's view: > 0 first player wins, < 0 loses, 0 draw (Go: the
                                      area score minus komi). amaf: int8[n_actions], on return holds for
                                      each action the player who played it first in the playout (-1: none);
                                      the caller initialises it (with the moves of the tree part, for RAVE).
    reward(g, result) -> float        1.0 / 0.0 / 0.5 for a first-player win / loss / draw
    position_hash(g, s) -> uint64     hash of the position alone (no side to move), for superko checks
    max_children(g) -> int            most legal actions any position has (the table's children per node;
                                      LOA: 96 of its 4097 actions)
    priors(g, s, actions, n, out)     knowledge value of each of actions[:n] into out[:n] (progressive bias
                                      and unpruning order); returns False (zeros) if the game has none
    run_playouts(g, s, rng, n)        n playouts from s (unchanged), mean result: the bare playout rate

The dispatchers are inlined into their callers (inline="always"): a call of a compiled function that
takes arrays costs reference counting (atomic instructions), which per tree step adds up. Numba's cache
does not see through inlining or calls into other files: after editing a game's kernels, delete the
cached *.nbi/*.nbc of the modules that call them (model/__pycache__), or they keep the old code.

Game-level rules that need history (positional superko in Go) are the search's and the game record's
business, through each game's position hash; the kernels above are history-free.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from model.errors import ConfigError
from model import pgame as pg
from model.go import board as go
from model.go.coords import COLUMNS as GTP_COLUMNS
from model.loa import board as loa
from model.loa import game as loa_names
from model.loa import rules as loa_rules

GO, PGAME, LOA = 0, 1, 2
NAMES = {"go": GO, "pgame": PGAME, "loa": LOA}
# the GameSpec fields each game reads besides its board size and komi (which runs record apart)
OPTIONS = {"go": ("policy",), "pgame": ("branching", "depth", "seed", "cost"), "loa": ("policy", "knowledge")}


def game_name(g) -> str:
    """The name ("go", "pgame", "loa") of the game whose params are g."""
    return next(name for name, gid in NAMES.items() if gid == int(g[0]))


@njit(cache=True, nogil=True, inline="always")
def n_actions(g):
    if g[0] == GO:
        return go.go_n_actions(g)
    if g[0] == LOA:
        return loa.loa_n_actions(g)
    return pg.pg_n_actions(g)


@njit(cache=True, nogil=True, inline="always")
def legal_actions(g, s, out):
    if g[0] == GO:
        return go.go_legal_actions(g, s, out)
    if g[0] == LOA:
        return loa.loa_legal_actions(g, s, out)
    return pg.pg_legal_actions(g, s, out)


@njit(cache=True, nogil=True, inline="always")
def play(g, s, a):
    if g[0] == GO:
        return go.go_play(g, s, a)
    if g[0] == LOA:
        return loa.loa_play(g, s, a)
    return pg.pg_play(g, s, a)


@njit(cache=True, nogil=True, inline="always")
def hash(g, s):  # noqa: A001  (the contract's name)
    if g[0] == GO:
        return go.go_hash(g, s)
    if g[0] == LOA:
        return loa.loa_hash(g, s)
    return pg.pg_hash(g, s)


@njit(cache=True, nogil=True, inline="always")
def position_hash(g, s):
    """Hash of the position without the side to move, for positional superko; a move that leaves it
    unchanged (a pass) never repeats a position. The P-game never repeats, so its hash serves."""
    if g[0] == GO:
        return go.go_position_hash(g, s)
    if g[0] == LOA:
        return loa.loa_position_hash(g, s)
    return pg.pg_hash(g, s)


@njit(cache=True, nogil=True, inline="always")
def to_move(g, s):
    if g[0] == GO:
        return go.go_to_move(g, s)
    if g[0] == LOA:
        return loa.loa_to_move(g, s)
    return pg.pg_to_move(g, s)


@njit(cache=True, nogil=True, inline="always")
def is_terminal(g, s):
    if g[0] == GO:
        return go.go_is_terminal(g, s)
    if g[0] == LOA:
        return loa.loa_is_terminal(g, s)
    return pg.pg_is_terminal(g, s)


@njit(cache=True, nogil=True, inline="always")
def playout(g, s, rng, amaf):
    if g[0] == GO:
        return go.go_playout(g, s, rng, amaf)
    if g[0] == LOA:
        return loa.loa_playout(g, s, rng, amaf)
    return pg.pg_playout(g, s, rng, amaf)


@njit(cache=True, nogil=True, inline="always")
def max_children(g):
    if g[0] == LOA:
        return loa.loa_max_children(g)
    return n_actions(g)


@njit(cache=True, nogil=True, inline="always")
def priors(g, s, actions, n, out):
    if g[0] == LOA:
        return loa.loa_priors(g, s, actions, n, out)
    for j in range(n):
        out[j] = 0.0
    return False


@njit(cache=True, nogil=True, inline="always")
def reward(g, result):
    if result > 0:
        return 1.0
    if result < 0:
        return 0.0
    return 0.5


@dataclass(frozen=True)
class GameSpec:
    """A game and its settings, as the command line names them; make() gives the kernels' (g, s)."""

    name: str = "go"
    size: int = 9            # Go
    komi: float = 7.0        # Go
    policy: str = "random"   # playout policy: Go random | light; LOA random | knowledge
    knowledge: str = "mc"    # LOA move knowledge for priors: mc (move categories) | ef (evaluation) | none
    branching: int = 4       # P-game
    depth: int = 8           # P-game
    seed: int = 1            # P-game tree
    cost: int = 0            # P-game busy-loop iterations per playout step

    def options(self) -> dict:
        """This game's own settings (OPTIONS), e.g. to hand on as a run's game_params."""
        return {k: getattr(self, k) for k in OPTIONS.get(self.name, ())}

    def make(self) -> tuple[np.ndarray, np.ndarray]:
        if self.name == "go":
            g = go.make_params(self.size, self.komi, self.policy)
            return g, go.new_state(g)
        if self.name == "pgame":
            if self.branching < 1 or self.depth < 1 or self.cost < 0:
                raise ConfigError("pgame: needs branching >= 1, depth >= 1, cost >= 0")
            g = pg.make_params(self.branching, self.depth, self.seed, self.cost, game_id=PGAME)
            return g, pg.new_state(g)
        if self.name == "loa":
            g = loa.make_params(self.policy, self.knowledge)
            return g, loa.new_state(g)
        raise ConfigError(f"game: unknown game {self.name!r} (known: {', '.join(NAMES)})")


def make_game(name: str, **kw) -> tuple[np.ndarray, np.ndarray]:
    """(g, initial s) for "go" (size, komi, policy), "pgame" (branching, depth, seed, cost) or "loa" (policy,
    knowledge)."""
    return GameSpec(name=name, **kw).make()


@njit(cache=True, nogil=True)
def run_playouts(g, s, rng, n):
    """n playouts from s (s unchanged); returns their mean result. The bare playout rate of benchmarks."""
    c = s.copy()
    amaf = np.empty(n_actions(g), dtype=np.int8)
    total = 0.0
    for _ in range(n):
        c[:] = s
        amaf[:] = -1
        total += playout(g, c, rng, amaf)
    return total / max(n, 1)


# --- naming and placing actions, for people (viz, reports), keyed by the game's name as traces record it -----
# Traces carry meta["game"] and meta["board"] (the Go size; other games ignore it). Unknown games and the
# P-game have no board: their actions are named by number.

def _go_size(board) -> int | None:
    try:
        n = int(board or 0)
    except (TypeError, ValueError):
        return None
    return n if 1 < n <= len(GTP_COLUMNS) else None


def _go_cell(board, action: int) -> tuple[int, int] | None:
    n = _go_size(board)
    return (action % n, action // n) if n and 0 <= action < n * n else None


def _go_label(board, action: int) -> str:
    n = _go_size(board)
    if not n:
        return str(action)
    if action >= n * n:
        return "pass"
    return f"{GTP_COLUMNS[action % n]}{action // n + 1}"


def _loa_cell(board, action: int) -> tuple[int, int] | None:
    if not 0 <= action < loa_rules.PASS:
        return None
    to = action & 63  # an action is from * 64 + to; its place on the board is where the piece lands
    return to % 8, to // 8


def _loa_label(board, action: int) -> str:
    return loa_names.action_name(action) if 0 <= action < loa_rules.N_ACTIONS else str(action)


def _go_axes(board):
    n = _go_size(board)
    return ([GTP_COLUMNS[i] for i in range(n)], [str(i + 1) for i in range(n)]) if n else None


# name -> (axes(board): (column names, row names) or None, label(board, a), cell(board, a))
_BOARDS = {
    "go": (_go_axes, _go_label, _go_cell),
    "loa": (lambda board: (list(loa_names.FILES), [str(i + 1) for i in range(8)]), _loa_label, _loa_cell),
}


def _board_of(game):
    return _BOARDS.get(str(game or "").lower())


def board_axes(game: str, board) -> tuple[list[str], list[str]] | None:
    """Names of the board's columns (left to right) and rows (bottom up), or None if the game has no board."""
    b = _board_of(game)
    return b[0](board) if b else None


def board_shape(game: str, board) -> tuple[int, int] | None:
    """(width, height) of the game's board (Go: board x board, LOA: 8 x 8), or None if it has none."""
    axes = board_axes(game, board)
    return (len(axes[0]), len(axes[1])) if axes else None


def action_label(game: str, board, action: int) -> str:
    """How a player names the action: Go "D4" / "pass", LOA "b1-b3" / "pass", otherwise the number."""
    b = _board_of(game)
    return b[1](board, int(action)) if b else str(int(action))


def action_cell(game: str, board, action: int) -> tuple[int, int] | None:
    """(x, y) of the action on the board (x = column from the left, y = row from the bottom, both from 0): Go the
    point played, LOA the destination square; None for a pass or a game without a board."""
    b = _board_of(game)
    return b[2](board, int(action)) if b else None


def game_title(game: str, board) -> str:
    """Short name of a run's game for summaries: "go 9x9", "loa 8x8", "pgame"."""
    shape = board_shape(game, board)
    return f"{game} {shape[0]}x{shape[1]}" if shape else str(game)


def trace_board(game: str, board) -> int | None:
    """The `board` a trace records: Go its size, a game with a fixed square board its side (LOA: 8), None for
    a game without a board (the P-game); runtimes carry a Go size for every game, which says nothing else."""
    shape = board_shape(game, board)
    return shape[0] if shape and shape[0] == shape[1] else None
