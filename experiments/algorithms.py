"""algorithms: Christoph 2020's comparison of root, leaf, tds, dfuct and treesplit by PPS and NPS as compute grows,
on Lines of Action (Christoph 2020's domain) and on Go 9x9 - measured where it fits, predicted beyond.

Three sources, one chart per domain and metric, x = worker cores:
  - measured here: each algorithm on 1 and 2 real MPI ranks (one worker thread each; engine/mpi), a timed
    search from the initial position; PPS = playouts/s, NPS = nodes stored/s (the engine's table entries,
    unique per rank; root parallelisation's ranks each store their own copy). The sequential search is the
    1-core reference.
  - measured on a 16-core Xeon (Go 19x19, random playouts; experiments/results/bench_parallel_scaling-16core.json,
    `treesplit bench parallel --scaling --cores 16`): every algorithm on 1 ... 16 ranks.
  - predicted: the simulator (statistical fidelity) with sim/profiles/lengau.toml, Christoph 2020's cluster (CNs of
    12 cores, FDR InfiniBand), carrying `costs`'s node costs (sim.uncertainty.mixed; by default the committed
    sim-validation calibration of this engine), 1 ... 128 CNs (11 workers each); LOA's playout
    cost scaled from Go 9x9's by the playout benchmarks (experiments/results/bench-playouts-*.json). The
    statistical fidelity models treesplit, tds, root and leaf; dfuct, which it does not model, is predicted by
    the functional fidelity (df-UCT's roles run for real on Go 9x9's tree, same profile and simulated span).
    Predicted NPS is only the workload's nodes-per-simulation times PPS, so it is not drawn.
  `reuse_measured = true` keeps the measured rows of the last run in the output directory and only predicts
  again (a simulator change does not need the real ranks again); every measured or played row carries the date,
  machine and commit it was measured on, so kept rows keep theirs.
Strength (Christoph 2020, 5.1 and 5.3.3, Figure 5.9: each agent against the 1-CN root/tree agent, 100 games per
point, 50 with each colour): with `strength_games` > 0, each algorithm
on `strength_ranks` real ranks plays that many games of each game in `strength_on` (Go 9x9 through the GTP
referee; LOA, Christoph 2020's domain, refereed by its own rules: experiments/games.py) against the sequential search
at the same seconds per move, colours alternating, which is as far as this machine's cores reach. On LOA no
side uses RAVE (Christoph 2020's agents have none); on Go all but dfuct do. With `reuse_measured`, an earlier run's
strength.csv is kept unless `strength_games` asks for new games; a run that plays games keeps the output
directory's earlier rows of the games it does not play (each with its own stamp).
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from bokeh.layouts import column, row
from bokeh.models import ColumnDataSource, HoverTool, Span, Whisker

from engine import algorithms
from engine.mpi import DistributedConfig, run_distributed
from engine.player import PlayerConfig
from engine.sequential import Position
from engine.timecontrol import Budget
from engine.results import row_stamp
from experiments.games import games_range, play, play_loa, time_check
from experiments.report import Outcome, Section, figure, quote, table_widget
from experiments.runner import kept
from experiments.significance import elo_difference, holm, p_text
from model.config import check, from_dict
from model.errors import UserError
from model.game import make_game
from model.results import REFERENCE_DIR
from sim.profile import load_profile, profile_from_dict
from sim.simulate import SimConfig, simulate
from sim.uncertainty import mixed

QUESTION = ("How do root, leaf, tds, dfuct and treesplit compare by playouts per second (PPS) and nodes per second "
            "(NPS) as compute grows, on Lines of Action and on Go: measured on real ranks here and on 16 cores, "
            "predicted by the simulator up to 128 compute nodes of Christoph 2020's cluster; and by strength against "
            "the sequential search where real ranks fit (Go 9x9 and Lines of Action)?")
REFERENCE = ("Christoph 2020, 5.3.1-5.3.3: Figures 5.7 (PPS), 5.8 (NPS) and 5.9 (win rate) of root/leaf, "
             "root/tree, leaf, TDS, df-UCT and UCT-Treesplit agents on LOA, 1 ... 128 CNs of 12 cores on the Lengau "
             "cluster (FDR InfiniBand), 1 s per move. Its figures reach us as prose.")
ALGOS = ("root", "leaf", "tds", "dfuct", "treesplit")
PREDICTED = ("root", "leaf", "tds", "dfuct", "treesplit")
STATISTICAL = ("root", "leaf", "tds", "treesplit")   # the others are predicted in functional fidelity
BENCH_16 = "bench_parallel_scaling-16core.json"
BENCH_16_BOARD = "19"  # the board its squares show (the file may hold others)
GAME_TITLES = {"go": "Go 9x9", "loa": "Lines of Action"}
# this engine's node costs as the sim-validation experiment last calibrated them (treesplit 2x1 9x9)
COSTS = "experiments/results/sim-validation/reference-profile.toml"
REPO_DIR = REFERENCE_DIR.parent.parent
PLAYOUT_BENCH = {"go": "bench-playouts-9-light.json", "loa": "bench-playouts-loa-knowledge.json"}


@dataclass
class Config:
    games: list = field(default_factory=lambda: ["go", "loa"])
    algos: list = field(default_factory=lambda: list(ALGOS))
    ranks: list = field(default_factory=lambda: [1, 2])       # measured here
    seconds: float = 2.0                                       # per measured search
    board: int = 9                                             # Go
    profile: str = "lengau"
    costs: str = COSTS                                         # node costs of the prediction ("": the profile's)
    nodes: list = field(default_factory=lambda: [1, 2, 4, 8, 16, 32, 64, 128])  # predicted CNs
    sim_seconds: float = 0.01                                  # simulated seconds per point
    sim_warmup: float = 0.004
    functional_seconds: float = 0.02                           # dfuct (functional fidelity): a longer span,
    functional_warmup: float = 0.01                            # its 128-CN start-up takes ~0.01 s
    seed: int = 1
    timeout: float = 180.0
    reuse_measured: bool = False                               # keep the last run's measured rows
    strength_games: int = 0                                    # per algorithm against sequential (0: none)
    strength_ranks: int = 2                                    # ranks of each algorithm in those games
    strength_seconds: float = 0.25                             # per move, both sides
    strength_on: list = field(default_factory=lambda: ["go", "loa"])  # the games they play
    move_timeout: float = 120.0

    def validate(self) -> None:
        check(len(self.games) >= 1 and all(g in ("go", "loa") for g in self.games), "games", "go and/or loa")
        check(len(self.algos) >= 1 and all(a in ALGOS for a in self.algos), "algos", f"some of {', '.join(ALGOS)}")
        check(all(isinstance(r, int) and r >= 1 for r in self.ranks), "ranks", "need whole numbers >= 1")
        check(self.seconds > 0 and self.sim_seconds > 0 and self.sim_warmup >= 0, "seconds", "need > 0")
        check(all(isinstance(n, int) and n >= 1 for n in self.nodes), "nodes", "need whole numbers >= 1")
        check(isinstance(self.strength_games, int) and self.strength_games >= 0, "strength_games", "need >= 0")
        check(isinstance(self.strength_ranks, int) and self.strength_ranks >= 2, "strength_ranks",
              "need >= 2 (leaf's master needs a playout rank)")
        check(self.strength_seconds > 0 and self.move_timeout > 0, "strength_seconds", "need > 0")
        check(len(self.strength_on) >= 1 and all(g in ("go", "loa") for g in self.strength_on), "strength_on",
              "go and/or loa")


def _game_args(cfg: Config, game: str) -> dict:
    return {"game": game, "board": cfg.board if game == "go" else 8, "komi": 7.0,
            "game_params": {"policy": "light" if game == "go" else "knowledge"}}


def measure_mpi(cfg: Config, game: str, algo: str, ranks: int) -> dict:
    dc = DistributedConfig(algo=algo, ranks=ranks, bcast_ranks=None if algo == "treesplit" else 0, threads=1,
                           seconds=cfg.seconds, seed=cfg.seed, **_game_args(cfg, game))
    res = run_distributed(dc, timeout=cfg.timeout)
    return {"pps": float(res["pps"]), "nps": float(res["nps"]), "sims_per_s": float(res["sims_per_s"]),
            "worker_cores": ranks, "bcast_ranks": int(res.get("bcast_ranks", 0))}


def measure_sequential(cfg: Config, game: str) -> dict:
    a = _game_args(cfg, game)
    g, s = make_game(game, size=a["board"], komi=7.0, **a["game_params"])
    searcher = algorithms.make_searcher("sequential", algorithms.make_config("sequential", {}, seed=cfg.seed))
    pos = Position.initial(g, s)
    searcher.search(pos, Budget(sims=64))  # load the kernels outside the measurement
    searcher.reset()
    r = searcher.search(pos, Budget(seconds=cfg.seconds))
    searcher.close()
    return {"pps": r.pps, "nps": r.nps, "sims_per_s": r.sims_per_s, "worker_cores": 1, "bcast_ranks": 0}


def bench_16core() -> pd.DataFrame:
    """The 16-core Xeon's measured points (Go 19x19, random playouts) from the kept benchmark file (BENCH_16)."""

    p = REFERENCE_DIR / BENCH_16
    if not p.exists():
        return pd.DataFrame()
    d = json.loads(p.read_text())
    rows = []
    for label, e in d["boards"].get(BENCH_16_BOARD, {}).items():
        words = label.split()
        if "+trace" in words or words[0] not in ALGOS + ("sequential",):
            continue
        ranks, threads = (1, 1) if words[0] == "sequential" else map(int, words[1].split("x"))
        rows.append({"source": "16-core Xeon", "game": f"go{BENCH_16_BOARD}", "algo": words[0], "ranks": ranks,
                     "worker_cores": ranks * threads, "pps": e["pps"], "nps": e["nps"], "sims_per_s": e["sims_per_s"],
                     "machine": d["machine"], "date": d["date"], "commit": d.get("commit", ""), "file": BENCH_16})
    return pd.DataFrame(rows)


