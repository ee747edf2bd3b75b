"""The LOA game record used by experiments and the command line: moves by name, undo, the result, a text board.

The position itself is the kernels' flat state (model/loa/board.py). Move names are "b1-b3" (from-to) or
"b1xb3" for a capture ("b1b3" is read too), and "pass".
"""

from __future__ import annotations

import numpy as np

from model.errors import UserError
from model.loa import board as B
from model.loa.rules import (A_BOARD, BLACK_WINS, DRAW, MAX_MOVES, N_ACTIONS, ONGOING, PASS, S_PLY, S_STATUS,
                             WHITE_WINS)

FILES = "abcdefgh"


def action_name(action: int, before: np.ndarray | None = None) -> str:
    """Name of action (e.g. "b1-b3"); a capture shows as 'x' when `before` (the position it is played in) is given."""
    if action == PASS:
        return "pass"
    frm, to = action >> 6, action & 63
    sep = "x" if before is not None and before[A_BOARD + to] != 0 else "-"
    return f"{square_name(frm)}{sep}{square_name(to)}"


def square_name(sq: int) -> str:
    return f"{FILES[sq % 8]}{sq // 8 + 1}"


def parse_square(name: str) -> int:
    name = name.strip().lower()
    if len(name) != 2 or name[0] not in FILES or name[1] not in "12345678":
        raise UserError(f"square {name!r}: expected a1..h8")
    return 8 * (int(name[1]) - 1) + FILES.index(name[0])


class LoaGame:
    def __init__(self, policy: str = "random", knowledge: str = "mc", max_plies: int = B.DEFAULT_MAX_PLIES):
        self.g = B.make_params(policy, knowledge, max_plies)
        self.state = B.new_state(self.g)
        self.moves: list[tuple[int, int]] = []   # (player 0/1, action)
        self._undo: list[np.ndarray] = []

    # --- reading the position ---------------------------------------------------------------------------------
    @property
    def to_move(self) -> int:
        return int(B.loa_to_move(self.g, self.state))

    @property
    def ply(self) -> int:
        return int(self.state[S_PLY])

    @property
    def is_over(self) -> bool:
        return bool(B.loa_is_terminal(self.g, self.state))

    @property
    def status(self) -> int:
        return int(self.state[S_STATUS])

    def result(self) -> float:
        """+1 Black won, -1 White won, 0 draw or not over."""
        return {BLACK_WINS: 1.0, WHITE_WINS: -1.0}.get(self.status, 0.0)

    def result_string(self) -> str:
        return {ONGOING: "*", BLACK_WINS: "B+", WHITE_WINS: "W+", DRAW: "draw"}[self.status]

    def hash(self) -> int:
        return int(B.loa_hash(self.g, self.state))

    def legal_actions(self) -> list[int]:
        out = np.empty(N_ACTIONS, dtype=np.int64)
        n = B.loa_legal_actions(self.g, self.state, out)
        assert n <= MAX_MOVES
        return [int(a) for a in out[:n]]

    # --- names --------------------------------------------------------------------------------------------------
    def action_name(self, action: int, before: np.ndarray | None = None) -> str:
        """Name of action; a capture shows as 'x' when `before` (the position it is played in) is given."""
        return action_name(action, before)

    def parse_action(self, name: str) -> int:
        t = name.strip().lower()
        if t == "pass":
            return PASS
        t = t.replace("-", "").replace("x", "")
        if len(t) != 4:
            raise UserError(f"move {name!r}: expected e.g. b1-b3, b1xb3 or pass")
        return parse_square(t[:2]) * 64 + parse_square(t[2:])

    # --- moves --------------------------------------------------------------------------------------------------
    def play(self, action: int) -> None:
        """Play action for the side to move; UserError if it is illegal or the game is over."""
        if self.is_over:
            raise UserError(f"the game is over ({self.result_string()})")
        s = self.state.copy()
        if not B.loa_play(self.g, s, int(action)):
            raise UserError(f"illegal move {self.action_name(int(action))} for "
                            f"{'Black' if self.to_move == 0 else 'White'}")
        self._undo.append(self.state)
        self.moves.append((self.to_move, int(action)))
        self.state = s

    def play_name(self, name: str) -> None:
        self.play(self.parse_action(name))

    def undo(self) -> None:
        if not self.moves:
            raise UserError("no move to undo")
        self.state = self._undo.pop()
        self.moves.pop()

    # --- display ------------------------------------------------------------------------------------------------
    def show(self) -> str:
        """The board, rank 8 at the top: X Black, O White."""
        colors = B.board_colors(self.state)
        glyph = {0: ".", 1: "X", 2: "O"}
        lines = ["  " + " ".join(FILES)]
        for r in range(7, -1, -1):
            lines.append(f"{r + 1} " + " ".join(glyph[int(c)] for c in colors[r]) + f" {r + 1}")
        lines.append("  " + " ".join(FILES))
        state = "Black" if self.to_move == 0 else "White"
        lines.append(f"ply {self.ply}, {state} to move" if not self.is_over else f"ply {self.ply}, "
                                                                                f"{self.result_string()}")
        return "\n".join(lines)
