"""What a rank tells a live dashboard beyond its trace sample: who it is (meta), how busy each of its worker
threads and its IO thread were, the top of the tree it holds, and at the end (rank 0) the search's answer.

Everything here runs on the IO thread at telemetry time (every TELEMETRY_EVERY s), never on the hot path,
and only when the run was started with --telemetry. The wire format is model/telemetry.py's.
"""

from __future__ import annotations

from typing import Any

from model.game import trace_board
from model.roles.snapshot import tree_rows

# A late dashboard learns the run's configuration from every META_EVERY-th record (the first included).
META_EVERY = 20
# The tree snapshot: every TREE_EVERY s, the rank's most visited top of the tree, small enough for one
# datagram (~40 bytes a row in msgpack: 600 rows are ~24 kB of model.telemetry.MAX_DATAGRAM's 60 kB).
TREE_EVERY = 2.0
TREE_NODES = 600
TREE_DEPTH = 6


def tree_of(role) -> dict[str, list] | None:
    """The part of the tree this rank can link from the root (model.roles.snapshot.tree_rows: the duplicated
    top and the rank's own nodes below it), as telemetry's tree columns; None for a rank without a tree
    (a broadcast rank, leaf's playout ranks). The dashboard joins the ranks' parts by hash."""
    if not all(hasattr(role, a) for a in ("t", "g", "root", "kernel_ranks", "local_slots")):
        return None

    cols = tree_rows([role], TREE_DEPTH, TREE_NODES)
    if not len(cols["hash"]):
        return None
    return {k: v.tolist() for k, v in cols.items()}


class LiveFields:
    """The telemetry fields of one rank that the trace sample does not have."""

    def __init__(self, config):
        self.config = config
        self.records = 0
        self.next_tree = 0.0
        self._t = 0.0
        self._workers: list[float] = []
        self._io = 0.0

    def meta(self) -> dict[str, Any]:
        c = self.config
        return {"algo": c.algo, "game": c.game, "board": trace_board(c.game, c.board),
                "ranks": {"search": c.ranks, "broadcast": c.resolved_bcast_ranks()}, "threads": c.threads,
                "runtime": "engine"}

    def fields(self, t: float, worker_busy: list[float], io_time: float, role) -> dict[str, Any]:
        """worker_busy: each worker thread's busy seconds so far; io_time: the IO thread's (its inline packages
        and its message handling); role: the rank's role (for the tree), or None."""
        dt = t - self._t
        share = (lambda now, before: min(1.0, max(0.0, (now - before) / dt)) if dt > 0 else 0.0)
        prev = self._workers if len(self._workers) == len(worker_busy) else [0.0] * len(worker_busy)
        out: dict[str, Any] = {"workers_busy": [share(b, a) for b, a in zip(worker_busy, prev)],
                               "io_busy": share(io_time, self._io)}
        self._t, self._workers, self._io = t, list(worker_busy), io_time
        if self.records % META_EVERY == 0:
            out["meta"] = self.meta()
        self.records += 1
        if role is not None and t >= self.next_tree:
            tree = tree_of(role)
            if tree is not None:  # an empty tree is asked again next window, not TREE_EVERY later
                out["tree"] = tree
                self.next_tree = t + TREE_EVERY
        return out


def final_fields(result: dict[str, Any], t_end: float) -> dict[str, Any]:
    """Rank 0's last record: the search is over, with its answer (engine.mpi.summary's result)."""
    return {"final": {"t_end": float(t_end), "seconds": float(result.get("seconds", t_end)),
                      "sims": int(result.get("sims", 0)), "sims_per_s": float(result.get("sims_per_s", 0.0)),
                      "move": str(result.get("move_str", result.get("move", "?"))),
                      "stop_reason": str(result.get("stop_reason") or "")}}