def _playout_scale(game: str) -> float:
    """LOA's playout cost relative to Go 9x9's, from the playout benchmarks (1.0 for Go)."""

    if game == "go":
        return 1.0
    rate = {g: json.loads((REFERENCE_DIR / f).read_text())["playouts_per_cpu_s_median"] for g, f in PLAYOUT_BENCH.items()}
    return rate["go"] / rate[game]


def cost_profile(cfg: Config):
    """The prediction's profile: cfg.profile's cluster with cfg.costs's node costs (a path relative to the
    repository when it is not one from here)."""
    base = load_profile(cfg.profile)
    if not cfg.costs:
        return base
    path = Path(cfg.costs)
    if not path.exists() and not path.is_absolute() and (REPO_DIR / path).exists():
        path = REPO_DIR / path
    return mixed(base, load_profile(path if path.exists() else cfg.costs))


def predict(cfg: Config, game: str, algo: str, on_point=None) -> list[dict]:
    base = cost_profile(cfg)
    scale = _playout_scale(game)
    data = base.to_toml()
    pl = data["costs"]["playout"]
    for key in ("quantiles", "median", "value", "mean"):
        if key in pl:
            pl[key] = [q * scale for q in pl[key]] if isinstance(pl[key], list) else pl[key] * scale
    prof = profile_from_dict(data, where=f"{base.name} (playout x{scale:.2f}): ")
    rows = []
    for n in cfg.nodes:
        # the simulator plays Go's tree for the statistical fidelity's bookkeeping; the costs carry the domain
        stat = algo in STATISTICAL
        s = simulate(SimConfig(algo=algo, profile=cfg.profile, nodes=n,
                               seconds=cfg.sim_seconds if stat else cfg.functional_seconds,
                               warmup=cfg.sim_warmup if stat else cfg.functional_warmup,
                               fidelity="statistical" if stat else "functional", game="go", board=9, seed=cfg.seed),
                     profile=prof)
        workers = n * prof.node.ranks_per_node * prof.node.workers_per_rank
        row = {"source": f"simulated ({cfg.profile})", "game": game, "algo": algo, "nodes": n,
               "worker_cores": workers, "pps": s["pps"], "nps": None, "sims_per_s": s["sims_per_s"],
               "busy_frac": s["busy_frac"], "playout_scale": round(scale, 3)}
        rows.append(row)
        if on_point:
            on_point(row)
    return rows


