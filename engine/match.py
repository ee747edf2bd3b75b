"""Matches against another GTP engine: a referee that plays one game between two GTP endpoints, and a
runner that plays N games with alternating colours and writes SGFs, a CSV of games and a JSON summary.

The referee keeps its own game record and is the authority on legality (positional superko) and on the
result (Tromp-Taylor area score). A game ends by resignation, by two passes, by the move cap, or by a
fault: an illegal or unparsable move, a failed genmove, a timeout or a crash of an engine loses the game
for that side. When both pass, the opponent's `final_score` is asked as a cross-check; if it differs from
ours (dead stones left on the board, which Tromp-Taylor counts as alive), play resumes once as a KGS-style
clean-up phase (`kgs-genmove_cleanup` where the engine knows it) until both pass again, and any
disagreement left is recorded (the score, and whether even the winner differs). Compare like with like:
give GNU Go `--chinese-rules` (area counting), or its count differs from ours by the prisoners. A move the receiving engine refuses although the referee allowed it is a
disagreement about the rules, not a fault of the mover: that game is void and left out of the statistics.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from sgfmill import sgf
from tqdm import tqdm

from engine.gtp import resume
from engine.gtp_client import GtpDied, GtpEndpoint, GtpProcess, GtpReply, GtpTimeout
from engine.move_times import MoveTimes, summary as time_summary
from engine.results import write_json
from model.config import check
from model.errors import UserError
from model.go.game import GoGame
from model.stats import match_stats

BLACK, WHITE = 0, 1
COLOR_ARG = ("b", "w")
COLOR_SGF = ("B", "W")


@dataclass
class MatchConfig:
    opponent: str = "gnugo --mode gtp --level 10 --chinese-rules"
    games: int = 10
    board: int = 9
    komi: float = 7.0
    max_moves: int = 0  # 0: three times the number of points
    move_timeout: float = 600.0  # seconds an engine may take to answer one command
    cleanup: bool = True  # resume play when the two scores name different winners
    jobs: int = 1
    first_color: str = "black"  # our colour in game 1; colours alternate
    budget: float = 0.0  # our seconds per move, for the time check (0: no fixed budget)
    opponent_budget: float = 0.0  # the opponent's (0: not known)

    def validate(self) -> None:
        check(bool(self.opponent.strip()), "opponent", "must name a GTP engine command")
        check(self.games >= 1, "games", "must be >= 1")
        check(2 <= self.board <= 19, "board", "must be in 2..19")
        check(math.isfinite(self.komi), "komi", "must be a finite number")
        check(self.max_moves >= 0, "max_moves", "must be >= 0 (0: 3 x points)")
        check(self.move_timeout > 0, "move_timeout", "must be > 0")
        check(self.jobs >= 1, "jobs", "must be >= 1")
        check(self.first_color in ("black", "white"), "first_color", "must be black or white")
        check(self.budget >= 0 and self.opponent_budget >= 0, "budget", "must be >= 0 seconds (0: none)")

    @property
    def move_cap(self) -> int:
        return self.max_moves or 3 * self.board * self.board


@dataclass
class GameResult:
    """One game, from the referee's view; `winner` is BLACK, WHITE, None for a draw, -1 for a void game."""

    index: int
    our_color: str = ""
    winner: int | None = -1
    reason: str = ""  # score, resign, move cap, illegal, bad move, genmove failed, timeout, crash, void
    detail: str = ""  # what exactly went wrong, the illegal move, the rejecting engine's message
    moves: int = 0
    score: float | None = None  # our Tromp-Taylor score, Black's side, komi included
    opponent_score: str = ""  # the opponent's final_score answer
    scores_agree: bool | None = None  # the same score by both counts (None: not checked)
    winners_agree: bool | None = None  # the same winner by both counts
    cleanup: bool = False  # a clean-up phase was played
    score_before_cleanup: float | None = None  # both counts when the clean-up phase began
    opponent_score_before_cleanup: str = ""
    seconds: float = 0.0
    time_black: float = 0.0  # wall seconds from sending genmove to the reply, summed over the side's moves
    time_white: float = 0.0
    genmoves_black: int = 0
    genmoves_white: int = 0
    max_black: float = 0.0  # the side's longest move
    max_white: float = 0.0
    sims_black: int = 0  # simulations of the side's searches, as its engine reported them (treesplit-last_search)
    sims_white: int = 0
    searches_black: int = 0  # the side's moves whose search was reported (0: an engine that does not say)
    searches_white: int = 0
    sgf: str = ""

    def times(self, color: int) -> MoveTimes:
        """One side's moves of this game and their wall times."""
        if color == BLACK:
            return MoveTimes(self.genmoves_black, self.time_black, self.max_black)
        return MoveTimes(self.genmoves_white, self.time_white, self.max_white)

    def sims(self, color: int) -> tuple[int, int]:
        """One side's (reported searches, their simulations) in this game."""
        if color == BLACK:
            return self.searches_black, self.sims_black
        return self.searches_white, self.sims_white

    def sims_per_move(self, color: int) -> float | None:
        n, sims = self.sims(color)
        return sims / n if n else None

    @property
    def ours(self) -> int:
        return BLACK if self.our_color == "black" else WHITE

    @property
    def result(self) -> str:
        """SGF RE value: B+3.5, W+R, W+F (forfeit: illegal move, timeout...), 0 (draw), Void."""
        if self.winner == -1:
            return "Void"
        if self.winner is None:
            return "0"
        w = COLOR_SGF[self.winner]
        if self.reason == "resign":
            return f"{w}+R"
        if self.reason in ("score", "move cap") and self.score is not None:
            return f"{w}+{abs(self.score):g}"
        return f"{w}+F"

    def outcome(self) -> str:
        """'win', 'loss', 'draw' or 'void' for our side."""
        if self.winner == -1:
            return "void"
        if self.winner is None:
            return "draw"
        return "win" if COLOR_SGF[self.winner].lower() == self.our_color[0] else "loss"


