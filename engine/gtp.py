"""GTP v2 (Go Text Protocol) engine side, sans I/O: one command line in, one response text out.

`GtpEngine.handle(line)` does the whole protocol for one line — preprocessing (control characters,
comments, tabs), the optional numeric id, dispatch, and the `=id result` / `?id message` framing with its
terminating blank line — and never raises: bad input answers `? message`. Reading stdin and writing stdout
is engine/commands/gtp.py's job, so tests and the match runner drive this class directly.

Case rules (GTP v2 section 2): command names are case sensitive; colours, vertices and `pass` are not.

Analysis (the extension Leela Zero introduced and Sabaki, Lizzie and KataGo's GUIs speak): `lz-analyze
[color] [interval]` (also `kgs-analyze`, and `kata-analyze` with KataGo's numbers) answers `=` and then, every
interval centiseconds until the next command arrives, one line of candidate moves:
    info move D4 visits 120 winrate 5321 lcb 5102 order 0 pv D4 Q16 D16 info move Q16 visits ...
(winrate and lcb, its 95% Wilson lower bound, in 1/10000 for the side to move; kata-analyze: fractions).
The next command ends it with the blank line. handle() answers the `=` line and leaves `analysis` set; the
I/O loop then calls run_analysis() until a line arrives (engine/commands/gtp.py).

`treesplit-last_search` answers what the last genmove's search did, `sims 5012 seconds 0.2481`, so that a
referee can count the simulations each side gets a move (`treesplit match` asks every engine that knows it).
"""

from __future__ import annotations

import math
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from model.errors import UserError
from model.go.game import GoGame
from model.go.rules import S_PASSES
from model.stats import wilson_interval
from model.version import package_version

BLACK, WHITE = 0, 1
MIN_SIZE, MAX_SIZE = 2, 19
PROTOCOL_VERSION = "2"
# A clock beyond these is a controller's mistake, not a game: a month of thinking time, stones in a period
MAX_CLOCK_SECONDS = 30 * 24 * 3600
MAX_PERIOD_STONES = 1000


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


@dataclass
class Analysis:
    """An analysis request: whose move, how often to report, how many candidates, which numbers."""

    color: int
    interval: float      # seconds between two info lines
    max_moves: int       # most candidates per line (0: all searched)
    style: str           # "lz": winrate in 1/10000 (lz-analyze, kgs-analyze); "kata": fractions


ANALYZE_STYLES = {"lz-analyze": "lz", "kgs-analyze": "lz", "kata-analyze": "kata"}
MAX_INTERVAL_CS = 360_000  # an hour between two reports is no longer watching


def parse_analysis(args: list[str], to_move: int, style: str) -> Analysis:
    """`[color] [interval] [interval N] [maxmoves N] [minmoves N]` (Leela Zero's and KataGo's forms)."""
    words = list(args)
    color = to_move
    if words and words[0].lower() in ("b", "w", "black", "white"):
        color = parse_color(words.pop(0))
    interval, max_moves = 100, 0
    if words and words[0].isdigit():
        interval = int(words.pop(0))
    while words:
        key = words.pop(0)
        if not words:
            raise GtpError(f"syntax error (analysis option {key!r} needs a value)")
        value = words.pop(0)
        if key not in ("interval", "maxmoves", "minmoves"):
            raise GtpError(f"syntax error (unknown analysis option {key!r}; known: interval, maxmoves, minmoves)")
        if not value.isdigit():
            raise GtpError(f"syntax error ({key} is a whole number >= 0, got {value!r})")
        if key == "interval":
            interval = int(value)
        elif key == "maxmoves":
            max_moves = int(value)
        # minmoves: every searched candidate is reported anyway
    if not 1 <= interval <= MAX_INTERVAL_CS:
        raise GtpError(f"syntax error (interval is 1..{MAX_INTERVAL_CS} centiseconds, got {interval})")
    return Analysis(color, interval / 100.0, max_moves, style)


def format_analysis(children, pvs: dict[int, list[int]], vertex: Callable[[int], str], req: Analysis) -> str:
    """One info line: the searched candidates (model.uct.RootChild), most visited first (empty when nothing is
    searched yet)."""
    kids = sorted((c for c in children if c.visits > 0 and math.isfinite(c.value)), key=lambda c: -c.visits)
    if req.max_moves:
        kids = kids[: req.max_moves]
    parts = []
    for order, c in enumerate(kids):
        lcb = wilson_interval(c.value * c.visits, c.visits)[0]  # the winrate's 95% lower confidence bound
        win = f"{int(round(10000 * c.value))}" if req.style == "lz" else f"{c.value:.6f}"
        low = f"{int(round(10000 * lcb))}" if req.style == "lz" else f"{lcb:.6f}"
        pv = " ".join(vertex(a) for a in pvs.get(c.action, [c.action]))
        parts.append(f"info move {vertex(c.action)} visits {c.visits} winrate {win} lcb {low} order {order} pv {pv}")
    return " ".join(parts)


