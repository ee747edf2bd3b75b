"""df-UCT's kernels (model/roles/dfuct.py): a job's frames filled at selection, a result folded into them,
reports applied at the nodes' owners.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from model import game
from model.atomics import atomic_add, atomic_add2
from model.tt import lookup
from model.uct import P_FPU, P_VLOSS, _score

# STEP.flags of report records: take the job's virtual loss off the edge (the frame is popped); the record
# is a report to apply on arrival, not a step of the job's path (MOVE)
F_POP, F_REPORT = 1, 2


@njit(cache=True, nogil=True, error_model="numpy")
def fill_frames(t, p, steps, frames, n0, n, pslots, score):
    """Frames of the steps a selection just appended (steps[n0:n], their nodes in pslots[n0:n]): the node's
    visits, the chosen child's and the best other child's statistics (visit counts with the virtual loss of
    other jobs, as selection saw them), nothing pending yet. score: float64[>= max children], scratch."""
    vw = p[P_VLOSS]
    fpu = p[P_FPU]
    for k in range(n0, n):
        frames[k].dn = 0
        frames[k].dw = 0.0
        frames[k].second = -1
        frames[k].visits = 0
        frames[k].n_best = 0.0
        frames[k].w_best = 0.0
        frames[k].n_second = 0.0
        frames[k].w_second = 0.0
        j = steps[k].idx
        if j < 0:
            continue
        slot = pslots[k]
        log_n = math.log(max(float(t.visits[slot]), 1.0))
        nc = t.n_children[slot]
        # fold_result's score (uct._score with no AMAF, no prior, log N as the exploration term) in a loop
        # the compiler vectorises: both arms computed, then one chosen; divisions by the 1.0 that stands in
        # for m <= 0 are thrown away. (numba's default error model checks every division for zero, a branch
        # per child that kept this loop scalar: 8% of a 9x9 df-UCT rank's time.) Then the best child other
        # than j, j's score set below any other.
        for c in range(nc):
            m = float(t.child_visits[slot, c]) + vw * t.vloss[slot, c]
            d = m if m > 0.0 else 1.0
            x = t.child_value[slot, c] / d + log_n / math.sqrt(d)
            score[c] = x if m > 0.0 else fpu
        score[j] = -np.inf
        best = -np.inf
        second = -1
        for c in range(nc):
            x = score[c]
            if x > best:
                best, second = x, c
        frames[k].visits = t.visits[slot]
        frames[k].n_best = float(t.child_visits[slot, j]) + vw * (t.vloss[slot, j] - 1)  # less this job's own
        frames[k].w_best = t.child_value[slot, j]
        if second >= 0:
            frames[k].second = second
            frames[k].n_second = float(t.child_visits[slot, second]) + vw * t.vloss[slot, second]
            frames[k].w_second = t.child_value[slot, second]


@njit(cache=True, nogil=True)
def fold_result(g, p, steps, frames, n, result, margin):
    """Add a simulation's result (first player's view) to the frames of steps[:n]. Returns the depth where
    the job selects again: the shallowest node whose second-best child now outscores the best by more than
    `margin`, else the deepest node it selected at (0 if none)."""
    r0 = game.reward(g, result)
    resume = -1
    deepest = 0
    for k in range(n):
        r = r0 if steps[k].player == 0 else 1.0 - r0
        frames[k].dn += 1
        frames[k].dw += r
        if steps[k].idx < 0:
            continue
        deepest = k
        frames[k].visits += 1
        frames[k].n_best += 1.0
        frames[k].w_best += r
        if resume < 0 and frames[k].second >= 0:
            log_n = math.log(max(float(frames[k].visits), 1.0))
            if (_score(frames[k].n_second, frames[k].w_second, 0.0, 0.0, 0.0, log_n, p)
                    > _score(frames[k].n_best, frames[k].w_best, 0.0, 0.0, 0.0, log_n, p) + margin):
                resume = k
    return deepest if resume < 0 else resume


@njit(cache=True, nogil=True)
def apply_reports(t, steps, frames, n, p):
    """Add reported results to this rank's nodes: edge idx and its node get dn visits and dw reward; F_POP
    records take the job's virtual loss off the edge. Returns how many records found no node."""
    use_vl = p[P_VLOSS] > 0.0
    missing = 0
    for k in range(n):
        slot, _ = lookup(t, steps[k].hash, False)
        if slot == 0:
            missing += 1
            continue
        j = steps[k].idx
        if j >= 0:
            atomic_add2(t.child_visits, slot, j, frames[k].dn)
            atomic_add2(t.child_value, slot, j, frames[k].dw)
            if use_vl and (steps[k].flags & F_POP) != 0:
                atomic_add2(t.vloss, slot, j, -1)
        atomic_add(t.visits, slot, frames[k].dn)
        atomic_add(t.value, slot, frames[k].dw)
    return missing
