"""strength-scaling: playing strength as MPI ranks double (Schaefers 2014, Figures 4.7, 4.13/4.14), on real ranks.

UCT-Treesplit (engine/mpi, one worker thread per rank, the default one broadcast rank per four search ranks)
plays with a fixed time per move, so more ranks can only help through more simulations per move:
  - against GNU Go 3.8 (the thesis used FUEGO and Pachi): `gnugo_games` games per rank count;
  - in self-play: every rank count against the first one (1 rank), `selfplay_games` games each; the Elo
    differences, chained from 1 rank, are the curve of Figure 4.7 (the thesis: ~+700 Elo over 6 doublings
    of compute nodes, from 1 to 64(+16) CNs).
`jobs` is the number of cores the games may use: each point plays max(1, jobs // cores per game) games at
once (cores per game: our ranks, plus the opponent's ranks in self-play, or one for GNU Go).

This machine has 2 cores shared with other work: 1 and 2 ranks are all that fit, and 2 ranks rarely get two
free cores, so the measured gain is a lower bound and its intervals are wide (a few dozen games per point).
"""

from __future__ import annotations

import math
import shutil
import statistics
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from bokeh.layouts import column
from bokeh.models import ColumnDataSource, HoverTool, Span, Whisker

from engine import algorithms
from engine.player import PlayerConfig
from engine.sequential import Position
from engine.timecontrol import Budget
from experiments.games import play, time_check
from experiments.report import ELO_CAP, Outcome, Section, add_elo_plot_columns, figure, plot_elo, quote, table_widget
from experiments.runner import kept
from experiments.significance import elo_per_doubling
from model.config import check, from_dict
from model.go import board

QUESTION = ("How does playing strength grow as MPI ranks double at a fixed time per move, against GNU Go 3.8 and "
            "in self-play, compared with the thesis's ~+700 Elo over 6 doublings?")
REFERENCE = ("Schaefers 2014, 4.3.2: Figure 4.7 (self-play, 1 ... 64(+16) CNs, reference 8(+2) CNs; 'the parallel "
             "version improves by about 700 ELO from 6 doublings of the number of CNs'), Figures 4.13/4.14 (against FUEGO "
             "and Pachi: gains up to 32(+8) CNs, about 400 Elo against FUEGO), 19x19, 10 min per game.")
THESIS_ELO_PER_DOUBLING = 700 / 6


@dataclass
class Config:
    ranks: list = field(default_factory=lambda: [1, 2])   # search ranks per point (doubling)
    seconds: float = 0.3             # per move, both sides
    gnugo_games: int = 10            # per rank count (0: skip)
    selfplay_games: int = 40         # per rank count after the first, against the first (0: skip)
    opponent: str = "gnugo --mode gtp --level 10 --chinese-rules"
    algo: str = "treesplit"
    threads: int = 1                 # worker threads per rank
    board: int = 9
    komi: float = 7.0
    seed: int = 1
    jobs: int = 1                    # cores the games may use at once
    move_timeout: float = 120.0

    def validate(self) -> None:
        check(len(self.ranks) >= 1 and all(isinstance(r, int) and r >= 1 for r in self.ranks), "ranks",
              "need whole numbers >= 1")
        check(self.ranks == sorted(set(self.ranks)), "ranks", "need increasing distinct values")
        check(self.seconds > 0, "seconds", "need > 0")
        check(self.gnugo_games >= 0 and self.selfplay_games >= 0, "gnugo_games", "need >= 0")
        check(self.gnugo_games + self.selfplay_games > 0, "gnugo_games", "nothing to play")
        check(self.threads >= 1, "threads", "need >= 1")
        check(self.jobs >= 1, "jobs", "need >= 1")


def _cores(ranks: int, threads: int) -> int:
    return ranks * threads + ranks // 4  # + the default broadcast ranks (one per 4 search ranks)


def player(cfg: Config, ranks: int, seed: int):
    return from_dict(PlayerConfig, {"algo": cfg.algo, "seconds": cfg.seconds, "ranks": ranks, "threads": cfg.threads,
                                    "seed": seed})


