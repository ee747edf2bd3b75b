"""The figures of a simulated run (docs/ARCHITECTURE.md, "Metrics"), from the runtime's exact counters.

Rates are over the measured window (after the warm-up). Per-rank figures average over search ranks and,
separately, over broadcast ranks. The IO-loop turnaround counts the idle spinning too: an idle IO core runs
iterations of poll time back to back, as the real one does, so turnaround = window / iterations.
"""

from __future__ import annotations

from typing import Any

from sim.runtime import RunResult

SUMMARY_KEYS = ("sims_per_s", "pps", "nps", "busy_frac", "hops_per_sim", "messages_per_sim", "bytes_per_sim",
                "msgs_per_rank_s", "bytes_per_rank_s", "bcast_msgs_per_rank_s", "bcast_bytes_per_rank_s")


def summarize(res: RunResult, loop_times: list[float]) -> dict[str, Any]:
    M, B = res.cluster.M, res.cluster.B
    T = res.t_end - res.t_start
    W = res.workers_per_rank
    c0, c1 = res.counters_start, res.counters_end
    s0, s1 = res.stats_start, res.stats_end
    d = [[b - a for a, b in zip(x, y)] for x, y in zip(c0, c1)]
    sims = sum(x[0] for x in d[:M])
    playouts = sum(x[1] for x in d[:M])
    nodes = sum(x[2] for x in d[:M])

    def diff(i: int, key: str) -> float:
        return s1[i][key] - s0[i][key]

    def kinds(i: int) -> dict[str, int]:
        a, b = s0[i]["msgs_out"], s1[i]["msgs_out"]
        return {k: b[k] - a.get(k, 0) for k in b}

    busy = sum(diff(i, "busy") for i in range(M))
    msgs_s = [sum(kinds(i).values()) for i in range(M)]
    bytes_s = [diff(i, "bytes_out") for i in range(M)]
    msgs_b = [sum(kinds(i).values()) for i in range(M, M + B)]
    bytes_b = [diff(i, "bytes_out") for i in range(M, M + B)]
    by_kind: dict[str, int] = {}
    for i in range(M + B):
        for k, v in kinds(i).items():
            by_kind[k] = by_kind.get(k, 0) + v
    io_busy = [diff(i, "io_busy") for i in range(M + B)]
    loops = []
    for i in range(M + B):
        n_busy = diff(i, "io_loops")
        idle = max(0.0, T - io_busy[i])
        n = n_busy + (idle / loop_times[i] if loop_times[i] > 0 else 0.0)
        loops.append(T / n if n > 0 else 0.0)
    per_sim = (lambda x: x / sims) if sims else (lambda x: float("nan"))
    total_msgs = sum(msgs_s) + sum(msgs_b)
    total_bytes = sum(bytes_s) + sum(bytes_b)
    out = {
        "seconds": T,
        "search_ranks": M, "bcast_ranks": B, "workers_per_rank": W,
        "sims": sims, "sims_per_s": sims / T, "pps": playouts / T, "nps": nodes / T,
        "busy_frac": busy / (M * max(W, 1) * T),  # W = 0: the IO core runs the packages (--threads 1)
        "hops_per_sim": per_sim(by_kind.get("MOVE", 0)),
        "messages_per_sim": per_sim(total_msgs), "bytes_per_sim": per_sim(total_bytes),
        "msgs_per_rank_s": sum(msgs_s) / (M * T), "bytes_per_rank_s": sum(bytes_s) / (M * T),
        "out_gbit_per_rank": sum(bytes_s) * 8 / (M * T) / 1e9,
        "bcast_msgs_per_rank_s": sum(msgs_b) / (B * T) if B else 0.0,
        "bcast_bytes_per_rank_s": sum(bytes_b) / (B * T) if B else 0.0,
        "bcast_out_gbit_per_rank": sum(bytes_b) * 8 / (B * T) / 1e9 if B else 0.0,
        "io_busy": sum(min(1.0, b / T) for b in io_busy[:M]) / M,
        "bcast_busy": sum(min(1.0, b / T) for b in io_busy[M:]) / B if B else 0.0,
        "io_turnaround_s": sum(loops[:M]) / M,
        "messages_by_kind_per_s": {k: v / T for k, v in sorted(by_kind.items())},
        "events": res.events, "wall_s": res.wall_s,
        "events_per_wall_s": res.events / res.wall_s if res.wall_s > 0 else 0.0,
        "wall_per_sim_s": res.wall_s / (res.t_end - res.t_start + res.extra.get("warmup", 0.0)),
    }
    return out


def format_summary(s: dict[str, Any], title: str = "") -> str:
    def si(x: float) -> str:
        for unit, f in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
            if abs(x) >= f:
                return f"{x / f:.3g}{unit}"
        return f"{x:.3g}"

    lines = [title] if title else []
    lines += [
        f"  ranks               {s['search_ranks']} search ({s['workers_per_rank']} workers each) + "
        f"{s['bcast_ranks']} broadcast, {s['seconds']:.4g} s simulated",
        f"  sims/s              {si(s['sims_per_s'])}",
        f"  PPS                 {si(s['pps'])}",
        f"  NPS                 {si(s['nps'])}",
        f"  worker busy frac    {s['busy_frac'] * 100:.1f} %",
        f"  hops/sim            {s['hops_per_sim']:.3g}",
        f"  msgs, bytes /sim    {s['messages_per_sim']:.3g}, {si(s['bytes_per_sim'])}B",
        f"  per search rank /s  {si(s['msgs_per_rank_s'])} msgs, {si(s['bytes_per_rank_s'])}B "
        f"({s['out_gbit_per_rank']:.3g} Gbit/s out), IO core {s['io_busy'] * 100:.1f} % busy, "
        f"loop {s['io_turnaround_s'] * 1e6:.3g} us",
    ]
    if s["bcast_ranks"]:
        lines.append(f"  per bcast rank /s   {si(s['bcast_msgs_per_rank_s'])} msgs, "
                     f"{si(s['bcast_bytes_per_rank_s'])}B ({s['bcast_out_gbit_per_rank']:.3g} Gbit/s out), "
                     f"{s['bcast_busy'] * 100:.1f} % busy")
    lines.append(f"  simulator           {si(s['events'])} events in {s['wall_s']:.3g} s wall "
                 f"({si(s['events_per_wall_s'])} events/s)")
    return "\n".join(lines)