def parse_score(text: str) -> float | None:
    """A final_score answer (B+3.5, W+R, 0, Draw) as a score on Black's side; None if it has no number."""
    t = text.strip().upper()
    if t in ("0", "DRAW", "JIGO"):
        return 0.0
    if len(t) > 2 and t[0] in "BW" and t[1] == "+":
        try:
            v = float(t[2:])
        except ValueError:
            return None
        return v if t[0] == "B" else -v
    return None


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


class Referee:
    """Plays one game between two GTP endpoints. `checker` is the engine asked for final_score."""

    def __init__(self, black: GtpEndpoint, white: GtpEndpoint, checker: GtpEndpoint | None,
                 size: int, komi: float, move_cap: int, timeout: float, allow_cleanup: bool = True,
                 new_game: Callable[[int, float], object] | None = None):
        if new_game is None:
            new_game = GoGame
        self.engines = (black, white)
        self.checker = checker
        self.size, self.komi = size, komi
        self.move_cap = move_cap
        self.timeout = timeout
        self.allow_cleanup = allow_cleanup
        self.game = new_game(size, komi)
        self.res = GameResult(index=0)
        self._cleanup_known = [False, False]
        self._reports_search = [False, False]  # the side's engine answers treesplit-last_search

    # -- engine calls that turn failures into a lost game ---------------------------------------------

    def _send(self, color: int, command: str) -> GtpReply:
        """Send to one side's engine; GtpTimeout / GtpDied propagate with the side attached."""
        try:
            return self.engines[color].send(command, timeout=self.timeout)
        except (GtpTimeout, GtpDied) as e:
            raise _Fault(color, "timeout" if isinstance(e, GtpTimeout) else "crash", str(e)) from None

    def _setup(self) -> None:
        for color in (BLACK, WHITE):
            for cmd in (f"boardsize {self.size}", "clear_board", f"komi {self.komi:g}"):
                r = self._send(color, cmd)
                if not r.ok:
                    raise _Fault(color, "setup failed", f"{cmd}: {r.text}")
            self._cleanup_known[color] = self._knows(color, "kgs-genmove_cleanup")
            self._reports_search[color] = self._knows(color, "treesplit-last_search")

    def _knows(self, color: int, command: str) -> bool:
        known = self._send(color, f"known_command {command}")
        return known.ok and known.text == "true"

    # -- the game ------------------------------------------------------------------------------------------

    def play(self) -> GameResult:
        t0 = time.perf_counter()
        try:
            self._setup()
            self._loop()
        except _Fault as f:
            self.res.winner, self.res.reason, self.res.detail = 1 - f.color, f.reason, f"{COLOR_SGF[f.color]}: {f.detail}"
        except _Void as v:
            self.res.winner, self.res.reason, self.res.detail = -1, "void", str(v)
        self.res.moves = len(self.game.moves)
        self.res.seconds = time.perf_counter() - t0
        return self.res

    def _loop(self) -> None:
        game, res = self.game, self.res
        cleanup = False
        while True:
            if len(game.moves) >= self.move_cap:
                self._finish_by_score("move cap")
                return
            color = game.to_move
            cmd = "kgs-genmove_cleanup" if cleanup and self._cleanup_known[color] else "genmove"
            t = time.perf_counter()
            reply = self._send(color, f"{cmd} {COLOR_ARG[color]}")
            elapsed = time.perf_counter() - t
            if color == BLACK:
                res.time_black += elapsed
                res.genmoves_black += 1
                res.max_black = max(res.max_black, elapsed)
            else:
                res.time_white += elapsed
                res.genmoves_white += 1
                res.max_white = max(res.max_white, elapsed)
            if not reply.ok:
                raise _Fault(color, "genmove failed", reply.text)
            self._count_search(color)
            word = reply.text.strip()
            if word.lower() == "resign":
                res.winner, res.reason = 1 - color, "resign"
                return
            action = self._action(color, word)
            try:
                game.play(action, color)
            except UserError as e:
                raise _Fault(color, "illegal", f"{word} ({e})") from None
            other = self._send(1 - color, f"play {COLOR_ARG[color]} {word}")
            if not other.ok:
                raise _Void(f"{COLOR_SGF[1 - color]} refused {COLOR_SGF[color]} {word}: {other.text}")
            if game.is_over:
                agree = self._finish_by_score("score")
                if agree is False and self.allow_cleanup and not cleanup:
                    cleanup = res.cleanup = True
                    res.score_before_cleanup, res.opponent_score_before_cleanup = res.score, res.opponent_score
                    resume(game)
                    continue
                return

    def _count_search(self, color: int) -> None:
        """Add the simulations of the search that made this move, where the side's engine reports them (an
        answer that does not read as `sims N ...` is not counted: the count is information, not a rule)."""
        if not self._reports_search[color]:
            return
        words = self._send(color, "treesplit-last_search").text.split()
        if len(words) < 2 or words[0] != "sims" or not words[1].isdigit():
            return
        if color == BLACK:
            self.res.searches_black += 1
            self.res.sims_black += int(words[1])
        else:
            self.res.searches_white += 1
            self.res.sims_white += int(words[1])

    def _action(self, color: int, word: str) -> int:
        if word.lower() == "pass":
            return self.size * self.size
        try:
            a = self.game.vertex_to_action(word.upper())
        except (UserError, ValueError, KeyError, IndexError):
            raise _Fault(color, "bad move", f"cannot read {word!r} as a vertex") from None
        if not 0 <= a < self.size * self.size:
            raise _Fault(color, "bad move", f"{word!r} is off the board")
        return a

    def _finish_by_score(self, reason: str) -> bool | None:
        """Score the position; returns whether the checker's final_score is the same (None: no checker or
        no usable answer)."""
        res = self.res
        score = float(self.game.score())
        res.score, res.reason = score, reason
        res.winner = None if score == 0 else (BLACK if score > 0 else WHITE)
        res.scores_agree = res.winners_agree = None
        if self.checker is not None:
            try:
                r = self.checker.send("final_score", timeout=self.timeout)
            except (GtpTimeout, GtpDied) as e:
                res.opponent_score = f"? {e}"
                return None
            res.opponent_score = r.text if r.ok else f"? {r.text}"
            theirs = parse_score(r.text) if r.ok else None
            if theirs is not None:
                res.scores_agree = theirs == score
                res.winners_agree = _sign(theirs) == _sign(score)
        return res.scores_agree


