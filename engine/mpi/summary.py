"""The figures of a distributed search (docs/ARCHITECTURE.md, "Metrics"), from the REPORTs every rank sends rank 0."""

from __future__ import annotations

from typing import Any

from engine.mpi import control as ctl
from engine.mpi.config import DistributedConfig
from model.game import game_title

_NETWORK_OVERHEAD = ("CONTROL",)


def summarise(cfg: DistributedConfig, control: ctl.Control, host_result: dict[str, Any],
              t_end: float) -> dict[str, Any]:
    reports = [control.reports[r] for r in sorted(control.reports)]
    # the search ends when the last simulation has finished: the end of the drain phase
    elapsed = control.times.get(ctl.SYNC, t_end)
    search = [r for r in reports if r["rank"] < cfg.ranks]
    total = lambda key, rs=reports: sum(int(r["counters"].get(key, 0)) for r in rs)  # noqa: E731
    sims, playouts, nodes = total("sims_done"), total("playouts_done"), total("nodes_stored", search)
    by_kind: dict[str, list[int]] = {}
    for r in reports:
        for _dst, kind, count, nbytes in r["sent"]:
            cell = by_kind.setdefault(kind, [0, 0])
            cell[0] += count
            cell[1] += nbytes
    app = {k: v for k, v in by_kind.items() if k not in _NETWORK_OVERHEAD}
    messages = sum(c for c, _ in app.values())
    nbytes = sum(b for _, b in app.values())
    per_sim = (lambda x: x / sims) if sims else (lambda x: 0.0)
    worker_slots = sum(r["workers"] for r in search)
    busy = sum(r["busy_time"] for r in search) / (worker_slots * elapsed) if worker_slots and elapsed > 0 else 0.0
    rate = (lambda x: x / elapsed) if elapsed > 0 else (lambda x: 0.0)
    return {
        **host_result,
        "algo": cfg.algo, "game": cfg.game, "board": cfg.board, "ranks": cfg.ranks,
        "bcast_ranks": cfg.resolved_bcast_ranks(), "threads": cfg.threads,
        "sims": sims, "playouts": playouts, "nodes": nodes, "seconds": elapsed,
        "sims_per_s": rate(sims), "pps": rate(playouts), "nps": rate(nodes),
        "messages": messages, "bytes": nbytes,
        "messages_per_sim": per_sim(messages), "bytes_per_sim": per_sim(nbytes),
        "hops_per_sim": per_sim(app.get("MOVE", [0, 0])[0]),
        "busy_frac": min(1.0, busy),
        # CPU seconds of every thread of every rank (search and drain): less sensitive to a loaded machine
        "cpu_seconds": sum(r.get("cpu_time", 0.0) for r in reports),
        "cpu_us_per_sim": per_sim(1e6 * sum(r.get("cpu_time", 0.0) for r in reports)),
        "messages_by_kind": {k: {"count": c, "bytes": b} for k, (c, b) in sorted(by_kind.items())},
        "mpi_messages": sum(r["mpi_sends"] for r in reports),
        "stop_reason": control.stop_reason,
        "phases": dict(control.times),
        "per_rank": [{"rank": r["rank"], "workers": r["workers"], "busy_time": r["busy_time"],
                      "counters": r["counters"], "app_sent": r["app_sent"], "app_received": r["app_received"],
                      **({"loop": r["loop"]} if "loop" in r else {})}
                     for r in reports],
    }


def format_text(res: dict[str, Any]) -> str:
    """The human-readable summary `treesplit search` prints."""

    move = res.get("move_str", res.get("move", "?"))
    lines = [
        f"move: {move}",
        f"{res['algo']} on {res['ranks']} search ranks + {res['bcast_ranks']} broadcast ranks, "
        f"{res['threads']} threads per rank; {game_title(res['game'], res['board'])}",
        f"simulations: {res['sims']} in {res['seconds']:.3f} s = {res['sims_per_s']:.1f} sims/s; "
        f"PPS {res['pps']:.1f}; NPS {res['nps']:.1f}",
        f"messages: {res['messages']} ({res['messages_per_sim']:.2f}/sim, {res['bytes_per_sim']:.1f} bytes/sim, "
        f"{res['mpi_messages']} MPI messages); hops/sim {res['hops_per_sim']:.2f}",
        f"worker busy fraction: {res['busy_frac']:.2f}; CPU {res['cpu_us_per_sim']:.0f} us/sim",
    ]
    if "root_visits" in res:
        lines.append(f"root visits: {res['root_visits']}")
    kinds = ", ".join(f"{k} {v['count']}" for k, v in res.get("messages_by_kind", {}).items())
    if kinds:
        lines.append(f"by kind: {kinds}")
    return "\n".join(lines)