def run(cfg: Config, out: Path):
    earlier = Path(out) / "measured.csv"
    if cfg.reuse_measured:
        if not earlier.exists():
            raise UserError(f"reuse_measured: no {earlier} from an earlier run")
        measured = pd.read_csv(earlier)
        print(f"  measured rows kept from {earlier} ({len(measured)})", flush=True)
    else:
        measured = measure_all(cfg)
    pred = []
    for game in cfg.games:
        for algo in [a for a in cfg.algos if a in PREDICTED]:
            pred += predict(cfg, game, algo, lambda r: print(
                f"  predicted {r['game']} {r['algo']} {r['nodes']} CNs: {r['pps']:.3g} PPS, busy {r['busy_frac']:.2f}",
                flush=True))
    tables = {"measured": measured, "bench16": bench_16core(), "predicted": pd.DataFrame(pred)}
    strength = Path(out) / "strength.csv"
    if cfg.strength_games:
        kept_rows = None
        if strength.exists():  # a run that plays some of the games keeps the others' rows, stamped as they were
            old = pd.read_csv(strength)
            kept_rows = old[~old.game.isin(cfg.strength_on)]
            print(f"  strength rows of other games kept from {strength} ({len(kept_rows)})", flush=True)
        tables["strength"] = measure_strength(cfg, Path(out), kept_rows)
    elif cfg.reuse_measured and strength.exists():
        tables["strength"] = pd.read_csv(strength)
        print(f"  strength rows kept from {strength} ({len(tables['strength'])})", flush=True)
    return outcome(cfg, kept(out, tables))