class _Fault(Exception):
    def __init__(self, color: int, reason: str, detail: str):
        super().__init__(detail)
        self.color, self.reason, self.detail = color, reason, detail


class _Void(Exception):
    pass


# -- the match -------------------------------------------------------------------------------------------


def our_color(cfg: MatchConfig, index: int) -> int:
    first = BLACK if cfg.first_color == "black" else WHITE
    return first if index % 2 == 0 else 1 - first


def play_one(cfg: MatchConfig, index: int, ours: GtpEndpoint, out: Path | None,
             new_game: Callable[[int, float], object] | None = None,
             opponent: GtpEndpoint | None = None) -> GameResult:
    """Play game `index` (0-based) against a fresh opponent process (or the in-process `opponent`, reused
    from game to game like ours); write its SGF under out/games/."""
    mine = our_color(cfg, index)
    stderr = open(out / "opponent.stderr.log", "a") if out is not None and opponent is None else None
    try:
        with (contextlib.nullcontext(opponent) if opponent is not None else
              GtpProcess(cfg.opponent, name="opponent", stderr=stderr, timeout=cfg.move_timeout)) as opp:
            black, white = (ours, opp) if mine == BLACK else (opp, ours)
            ref = Referee(black, white, checker=opp, size=cfg.board, komi=cfg.komi, move_cap=cfg.move_cap,
                          timeout=cfg.move_timeout, allow_cleanup=cfg.cleanup, new_game=new_game)
            res = ref.play()
    finally:
        if stderr is not None:
            stderr.close()
    res.index = index
    res.our_color = "black" if mine == BLACK else "white"
    if out is not None:
        names = (ours.name, opponent.name if opponent is not None else _engine_label(cfg.opponent))
        pb, pw = names if mine == BLACK else names[::-1]
        path = out / "games" / f"game-{index + 1:04d}.sgf"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(annotate_sgf(ref.game.to_sgf(), black=pb, white=pw, result=res.result,
                                      comment=f"{res.reason}: {res.detail}" if res.detail else res.reason))
        res.sgf = str(path.relative_to(out))
    return res


