"""GTP v2 (Go Text Protocol) engine side, sans I/O: one command line in, one response text out.

`GtpEngine.handle(line)` does the whole protocol for one line — preprocessing (control characters,
comments, tabs), the optional numeric id, dispatch, and the `=id result` / `?id message` framing with its
terminating blank line — and never raises: bad input answers `? message`. Reading stdin and writing stdout
is engine/commands/gtp.py's job, so tests and the match runner drive this class directly.

Case rules (GTP v2 section 2): command names are case sensitive; colours, vertices and `pass` are not.
"""

from __future__ import annotations

import math
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from model.errors import UserError

BLACK, WHITE = 0, 1
MIN_SIZE, MAX_SIZE = 2, 19
PROTOCOL_VERSION = "2"


class GtpError(Exception):
    """A command failed; the message is the text after `?`."""


@dataclass
class Clock:
    """Both sides' game clocks as GTP describes them (seconds; `stones` > 0: in a byo-yomi period with
    that many stones left to play in `left` seconds). `time_left` from the controller sets a side's clock;
    between such updates the engine charges its own thinking time with `spend`, so a controller that
    only sends time_settings still gets a clock that runs down."""

    main_time: float = math.inf
    byo_yomi_time: float = 0.0
    byo_yomi_stones: int = 0
    left: list[float] = field(default_factory=lambda: [math.inf, math.inf])  # by colour
    stones: list[int] = field(default_factory=lambda: [0, 0])

    @classmethod
    def from_settings(cls, main: float, byo_time: float, byo_stones: int) -> Clock:
        c = cls(float(main), float(byo_time), int(byo_stones))
        if main == 0 and byo_stones > 0:  # no main time: byo-yomi from the first move
            c.left, c.stones = [float(byo_time)] * 2, [byo_stones] * 2
        else:
            c.left = [float(main)] * 2
        return c

    @property
    def unlimited(self) -> bool:
        # GTP: byo-yomi time without stones means no limit; so does no time at all (GoGui sends 0 1 0).
        no_byo = self.byo_yomi_stones == 0
        return math.isinf(self.main_time) or (no_byo and (self.byo_yomi_time > 0 or self.main_time == 0))

    def spend(self, color: int, seconds: float) -> None:
        """Charge one move's thinking time to `color`."""
        if self.unlimited:
            return
        self.left[color] -= seconds
        if self.stones[color] > 0:
            self.stones[color] -= 1
            if self.stones[color] == 0 and self.left[color] >= 0:  # period done in time: a fresh one
                self.left[color], self.stones[color] = self.byo_yomi_time, self.byo_yomi_stones
        elif self.left[color] <= 0 and self.byo_yomi_stones > 0:  # main time over: byo-yomi begins
            self.left[color], self.stones[color] = self.byo_yomi_time, self.byo_yomi_stones
        self.left[color] = max(self.left[color], 0.0)


def preprocess(line: str) -> str:
    """GTP 3.1: drop control characters but HT/LF, cut comments, turn tabs into spaces, trim."""
    line = "".join(c for c in line if c in "\t\n" or ord(c) >= 32 and ord(c) != 127)
    line = line.split("#", 1)[0].replace("\t", " ")
    return line.strip()


def parse_color(word: str) -> int:
    w = word.lower()
    if w in ("b", "black"):
        return BLACK
    if w in ("w", "white"):
        return WHITE
    raise GtpError(f"syntax error (invalid color {word!r})")


def color_name(color: int) -> str:
    return "black" if color == BLACK else "white"


def format_score(score: float) -> str:
    """B+3.5 / W+0.5 / 0, from a score on Black's side (area difference minus komi)."""
    if score == 0:
        return "0"
    return f"{'B' if score > 0 else 'W'}+{abs(score):g}"


def _one_line(msg: str) -> str:
    return " ".join(msg.split()) or "failed"


def resume(game) -> None:
    """Let play go on after two passes (a GTP controller may continue, e.g. a KGS-style clean-up phase):
    the game record otherwise refuses moves once both sides have passed."""
    if game.is_over:
        from model.go.rules import S_PASSES

        game.state[S_PASSES] = 0


def replay(game, fresh):
    """`fresh` (an empty game, e.g. with another komi) with `game`'s setup stones and moves played on it."""
    if game.setup_black or game.setup_white:
        fresh.set_setup(game.setup_black, game.setup_white, game.to_move if not game.moves else None)
    for player, action in game.moves:
        resume(fresh)
        fresh.play(action, player)
    return fresh