def measure_strength(cfg: Config, out: Path, kept_rows: pd.DataFrame | None = None) -> pd.DataFrame:
    """Each algorithm on cfg.strength_ranks ranks against the sequential search, equal seconds per move, on
    each game of cfg.strength_on; `kept_rows` (an earlier run's rows of other games) stay in the table. The
    table is written after each algorithm, so a run cut short keeps the algorithms it finished."""
    def player(game: str, algo: str, ranks: int | None, seed: int) -> PlayerConfig:
        # Go: each algorithm's own RAVE default (df-UCT's ranks merge no AMAF data, so it plays without); LOA: none
        return from_dict(PlayerConfig, {"algo": algo, "seconds": cfg.strength_seconds, "ranks": ranks,
                                        "threads": 1, "seed": seed, "policy": "light",
                                        "rave": None if game == "go" else False}, where="strength: ")

    rows = [] if kept_rows is None else kept_rows.to_dict("records")
    tmp = Path(tempfile.mkdtemp(prefix="treesplit-algorithms-strength-"))
    try:
        for game in cfg.strength_on:
            for algo in cfg.algos:
                ours, theirs = player(game, algo, cfg.strength_ranks, cfg.seed), player(game, "sequential", None,
                                                                                       cfg.seed + 1)
                row = (play(ours, theirs, cfg.strength_games, tmp / algo, cfg.board, 7.0, 1, cfg.move_timeout)
                       if game == "go" else play_loa(ours, theirs, cfg.strength_games, tmp / f"loa-{algo}"))
                rows.append({"game": game, "algo": algo, "ranks": cfg.strength_ranks, "opponent": "sequential",
                             "rave": ours.algo_config().rave, **row, **row_stamp()})
                print(f"  strength {game} {algo} {cfg.strength_ranks} ranks vs sequential: {row['wins']}-"
                      f"{row['losses']}-{row['draws']}, win rate {row['win_rate']:.2f} [{row['ci_low']:.2f}, "
                      f"{row['ci_high']:.2f}]", flush=True)
                pd.DataFrame(rows).to_csv(out / "strength.csv", index=False)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return pd.DataFrame(rows)


def measure_all(cfg: Config) -> pd.DataFrame:
    rows: list[dict] = []
    for game in cfg.games:
        r = measure_sequential(cfg, game)
        rows.append({"source": "measured here", "game": game, "algo": "sequential", "ranks": 1, **r, **row_stamp()})
        print(f"  {game} sequential: {r['pps']:.0f} PPS, {r['nps']:.0f} NPS", flush=True)
        for algo in cfg.algos:
            for ranks in cfg.ranks:
                if algo == "leaf" and ranks < 2:
                    continue  # the master only walks the tree: leaf needs a playout rank
                try:
                    r = measure_mpi(cfg, game, algo, ranks)
                except Exception as e:  # noqa: BLE001 - one failing configuration is a row, not the end
                    r = {"pps": float("nan"), "nps": float("nan"), "sims_per_s": float("nan"),
                         "worker_cores": ranks, "error": str(e)[:200]}
                rows.append({"source": "measured here", "game": game, "algo": algo, "ranks": ranks, **r, **row_stamp()})
                print(f"  {game} {algo} {ranks} rank(s): {r['pps']:.0f} PPS, {r['nps']:.0f} NPS", flush=True)
    return pd.DataFrame(rows)


COLORS = {"root": "#1f77b4", "leaf": "#ff7f0e", "tds": "#2ca02c", "dfuct": "#9467bd", "treesplit": "#d62728",
          "sequential": "black"}


def _chart(title: str, metric: str, game_label: str, frames: list[tuple[str, pd.DataFrame]]):
    f = figure(title, "worker cores", metric.upper() + " (per second)",
               f"{metric.upper()} against worker cores, {game_label}: lines = simulator on Christoph 2020's cluster "
               "(11 workers per CN), filled circles = measured here, squares = measured on a 16-core Xeon "
               "(Go 19x19, random playouts).", x_axis_type="log", y_axis_type="log", width=560, height=380)
    rends = []
    for kind, d in frames:
        d = d[d[metric].notna() & (d[metric] > 0)]
        for algo, a in d.groupby("algo"):
            src = ColumnDataSource(a.sort_values("worker_cores"))
            c = COLORS.get(algo, "gray")
            if kind == "predicted":
                rends.append(f.line("worker_cores", metric, source=src, color=c, line_width=2, legend_label=algo))
                f.scatter("worker_cores", metric, source=src, color=c, size=4)
            elif kind == "here":
                rends.append(f.scatter("worker_cores", metric, source=src, color=c, size=10, legend_label=algo))
            else:
                rends.append(f.scatter("worker_cores", metric, source=src, color=c, size=9, marker="square",
                                       fill_alpha=0.3, legend_label=algo))
    f.add_tools(HoverTool(renderers=rends, tooltips=[("", "@source"), ("algorithm", "@algo"),
                                                     ("worker cores", "@worker_cores"), (metric, f"@{metric}{{0.0a}}")]))
    f.legend.location = "top_left"
    f.legend.label_text_font_size = "8pt"
    return f


def _legacy_times(st: pd.DataFrame) -> pd.DataFrame:
    """A strength table with an older run's rows (seconds_per_move the budget, our_seconds_per_move the measured
    mean) in the columns experiments/games.py's rows have now; a table may mix old rows (kept) and new ones."""
    if "our_seconds_per_move" not in st:
        return st
    st = st.copy()
    old = st.our_seconds_per_move.notna()
    if "budget_seconds" not in st:
        st["budget_seconds"] = float("nan")
    st.loc[old, "budget_seconds"] = st.loc[old, "seconds_per_move"]
    st.loc[old, "seconds_per_move"] = st.loc[old, "our_seconds_per_move"]
    return st.drop(columns="our_seconds_per_move")


