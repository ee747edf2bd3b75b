"""Table 5.2 of Christoph 2020, in spirit: a round robin of the four serial LOA agents of Table 5.1 (PU-MC, PU-EF,
FPU-MC, FPU-EF) at equal simulations per move, each pair playing --games games with colours alternating.
The table (row beat column), each pair's win rate with its 95% Wilson interval and Elo difference, and
every game go to results/<name>.json (or --out DIR; --update-reference: experiments/results/), the pairs and
the ranking (each agent against the field: score, Wilson interval, Elo) to <name>.csv and <name>-ranking.csv,
rewritten after each game so a long run can be watched (and a cut one still leaves its games).

    .venv/bin/python -m experiments.loa_roundrobin --games 2 --sims 100        # smoke (about a minute)
    .venv/bin/python -m experiments.loa_roundrobin --games 200 --sims 1000     # the measurement (hours)

Christoph 2020 played 1000 games a pair at one second a move; it found PU-MC first, PU-EF second, and PU-MC
beating FPU-EF 992 to 8. A game longer than --max-plies counts as a draw. --jobs J plays J games at once
(one core each): use it only on an otherwise idle machine. Each game's seed depends only on the pair and
the game number, so a run is reproducible whatever --jobs is.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from engine.results import write_csv, write_json
from model.errors import UserError
from model.loa.board import make_params
from model.loa.game import LoaGame
from model.loa.policy import AGENTS, Agent
from model.results import add_output_flags, output_dir
from model.stats import match_stats

AGENT_NAMES = ("pu-mc", "pu-ef", "fpu-mc", "fpu-ef")


def table_slots(sims: int) -> int:
    """Table slots for an agent: room for a few moves' trees (old ones age out), at least 2^14."""
    n = 1 << 14
    while n < 4 * sims and n < (1 << 20):
        n <<= 1
    return n


def play_game(black: str, white: str, sims: int, seed: int, max_plies: int = 300) -> dict:
    """One game between two Table 5.1 agents; returns its record (result from Black's view: 1, -1, 0)."""
    names = (black, white)
    agents = [Agent(AGENTS[n], tt_slots=table_slots(sims), seed=seed * 2 + i) for i, n in enumerate(names)]
    params = [make_params("random", AGENTS[n].knowledge) for n in names]
    gm = LoaGame()
    t0 = time.perf_counter()
    moves = []
    while not gm.is_over and gm.ply < max_plies:
        p = gm.to_move
        a = agents[p].choose(params[p], gm.state, sims)
        moves.append(gm.action_name(a, gm.state))
        gm.play(a)
    return {"black": black, "white": white, "seed": seed, "sims": sims, "result": gm.result(),
            "end": gm.result_string() if gm.is_over else "cap", "plies": gm.ply,
            "seconds": time.perf_counter() - t0, "moves": " ".join(moves)}


def schedule(agents: list[str], games: int) -> list[tuple[str, str, int]]:
    """(black, white, seed) for every game: each pair plays `games`, colours alternating."""
    out = []
    for i, (a, b) in enumerate(itertools.combinations(agents, 2)):
        for k in range(games):
            out.append((a, b, 1000 * i + k) if k % 2 == 0 else (b, a, 1000 * i + k))
    return out


def summarize(agents: list[str], records: list[dict]) -> dict:
    """Table 5.2's cells (times the row agent beat the column agent), draws, and per-pair statistics."""

    wins = {a: {b: 0 for b in agents if b != a} for a in agents}
    draws = {a: {b: 0 for b in agents if b != a} for a in agents}
    for r in records:
        b, w = r["black"], r["white"]
        if r["result"] > 0:
            wins[b][w] += 1
        elif r["result"] < 0:
            wins[w][b] += 1
        else:
            draws[b][w] += 1
            draws[w][b] += 1
    pairs = []
    for a, b in itertools.combinations(agents, 2):
        st = match_stats(wins[a][b], wins[b][a], draws[a][b])
        pairs.append({"agent": a, "opponent": b, **st.as_dict()})
    score = {a: sum(wins[a].values()) + 0.5 * sum(draws[a].values()) for a in agents}
    ranking = sorted(agents, key=lambda a: -score[a])
    # each agent against the field: its share of points, Wilson interval and the Elo that share implies
    standings = [{"rank": i + 1, "agent": a, **match_stats(sum(wins[a].values()), sum(wins[b][a] for b in wins[a]),
                                                           sum(draws[a].values())).as_dict(), "score": score[a]}
                 for i, a in enumerate(ranking)]
    secs = [r["seconds"] for r in records]
    return {"wins": wins, "draws": draws, "pairs": pairs, "score": score, "ranking": ranking, "standings": standings,
            "games": len(records), "seconds_per_game_median": statistics.median(secs) if secs else None,
            "plies_per_game_mean": statistics.fmean(r["plies"] for r in records) if records else None}


