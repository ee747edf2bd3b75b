"""parallel-degree: Schaefers 2014, Figure 4.15, the strength lost to S_par simulations in flight at equal simulation
counts, in self-play on 9x9.

For each simulations-per-move budget N and each degree S_par, the `inflight` searcher (engine/inflight.py:
UCT-Treesplit's roles on one rank with S_par simulations in flight under virtual loss, packages interleaved
by the deterministic loopback runtime) plays `games` games against the sequential search (S_par = 1) with
the same N and the same in-tree policy, colours alternating. Win rate, 95% Wilson interval and the Elo
difference (model/stats.py) per point. Only the parallelism's effect on the tree is measured: both sides
make exactly N simulations, whatever the time.

The thesis's version: reference S_par = 10 against 20 ... 1280, N = 1280 ... 81920 on 19x19 with 1000 games
per pairing. Ours is scaled to 9x9 and a single core per game: S_par 4 ... 64 against N 128 ... 2048, so the
ratio N / S_par spans a similar range (2 ... 512 against the thesis's 1 ... 8192).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from bokeh.layouts import column
from bokeh.models import ColumnDataSource, HoverTool, Span, Whisker
from bokeh.palettes import Category10

from engine.machine import git_commit
from engine.player import PlayerConfig
from engine.sequential import SearchConfig
from experiments.games import games_range, play
from experiments.report import Outcome, Section, add_elo_plot_columns, figure, quote, table_widget
from experiments.runner import kept, rebuild_report
from experiments.significance import elo_per_doubling, holm, p_text
from model.config import check, from_dict
from model.errors import ConfigError
from model.results import REFERENCE_DIR
from model.stats import match_stats, scores_p_value

QUESTION = ("How much playing strength do S_par simulations in flight lose against the sequential search at "
            "equal simulations per move, and does the loss shrink with more simulations per move?")
REFERENCE = ("Schaefers 2014, 4.3.2, Figure 4.15: Gomorra with 20 ... 1280 parallel simulations against Gomorra with "
             "10, at 1280 ... 81920 simulations per move, 1000 games per pairing, 19x19. Its data reach us as "
             "prose only.")


@dataclass
class Config:
    sims: list = field(default_factory=lambda: [128, 512, 2048])  # simulations per move, both sides
    s_par: list = field(default_factory=lambda: [1, 4, 16, 64])    # degrees against the sequential search
    #                                  (1: the control, which must come out near 0 Elo)
    games: int = 400                 # per point: 95% intervals of about +-35 Elo near 50%
    board: int = 9
    komi: float = 7.0
    seed: int = 1
    jobs: int = 1                    # games at once (one core each)

    def validate(self) -> None:
        check(len(self.sims) >= 1 and all(isinstance(n, int) and n >= 1 for n in self.sims), "sims",
              "need whole numbers >= 1")
        check(len(self.s_par) >= 1 and all(isinstance(p, int) and p >= 1 for p in self.s_par), "s_par",
              "need whole numbers >= 1 (1: the control, in-flight machinery against the sequential search)")
        check(self.games >= 1, "games", "need >= 1")
        check(2 <= self.board <= 19, "board", "need 2..19")
        check(self.jobs >= 1, "jobs", "need >= 1")


def point(cfg: Config, sims: int, s_par: int, out: Path) -> dict:
    ours = from_dict(PlayerConfig, {"algo": "inflight", "sims": sims, "seed": cfg.seed,
                                    "algo_params": {"s_par": s_par}})
    ref = from_dict(PlayerConfig, {"algo": "sequential", "sims": sims, "seed": cfg.seed + 1})
    row = play(ours, ref, cfg.games, out, cfg.board, cfg.komi, cfg.jobs)
    return {"sims": sims, "s_par": s_par, "sims_per_s_par": sims / s_par, **row}


def run(cfg: Config, out: Path):
    rows = []
    partial = Path(out) / "points.partial.csv"
    tmp = Path(tempfile.mkdtemp(prefix="treesplit-parallel-degree-"))
    try:
        for n in cfg.sims:
            for p in cfg.s_par:
                r = point(cfg, n, p, tmp / f"n{n}-p{p}")
                rows.append(r)
                # a long run that is cut keeps the points it finished, beside the last complete run's files
                partial.parent.mkdir(parents=True, exist_ok=True)
                pd.DataFrame(rows).to_csv(partial, index=False)
                print(f"  N={n:>5} S_par={p:>4}: {r['wins']}/{r['games']} won, Elo {_fmt(r['elo'])} "
                      f"[{_fmt(r['elo_low'])}, {_fmt(r['elo_high'])}], {r['mean_game_seconds']:.1f} s/game", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result = outcome(cfg, kept(out, {"points": pd.DataFrame(rows)}))
    partial.unlink(missing_ok=True)  # only now: a report that fails to build must not take the games with it
    return result


def _fmt(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:+.0f}" if math.isfinite(x) else ("+inf" if x > 0 else "-inf")


def outcome(cfg: Config, tables: dict):
    t = tables["points"].copy()
    add_elo_plot_columns(t)
    lo = float(min(t.elo_low_plot.min(), 0.0)) if len(t) else -100.0
    hi = float(max(t.elo_high_plot.max(), 0.0)) if len(t) else 100.0
    f = figure("S_par in flight vs the sequential search, same N", "S_par (simulations in flight)",
               "Elo difference (95% interval)", "Self-play on 9x9: the inflight searcher against the sequential "
               "search, both with N simulations per move. Below 0: parallelism costs strength.", x_axis_type="log",
               y_range=(lo - 40, hi + 40))
    f.add_layout(Span(location=0, dimension="width", line_color="gray", line_dash="dashed"))
    colors = Category10[10]
    renderers = []
    for i, (n, d) in enumerate(t.groupby("sims")):
        d = d.sort_values("s_par")
        src = ColumnDataSource(d)
        c = colors[i % 10]
        renderers.append(f.line("s_par", "elo_plot", source=src, line_width=2, color=c, legend_label=f"N = {n}"))
        f.scatter("s_par", "elo_plot", source=src, size=8, color=c)
        f.add_layout(Whisker(source=src, base="s_par", lower="elo_low_plot", upper="elo_high_plot", line_color=c))
    f.add_tools(HoverTool(renderers=renderers, tooltips=[("N", "@sims"), ("S_par", "@s_par"),
                                                         ("won", "@wins / @games"), ("Elo", "@elo{+0}"),
                                                         ("95%", "[@elo_low{+0}, @elo_high{+0}]")]))
    f.legend.location = "bottom_left"
    shown = t[["sims", "s_par", "games", "wins", "win_rate", "ci_low", "ci_high", "elo", "elo_low",
               "elo_high"]].round(3)
    ours = _column(f, table_widget(shown, width=560))
    sections = [Section(
        "Figure 4.15: strength of S_par parallel simulations at equal simulation counts", ours,
        quote("We observe the expected decrease in playing strength for increasing degrees of parallelism and "
              "equal number of simulations. Somewhat less intuitive is the fact that high degrees of parallelism do "
              "not impair the search quality a lot for lower numbers of simulations per move. In fact, this is "
              "likely an effect of Progressive Widening ... We can also see that, at the long end, the search "
              "quality impairing becomes less significant the more simulations are performed per move in relation "
              "to the number of simulations that are computed in parallel.",
              "Schaefers 2014, 4.3.2, Figure 4.15 (reference S_par = 10; S_par 20 ... 1280; N 1280 ... 81920; 19x19)"),
        f"Ours: {cfg.board}x{cfg.board}, komi {cfg.komi:g}, {int(t.games.min())}-{int(t.games.max())} games per "
        f"point; whiskers are 95% Wilson intervals mapped to Elo (a point at +-800 means every game went one way).")]
    agreement, summary = _agreement(cfg, t)
    kept_tables = {"points": tables["points"]}
    if "runs" in tables:
        words, summary["newest_run_vs_earlier_p"] = _newest_run_agrees(tables["runs"])
        agreement += " " + words
        kept_tables["runs"] = tables["runs"]
    return Outcome(tables=kept_tables, sections=sections, agreement=agreement, summary=summary,
                   samples=f"{len(t)} points, {games_range(t.games)} games each ({int(t.games.sum())} games)")


def _column(*items):
    return column(*items)


def _newest_run_agrees(runs: pd.DataFrame) -> tuple[str, dict]:
    """Whether the newest pooled run (run names begin with their date) scores as the earlier runs did at each of
    its points: two-proportion tests, Holm-adjusted over its points. Pooling assumes they measure one thing."""
    names = sorted(set(runs.run))
    newest = names[-1]
    new, old = runs[runs.run == newest], runs[runs.run != newest]
    tests = {}
    for r in new.itertuples():
        o = old[(old.sims == r.sims) & (old.s_par == r.s_par)]
        if len(o) and o.games.sum() > 0:
            tests[f"N{int(r.sims)}/S{int(r.s_par)}"] = scores_p_value(
                _points(r) / r.games, int(r.games),
                float(_points(o).sum()) / float(o.games.sum()), int(o.games.sum()))
    if not tests:
        return f"The newest run ({newest}) shares no point with the earlier ones.", {}
    adj = dict(zip(tests, holm(list(tests.values()))))
    differ = [k for k, q in adj.items() if q < 0.05]
    return (f"The {len(names)} pooled runs were made from {names[0][:10]} to {newest[:10]}; the newest ({newest}) "
            f"against the earlier runs at its {len(adj)} points (Holm-adjusted two-proportion tests: "
            + ", ".join(f"{k} {p_text(q)}" for k, q in adj.items()) + "): "
            + ("no point differs, so pooling them adds games of one measurement." if not differ else
               f"{', '.join(differ)} differ{'s' * (len(differ) == 1)}: the runs do not measure one thing there."),
            {k: round(q, 4) for k, q in adj.items()})


def _points(d: pd.DataFrame) -> pd.Series:
    return d.wins + 0.5 * d.draws


def _agreement(cfg: Config, t: pd.DataFrame) -> tuple[str, dict]:
    """The words, from tests across all points: per budget N, Elo per doubling of S_par (one fit over the
    points S_par = 1 ... max, intercept free), Holm-corrected for the budgets; at the largest S_par, Elo per
    doubling of N (does the loss shrink with more simulations?)."""
    ns = cfg_list(t.sims)
    top_p = max(cfg_list(t.s_par))
    worst = t.loc[t.elo_plot.idxmin()] if len(t) else None
    half = float(((t.elo_high_plot - t.elo_low_plot) / 2).median()) if len(t) else float("nan")
    sig = t[(t.elo_high_plot < 0) & (t.s_par > 1)]
    ctrl = t[t.s_par == 1]
    control = ""
    if len(ctrl):
        ok = bool(((ctrl.elo_low_plot <= 0) & (ctrl.elo_high_plot >= 0)).all())
        control = (f"The control (S_par = 1: the in-flight machinery against the sequential search) scores "
                   + ", ".join(f"{_fmt(r.elo)} Elo at N = {int(r.sims)}" for r in ctrl.itertuples())
                   + (", its 95% interval containing 0 as it must. " if ok else
                      ", NOT within its interval of 0: part of the measured loss is not parallelism. "))
    per_n = {}
    for n in ns:
        d = t[t.sims == n]
        if d.s_par.nunique() >= 2:
            per_n[n] = elo_per_doubling(np.log2(d.s_par), _points(d), d.games, anchored=False)
    adj = dict(zip(per_n, holm([e.p for e in per_n.values()])))
    grows = [n for n, e in per_n.items() if e.value < 0 and adj[n] < 0.05]
    trend = ""
    if per_n:
        trend = (f"Fitted across all S_par at each budget (Elo per doubling of S_par, 95% profile-likelihood interval, "
                 f"p Holm-adjusted over {len(per_n)} budgets): "
                 + "; ".join(f"N = {n}: {e.text('Elo', p=adj[n])}" for n, e in per_n.items())
                 + f". So the loss grows with S_par at {len(grows)} of {len(per_n)} budgets"
                 + (f" (N = {', '.join(str(n) for n in grows)})" if grows else "") + ". ")
    shrink_txt, shrink = "", None
    at_top = t[t.s_par == top_p].sort_values("sims")
    if len(at_top) >= 2:
        shrink = elo_per_doubling(np.log2(at_top.sims), _points(at_top), at_top.games, anchored=False)
        shrink_txt = (f"At S_par {top_p} the Elo changes by {shrink.text('per doubling of N')} from N = {ns[0]} to "
                      f"N = {ns[-1]}: the loss "
                      + ("shrinks with more simulations per move, as at the thesis's long end. " if shrink.significant
                         and shrink.value > 0 else "does not shrink significantly with more simulations per move. "))
    moves = t.groupby("sims").apply(lambda d: float((d.mean_moves * d.games).sum() / d.games.sum()),
                                    include_groups=False) if "mean_moves" in t else pd.Series(dtype=float)
    confound = ""
    reach = [n for n in ns if n >= SearchConfig.resign_min_visits]
    if len(moves) >= 2 and moves.max() > 1.3 * moves.min():
        confound = ("Games last " + ", ".join(f"{moves[n]:.0f} moves at N = {n}" for n in moves.index)
                    + f" on average: a side resigns only after {SearchConfig.resign_min_visits} root visits, which "
                    + (f"N = {', '.join(str(n) for n in reach)} reaches" if reach else "the larger budgets reach")
                    + " in one move, so those games end early and the budgets differ in game length as well as in "
                    "simulations (a confound in the comparison across N). ")
    agreement = control + (
        f"Like Figure 4.15, more simulations in flight cost strength at equal simulation counts: "
        f"{len(sig)} of {int((t.s_par > 1).sum())} points with S_par > 1 are below 0 with 95% confidence (worst "
        f"{_fmt(worst.elo) if worst is not None else 'n/a'} Elo at N = {int(worst.sims) if worst is not None else 0}, "
        f"S_par = {int(worst.s_par) if worst is not None else 0}). " + trend
        + (f"With one budget (N = {ns[0]}) this run cannot test the thesis's finding that the loss shrinks with more "
           f"simulations per move. " if shrink is None else shrink_txt) + confound
        + f"Our intervals are about +-{half:.0f} Elo (median half-width; {games_range(t.games)} games per point), "
        f"on 9x9 without the thesis's progressive widening, which it credits for the small loss at low N.")
    summary = {"points": len(t), "games_per_point": int(t.games.median()) if len(t) else 0,
               "median_half_interval_elo": round(half, 0),
               "elo": {f"N{int(r.sims)}/S{int(r.s_par)}": (None if r.elo is None or not math.isfinite(float(r.elo))
                                                          else round(float(r.elo))) for r in t.itertuples()},
               "points_below_zero_95": int(len(sig)),
               "elo_per_doubling_s_par": {str(n): [_round(e.value), _round(e.low), _round(e.high), round(adj[n], 4)]
                                          for n, e in per_n.items()}}
    if shrink is not None:
        summary[f"elo_per_doubling_n_at_s_par_{top_p}"] = [_round(shrink.value), _round(shrink.low),
                                                           _round(shrink.high), round(shrink.p, 4)]
    return agreement, summary


def _round(v: float):
    return round(v) if math.isfinite(v) else None


def cfg_list(col) -> list[int]:
    return sorted(set(int(x) for x in col))


# --- pooling runs --------------------------------------------------------------------------------------------
# Games of separate runs (other seeds, other machines: both sides make exactly N simulations, so the machine
# does not matter) add up per point. The kept runs stay beside the pooled points, in runs/.

SUMS = ("games", "wins", "losses", "draws", "void", "our_faults")
MEANS = ("mean_moves", "seconds_per_move", "opponent_seconds_per_move", "mean_game_seconds")  # weighted by games


def pool(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """One row per (sims, s_par): counts summed over the runs, win rate, Wilson interval and Elo recomputed
    from the sums (model/stats.py), per-game means weighted by each run's games."""

    t = pd.concat(frames, ignore_index=True)
    rows = []
    for (n, p), d in t.groupby(["sims", "s_par"], sort=True):
        row = {"sims": int(n), "s_par": int(p), "sims_per_s_par": n / p}
        row.update({k: int(d[k].sum()) for k in SUMS if k in d})
        st = match_stats(row["wins"], row["losses"], row["draws"]).as_dict()
        row.update({k: st[k] for k in ("win_rate", "ci_low", "ci_high", "elo", "elo_low", "elo_high")})
        row.update({k: float((d[k] * d.games).sum() / d.games.sum()) for k in MEANS if k in d})
        rows.append(row)
    return pd.DataFrame(rows)