def _stamps(t: pd.DataFrame | None, what: str) -> str:
    """Where and when a table's rows were measured, from their date/machine/commit columns."""
    if t is None or not len(t):
        return ""
    if "date" not in t:
        return f"{what}: not stamped (measured before rows carried their date, machine and commit)"
    seen = dict.fromkeys(f"{r.date[:10]} on {r.machine} at {r.commit}" if isinstance(r.date, str) else
                         "some not stamped (measured before rows carried their date, machine and commit)"
                         for r in t[["date", "machine", "commit"]].itertuples())
    return f"{what}: " + "; ".join(seen)


def outcome(cfg: Config, tables: dict):
    if tables.get("strength") is not None:
        tables = {**tables, "strength": _legacy_times(tables["strength"])}
    m, b16, p = tables["measured"], tables["bench16"], tables["predicted"]
    sections = []
    for game in cfg.games:
        label = GAME_TITLES[game]
        here = m[m.game == game]
        pred = p[p.game == game] if len(p) else p
        frames_pps = [("predicted", pred), ("here", here)] + ([("16", b16)] if game == "go" and len(b16) else [])
        frames_nps = [("here", here)] + ([("16", b16)] if game == "go" and len(b16) else [])
        shown = here[["algo", "ranks", "pps", "nps"]].round(0)
        sections.append(Section(
            f"{label}: PPS and NPS as compute grows",
            column(row(_chart(f"PPS, {label}", "pps", label, frames_pps), _chart(f"NPS, {label} (measured)", "nps",
                                                                                 label, frames_nps)),
                   table_widget(shown, width=420)),
            quote("the root parallelisation-based agents have linear PPS scaling ... The strong PPS scalability of root "
                  "parallelisation can be contrasted with our TDS agent, which performs poorly in terms of raw PPS ... "
                  "The improved PPS scalability of our df-UCT and UCT-Treesplit agents over TDS highlights the benefit "
                  "of mitigating the aforementioned overhead ... our distributed leaf parallelisation agent scales well "
                  "in terms of PPS even though it performs poorly with few CNs ... until 16 CNs, at which point the "
                  "increase in PPS with each doubling in CNs tapers off drastically. ... TDS, df-UCT and UCT-Treesplit "
                  "scale far better in terms of NPS as opposed to PPS ... leaf parallelisation performs particularly "
                  "poorly in terms of NPS.", "Christoph 2020, 5.3.1-5.3.2, Figures 5.7 and 5.8 (LOA, 1 ... 128 CNs)"),
            f"{label}: measured here on {', '.join(str(r) for r in cfg.ranks)} rank(s) x 1 worker thread, "
            f"{cfg.seconds:g} s searches from the initial position; predicted for {min(cfg.nodes)} ... "
            f"{max(cfg.nodes)} CNs of the {cfg.profile} profile"
            + (f" with the node costs of {cfg.costs}." if cfg.costs else ".")
            + (" The simulator plays Go's workload with LOA's playout cost: a prediction of cost scaling, not of "
               "LOA's tree." if game == "loa" else "")))
    st = tables.get("strength")
    if st is not None and len(st):
        played = list(dict.fromkeys(st.game))
        sections.append(Section(
            f"{' and '.join(GAME_TITLES[g] for g in played)}: strength against the sequential search at equal time "
            "per move",
            column(row(*[_strength_chart(st[st.game == g], g) for g in played]), table_widget(
                st[[c for c in ("game", "algo", "ranks", "rave", "games", "wins", "losses", "draws", "win_rate",
                                "ci_low", "ci_high", "elo") if c in st]].round(3), width=660)),
            quote("None of our other implementations were able to achieve a win-rate greater than 50% at any CN "
                  "configuration versus the 1 CN root/tree agent. ... Our distributed leaf parallelisation scales "
                  "well until 16 CNs, at which point it tapers off at a win-rate of approximately 50%. ... "
                  "UCT-Treesplit shows a dip in playing strength at 4 CNs due to the introduction of a second "
                  "SearchRank ... This effect can also be seen for TDS and df-UCT for 2 CNs. ... they are only able "
                  "to achieve a 20-40% win-rate at their strongest configurations ... df-UCT ... a win-rate of "
                  "only 7-20% at its strongest configuration.",
                  "Christoph 2020, 5.1 and 5.3.3, Figure 5.9 (LOA, 100 matches per point, 50 with each colour, "
                  "against the 1-CN root/tree agent, 1 s per move)"),
            f"Ours: each algorithm on {int(st.ranks.iloc[0])} real ranks x 1 thread against our sequential search "
            f"(one core), {cfg.strength_seconds:g} s per move each, {int(st.games.min())}-{int(st.games.max())}"
            " games per algorithm and game, colours alternating; whiskers are 95% Wilson intervals. On Go every "
            "player uses RAVE but dfuct, whose ranks merge no AMAF data; on LOA none does, as Christoph 2020's agents. "
            "Christoph 2020's reference is a whole multi-threaded CN and its points reach 128 CNs; ours is two ranks "
            "against one core."))
    agreement, summary = _agreement(cfg, m, p)
    more, speedups = _bench16_words(b16)
    if speedups:
        agreement += " " + more
        summary["measured_pps_speedup_16core_go19"] = speedups
    if st is not None and len(st):
        for g in dict.fromkeys(st.game):
            more, ws = _strength_words(st[st.game == g], m, g)
            agreement += " " + more
            summary["strength_win_rate_vs_sequential" + ("" if g == "go" else f"_{g}")] = ws
        times = time_check(st, lambda r: f"{r['algo']} on {GAME_TITLES.get(r['game'], r['game'])}",
                           cfg.strength_seconds)
        if times:
            agreement += " " + times
    stamps = [x for x in (_stamps(m, "Measured rows"), _stamps(st, "Strength rows")) if x]
    if stamps:
        agreement += " " + ". ".join(stamps) + "."
    samples = f"PPS: one {cfg.seconds:g} s search per measured point, one simulated run per predicted point"
    if st is not None and len(st):
        samples += "; strength: " + ", ".join(f"{games_range(d.games)} games per algorithm on {GAME_TITLES[g]}"
                                              for g, d in st.groupby("game", sort=False))
    return Outcome(tables=tables, sections=sections, agreement=agreement, summary=summary, samples=samples)