def probe(cfg: Config, ranks: int, searches: int = 3) -> float:
    """Median simulations per move that `ranks` ranks make in cfg.seconds from the empty board, now."""

    g = board.make_params(cfg.board, cfg.komi, "light")
    searcher = algorithms.make_searcher(cfg.algo, player(cfg, ranks, cfg.seed).algo_config())
    try:
        sims = [searcher.search(Position.initial(g, board.new_state(g)), Budget(seconds=cfg.seconds)).sims
                for _ in range(searches + 1)][1:]  # the first pays for starting the ranks
    finally:
        searcher.close()
    return float(statistics.median(sims))


def run(cfg: Config, out: Path):
    sims = {r: probe(cfg, r) for r in cfg.ranks}
    print("  simulations per move from the empty board: " + ", ".join(f"{r} rank(s) {n:.0f}" for r, n in sims.items()),
          flush=True)
    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="treesplit-strength-scaling-"))
    base = cfg.ranks[0]
    try:
        for r in cfg.ranks:
            if cfg.gnugo_games:
                jobs = max(1, cfg.jobs // (_cores(r, cfg.threads) + 1))
                row = play(player(cfg, r, cfg.seed), cfg.opponent, cfg.gnugo_games, tmp / f"gnugo-{r}", cfg.board,
                           cfg.komi, jobs, cfg.move_timeout)
                rows.append({"kind": "gnugo", "ranks": r, "opponent_ranks": 0, "jobs": jobs, "probe_sims": sims[r], **row})
                _say(rows[-1], f"{r} ranks vs {cfg.opponent.split()[0]}")
            if cfg.selfplay_games and r != base:
                jobs = max(1, cfg.jobs // (_cores(r, cfg.threads) + _cores(base, cfg.threads)))
                row = play(player(cfg, r, cfg.seed), player(cfg, base, cfg.seed + 1), cfg.selfplay_games,
                           tmp / f"self-{r}", cfg.board, cfg.komi, jobs, cfg.move_timeout)
                rows.append({"kind": "selfplay", "ranks": r, "opponent_ranks": base, "jobs": jobs, "probe_sims": sims[r],
                             **row})
                _say(rows[-1], f"{r} ranks vs {base}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return outcome(cfg, kept(out, {"games": pd.DataFrame(rows)}))


def _drawn(r) -> str:
    """', 1 drawn' for a result row with draws (a draw scores half a win), else ''."""
    n = int(getattr(r, "draws", 0) or 0)
    return f", {n} drawn" if n else ""


def _fmt(x, side: float = 1.0) -> str:
    """An Elo value; missing (None in JSON, empty in CSV) means infinite, on `side`."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "+inf" if side > 0 else "-inf"
    return f"{x:+.0f}"


def _say(r: dict, what: str) -> None:
    print(f"  {what}: {r['wins']}/{r['games']} won (+{r['draws']} drawn), Elo {_fmt(r['elo'], r['win_rate'] - 0.5)} "
          f"[{_fmt(r['elo_low'], -1)}, {_fmt(r['elo_high'])}], {r['seconds_per_move'] or 0:.2f} s/move", flush=True)


def outcome(cfg: Config, tables: dict):
    t = tables["games"].copy()
    add_elo_plot_columns(t)
    base = cfg.ranks[0]
    g = t[t.kind == "gnugo"].sort_values("ranks")
    s = t[t.kind == "selfplay"].sort_values("ranks")
    # self-play: the curve of Figure 4.7, each rank count against the first (0 Elo at the first)
    curve = pd.concat([pd.DataFrame({"ranks": [base], "elo_plot": [0.0], "elo_low_plot": [0.0], "elo_high_plot": [0.0],
                                     "wins": [0], "games": [0]}),
                       s[["ranks", "elo_plot", "elo_low_plot", "elo_high_plot", "wins", "games"]]], ignore_index=True)
    curve["doublings"] = [math.log2(r / base) for r in curve.ranks]
    curve["thesis"] = curve.doublings * THESIS_ELO_PER_DOUBLING
    lo = float(min(curve.elo_low_plot.min(), 0.0))
    hi = float(max(curve.elo_high_plot.max(), curve.thesis.max(), 0.0))
    f1 = figure("Self-play: Elo against 1 rank as ranks double", "doublings of search ranks (from 1)",
                "Elo (95% interval)", help_text="Treesplit with R ranks against treesplit with the first rank "
                "count, both with the same time per move; the thesis's average slope (700 Elo / 6 doublings) dashed.",
                y_range=(lo - 40, hi + 40))
    src = ColumnDataSource(curve)
    r1 = f1.line("doublings", "elo_plot", source=src, line_width=2, legend_label="ours (measured)")
    f1.scatter("doublings", "elo_plot", source=src, size=8)
    f1.add_layout(Whisker(source=src, base="doublings", lower="elo_low_plot", upper="elo_high_plot"))
    f1.line("doublings", "thesis", source=src, line_dash="dashed", color="gray",
            legend_label="thesis: ~700 Elo over 6 doublings")
    f1.add_tools(HoverTool(renderers=[r1], tooltips=[("ranks", "@ranks"), ("won", "@wins / @games"),
                                                     ("Elo", "@elo_plot{+0}")]))
    f1.legend.location = "top_left"
    f2 = figure(f"Win rate against {cfg.opponent.split()[0]} as ranks double", "search ranks",
                "win rate (95% Wilson interval)", "Games against GNU Go, colours alternating.", y_range=(0, 1),
                x_axis_type="log")
    src2 = ColumnDataSource(g)
    f2.line("ranks", "win_rate", source=src2, line_width=2)
    f2.scatter("ranks", "win_rate", source=src2, size=8)
    f2.add_layout(Whisker(source=src2, base="ranks", lower="ci_low", upper="ci_high"))
    f2.add_layout(Span(location=0.5, dimension="width", line_color="gray", line_dash="dashed"))
    shown = t[["kind", "ranks", "opponent_ranks", "probe_sims", "games", "wins", "draws", "win_rate", "ci_low",
               "ci_high", "elo", "elo_low", "elo_high", "seconds_per_move"]].round(3)
    sections = [
        Section("Figure 4.7: self-play strength as ranks double", column(f1, table_widget(shown, width=560)),
                quote("the sequential version can improve by more than 1000 ELO from 6 doublings of the number of "
                      "simulations performed per move whereas the parallel version improves by about 700 ELO from 6 "
                      "doublings of the number of CNs.", "Schaefers 2014, 4.3.2, Figure 4.7 (19x19, 10 min per game, "
                      "reference 8(+2) CNs)"),
                f"Ours: {cfg.board}x{cfg.board}, {cfg.seconds:g} s per move, {cfg.algo} with {cfg.threads} worker "
                f"thread(s) per rank; a point at +-{ELO_CAP:.0f} means every game went one way."),
        Section(f"Figures 4.13/4.14: against another program ({cfg.opponent.split()[0]})", f2,
                quote("Also against FUEGO we measured a significant improvement in playing strength when using more "
                      "CNs for up to 32(+8) CNs. However, gaining about 400 Elo, the improvement is considerably less "
                      "than in self-play where we achieved more than 700 Elo (see Figure 4.7).",
                      "Schaefers 2014, 4.3.2, Figures 4.13 (FUEGO) and 4.14 (Pachi)"),
                f"Ours: {cfg.opponent}."),
    ]
    agreement, summary = _agreement(cfg, g, s)
    samples = "; ".join(f"{kind}: " + ", ".join(f"{int(r.games)} games at {int(r.ranks)} rank(s)" for r in d.itertuples())
                        for kind, d in (("GNU Go", g), ("self-play", s)) if len(d))
    return Outcome(tables={"games": tables["games"]}, sections=sections, agreement=agreement, summary=summary,
                   samples=samples)


def _estimate(e) -> list:
    """[value, low, high, p] of an Estimate for summary.json (None for an unbounded end)."""
    return [round(v) if math.isfinite(v) else None for v in (e.value, e.low, e.high)] + [round(e.p, 4)]


def t_probe(g: pd.DataFrame, s: pd.DataFrame) -> dict:
    both = pd.concat([g, s])
    if "probe_sims" not in both:
        return {}
    return {str(int(r)): float(v) for r, v in both.groupby("ranks").probe_sims.first().items()}


def _agreement(cfg: Config, g: pd.DataFrame, s: pd.DataFrame) -> tuple[str, dict]:
    base = cfg.ranks[0]
    parts = []
    summary: dict = {"seconds_per_move": cfg.seconds}
    if len(s):
        top = s.iloc[-1]
        d = math.log2(top.ranks / base)
        per = elo_per_doubling(np.log2(s.ranks / base), s.wins + 0.5 * s.draws, s.games)
        inside = per.low <= THESIS_ELO_PER_DOUBLING <= per.high
        parts.append(
            f"In self-play {int(top.ranks)} ranks win {int(top.wins)} of {int(top.games)}{_drawn(top)} against {base} "
            f"({_fmt(top.elo, top.win_rate - 0.5)} Elo, 95% [{_fmt(top.elo_low, -1)}, {_fmt(top.elo_high)}] over "
            f"{d:g} doubling(s)). Fitted over every self-play game ({int(s.games.sum())} at {len(s)} rank count(s)), "
            f"that is {per.text('Elo per doubling')}; the thesis's average of {THESIS_ELO_PER_DOUBLING:.0f} Elo per "
            f"doubling is {'inside' if inside else 'outside'} that interval, so "
            f"{'we cannot tell them apart' if inside else 'we differ'} with these games.")
        summary["selfplay"] = {str(int(r.ranks)): [int(r.wins), int(r.games)] for r in s.itertuples()}
        summary["selfplay_elo_top"] = None if top.elo is None or not math.isfinite(float(top.elo)) else round(float(top.elo))
        summary["selfplay_elo_per_doubling"] = _estimate(per)
    if len(g) >= 2:
        per_g = elo_per_doubling(np.log2(g.ranks / base), g.wins + 0.5 * g.draws, g.games, anchored=False)
        parts.append(f"Against {cfg.opponent.split()[0]}, fitted over its {int(g.games.sum())} games at "
                     f"{len(g)} rank counts: {per_g.text('Elo per doubling')}.")
        summary["vs_gnugo_elo_per_doubling"] = _estimate(per_g)
    if len(g):
        parts.append("Against " + cfg.opponent.split()[0] + ": " + ", ".join(
            f"{int(r.ranks)} rank(s) win {int(r.wins)} of {int(r.games)}{_drawn(r)} (score {r.win_rate:.2f} "
            f"[{r.ci_low:.2f}, {r.ci_high:.2f}])"
            for r in g.itertuples()) + ".")
        summary["vs_gnugo"] = {str(int(r.ranks)): [int(r.wins), int(r.games)] for r in g.itertuples()}
    probe = t_probe(g, s)
    ks = sorted(probe, key=int)
    if probe:
        summary["sims_per_move"] = probe
        parts.append("Simulations per move from the empty board: " + ", ".join(f"{k} rank(s) {v:.0f}"
                                                                               for k, v in probe.items()) + ".")
        if len(ks) >= 2 and probe[ks[-1]] < probe[ks[0]]:
            parts.append(f"So here {ks[-1]} ranks search less per move than {ks[0]} (the messages of their simulations "
                         "cost more than the second core gives on this 2-core machine): the thesis's gain needs "
                         "more simulations per move from more ranks, which this machine cannot show.")
    times = time_check(pd.concat([g, s]), lambda r: f"{int(r['ranks'])} rank(s) in {r['kind']}", cfg.seconds)
    if times:
        parts.append(times)
    gain = ""
    if len(ks) >= 2 and probe[ks[0]] > 0:
        more = (probe[ks[-1]] / probe[ks[0]]) ** (1 / math.log2(int(ks[-1]) / int(ks[0])))
        gain = f"; each doubling of ranks here gave {more:.2f}x the simulations per move (measured before the games)"
        if more >= 1.5 and len(s) and not (per.significant and per.value > 0):
            gain += (", and yet no significant gain in self-play at this many games (what a doubling of "
                     "simulations is worth at this budget is not measured here)")
    parts.append(f"Our real ranks reach {max(cfg.ranks)} (one worker thread each) against the thesis's 64(+16) "
                 f"compute nodes of 16 cores and 10 minutes a game, at {cfg.seconds:g} s a move on "
                 f"{cfg.board}x{cfg.board}{gain}.")
    return " ".join(parts), summary
