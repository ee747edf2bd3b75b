"""parameters: N_dup and N_sync (Schaefers 2014, Figures 4.22, 4.23), in the simulator and in the engine.

Simulator part (functional fidelity: model/'s treesplit roles run for real, so duplication, synchronisation
and broadcast merging emerge): one run per value of N_dup (N_sync at its reference) and per value of N_sync_min
(N_sync_max = 2 N_sync_min, N_dup at its reference). Per run: synchronisation traffic (SYNC + DUP + BCAST
messages and all bytes per simulation), hops (MOVE messages) per simulation, nodes duplicated, the
simulation rate, and load imbalance = the busiest search rank's mean worker busy fraction over the mean of
all search ranks (from the trace's per-rank samples; packages and messages are sampled at a low rate).

Engine part (strength): UCT-Treesplit on local MPI ranks, 9x9, plays a fixed opponent (GNU Go) for each
N_dup value in `strength_n_dup` and each N_sync_min value in `strength_n_sync_min` (at `strength_ref_n_dup`);
win rate with its 95% Wilson interval and Elo (engine/match.py). Small by default: it shows the mechanics and
the direction, not the thesis's error bars.

Both parts need searches long enough that nodes pass N_dup: a node is duplicated once it has N_dup visits, so in
a search of S simulations N_dup values above S leave the root (shared from the start) the only duplicated node.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from bokeh.layouts import column
from bokeh.models import ColumnDataSource, HoverTool, LinearAxis, Range1d, Whisker

from engine.player import PlayerConfig
from engine.trace_files import read_trace
from experiments.games import games_range, play
from experiments.report import Outcome, Section, figure, quote, table_widget
from experiments.runner import kept
from experiments.significance import holm, kendall, p_text, slope
from model.config import check, from_dict
from model.roles.params import thesis_rules
from model.stats import scores_p_value
from sim.simulate import SimConfig, simulate

QUESTION = ("How do N_dup and N_sync (min, max = 2 min) change synchronisation traffic, hops per simulation, load "
            "imbalance and playing strength?")
REFERENCE = ("Schaefers 2014, 4.3.4: Figure 4.22 (strength vs N_dup, bell-shaped) and Figure 4.23 (strength vs "
             "N_sync_min with N_sync_max = 2 N_sync_min), Gomorra on 32(+8) CNs against Pachi, 19x19; reference point "
             "N_dup = 8192, N_sync = 8/16, alpha = 0.02, O = 5.")
SYNC_KINDS = ("SYNC", "DUP", "BCAST")


@dataclass
class Config:
    # simulator
    profile: str = "oculus"
    nodes: int = 4                  # search CNs (2 ranks each) + 1 broadcast rank per 4 search ranks
    game: str = "pgame"
    seconds: float = 1.0            # simulated seconds per run (~50k simulations: nodes pass every N_dup swept)
    warmup: float = 0.2
    n_dup: list = field(default_factory=lambda: [64, 256, 1024, 4096, 8192, 16384])
    n_sync_min: list = field(default_factory=lambda: [1, 2, 4, 8, 16, 32])
    ref_n_dup: int = 8192
    ref_n_sync_min: int = 8
    seed: int = 0
    # engine strength
    strength_n_dup: list = field(default_factory=lambda: [32, 1024, 8192])
    strength_n_sync_min: list = field(default_factory=lambda: [1, 32])   # at N_dup = strength_ref_n_dup
    strength_ref_n_dup: int = 256
    strength_games: int = 20        # per point (0: skip the engine part)
    strength_sims: int = 3000       # simulations per move
    strength_ranks: int = 2
    strength_bcast_ranks: int = 1
    opponent: str = "gnugo --mode gtp --level 1 --chinese-rules"
    board: int = 9
    komi: float = 7.0
    jobs: int = 1                   # games at once (worker processes; each runs strength_ranks MPI ranks)

    def validate(self) -> None:
        check(self.nodes >= 1, "nodes", "need >= 1")
        check(self.game in ("pgame", "go"), "game", "pgame or go")
        check(self.seconds > 0 and self.warmup >= 0, "seconds", "need seconds > 0, warmup >= 0")
        check(all(isinstance(v, (int, float)) and v >= 1 for v in self.n_dup) and len(self.n_dup) >= 1, "n_dup",
              "need values >= 1")
        check(all(isinstance(v, int) and v >= 1 for v in self.n_sync_min) and len(self.n_sync_min) >= 1,
              "n_sync_min", "need whole numbers >= 1")
        check(all(isinstance(v, (int, float)) and v >= 1 for v in self.strength_n_dup), "strength_n_dup",
              "need values >= 1")
        check(all(isinstance(v, int) and v >= 1 for v in self.strength_n_sync_min), "strength_n_sync_min",
              "need whole numbers >= 1")
        check(self.strength_games >= 0, "strength_games", "need >= 0")
        check(self.strength_sims >= 10, "strength_sims", "need >= 10")
        check(self.strength_ranks >= 1 and self.strength_bcast_ranks >= 0, "strength_ranks", "need >= 1 (+ >= 0)")
        check(self.jobs >= 1, "jobs", "need >= 1")


def sim_point(cfg: Config, params: dict, tmp: Path) -> dict:
    trace = tmp / "trace"
    shutil.rmtree(trace, ignore_errors=True)
    s = simulate(SimConfig(algo="treesplit", profile=cfg.profile, nodes=cfg.nodes, seconds=cfg.seconds,
                           warmup=cfg.warmup, fidelity="functional", game=cfg.game,
                           params={**thesis_rules("treesplit"), **params}, seed=cfg.seed,
                           trace=str(trace), sample_rate=0.01, sample_interval=cfg.seconds / 20))
    samples = read_trace(trace).samples
    M = s["search_ranks"]
    t0 = cfg.warmup
    per_rank = samples[(samples.t > t0) & (samples["rank"] < M)].groupby("rank").busy_frac.mean()
    imbalance = float(per_rank.max() / per_rank.mean()) if per_rank.mean() > 0 else float("nan")
    dup = samples[samples["rank"] < M].groupby("rank").nodes_duplicated.max().max()
    by_kind = s["messages_by_kind_per_s"]
    sync_msgs = sum(by_kind.get(k, 0.0) for k in SYNC_KINDS) / s["sims_per_s"] if s["sims_per_s"] else float("nan")
    return {"sims_per_s": s["sims_per_s"], "busy_frac": s["busy_frac"], "hops_per_sim": s["hops_per_sim"],
            "sync_msgs_per_sim": sync_msgs, "messages_per_sim": s["messages_per_sim"],
            "bytes_per_sim": s["bytes_per_sim"], "out_gbit_per_rank": s["out_gbit_per_rank"],
            "bcast_out_gbit_per_rank": s["bcast_out_gbit_per_rank"], "load_imbalance": imbalance,
            "nodes_duplicated": int(dup) if dup == dup else 0, "search_ranks": M, "bcast_ranks": s["bcast_ranks"],
            "sims": s["sims"]}


def strength_point(cfg: Config, sweep: str, n_dup: float, n_sync_min: int, out: Path) -> dict:
    player = from_dict(PlayerConfig, {
        "algo": "treesplit", "sims": cfg.strength_sims, "seed": cfg.seed + 1, "ranks": cfg.strength_ranks,
        "threads": 1, "algo_params": {"n_dup": n_dup, "n_sync_min": n_sync_min, "n_sync_max": 2 * n_sync_min,
                                      "bcast_ranks": cfg.strength_bcast_ranks}})
    return {"sweep": sweep, "n_dup": n_dup, "n_sync_min": n_sync_min,
            **play(player, cfg.opponent, cfg.strength_games, out, cfg.board, cfg.komi, cfg.jobs)}


def run(cfg: Config, out: Path):
    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="treesplit-parameters-"))
    try:
        for v in cfg.n_dup:
            r = sim_point(cfg, {"n_dup": v, "n_sync_min": cfg.ref_n_sync_min, "n_sync_max": 2 * cfg.ref_n_sync_min},
                          tmp)
            rows.append({"sweep": "n_dup", "n_dup": v, "n_sync_min": cfg.ref_n_sync_min,
                         "n_sync_max": 2 * cfg.ref_n_sync_min, **r})
            print(f"  n_dup={v}: {r['sync_msgs_per_sim']:.3f} sync msgs/sim, {r['hops_per_sim']:.2f} hops/sim, "
                  f"imbalance {r['load_imbalance']:.2f}", flush=True)
        for v in cfg.n_sync_min:
            r = sim_point(cfg, {"n_dup": cfg.ref_n_dup, "n_sync_min": v, "n_sync_max": 2 * v}, tmp)
            rows.append({"sweep": "n_sync", "n_dup": cfg.ref_n_dup, "n_sync_min": v, "n_sync_max": 2 * v, **r})
            print(f"  n_sync_min={v}: {r['sync_msgs_per_sim']:.3f} sync msgs/sim, {r['hops_per_sim']:.2f} hops/sim",
                  flush=True)
        strength = []
        if cfg.strength_games:
            points = ([("n_dup", v, cfg.ref_n_sync_min) for v in cfg.strength_n_dup]
                      + [("n_sync", cfg.strength_ref_n_dup, v) for v in cfg.strength_n_sync_min])
            for sweep, nd, ns in points:
                s = strength_point(cfg, sweep, nd, ns, tmp / f"match-{sweep}-{nd}-{ns}")
                strength.append(s)
                print(f"  strength n_dup={nd:g} n_sync_min={ns}: {s['wins']}/{s['games']} won vs "
                      f"{cfg.opponent.split()[0]}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    tables = {"sweeps": pd.DataFrame(rows)}
    if strength:
        tables["strength"] = pd.DataFrame(strength)
    return outcome(cfg, kept(out, tables))


def _sweep_fig(d: pd.DataFrame, x: str, title: str, x_label: str):
    f = figure(title, x_label, "per simulation", "Synchronisation messages (SYNC + DUP + BCAST) and hops (MOVE) per "
               "simulation; load imbalance (busiest search rank / mean) on the right axis.", x_axis_type="log")
    src = ColumnDataSource(d)
    rs = [f.line(x, "sync_msgs_per_sim", source=src, line_width=2, legend_label="sync messages / sim"),
          f.line(x, "hops_per_sim", source=src, line_width=2, color="darkorange", legend_label="hops / sim")]
    f.scatter(x, "sync_msgs_per_sim", source=src, size=6)
    f.scatter(x, "hops_per_sim", source=src, size=6, color="darkorange")
    top = float(max(d.load_imbalance.max(), 1.0)) * 1.1 if len(d) else 2.0
    f.extra_y_ranges = {"imb": Range1d(0.9, top)}
    f.add_layout(LinearAxis(y_range_name="imb", axis_label="load imbalance (max / mean busy)"), "right")
    rs.append(f.line(x, "load_imbalance", source=src, y_range_name="imb", line_width=2, color="firebrick",
                     line_dash="dashed", legend_label="load imbalance"))
    f.add_tools(HoverTool(renderers=rs, tooltips=[(x, f"@{x}"), ("sync msgs/sim", "@sync_msgs_per_sim{0.000}"),
                                                  ("hops/sim", "@hops_per_sim{0.00}"),
                                                  ("imbalance", "@load_imbalance{0.00}"),
                                                  ("nodes duplicated", "@nodes_duplicated"),
                                                  ("sims/s", "@sims_per_s{0.0a}")]))
    f.legend.location = "top_right"
    f.legend.label_text_font_size = "8pt"
    return f


def _strength_fig(s: pd.DataFrame, x: str, label: str):
    f = figure(f"win rate against the fixed opponent vs {label}", label, "win rate (95% Wilson interval)",
               "Engine games on 9x9 against the configured opponent.", x_axis_type="log", y_range=(0, 1))
    src = ColumnDataSource(s)
    f.scatter(x, "win_rate", source=src, size=9)
    f.add_layout(Whisker(source=src, base=x, lower="ci_low", upper="ci_high"))
    return f


TREND_METRICS = (("sync_msgs_per_sim", "sync messages/sim", ".3f"), ("hops_per_sim", "hops/sim", ".2f"),
                 ("load_imbalance", "load imbalance", ".3f"))


def _sweep_words(d: pd.DataFrame, x: str, name: str) -> tuple[str, dict]:
    """Each metric's trend across a sweep's points against log2(x), in words that say "not significant" where
    neither the slope nor the rank test is; and rows that repeat one configuration (only the root duplicated),
    which the words name."""
    parts, trends = [], {}
    logx = np.log2(d[x].astype(float))
    for col, label, fmt in TREND_METRICS:
        sl, kd = slope(logx, d[col]), kendall(d[x], d[col])
        # slope per doubling, its 95% interval, its p; Kendall's p
        trends[col] = [round(v, 4) for v in (sl.value, sl.low, sl.high, sl.p, kd.p)]
        verdict = ("rises" if sl.value > 0 else "falls") if sl.significant and kd.significant else (
            "no significant trend" if not (sl.significant or kd.significant) else "a trend only one test finds")
        parts.append(f"{label} {format(float(d[col].iloc[0]), fmt)} to {format(float(d[col].iloc[-1]), fmt)}, "
                     f"{verdict} (slope {format(sl.value, '+' + fmt)} per doubling, 95% [{format(sl.low, '+' + fmt)}, "
                     f"{format(sl.high, '+' + fmt)}], {p_text(sl.p)}; Kendall tau {kd.value:+.2f}, {p_text(kd.p)})")
    words = "; ".join(parts) + "."
    if "nodes_duplicated" in d and x == "n_dup":
        root_only = d[d.nodes_duplicated <= 1]
        if len(root_only) >= 2:
            words += (f" At N_dup {', '.join(f'{v:g}' for v in root_only[x])} only the root is duplicated "
                      f"(nodes_duplicated = 1), so these {len(root_only)} points measure nearly one configuration: "
                      f"duplication here is all-or-root, and only longer searches or bigger boards would put N_dup's "
                      f"upper range where the duplicated set changes.")
    return words, trends


def _strength_words(cfg: Config, st: pd.DataFrame, x: str, label: str, lead: str = "The engine games") -> str:
    """Every pair of a sweep's values compared by the two-proportion test, Holm-corrected for the number of pairs."""
    rows = list(st.itertuples())
    pairs = [(a, b) for i, a in enumerate(rows) for b in rows[i + 1:]]
    adj = holm([scores_p_value(a.win_rate, a.games, b.win_rate, b.games) for a, b in pairs])
    sig = [(a, b, q) for (a, b), q in zip(pairs, adj) if q < 0.05]
    at = lambda r: f"{label} {getattr(r, x):g}"  # noqa: E731
    scores = ", ".join(f"{at(r)}: {r.wins} won of {r.games}, score {r.win_rate:.2f} [{r.ci_low:.2f}, "
                       f"{r.ci_high:.2f}]" for r in rows)
    tests = "; ".join(f"{getattr(a, x):g} vs {getattr(b, x):g} {p_text(q)}" for (a, b), q in zip(pairs, adj))
    head = (f"{lead} ({scores} against {cfg.opponent.split()[0]}; Holm-adjusted two-proportion tests over "
            f"{len(pairs)} pair{'s' * (len(pairs) != 1)}: {tests}) ")
    if not sig:
        return head + (f"do not separate the {label} values (not significant at {games_range(st.games)} games each): "
                       "the thesis's curves span a few tens of Elo, which needs hundreds of games per point.")
    return head + ("separate " + "; ".join(
        f"{at(a if a.win_rate > b.win_rate else b)} above {getattr(b if a.win_rate > b.win_rate else a, x):g}"
        for a, b, _ in sig) + " (the other pairs: not significant"
        + (f"; the separations are near the 5% line, and the z-test is approximate at {games_range(st.games)} games a point"
           if max(q for _, _, q in sig) > 0.01 else "") + ")."
        + (" Low N_dup is the side of Figure 4.22's bell where the thesis names duplicated statistics that lag behind "
           "their synchronisation; its other side (contention on hot nodes not yet duplicated) needs more ranks than "
           f"{cfg.strength_ranks}." if x == "n_dup" else ""))