def _strength_chart(st: pd.DataFrame, game: str):
    d = st.copy()
    d["color"] = [COLORS.get(a, "gray") for a in d.algo]
    src = ColumnDataSource(d)
    f = figure(f"Win rate against the sequential search ({GAME_TITLES[game]})", "algorithm", "win rate (95% interval)",
               "Each algorithm on real ranks against the sequential search, equal seconds per move. Above 0.5: "
               "the parallel search is the stronger.", x_range=list(d.algo), y_range=(0, 1), width=560, height=340)
    f.add_layout(Span(location=0.5, dimension="width", line_color="gray", line_dash="dashed"))
    r = f.scatter("algo", "win_rate", source=src, size=11, color="color")
    f.add_layout(Whisker(source=src, base="algo", lower="ci_low", upper="ci_high", line_color="black"))
    f.add_tools(HoverTool(renderers=[r], tooltips=[("algorithm", "@algo"), ("ranks", "@ranks"),
                                                   ("won", "@wins of @games"), ("win rate", "@win_rate{0.00}"),
                                                   ("95%", "[@ci_low{0.00}, @ci_high{0.00}]")]))
    return f


def _strength_words(st: pd.DataFrame, m: pd.DataFrame, game: str) -> tuple[str, dict]:
    """The strength sentence of the agreement for one game's rows, and the summary's win rates with their
    intervals. Each algorithm against the sequential search is one test (likelihood ratio against an even
    match), Holm-corrected for the algorithms compared. `m`: the measured PPS, to say how many playouts each
    side had."""
    ws = {str(r.algo): [round(float(r.win_rate), 3), round(float(r.ci_low), 3), round(float(r.ci_high), 3)]
          for r in st.itertuples()}
    ests = {str(r.algo): elo_difference(float(r.wins) + 0.5 * float(r.draws), int(r.games)) for r in st.itertuples()}
    adj = dict(zip(ests, holm([e.p for e in ests.values()])))
    above = [a for a, (w, lo, hi) in ws.items() if w > 0.5 and adj[a] < 0.05]
    below = [a for a, (w, lo, hi) in ws.items() if w < 0.5 and adj[a] < 0.05]
    even = [a for a in ws if a not in above and a not in below]
    ranks = int(st.ranks.iloc[0])
    parts = [f"Strength on {GAME_TITLES[game]} ({ranks} ranks against the sequential search at equal time, "
             f"{games_range(st.games)} games each; score [95% interval], Holm-adjusted p of an even match "
             f"over the {len(ws)} algorithms): "
             + ", ".join(f"{a} {w:.2f} [{lo:.2f}, {hi:.2f}], {p_text(adj[a])}" for a, (w, lo, hi) in ws.items())
             + "."]
    without_rave = {str(r.algo) for r in st.itertuples() if game == "go" and not bool(getattr(r, "rave", True))}
    gm = m[m.game == game] if "game" in m else m.iloc[:0]
    seq = gm[gm.algo == "sequential"].pps
    ratio = {}
    if len(seq) and float(seq.iloc[0]) > 0:
        for a in ws:
            d = gm[(gm.algo == a) & (gm.ranks == ranks)].pps
            if len(d) and d.iloc[0] == d.iloc[0]:
                ratio[a] = float(d.iloc[0]) / float(seq.iloc[0])
    if above:
        parts.append(f"Stronger than the sequential search: {', '.join(above)}"
                     + (f" (playouts per second on {ranks} ranks: "
                        + ", ".join(f"{ratio[a]:.2f}" for a in above if a in ratio) + " of the sequential search's)"
                        if any(a in ratio for a in above) else "") + ".")
    if below:
        parts.append(f"Weaker: {', '.join(below)}. Christoph 2020 has none of its agents beat its 1-CN reference."
                     + "".join(f" {a} on {ranks} ranks makes {ratio[a]:.2f} of the sequential search's playouts per "
                               "second (measured above)"
                               + (", so a second rank here costs more in messages and waiting than its core adds."
                                  if ratio[a] < 1.0 else ", so its playouts are worth less than the sequential "
                                  "search's")
                               + (" (it plays without RAVE, which the sequential search uses)" if a in without_rave else "")
                               + ("." if ratio[a] >= 1.0 else "")
                               for a in below if a in ratio))
    if even:
        parts.append(f"Not significantly different from it at this many games (Holm-adjusted p >= 0.05): "
                     f"{', '.join(even)}.")
    return " ".join(parts), ws