class GtpEngine:
    """A GTP v2 engine around a Player (engine/player.py) and a game record (model/go/game.py)."""

    def __init__(self, player, new_game: Callable[[int, float], object] | None = None,
                 name: str = "treesplit", version: str | None = None, size: int = 19, komi: float = 7.5,
                 now: Callable[[], float] = time.monotonic):
        """`new_game(size, komi)` makes an empty game record (default GoGame) and `now()` reads the clock
        that charges our thinking time; both injectable for tests."""
        if new_game is None:
            from model.go.game import GoGame

            new_game = GoGame
        if version is None:
            from treesplit import __version__ as version
        self.player = player
        self._new_game = new_game
        self.name = name
        self.version = version
        self.size = size
        self.komi = komi
        self.clock = Clock()
        self.now = now
        self.quit = False
        self.last_traceback: str | None = None  # set when a command failed on an internal error
        self.commands: dict[str, Callable[[list[str]], str]] = {
            "protocol_version": lambda a: PROTOCOL_VERSION,
            "name": lambda a: self.name,
            "version": lambda a: self.version,
            "known_command": self.cmd_known_command,
            "list_commands": lambda a: "\n".join(self.commands),
            "quit": self.cmd_quit,
            "boardsize": self.cmd_boardsize,
            "clear_board": self.cmd_clear_board,
            "komi": self.cmd_komi,
            "play": self.cmd_play,
            "genmove": lambda a: self._genmove(a, commit=True),
            "reg_genmove": lambda a: self._genmove(a, commit=False),
            "kgs-genmove_cleanup": lambda a: self._genmove(a, commit=True, cleanup=True),
            "undo": self.cmd_undo,
            "showboard": self.cmd_showboard,
            "final_score": self.cmd_final_score,
            "final_status_list": self.cmd_final_status_list,
            "time_settings": self.cmd_time_settings,
            "time_left": self.cmd_time_left,
            "loadsgf": self.cmd_loadsgf,
        }
        self._reset()

    # -- framing ---------------------------------------------------------------------------------------

    def handle(self, line: str) -> str | None:
        """The full response (ending in a blank line) to one input line; None for empty or comment lines."""
        line = preprocess(line)
        if not line:
            return None
        words = line.split()
        cid = ""
        if words[0].isdigit():
            cid = words.pop(0)
            if not words:
                return f"?{cid} syntax error (missing command)\n\n"
        name, args = words[0], words[1:]
        fn = self.commands.get(name)
        if fn is None:
            return f"?{cid} unknown command\n\n"
        self.last_traceback = None
        try:
            result = fn(args)
        except (GtpError, UserError) as e:  # UserError: e.g. IllegalMove, a bad SGF
            return f"?{cid} {_one_line(str(e))}\n\n"
        except Exception as e:  # an engine bug must not kill the session
            self.last_traceback = traceback.format_exc()
            return f"?{cid} internal error: {type(e).__name__}: {_one_line(str(e))}\n\n"
        if "\n" in result:
            # A response never holds an empty line (that would end it early); a leading newline stays,
            # so that a board starts on its own line after "=id ".
            body = "\n".join(ln for ln in result.split("\n") if ln.strip())
            result = "\n" + body if result.startswith("\n") else body
        return f"={cid} {result}\n\n"

    def close(self) -> None:
        """Release the Player's resources (threads, MPI ranks). The session is over."""
        self.player.close()

    # -- helpers ---------------------------------------------------------------------------------------

    def _reset(self) -> None:
        self.game = self._new_game(self.size, self.komi)
        self.player.new_game(self.size, self.komi)

    def _vertex(self, word: str) -> int:
        if word.lower() == "pass":
            return self.size * self.size
        try:
            return self.game.vertex_to_action(word.upper())
        except (ValueError, KeyError, IndexError, UserError):
            raise GtpError(f"syntax error (invalid vertex {word!r})") from None

    def _vertex_name(self, action: int) -> str:
        if action == self.size * self.size:
            return "pass"
        return self.game.action_to_vertex(action)

    @staticmethod
    def _args(args: list[str], n: int, what: str) -> list[str]:
        if len(args) < n:
            raise GtpError(f"syntax error (expected {what})")
        return args

    # -- commands --------------------------------------------------------------------------------------

    def cmd_known_command(self, args: list[str]) -> str:
        self._args(args, 1, "a command name")
        return "true" if args[0] in self.commands else "false"

    def cmd_quit(self, args: list[str]) -> str:
        self.quit = True
        return ""

    def cmd_boardsize(self, args: list[str]) -> str:
        self._args(args, 1, "a board size")
        try:
            size = int(args[0])
        except ValueError:
            raise GtpError("syntax error (board size is not an integer)") from None
        if not MIN_SIZE <= size <= MAX_SIZE:
            raise GtpError("unacceptable size")
        self.size = size
        self._reset()
        return ""

    def cmd_clear_board(self, args: list[str]) -> str:
        self._reset()
        return ""

    def cmd_komi(self, args: list[str]) -> str:
        self._args(args, 1, "a komi value")
        try:
            komi = float(args[0])
        except ValueError:
            raise GtpError("syntax error (komi is not a number)") from None
        if not math.isfinite(komi):
            raise GtpError("syntax error (komi is not a finite number)")
        self.komi = komi
        self.game = replay(self.game, self._new_game(self.size, komi))
        # Komi changes the value of every position: keep the stones, start the search afresh.
        self.player.new_game(self.size, komi)
        return ""

    def cmd_play(self, args: list[str]) -> str:
        self._args(args, 2, "a color and a vertex")
        color = parse_color(args[0])
        action = self._vertex(args[1])
        resume(self.game)
        try:
            self.game.play(action, color)
        except UserError as e:
            raise GtpError(f"illegal move ({e})") from None
        self.player.play(action)
        return ""

    def _genmove(self, args: list[str], commit: bool, cleanup: bool = False) -> str:
        self._args(args, 1, "a color")
        color = parse_color(args[0])
        resume(self.game)
        c = self.clock
        t0 = self.now()
        action = self.player.genmove(self.game, color=color, cleanup=cleanup,
                                     time_left=None if c.unlimited else c.left[color],
                                     stones_left=c.stones[color])
        c.spend(color, self.now() - t0)
        if action is None:  # the Player's way of resigning
            return "resign"
        if commit:
            self.game.play(action, color)
            self.player.play(action)
        return self._vertex_name(action)

    def cmd_undo(self, args: list[str]) -> str:
        try:
            self.game.undo()
        except (UserError, IndexError):
            raise GtpError("cannot undo") from None
        self.player.undo()
        return ""

    def cmd_showboard(self, args: list[str]) -> str:
        return "\n" + self.game.showboard()

    def cmd_final_score(self, args: list[str]) -> str:
        return format_score(self.game.final_score())

    def cmd_final_status_list(self, args: list[str]) -> str:
        self._args(args, 1, "a status (alive, dead or seki)")
        status = args[0].lower()
        if status not in ("alive", "dead", "seki"):
            raise GtpError(f"syntax error (unknown status {args[0]!r})")
        return " ".join(self.game.final_status_list(status))

    def cmd_time_settings(self, args: list[str]) -> str:
        self._args(args, 3, "main_time byo_yomi_time byo_yomi_stones")
        try:
            main, byo, stones = int(args[0]), int(args[1]), int(args[2])
        except ValueError:
            raise GtpError("syntax error (time settings are integers)") from None
        if min(main, byo, stones) < 0:
            raise GtpError("syntax error (negative time setting)")
        self.clock = Clock.from_settings(main, byo, stones)
        self.player.set_time_settings(main, byo, stones)
        return ""

    def cmd_time_left(self, args: list[str]) -> str:
        self._args(args, 3, "color time stones")
        color = parse_color(args[0])
        try:
            t, stones = float(args[1]), int(args[2])
        except ValueError:
            raise GtpError("syntax error (time is a number, stones an integer)") from None
        if math.isinf(self.clock.main_time):  # time_left without time_settings: a clock all the same
            self.clock.main_time = t
        self.clock.left[color], self.clock.stones[color] = t, stones
        return ""

    def cmd_loadsgf(self, args: list[str]) -> str:
        self._args(args, 1, "a file name")
        move_number = None
        if len(args) > 1:
            try:
                move_number = int(args[1])
            except ValueError:
                raise GtpError("syntax error (move number is not an integer)") from None
        try:
            data = Path(args[0]).read_bytes()
        except OSError:
            raise GtpError("cannot load file") from None
        from model.go.game import GoGame

        try:
            game = GoGame.from_sgf(data)
        except UserError as e:
            raise GtpError(f"cannot load file ({e})") from None
        if not MIN_SIZE <= game.size <= MAX_SIZE:
            raise GtpError("cannot load file (unacceptable size)")
        if move_number is not None:  # the position before move `move_number` (1 = before the first move)
            if move_number < 1:
                raise GtpError("cannot load file (move number must be >= 1)")
            while len(game.moves) > move_number - 1:
                game.undo()
        self.game, self.size, self.komi = game, game.size, game.komi
        self.player.new_game(self.size, self.komi)
        return ""