def pool_runs(directory: Path) -> Path:
    """points.csv of `directory` := the pool of its runs/*.csv; summary.json says which runs, then the report
    is rebuilt (experiments.runner.rebuild_report)."""
    runs = sorted((directory / "runs").glob("*.csv"))
    if not runs:
        raise ConfigError(f"{directory / 'runs'}: no run CSVs to pool")
    frames = [pd.read_csv(r) for r in runs]
    t = pool(frames)
    t.to_csv(directory / "points.csv", index=False)
    pd.concat([f[["sims", "s_par", "games", "wins", "losses", "draws"]].assign(run=r.stem) for r, f in zip(runs, frames)],
              ignore_index=True).to_csv(directory / "runs.csv", index=False)
    summary_path = directory / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {"experiment": "parallel-degree"}
    cfg = summary.setdefault("config", {})
    cfg["sims"] = sorted(int(x) for x in t.sims.unique())
    cfg["s_par"] = sorted(int(x) for x in t.s_par.unique())
    cfg["games"] = int(t.games.max())
    summary["date"] = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
    summary["pooled_from"] = [{"run": r.name, "points": len(f), "games": int(f.games.sum())}
                              for r, f in zip(runs, frames)]
    summary["machine"] = f"{len(runs)} pooled runs (runs/*.csv: their names say date, machine and seed)"
    summary["commit"] = git_commit()  # the code that pooled them; each run's own is in its name where known
    summary.pop("wall_s", None)  # the runs' own walls are not kept
    summary["tables"] = ["points.csv", "runs.csv"]
    summary_path.write_text(json.dumps(summary, indent=2, default=float) + "\n")
    return rebuild_report("parallel-degree", directory)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.parallel_degree",
                                 description="Pool the kept runs of parallel-degree (DIR/runs/*.csv) into DIR/points.csv "
                                             "and rebuild the report.")
    ap.add_argument("command", choices=["pool"])
    where = ap.add_mutually_exclusive_group(required=True)  # the committed result changes only when asked to
    where.add_argument("--dir", type=Path, help="a run directory (its runs/*.csv)")
    where.add_argument("--update-reference", action="store_true",
                       help="the committed reference run, experiments/results/parallel-degree/")
    args = ap.parse_args(argv)
    try:
        pool_runs(REFERENCE_DIR / "parallel-degree" if args.update_reference else args.dir)
    except ConfigError as e:
        print(f"parallel-degree: {e}")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