def _at(p: pd.DataFrame, game: str, algo: str, nodes: int) -> float:
    d = p[(p.game == game) & (p.algo == algo) & (p.nodes == nodes)] if len(p) else p
    return float(d.pps.iloc[0]) if len(d) else math.nan


def _bench16_words(b16: pd.DataFrame) -> tuple[str, dict]:
    """The 16-core machine's measured scaling in words: each algorithm's PPS over the sequential search at its most
    ranks and at its best, and which of Christoph 2020's findings on PPS these points bear out."""
    if not len(b16) or not (b16.algo == "sequential").any():
        return "", {}
    seq = float(b16[b16.algo == "sequential"].pps.iloc[0])
    sp: dict[str, tuple[float, int, float, int]] = {}  # algo -> (speed-up at most ranks, most ranks, best, at)
    for algo, d in b16[b16.algo != "sequential"].groupby("algo", sort=False):
        d = d.sort_values("ranks")
        best = d.loc[d.pps.idxmax()]
        sp[str(algo)] = (float(d.pps.iloc[-1]) / seq, int(d.ranks.iloc[-1]), float(best.pps) / seq, int(best.ranks))
    order = sorted(sp, key=lambda a: sp[a][0], reverse=True)
    top = max(n for _, n, _, _ in sp.values())
    words = (f"Measured on 16 cores ({b16.machine.iloc[0]}, {str(b16.date.iloc[0])[:10]}; Go 19x19, random playouts): "
             "PPS over the sequential search at the most ranks "
             + ", ".join(f"{a} x{sp[a][0]:.1f}" + (f" (best x{sp[a][2]:.1f} at {sp[a][3]})" if sp[a][3] != sp[a][1]
                                                    else "") for a in order) + ".")
    found = []
    if "root" in sp and sp["root"][0] >= 0.75 * top and order[0] == "root":
        found.append("root parallelisation scales near-linearly and best")
    sharing = [a for a in order if a in ("tds", "dfuct", "treesplit")]
    if "tds" in sharing and len(sharing) > 1:
        # two runs a point: speed-ups within 15% of the lowest count as alike
        lowest = min(sp[a][0] for a in sharing)
        low = [a for a in sharing if sp[a][0] <= 1.15 * lowest]
        named = ", ".join(low[:-1]) + " and " + low[-1] if len(low) > 1 else low[0]
        if len(low) == len(sharing):
            found.append(f"{named} scale alike, within 15% of each other (Christoph 2020: TDS worst, df-UCT "
                         "better)")
        elif low == ["tds"]:
            found.append("TDS scales worst of the tree-sharing methods")
        elif "tds" in low:
            found.append(f"{named} scale worst of the tree-sharing methods, alike within 15% (Christoph 2020: TDS "
                         "worst, df-UCT better)")
        else:
            found.append(f"{named}, not TDS, scale{'s' * (len(low) == 1)} worst of the tree-sharing methods "
                         "(Christoph 2020: TDS)")
    if "leaf" in sp and sp["leaf"][3] < sp["leaf"][1]:
        found.append(f"leaf parallelisation tapers off (here past {sp['leaf'][3]} ranks; Christoph 2020: past 16 CNs)")
    if found:
        words += " As far as one machine reaches: " + "; ".join(found) + "."
    return words, {a: round(sp[a][0], 2) for a in order}


