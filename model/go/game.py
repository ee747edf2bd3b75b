"""The game record used by GTP, matches and the search driver: moves, undo, positional superko, scoring.

The position itself is the kernels' flat state (model/go/board.py); this class adds what needs history:
positional superko (a board move may not recreate any earlier position; passes are exempt), undo, the move
list and its SGF form.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from model.errors import UserError
from model.go import board as B
from model.go.coords import COLUMNS, action_to_vertex, parse_color, vertex_to_action
from model.go.rules import G_MAX_MOVES, S_CAPS_B, S_CAPS_W, S_MOVE_LIMIT
from model.rng import new_rng


class IllegalMove(UserError):
    """A move the rules forbid; the message says why (occupied, suicide, ko, superko, game over, ...)."""


class GoGame:
    def __init__(self, size: int = 19, komi: float = 7.5, policy: str = "random"):
        self.g = B.make_params(size, komi, policy)
        self.size = int(size)
        self.komi = float(komi)
        self.policy = policy
        self.state = B.new_state(self.g)
        self.setup_black: list[int] = []   # setup stones (handicap, SGF AB/AW), as actions
        self.setup_white: list[int] = []
        self.moves: list[tuple[int, int]] = []   # (player 0/1, action)
        self.position_hashes: list[int] = [self._position_hash()]  # after each move, the start included
        self._seen = Counter(self.position_hashes)
        self._undo: list[np.ndarray] = []

    # --- reading the position ---------------------------------------------------------------------------
    @property
    def to_move(self) -> int:
        """0 Black, 1 White."""
        return int(B.go_to_move(self.g, self.state))

    @property
    def is_over(self) -> bool:
        """Two consecutive passes (the kernels' move cap bounds playouts, never a game: play() moves it on)."""
        return B.consecutive_passes(self.state) >= 2

    @property
    def superko_hashes(self) -> set[int]:
        """Position hashes (go_position_hash) of every position so far: a board move must not make one again."""
        return set(self._seen)

    def superko_array(self) -> np.ndarray:
        """The same, as a sorted uint64 array, for kernels (np.searchsorted)."""
        return np.array(sorted(self._seen), dtype=np.uint64)

    def hash(self) -> int:
        """Zobrist hash of position + side to move."""
        return int(B.go_hash(self.g, self.state))

    def _position_hash(self) -> int:
        return int(B.go_position_hash(self.g, self.state))

    def colors(self) -> np.ndarray:
        """size x size array, 0 empty / 1 Black / 2 White, row 0 at the bottom."""
        return B.board_colors(self.g, self.state)

    # --- coordinates --------------------------------------------------------------------------------------
    def vertex_to_action(self, vertex: str) -> int:
        return vertex_to_action(vertex, self.size)

    def action_to_vertex(self, action: int) -> str:
        return action_to_vertex(action, self.size)

    @property
    def pass_action(self) -> int:
        return self.size * self.size

    # --- moves --------------------------------------------------------------------------------------------
    def illegal_reason(self, action: int | None, color: int | str | None = None) -> str | None:
        """Why `color` may not play `action` now (None if it may)."""
        player = self.to_move if color is None else parse_color(color)
        if self.is_over:
            return "the game is over (two consecutive passes)"
        a = self.pass_action if action is None else int(action)
        if a == self.pass_action:
            return None
        if not 0 <= a < self.pass_action:
            return f"action {a} is off the {self.size}x{self.size} board"
        if B.go_color(self.g, self.state, a) != 0:
            return f"{self.action_to_vertex(a)} is occupied"
        s = self.state.copy()
        B.set_to_move(s, player)
        if B.ko_action(self.g, s) == a:
            return f"{self.action_to_vertex(a)} retakes a ko"
        if not B.go_play(self.g, s, a):
            return f"{self.action_to_vertex(a)} is suicide"
        if int(B.go_position_hash(self.g, s)) in self._seen:
            return f"{self.action_to_vertex(a)} repeats an earlier position (positional superko)"
        return None

    def play(self, action: int | None, color: int | str | None = None) -> None:
        """Play action (None or size*size = pass) for color (default: the side to move); IllegalMove if not
        allowed. Playing out of turn (GTP) is allowed: the turn then follows the move played."""
        player = self.to_move if color is None else parse_color(color)
        a = self.pass_action if action is None else int(action)
        reason = self.illegal_reason(a, player)
        if reason:
            raise IllegalMove(reason)
        self._undo.append(self.state.copy())
        B.set_to_move(self.state, player)
        ok = B.go_play(self.g, self.state, a)
        assert ok, "illegal_reason and go_play disagree"
        # the kernels' move cap bounds playouts; a real game that runs long must not look finished to them
        self.state[S_MOVE_LIMIT] = B.move_count(self.state) + int(self.g[G_MAX_MOVES])
        self.moves.append((player, a))
        h = self._position_hash()
        self.position_hashes.append(h)
        self._seen[h] += 1

    def play_vertex(self, vertex: str, color: int | str | None = None) -> None:
        self.play(self.vertex_to_action(vertex), color)

    def undo(self) -> None:
        """Take back the last move; UserError if there is none."""
        if not self.moves:
            raise UserError("no move to undo")
        self.state = self._undo.pop()
        self.moves.pop()
        h = self.position_hashes.pop()
        self._seen[h] -= 1
        if not self._seen[h]:
            del self._seen[h]

    def legal_actions(self) -> list[int]:
        """Legal actions for the side to move, positional superko filtered; pass always included (last).
        Empty when the game is over."""
        if self.is_over:
            return []
        out = np.empty(B.go_n_actions(self.g), dtype=np.int64)
        n = B.go_legal_actions(self.g, self.state, out)
        legal = []
        for a in out[:n - 1]:
            s = self.state.copy()
            B.go_play(self.g, s, a)
            if int(B.go_position_hash(self.g, s)) not in self._seen:
                legal.append(int(a))
        legal.append(self.pass_action)
        return legal

    # --- scoring ------------------------------------------------------------------------------------------
    def score(self) -> float:
        """Tromp-Taylor area score (all stones alive), Black minus White minus komi."""
        return float(B.go_score(self.g, self.state))

    def ownership(self, n_playouts: int = 200, seed: int = 0) -> np.ndarray:
        """Mean owner of every point (+1 Black ... -1 White) over random playouts from here."""
        g = B.make_params(self.size, self.komi, "random")
        return B.go_ownership(g, self.state, int(n_playouts), new_rng(seed))

    def dead_stones(self, n_playouts: int = 200, seed: int = 0, threshold: float = 0.5) -> list[int]:
        """Estimated dead stones (actions): stones whose point the opponent owns, on average over
        n_playouts random playouts, by more than threshold. Seki is not recognised (seki stones count as alive)."""
        own = self.ownership(n_playouts, seed)
        colors = self.colors().reshape(-1)
        dead = ((colors == 1) & (own < -threshold)) | ((colors == 2) & (own > threshold))
        return [int(a) for a in np.flatnonzero(dead)]

    def final_status_list(self, status: str, n_playouts: int = 200, seed: int = 0) -> list[str]:
        """GTP final_status_list: vertices of the stones that are 'alive', 'dead' or 'seki' (seki: always
        empty, see dead_stones)."""
        status = status.lower()
        if status not in ("alive", "dead", "seki"):
            raise UserError(f"final status {status!r}: expected alive, dead or seki")
        if status == "seki":
            return []
        dead = set(self.dead_stones(n_playouts, seed))
        stones = np.flatnonzero(self.colors().reshape(-1) != 0)
        pick = [a for a in stones if (int(a) in dead) == (status == "dead")]
        return [self.action_to_vertex(int(a)) for a in pick]

    def final_score(self, n_playouts: int = 200, seed: int = 0) -> float:
        """Area score after removing the estimated dead stones (dead_stones), komi included."""
        dead = set(self.dead_stones(n_playouts, seed))
        colors = self.colors().reshape(-1)
        black = [int(a) for a in np.flatnonzero(colors == 1) if int(a) not in dead]
        white = [int(a) for a in np.flatnonzero(colors == 2) if int(a) not in dead]
        return float(B.go_score(self.g, B.state_with_stones(self.g, black, white)))

    @staticmethod
    def result_string(score: float) -> str:
        """'B+3.5', 'W+0.5' or '0' (GTP final_score / SGF RE)."""
        if score > 0:
            return f"B+{score:g}"
        if score < 0:
            return f"W+{-score:g}"
        return "0"

    # --- display and files --------------------------------------------------------------------------------
    def showboard(self) -> str:
        """The board as GTP showboard prints it: X Black, O White, coordinates around (no I column)."""
        colors = self.colors()
        letters = "   " + " ".join(COLUMNS[: self.size])
        lines = [letters]
        glyph = {0: ".", 1: "X", 2: "O"}
        for r in range(self.size - 1, -1, -1):
            row = " ".join(glyph[int(c)] for c in colors[r])
            lines.append(f"{r + 1:2d} {row} {r + 1:2d}")
        lines.append(letters)
        caps_b, caps_w = int(self.state[S_CAPS_B]), int(self.state[S_CAPS_W])
        lines.append(f"Black (X) captured {caps_b}, White (O) captured {caps_w}; "
                     f"{'Black' if self.to_move == 0 else 'White'} to move; komi {self.komi:g}")
        return "\n".join(lines)

    def to_sgf(self) -> bytes:
        from model.go.sgf import game_to_sgf  # sgf.py builds GoGames: a top-level import would be circular

        return game_to_sgf(self)

    @classmethod
    def from_sgf(cls, data: bytes, policy: str = "random") -> "GoGame":
        """A game from SGF bytes (main line; AB/AW setup and handicap supported); UserError if unreadable."""
        from model.go.sgf import game_from_sgf  # (circular at the top, as in to_sgf)

        return game_from_sgf(data, policy)

    def set_setup(self, black: list[int], white: list[int], to_move: int | None = None) -> None:
        """Put setup stones (handicap, SGF AB/AW) on an empty game; the side to move defaults to White if
        there are only Black stones (handicap), else Black."""
        if self.moves:
            raise UserError("setup stones can only be placed before the first move")
        if to_move is None:
            to_move = 1 if black and not white else 0
        self.state = B.state_with_stones(self.g, black, white, to_move)
        self.setup_black, self.setup_white = list(black), list(white)
        self.position_hashes = [self._position_hash()]
        self._seen = Counter(self.position_hashes)
        self._undo = []