def _one_line(msg: str) -> str:
    return " ".join(msg.split()) or "failed"


def resume(game) -> None:
    """Let play go on after two passes (a GTP controller may continue, e.g. a KGS-style clean-up phase):
    the game record otherwise refuses moves once both sides have passed."""
    if game.is_over:
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
            new_game = GoGame
        if version is None:
            version = package_version()
        self.player = player
        self._new_game = new_game
        self.name = name
        self.version = version
        self.size = size
        self.komi = komi
        self.clock = Clock()
        self.now = now
        self.quit = False
        self.warm = False  # warm_up() has run: a new board size is warmed up too
        self.last_traceback: str | None = None  # set when a command failed on an internal error
        self.analysis: Analysis | None = None   # set by an analyze command: the I/O loop runs it
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
            "printsgf": self.cmd_printsgf,
            "treesplit-last_search": self.cmd_last_search,
            **{name: (lambda a, style=style: self.cmd_analyze(a, style)) for name, style in ANALYZE_STYLES.items()},
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
        self.analysis = None
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
        if self.analysis is not None:  # the response stays open: run_analysis() streams it
            return f"={cid}\n"
        if "\n" in result:
            # A response never holds an empty line (that would end it early); a leading newline stays,
            # so that a board starts on its own line after "=id ".
            body = "\n".join(ln for ln in result.split("\n") if ln.strip())
            result = "\n" + body if result.startswith("\n") else body
        return f"={cid} {result}\n\n"

    def warm_up(self) -> None:
        """Load the player's kernels and start its ranks before the first command (Player.warm_up); from then
        on a new board size is warmed up as it is set (an MPI rank sets up a table for it), not in its first
        genmove."""
        self.player.warm_up(self.game)
        self.warm = True

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
        resized, self.size = size != self.size, size
        self._reset()
        if resized and self.warm:
            self.player.warm_up(self.game)
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

    @staticmethod
    def _clock_values(seconds: float, stones: int, what: str) -> None:
        """A clock's seconds and stones must be a possible clock: not negative, not NaN, not absurd."""
        if not math.isfinite(seconds) or seconds < 0:
            raise GtpError(f"syntax error ({what} must be a number of seconds >= 0, got {seconds:g})")
        if seconds > MAX_CLOCK_SECONDS:
            raise GtpError(f"syntax error ({what} {seconds:g} s is more than {MAX_CLOCK_SECONDS} s)")
        if not 0 <= stones <= MAX_PERIOD_STONES:
            raise GtpError(f"syntax error (stones must be 0..{MAX_PERIOD_STONES}, got {stones})")

    def cmd_time_settings(self, args: list[str]) -> str:
        self._args(args, 3, "main_time byo_yomi_time byo_yomi_stones")
        try:
            main, byo, stones = int(args[0]), int(args[1]), int(args[2])
        except ValueError:
            raise GtpError("syntax error (time settings are integers)") from None
        if min(main, byo, stones) < 0:
            raise GtpError("syntax error (negative time setting)")
        self._clock_values(main, stones, "main time")
        self._clock_values(byo, stones, "byo-yomi time")
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
        self._clock_values(t, stones, "time")
        if math.isinf(self.clock.main_time):  # time_left without time_settings: a clock all the same
            self.clock.main_time = t
        self.clock.left[color], self.clock.stones[color] = t, stones
        return ""

    def cmd_analyze(self, args: list[str], style: str) -> str:
        if not hasattr(self.player, "analyze"):
            raise GtpError("this player cannot analyze")
        self.analysis = parse_analysis(args, self.game.to_move, style)
        return ""

    def run_analysis(self, write: Callable[[str], None], until: Callable[[], bool]) -> None:
        """Stream the pending analysis: search `interval` seconds more, write an info line, again, until
        `until()` is true (the I/O loop's: the next command has arrived), then return; the caller ends the
        response."""
        req, self.analysis = self.analysis, None
        if req is None:
            return
        resume(self.game)
        children = None
        try:
            while not until():
                children, pvs = self.player.analyze(self.game, req.color, req.interval, children)
                line = format_analysis(children, pvs, self._vertex_name, req)
                if line:
                    write(line + "\n")
        except Exception:  # an engine bug must not kill the session: the next command still gets an answer
            self.last_traceback = traceback.format_exc()

    def cmd_last_search(self, args: list[str]) -> str:
        result = getattr(self.player, "last_result", None)
        if result is None:
            raise GtpError("no search yet")
        return f"sims {int(result.sims)} seconds {float(result.seconds):.4f}"

    def cmd_printsgf(self, args: list[str]) -> str:
        """The game so far as SGF; with a file name, written there instead (GTP: `printsgf [filename]`)."""
        data = self.game.to_sgf()
        if not args:
            return data.decode("utf-8").strip()
        try:
            Path(args[0]).write_bytes(data)
        except OSError as e:
            raise GtpError(f"cannot write {args[0]} ({e.strerror or e})") from None
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