def _agreement(cfg: Config, m: pd.DataFrame, p: pd.DataFrame) -> tuple[str, dict]:
    summary: dict = {}
    top, low = max(cfg.nodes), min(cfg.nodes)
    parts = []
    for game in cfg.games:
        sp = {a: _at(p, game, a, top) / _at(p, game, a, low) for a in PREDICTED if a in cfg.algos}
        sp = {a: v for a, v in sp.items() if v == v}
        if sp:
            summary[f"predicted_pps_speedup_{game}_{low}_to_{top}"] = {a: round(v, 1) for a, v in sp.items()}
        here = m[(m.game == game) & (m.algo != "sequential")]
        best = here.loc[here.pps.idxmax()] if len(here) and here.pps.notna().any() else None
        if best is not None:
            summary[f"measured_best_pps_{game}"] = f"{best.algo} {int(best.ranks)} ranks: {best.pps:.0f}"
        if game == cfg.games[0] and sp:
            order = sorted(sp, key=sp.get, reverse=True)
            sharing = [a for a in order if a in ("tds", "dfuct", "treesplit")]
            parts.append(
                f"Predicted PPS from {low} to {top} CNs grows " + ", ".join(f"{a} x{sp[a]:.1f}" for a in order)
                + f" ({game}): " + ("as in Christoph 2020, root parallelisation scales best" if order[0] == "root"
                                    else f"{order[0]} scales best, where Christoph 2020 has root parallelisation")
                + (f"; of the tree-sharing methods {sharing[0]} scales best and {sharing[-1]} worst (Christoph 2020: "
                   "TDS worst, as every simulation passes the root's owner, df-UCT and UCT-Treesplit better)"
                   if len(sharing) >= 2 else "") + ".")
            root1 = _at(p, game, "root", low)
            eff = {a: sp[a] / (top / low) for a in sharing}
            keep = [a for a in sharing if eff[a] >= 0.25]
            flat = [a for a in sharing if eff[a] < 0.25]
            vs_root = {a: _at(p, game, a, n) / root1 for a, n in (("tds", top), ("treesplit", min(32, top)))
                       if a in sp and root1 > 0}
            if vs_root:
                parts.append(
                    "Against root parallelisation on one CN our prediction puts "
                    + " and ".join(f"{a} on {n} CNs at x{vs_root[a]:.1f}" for a, n in (("tds", top),
                                                                                   ("treesplit", min(32, top)))
                                   if a in vs_root)
                    + " its PPS; Christoph 2020 (5.3.1, Figure 5.7, figures without numbers in its prose) finds TDS "
                    "'performs poorly in terms of raw PPS' and df-UCT and UCT-Treesplit 'relatively poorly ... even "
                    "though they all scale linearly after 4 CNs', far below root/tree."
                    + (f" We differ for {', '.join(keep)}: our simulator charges our engine's per-message costs (MPI, "
                       "microseconds), where its agents paid Akka's serialisation and had no RDMA (its own "
                       "explanation), so " + ("it keeps" if len(keep) == 1 else "they keep") + " scaling." if keep
                       else "")
                    + (f" {', '.join(flat)} level{'s' * (len(flat) == 1)} off in our prediction (at most "
                       f"{max(eff[a] for a in flat):.0%} efficiency at {top} CNs)"
                       + ("; tds because every simulation passes the root's owner" if "tds" in flat else "")
                       + "." if flat else ""))
            if sp.get("leaf", 99) < 4:
                leaf = p[(p.game == game) & (p.algo == "leaf")].sort_values("nodes")
                at = int(leaf[leaf.pps >= 0.9 * leaf.pps.max()].nodes.iloc[0])
                parts.append(f"Unlike Christoph 2020, where leaf parallelisation's PPS grows up to 16 CNs, our leaf "
                             f"levels off at {leaf.pps.max():.3g} PPS from {at} CN{'s' * (at > 1)} on: its single "
                             "master selects and updates every simulation, and with our engine's costs that work "
                             "caps the rate; playouts that cost more relative to the in-tree work would let more "
                             "CNs help.")
    rk = sorted(set(int(r) for r in m.ranks.dropna())) if "ranks" in m else []
    if len(rk) >= 2:
        g0 = cfg.games[0]
        ratio = {}
        for a in cfg.algos:
            d = m[(m.game == g0) & (m.algo == a)].set_index("ranks").pps
            if rk[0] in d and rk[-1] in d and d[rk[0]] > 0:
                ratio[a] = d[rk[-1]] / d[rk[0]]
        if ratio:
            gain = [a for a, v in ratio.items() if v >= 1.1]
            lose = [a for a, v in ratio.items() if v < 0.9]
            parts.append(f"Measured here ({g0}, {rk[0]} to {rk[-1]} ranks): PPS x" + ", x".join(
                f"{v:.2f} {a}" for a, v in ratio.items()) + "; "
                + (f"gaining at least 10% from the added rank: {', '.join(gain)}" if gain else "none gains 10%")
                + (f"; losing more than 10%: {', '.join(lose)}, whose messages and waiting cost more than the rank "
                   "adds, as Christoph 2020 saw when a second search rank joined (its dip at 2-4 CNs)" if lose else "")
                + ".")
            summary["measured_pps_ratio_" + g0] = {a: round(v, 2) for a, v in ratio.items()}
    nps_rows = m[(m.algo != "sequential") & m.nps.notna()]
    if len(nps_rows):
        parts.append("Measured NPS on 1-2 ranks is too little compute to show Christoph 2020's NPS crossover "
                     "(tree-based agents passing root parallelisation after 16 CNs); the simulator's NPS is only a workload "
                     "parameter times PPS, so the NPS side of the comparison rests on the few measured points.")
    parts.append("Our per-package costs are our Python/numba engine's, not Christoph 2020's Akka agents (no RDMA, "
                 "heavier serialisation), so absolute rates differ; the LOA prediction uses Go's tree shape with LOA's "
                 "playout cost, and dfuct is predicted by the functional fidelity (its roles run for real), the others "
                 "statistically.")
    return " ".join(parts), summary