def annotate_sgf(data: bytes, black: str, white: str, result: str, comment: str) -> bytes:
    """Add player names, the referee's result and how the game ended to an SGF record."""

    game = sgf.Sgf_game.from_bytes(data)
    root = game.get_root()
    root.set("PB", black)
    root.set("PW", white)
    root.set("RE", result)
    root.set("RU", "Tromp-Taylor")
    root.set("GC", comment)
    return game.serialise()


def _engine_label(command: str) -> str:
    return " ".join(Path(w).name if i == 0 else w for i, w in enumerate(command.split()))


CSV_FIELDS = ["game", "our_color", "outcome", "result", "reason", "detail", "moves", "score", "opponent_score",
              "scores_agree", "winners_agree", "cleanup",
              "score_before_cleanup", "opponent_score_before_cleanup", "seconds", "time_black", "time_white",
              "our_moves", "our_mean_s", "our_max_s", "opponent_moves", "opponent_mean_s", "opponent_max_s",
              "our_sims_per_move", "opponent_sims_per_move", "sgf"]


def csv_row(r: GameResult) -> dict:
    d = dataclasses.asdict(r)
    d["game"] = r.index + 1
    d["outcome"] = r.outcome()
    d["result"] = r.result
    d["seconds"] = round(r.seconds, 3)
    d["time_black"] = round(r.time_black, 3)
    d["time_white"] = round(r.time_white, 3)
    for who, color in (("our", r.ours), ("opponent", 1 - r.ours)):
        t = r.times(color)
        d[f"{who}_moves"], d[f"{who}_max_s"] = t.moves, round(t.longest, 4)
        d[f"{who}_mean_s"] = None if t.mean is None else round(t.mean, 4)
        per_move = r.sims_per_move(color)
        d[f"{who}_sims_per_move"] = None if per_move is None else round(per_move, 1)
    return {k: d[k] for k in CSV_FIELDS}


def summarize(cfg: MatchConfig, results: list[GameResult], ours: dict | None = None) -> dict:
    """The match summary: statistics of our side (voids left out) and what went wrong, as plain JSON."""
    outcomes = [r.outcome() for r in results]
    wins, losses, draws = outcomes.count("win"), outcomes.count("loss"), outcomes.count("draw")
    st = match_stats(wins, losses, draws)
    reasons: dict[str, int] = {}
    for r in results:
        reasons[r.reason] = reasons.get(r.reason, 0) + 1
    scored = [r for r in results if r.scores_agree is not None]
    mine, theirs = side_times(results), side_times(results, opponent=True)
    ended_by_us = [r for r in results if r.reason in ("illegal", "bad move", "genmove failed", "timeout", "crash")
                   and r.outcome() == "loss"]
    return {
        "match": dataclasses.asdict(cfg),
        "engine": ours or {},
        "games_played": len(results),
        "void": outcomes.count("void"),
        "stats": st.as_dict(),
        "by_color": {
            c: match_stats(sum(1 for r in results if r.our_color == c and r.outcome() == "win"),
                           sum(1 for r in results if r.our_color == c and r.outcome() == "loss"),
                           sum(1 for r in results if r.our_color == c and r.outcome() == "draw")).as_dict()
            for c in ("black", "white")},
        "reasons": reasons,
        "our_faults": [f"game {r.index + 1}: {r.reason}: {r.detail}" for r in ended_by_us],
        "opponent_faults": [f"game {r.index + 1}: {r.reason}: {r.detail}" for r in results
                            if r.reason in ("illegal", "bad move", "genmove failed", "timeout", "crash")
                            and r.outcome() == "win"],
        "score_disagreements": [f"game {r.index + 1}: ours {r.score:+g}, opponent {r.opponent_score}"
                                for r in scored if not r.scores_agree],
        "winner_disagreements": sum(1 for r in scored if not r.winners_agree),
        "scores_checked": len(scored),
        "cleanups": sum(r.cleanup for r in results),
        "mean_moves": sum(r.moves for r in results) / len(results) if results else 0.0,
        "mean_game_seconds": sum(r.seconds for r in results) / len(results) if results else 0.0,
        "our_seconds_per_move": mine.mean,
        "time": {"ours": time_summary(mine, cfg.budget), "opponent": time_summary(theirs, cfg.opponent_budget)},
        "sims_per_move": {"ours": side_sims(results), "opponent": side_sims(results, opponent=True)},
    }