def _strength_tables(tables: dict) -> dict[str, pd.DataFrame]:
    """The strength rows of each sweep (a table kept from before N_sync had games holds N_dup rows only)."""
    st = tables.get("strength")
    if st is None:
        return {}
    if "sweep" not in st:
        st = st.assign(sweep="n_dup")
    return {k: g.sort_values("n_dup" if k == "n_dup" else "n_sync_min") for k, g in st.groupby("sweep")}


def outcome(cfg: Config, tables: dict):
    t = tables["sweeps"]
    nd = t[t.sweep == "n_dup"].sort_values("n_dup")
    ns = t[t.sweep == "n_sync"].sort_values("n_sync_min")
    ours_dup = _sweep_fig(nd, "n_dup", "N_dup sweep (simulator)", "N_dup")
    ours_sync = _sweep_fig(ns, "n_sync_min", "N_sync sweep (simulator)", "N_sync_min")
    strength = _strength_tables(tables)
    st, st_sync = strength.get("n_dup"), strength.get("n_sync")
    if st is not None:
        ours_dup = column(ours_dup, _strength_fig(st, "n_dup", "N_dup"),
                          table_widget(st[["n_dup", "games", "wins", "win_rate", "ci_low", "ci_high"]].round(3)))
    if st_sync is not None:
        ours_sync = column(ours_sync, _strength_fig(st_sync, "n_sync_min", "N_sync_min"),
                           table_widget(st_sync[["n_sync_min", "n_dup", "games", "wins", "win_rate", "ci_low",
                                                 "ci_high"]].round(3)))
    lo, hi = nd.iloc[0], nd.iloc[-1]
    slo, shi = ns.iloc[0], ns.iloc[-1]
    sections = [
        Section("Figure 4.22: N_dup", ours_dup,
                quote("We observe a bell-shaped curve. Low values of N_dup result in larger portions of the tree that "
                      "get duplicated. This results in more statistics that are less accurate due to delayed "
                      "synchronization. For very high values of N_dup it happens that frequently visited tree nodes that "
                      "are not yet duplicated lead to high contention on single CNs, leading in turn to severe load "
                      "imbalances and thereby to reduced simulation rates. ... Although reducing N_dup decreases the "
                      "communication overhead for single simulations because less CN hops take place, the overhead for "
                      "synchronizing shared nodes statistics increases because more nodes are shared.",
                      "Schaefers 2014, 4.3.1 and 4.3.4, Figure 4.22 (strength only)"),
                f"Ours, {cfg.nodes}(+{int(lo.bcast_ranks) // 2}) CNs of the {cfg.profile} profile, {cfg.game}: from "
                f"N_dup {lo.n_dup:g} to {hi.n_dup:g}, sync messages/sim {lo.sync_msgs_per_sim:.3f} to "
                f"{hi.sync_msgs_per_sim:.3f}, hops/sim {lo.hops_per_sim:.2f} to {hi.hops_per_sim:.2f}, load imbalance "
                f"{lo.load_imbalance:.2f} to {hi.load_imbalance:.2f}, nodes duplicated {lo.nodes_duplicated} to "
                f"{hi.nodes_duplicated}."
                + ("" if st is None else
                   f" The games: UCT-Treesplit on {cfg.strength_ranks}(+{cfg.strength_bcast_ranks}) real ranks, Go "
                   f"{cfg.board}x{cfg.board}, {cfg.strength_sims} simulations a move, against "
                   f"{' '.join(cfg.opponent.split()[:1] + cfg.opponent.split()[3:5])}, {games_range(st.games)} games per N_dup "
                   "value, colours alternating; whiskers are 95% Wilson intervals.")),
        Section("Figure 4.23: N_sync_min (N_sync_max = 2 N_sync_min)",
                ours_sync,
                quote("We see that a reduction of the synchronization rate by increasing the value of N_sync_max leads "
                      "to reduced playing strength. ... Mind that network traffic increases when synchronizing more "
                      "frequently, i.e., for low values of N_sync_min and N_sync_max.",
                      "Schaefers 2014, 4.3.4, Figure 4.23 (strength only)"),
                f"Ours: from N_sync_min {slo.n_sync_min} to {shi.n_sync_min}, sync messages/sim "
                f"{slo.sync_msgs_per_sim:.3f} to {shi.sync_msgs_per_sim:.3f}."
                + ("" if st_sync is None else
                   f" The games: as for N_dup, at N_dup {st_sync.n_dup.iloc[0]:g}, {games_range(st_sync.games)} games "
                   "per N_sync_min value.")),
    ]
    dup_words, dup_trends = _sweep_words(nd, "n_dup", "N_dup")
    sync_words, sync_trends = _sweep_words(ns, "n_sync_min", "N_sync_min")
    strength_txt = "" if st is None else " " + _strength_words(cfg, st, "n_dup", "N_dup")
    sync_strength_txt = (" N_sync has no strength run here (Figure 4.23 is strength only): its sweep shows traffic "
                         "alone." if st_sync is None else
                         " " + _strength_words(cfg, st_sync, "n_sync_min", "N_sync_min",
                                               f"The engine games at N_dup {st_sync.n_dup.iloc[0]:g}"))
    agreement = (
        f"Trends are tested across all points of a sweep (OLS slope per doubling with its 95% t interval, and "
        f"Kendall's rank test). N_dup {lo.n_dup:g} ... {hi.n_dup:g}: {dup_words} "
        f"N_sync_min {slo.n_sync_min} ... {shi.n_sync_min}: {sync_words} "
        f"The thesis says lowering N_dup trades hops for synchronisation traffic and lowering N_sync raises the "
        f"traffic; it reports only strength against Pachi on 32(+8) CNs. Our traffic, hop and imbalance curves are "
        f"the mechanisms it names, measured on a small simulated cluster whose searches see far fewer simulations "
        f"than a 19x19 move on OCuLUS, so N_dup's scale is shifted down; imbalance, which the thesis blames for the "
        f"bell's high-N_dup side, needs hot nodes that more ranks and longer searches make."
        + strength_txt + sync_strength_txt)
    summary = {"n_dup_range": [float(lo.n_dup), float(hi.n_dup)],
               "sync_msgs_per_sim_at_n_dup_ends": [round(float(lo.sync_msgs_per_sim), 4), round(float(hi.sync_msgs_per_sim), 4)],
               "hops_per_sim_at_n_dup_ends": [round(float(lo.hops_per_sim), 3), round(float(hi.hops_per_sim), 3)],
               "imbalance_at_n_dup_ends": [round(float(lo.load_imbalance), 3), round(float(hi.load_imbalance), 3)],
               "sync_msgs_per_sim_at_n_sync_ends": [round(float(slo.sync_msgs_per_sim), 4), round(float(shi.sync_msgs_per_sim), 4)]}
    summary["trends_n_dup"] = dup_trends
    summary["trends_n_sync_min"] = sync_trends
    if st is not None:
        summary["strength"] = {str(r.n_dup): [int(r.wins), int(r.games)] for r in st.itertuples()}
    if st_sync is not None:
        summary["strength_n_sync_min"] = {str(r.n_sync_min): [int(r.wins), int(r.games)] for r in st_sync.itertuples()}
    samples = (f"{len(nd)} N_dup and {len(ns)} N_sync_min simulator runs, one seed each ({int(nd.sims.median())} "
               "simulations a run)" + ("" if st is None else f"; {games_range(st.games)} games per N_dup strength point")
               + ("" if st_sync is None else f", {games_range(st_sync.games)} per N_sync_min point"))
    return Outcome(tables=tables, sections=sections, agreement=agreement, summary=summary, samples=samples)
