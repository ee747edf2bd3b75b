"""`treesplit bench kernels --passes`: what one AMAF update pass over a node's children costs, the bulk of
an update step (SIMULATOR.md, "Charging per tree step"), with the node's rows in cache and out of it, on
the table as tt.new_table lays it out and on one whose arrays start alike round a page (model/blocks.py)."""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from model import tt
from model.uct import amaf_in


@njit(cache=True, nogil=True)
def _amaf_passes(n_children, cm, av, aw, slots, maps, reps):
    """Each pass with the next map of `maps`: a search's maps differ from one simulation to the next."""
    i = 0
    for _ in range(reps):
        for s in slots:
            amaf_in(n_children, cm, av, aw, s, maps[i % maps.shape[0]], 0, 0.5)
            i += 1


def _aligned_like(t: tt.Table) -> tt.Table:
    """t's arrays as separate allocations, each starting where a fresh mapping does (alike round a page)."""
    return t._replace(**{f: np.zeros_like(a) for f, a in t._asdict().items() if f != "meta"})


def pass_costs(board: int, seed: int = 1, repeats: int = 3) -> dict:
    """us per AMAF pass over a node of the default table's size with board*board children, best of
    `repeats`: "warm" over 32 nodes again and again, "cold" over 4,000 random nodes once each, every pass with
    another random map (each child's move played first by the player or not, a coin flip as in a search); for
    the table as tt.new_table lays it out ("spread") and with its arrays aligned alike ("aligned")."""
    k = board * board + 1
    rng = np.random.default_rng(seed)
    maps = rng.integers(-1, 2, (997, k)).astype(np.int8)  # a prime count: no node meets the same map twice in a row
    out = {}
    for layout in ("spread", "aligned"):
        t = tt.table_for_budget(tt.BUDGET_MB, k)
        if layout == "aligned":
            t = _aligned_like(t)
        S = t.key.shape[0]
        t.n_children[:] = k - 1
        t.child_move[:, :k - 1] = np.argsort(rng.random((S, k - 1), np.float32), axis=1)
        t.amaf_visits[:] = 1
        t.amaf_value[:] = 0.5
        row = {}
        # compiled (or loaded from the cache) before any timing, on a node no measurement uses
        _amaf_passes(t.n_children, t.child_move, t.amaf_visits, t.amaf_value, np.zeros(1, np.int64), maps, 1)
        for name, n, reps in (("warm", 32, 300), ("cold", min(4000, S - 1), 1)):
            best = float("inf")
            for i in range(repeats):
                if i == 0 or name == "cold":  # cold: other nodes each time, none in cache from the last round
                    slots = rng.choice(np.arange(1, S), n, replace=False).astype(np.int64)
                t0 = time.perf_counter()
                _amaf_passes(t.n_children, t.child_move, t.amaf_visits, t.amaf_value, slots, maps, reps)
                best = min(best, (time.perf_counter() - t0) / (reps * n) * 1e6)
            row[f"{name}_us"] = best
        out[layout] = row
        del t
    return out