def side_times(results: list[GameResult], opponent: bool = False) -> MoveTimes:
    """Our side's (or the opponent's) moves over all games, with their wall times."""
    total = MoveTimes()
    for r in results:
        total = total.merge(r.times(r.ours if not opponent else 1 - r.ours))
    return total


def side_sims(results: list[GameResult], opponent: bool = False) -> float | None:
    """Our side's (or the opponent's) mean simulations per reported search over all games; None where its
    engine reported none."""
    n = sims = 0
    for r in results:
        k, x = r.sims(r.ours if not opponent else 1 - r.ours)
        n, sims = n + k, sims + x
    return sims / n if n else None


def write_csv(path: Path, results: list[GameResult]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        for r in sorted(results, key=lambda r: r.index):
            w.writerow(csv_row(r))


# -- running N games, possibly in parallel worker processes ------------------------------------------------

_worker_engine: GtpEndpoint | None = None
_worker_opponent: GtpEndpoint | None = None


def _worker_init(make_engine: Callable[[], GtpEndpoint], make_opponent: Callable[[], GtpEndpoint] | None) -> None:
    global _worker_engine, _worker_opponent
    _worker_engine = make_engine()  # once per worker: the Player (and its compiled kernels) is reused
    _worker_opponent = make_opponent() if make_opponent is not None else None


def _worker_play(cfg: MatchConfig, index: int, out: Path | None) -> GameResult:
    return play_one(cfg, index, _worker_engine, out, opponent=_worker_opponent)


def run_match(cfg: MatchConfig, make_engine: Callable[[], GtpEndpoint], out: Path | None,
              engine_info: dict | None = None, progress: bool = True,
              make_opponent: Callable[[], GtpEndpoint] | None = None) -> dict:
    """Play cfg.games games; write out/games/*.sgf, out/games.csv and out/summary.json; return the summary.

    `make_engine()` builds our side (e.g. an in-process GtpLocal); with jobs > 1 it runs once in each worker
    process, so it must be picklable (a module-level function or a functools.partial of one). So does
    `make_opponent()` when given: an in-process opponent (self-play without a process start per game);
    cfg.opponent then only labels it.
    """

    cfg.validate()
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    results: list[GameResult] = []
    bar = tqdm(total=cfg.games, desc="match", unit="game", disable=not progress, dynamic_ncols=True)

    def done(r: GameResult) -> None:
        results.append(r)
        o = [x.outcome() for x in results]
        bar.set_postfix_str(f"W {o.count('win')} L {o.count('loss')} D {o.count('draw')} void {o.count('void')}")
        bar.update(1)
        if out is not None:  # keep the table current, so an interrupted match still leaves its games
            write_csv(out / "games.csv", results)

    try:
        if cfg.jobs == 1:
            ours = make_engine()
            opp = None
            try:
                opp = make_opponent() if make_opponent is not None else None
                for i in range(cfg.games):
                    done(play_one(cfg, i, ours, out, opponent=opp))
            finally:
                ours.close()
                if opp is not None:
                    opp.close()
        else:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor, as_completed

            # spawn, not fork: this process has threads (engine pipe readers, tqdm) that fork would not copy
            with ProcessPoolExecutor(max_workers=cfg.jobs, initializer=_worker_init, initargs=(make_engine, make_opponent),
                                     mp_context=multiprocessing.get_context("spawn")) as pool:
                futures = [pool.submit(_worker_play, cfg, i, out) for i in range(cfg.games)]
                try:
                    for f in as_completed(futures):
                        done(f.result())
                except BaseException:
                    for f in futures:
                        f.cancel()
                    raise
    finally:
        bar.close()
    results.sort(key=lambda r: r.index)
    summary = summarize(cfg, results, engine_info)
    if out is not None:

        write_json("summary", summary, directory=out)
    return summary