def format_table(agents: list[str], summary: dict) -> str:
    w = max(len(a) for a in agents) + 2
    lines = [" " * w + "".join(f"{b:>{w}}" for b in agents) + f"{'score':>{w}}"]
    for a in agents:
        cells = "".join(f"{'':>{w}}" if a == b else f"{summary['wins'][a][b]:>{w}}" for b in agents)
        lines.append(f"{a:<{w}}" + cells + f"{summary['score'][a]:>{w}g}")
    lines.append("cells: games the row agent won against the column agent (draws count half in the score)")
    for p in summary["pairs"]:
        elo = "n/a" if p["elo"] is None else f"{p['elo']:+.0f}"
        lines.append(f"  {p['agent']} vs {p['opponent']}: {p['wins']}-{p['losses']}-{p['draws']}, win rate "
                     f"{p['win_rate']:.3f} [{p['ci_low']:.3f}, {p['ci_high']:.3f}], Elo {elo}")
    lines.append("ranking (against the field):")
    for s in summary["standings"]:
        elo = "n/a" if s["elo"] is None else f"{s['elo']:+.0f}"
        lines.append(f"  {s['rank']}. {s['agent']}: {s['wins']}-{s['losses']}-{s['draws']}, score "
                     f"{s['win_rate']:.3f} [{s['ci_low']:.3f}, {s['ci_high']:.3f}], Elo {elo}")
    return "\n".join(lines)


def _play(job: tuple[str, str, int, int, int]) -> dict:
    return play_game(*job)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.loa_roundrobin", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", type=int, default=200, help="games per pair, colours alternating (default 200)")
    p.add_argument("--sims", type=int, default=1000, help="simulations per move, every agent (default 1000)")
    p.add_argument("--agents", default=",".join(AGENT_NAMES), help="comma-separated Table 5.1 agents")
    p.add_argument("--max-plies", type=int, default=300, help="a longer game is a draw (default 300)")
    p.add_argument("--jobs", type=int, default=1, help="games played at once (default 1)")
    p.add_argument("--name", default="loa-roundrobin", help="results file <name>.json (default loa-roundrobin)")
    add_output_flags(p)
    a = p.parse_args(argv)
    try:
        return run(a)
    except UserError as e:
        print(f"loa_roundrobin: error: {e}", file=sys.stderr)
        return 2


def run(a: argparse.Namespace) -> int:
    directory = output_dir(a)
    agents = [x.strip() for x in a.agents.split(",") if x.strip()]
    if len(agents) < 2 or len(set(agents)) != len(agents) or any(x not in AGENTS for x in agents):
        raise UserError(f"--agents: two or more distinct of {', '.join(AGENTS)}")
    if a.games < 1 or a.sims < 1 or a.max_plies < 1 or a.jobs < 1:
        raise UserError("--games, --sims, --max-plies and --jobs must be >= 1")
    jobs = [(b, w, a.sims, seed, a.max_plies) for b, w, seed in schedule(agents, a.games)]
    config = {"games_per_pair": a.games, "sims_per_move": a.sims, "max_plies": a.max_plies, "agents": agents,
              "agent_params": {n: AGENTS[n].as_dict() for n in agents}, "jobs": a.jobs}
    records: list[dict] = []
    t0 = time.perf_counter()

    def done(rec: dict) -> None:
        records.append(rec)
        if not a.quiet:
            print(f"[{len(records)}/{len(jobs)}] {rec['black']} (B) vs {rec['white']} (W): {rec['end']} "
                  f"in {rec['plies']} plies, {rec['seconds']:.1f} s", file=sys.stderr, flush=True)
        if directory is not None:
            summary = summarize(agents, records)
            write_json(a.name, {"config": config, "summary": summary, "records": records,
                                "complete": len(records) == len(jobs), "wall_seconds": time.perf_counter() - t0},
                       directory)
            write_csv(a.name, summary["pairs"], directory)
            write_csv(f"{a.name}-ranking", summary["standings"], directory)

    if a.jobs == 1:
        for job in jobs:
            done(_play(job))
    else:
        with ProcessPoolExecutor(max_workers=a.jobs) as pool:
            for rec in pool.map(_play, jobs):
                done(rec)
    summary = summarize(agents, records)
    if a.json:
        print(json.dumps({"config": config, "summary": summary}, default=float))
        return 0
    print(format_table(agents, summary))
    print(f"median {summary['seconds_per_game_median']:.1f} s per game, {summary['plies_per_game_mean']:.0f} "
          f"plies per game on average" + (f"; written to {directory / a.name}.json, .csv, -ranking.csv"
                                          if directory is not None else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
