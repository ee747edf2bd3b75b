"""The statistical fidelity's event loop as numba kernels (sim/statistical.py's StatWorld drives them).

The model is the one sim/statistical.py describes; these kernels make its bookings over numpy arrays, so
that a chunk of simulated time (thousands of simulations, their hops, packages and messages, broadcast
windows and load updates) is one call. Capacity pools are sim/timeline.py's; broadcast routes are
model/topology.py's, tabulated by sim/statistical.py (blocks rs, rd).

State: F (float64), I (int64) and U (the random generator's state, model/rng.py) are flat arrays, since a
numba call pays for every array it passes: I starts with a header of block offsets and sizes (H_*), then
the integer settings (I_*) and globals (G_*); F starts with the float settings (C_*). `allocate` and `views`
name and shape the blocks: pools' bookkeeping (pf, pi), per-rank floats and ints (rf, ri: RF_* / RI_*
columns, then messages and packages per kind), an event heap (ht, hs, hk, ha), the distributions (dk, dp,
dq, dpr, dn), trace buffers (tpf, tpi, tmf, tmi). What must grow while an event is booked lives in typed
lists of arrays, one per pool or broadcast rank, which a kernel may replace by bigger ones:
- UL[p], NL[p]: capacity pool p's ring of bins (sim/timeline.py): pool r is rank r's IO
  core, R + r its workers, 2R + n node n's sending NIC, 2R + N + n its receiving NIC;
- WU[b], WA[b]: broadcast rank b's pending inputs (their rows, and when and from where they arrive).

A kernel call returns early (ST_TRACE) when the trace buffers fill up; the caller drains them and calls
again.
"""

from __future__ import annotations

import numpy as np
from numba import njit, uint64
from numba.typed import List

from model.rng import next_u64
from model.roles.messages import record_size
from sim import timeline as T
from sim.timeline import N_PF, N_PI, PF_BOOKED

LOAD_WINDOW = 5e-4  # s: how often each IO core's recent load (for the loop's stretch) is re-estimated
NIC_BOOK = 1e-6     # s: messages that occupy a NIC for less than this are not booked on it

PKG_KINDS = ("select", "expand", "playout", "update", "sync", "bcast")
MSG_KINDS = ("MOVE", "UPDATE", "SYNC", "BCAST", "PLAYOUT_FWD", "JOB", "RESULT", "MERGE")
P_SELECT, P_EXPAND, P_PLAYOUT, P_UPDATE, P_SYNC, P_BCAST = range(6)
M_MOVE, M_UPDATE, M_SYNC, M_BCAST, M_FWD, M_JOB, M_RESULT, M_MERGE = range(8)
D_REMOTE = 6  # distribution 6: remote steps; 0..5 are the package kinds' costs
N_DISTS = 7
DIST_CONST, DIST_LOGNORMAL, DIST_EMPIRICAL = range(3)
A_TREESPLIT, A_TDS, A_ROOT, A_LEAF, A_HYBRID = range(5)
EV_START, EV_DONE, EV_FLUSH, EV_LOAD, EV_CHAIN, EV_RESUME = range(6)
SIM_WHOLE, SIM_CHAINED, SIM_RESUME = range(3)  # what of a simulation _treesplit_sim books (its `part`)
ST_DONE, ST_TRACE = range(2)

# I: header of block offsets and sizes
(H_PF, H_RF, H_SLOT, H_DP, H_DQ, H_DPR, H_HT, H_TPF, H_TMF,
 H_PI, H_RI, H_NODE, H_PART, H_CLP, H_CLL, H_NAR, H_HS, H_HK, H_HA, H_DK, H_DN, H_TPI, H_TMI,
 H_NW, H_BX, H_Q, H_HEAP, H_ROWS, H_WM, H_HP, H_HR, H_HN, H_RS, H_RD) = range(34)
NH = 34
# I: integer settings, then globals
(I_ALGO, I_M, I_B, I_W, I_G, I_VIA_IO, I_FORWARD, I_MERGE_EVERY, I_MERGE_DEPTH, I_DUP, I_TRACE,
 I_TRACE_ALL, I_R, I_NODES, I_GROUPS, I_HOT_STEPS, I_HOT_W, I_AMAF, I_RAVE, I_ROWS, I_CHAIN) = range(NH, NH + 21)
(G_HN, G_SEQ, G_NEXT_SIM, G_EVENTS, G_TCOUNT, G_PKN, G_MSGN) = range(NH + 21, NH + 28)
N_IHEAD = NH + 28
# F: float settings, then the clock
(C_O, C_PM, C_PB, C_SPB, C_L, C_GAP, C_GPB, C_EAGER, C_SHML, C_SHMG, C_NAP, C_OPM, C_PERPKG, C_FHELD, C_DELAY,
 C_EXPANDS, C_SYNCS, C_NODES, C_RATE, C_TOP, C_TAIL, C_SYNC_SHAPE, C_FLOAD, C_FMARGIN, C_FRATIO, C_LSHARE,
 C_BATCHED, C_NOW) = range(28)
N_FHEAD = 28
N_UHEAD = 1  # U: the random generator's state (model/rng.py: U[0])
# rf columns (per-rank floats)
(RF_LOOP, RF_ITER, RF_LAM, RF_IDLE, RF_POLL, RF_ITERS, RF_MARK_WORK, RF_SYNC_ACC, RF_MOVES_IN, RF_MARK_MOVES,
 RF_MOVE_LAM, RF_FLUSH, RF_SYNC_NEXT) = range(13)
N_RF = 13
# ri columns (per-rank ints), then messages out per kind, then packages per kind
(RI_NMSGS, RI_MARK_MSGS, RI_BYTES_OUT, RI_MSGS_IN, RI_SIMS_DONE, RI_PLAYOUTS, RI_NODES, RI_STARTED, RI_DONE_LOCAL,
 RI_MERGED, RI_W, RI_JOBS) = range(12)
RI_MSG0 = 12
RI_PKG0 = RI_MSG0 + len(MSG_KINDS)
N_RI = RI_PKG0 + len(PKG_KINDS)

# block name -> (array, header slot)
BLOCKS = {
    "pf": ("F", H_PF), "rf": ("F", H_RF), "slot": ("F", H_SLOT), "dp": ("F", H_DP), "dq": ("F", H_DQ),
    "dpr": ("F", H_DPR), "ht": ("F", H_HT), "tpf": ("F", H_TPF), "tmf": ("F", H_TMF),
    "pi": ("I", H_PI), "ri": ("I", H_RI), "node": ("I", H_NODE), "part": ("I", H_PART),
    "clp": ("I", H_CLP), "cll": ("I", H_CLL), "nar": ("I", H_NAR), "hs": ("I", H_HS), "hk": ("I", H_HK),
    "ha": ("I", H_HA), "dk": ("I", H_DK), "dn": ("I", H_DN), "tpi": ("I", H_TPI), "tmi": ("I", H_TMI),
    "hp": ("F", H_HP), "hr": ("I", H_HR), "hn": ("I", H_HN),  # hot steps: cumulative shares, ranks, counts
    "rs": ("I", H_RS), "rd": ("I", H_RD),  # broadcast routes: where each (origin, rank)'s start, destinations
}
_HEAD = {"F": N_FHEAD, "I": N_IHEAD, "U": N_UHEAD}
_DTYPE = {"F": np.float64, "I": np.int64, "U": np.uint64}

_GOLDEN = uint64(0x9E3779B97F4A7C15)


def allocate(shapes: dict[str, tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Zeroed F, I, U holding every block of BLOCKS with these shapes; I's header gets their offsets."""
    size = dict(_HEAD)
    offset = {}
    for name, (arr, _) in BLOCKS.items():
        offset[name] = size[arr]
        size[arr] += int(np.prod(shapes[name]))
    F, I, U = (np.zeros(size[a], dtype=_DTYPE[a]) for a in ("F", "I", "U"))
    for name, (_, slot) in BLOCKS.items():
        I[slot] = offset[name]
    return F, I, U


def views(F: np.ndarray, I: np.ndarray, U: np.ndarray, shapes: dict[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    """Every block as a numpy view of its shape (for the Python side)."""
    arrays = {"F": F, "I": I, "U": U}
    out = {}
    for name, (arr, slot) in BLOCKS.items():
        n = int(np.prod(shapes[name]))
        out[name] = arrays[arr][I[slot]:I[slot] + n].reshape(shapes[name])
    return out


# --- random draws ----------------------------------------------------------------------------------------
@njit(cache=True, nogil=True, inline="always")
def _rand(U):
    return (next_u64(U) >> uint64(11)) * (1.0 / 9007199254740992.0)  # the generator's state is U[0]


@njit(cache=True, nogil=True, inline="always")
def _normal(U):
    u1 = 1.0 - _rand(U)  # (0, 1]
    u2 = _rand(U)
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


@njit(cache=True, nogil=True)
def _sync_gap(F, U):
    """The next gap between a rank's SYNCs in units of its mean (1 / syncs_per_sim simulations): gamma of
    shape F[C_SYNC_SHAPE] (workload.sync_gap_cv), or exactly 1 (evenly spaced, no draw) at shape 0.
    Marsaglia and Tsang's method; a shape below 1 is drawn at shape + 1 and scaled by u ** (1 / shape)."""
    shape = F[C_SYNC_SHAPE]
    if shape <= 0.0:
        return 1.0
    a = shape if shape >= 1.0 else shape + 1.0
    d = a - 1.0 / 3.0
    c = 1.0 / np.sqrt(9.0 * d)
    while True:
        z = _normal(U)
        v = 1.0 + c * z
        if v <= 0.0:
            continue
        v = v * v * v
        if np.log(1.0 - _rand(U)) < 0.5 * z * z + d - d * v + d * np.log(v):
            break
    x = d * v
    if shape < 1.0:
        x *= (1.0 - _rand(U)) ** (1.0 / shape)
    # the caller loops while its count passes the gap: a gap that underflows to 0 would never end it
    return max(x / shape, 1e-9)


@njit(cache=True, nogil=True)
def _draw(F, I, U, d):
    """One value of distribution d (sim/distributions.py's Distribution.draw, one at a time)."""
    k = I[I[H_DK] + d]
    if k == DIST_CONST:
        return F[I[H_DP] + 2 * d]
    if k == DIST_LOGNORMAL:
        return F[I[H_DP] + 2 * d] * np.exp(F[I[H_DP] + 2 * d + 1] * _normal(U))
    u = _rand(U)
    n = I[I[H_DN] + d]
    p0 = I[H_DPR] + d * I[H_Q]
    q0 = I[H_DQ] + d * I[H_Q]
    lo, hi = 0, n - 1
    while hi - lo > 1:  # p[lo] <= u < p[hi]
        mid = (lo + hi) >> 1
        if F[p0 + mid] <= u:
            lo = mid
        else:
            hi = mid
    w = F[p0 + hi] - F[p0 + lo]
    if w <= 0.0:
        return F[q0 + lo]
    return F[q0 + lo] + (F[q0 + hi] - F[q0 + lo]) * (u - F[p0 + lo]) / w


# --- capacity pools (sim/timeline.py): pool p's row in the pf and pi blocks ----------------------------------
@njit(cache=True, nogil=True, inline="always")
def pool_book(F, I, UL, NL, p, t, c, servers):
    """Book c server-seconds ready at t on at most `servers` servers of pool p; returns (start, end)."""
    return T.book(F, I, UL, NL, p, I[H_PF] + N_PF * p, I[H_PI] + N_PI * p, t, c, servers)


@njit(cache=True, nogil=True, inline="always")
def pool_used_until(F, I, UL, NL, p, t):
    """Work done on pool p before t (server-seconds). t must not go back in time between calls."""
    return T.used_until(F, I, UL, p, I[H_PF] + N_PF * p, I[H_PI] + N_PI * p, t)


@njit(cache=True, nogil=True, inline="always")
def _trim(F, I, UL, NL, p, t):
    """Forget pool p's bins before t (nothing is booked before the current time), keeping their sum."""
    T.trim(F, I, UL, NL, p, I[H_PF] + N_PF * p, I[H_PI] + N_PI * p, t)


@njit(cache=True, nogil=True)
def pool_free_from(F, I, UL, NL, p, t):
    """When a package ready at t could start on pool p (how far ahead it is booked)."""
    return pool_book(F, I, UL, NL, p, t, 0.0, 1)[0]


# --- events ------------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _sift_up(F, I, i, t, kind, arg):
    """Put event (t, kind, arg) at heap slot i or above it, with the next sequence number."""
    ht, hs, hk, ha = I[H_HT], I[H_HS], I[H_HK], I[H_HA]
    seq = I[G_SEQ]
    I[G_SEQ] = seq + 1
    while i > 0:
        par = (i - 1) >> 1
        tp = F[ht + par]
        if tp < t or (tp == t and I[hs + par] < seq):
            break
        F[ht + i], I[hs + i], I[hk + i], I[ha + i] = tp, I[hs + par], I[hk + par], I[ha + par]
        i = par
    F[ht + i], I[hs + i], I[hk + i], I[ha + i] = t, seq, kind, arg


@njit(cache=True, nogil=True)
def push(F, I, t, kind, arg):
    n = I[G_HN]
    if n >= I[H_HEAP]:
        raise RuntimeError("statistical kernel: event heap full")
    I[G_HN] = n + 1
    _sift_up(F, I, n, t, kind, arg)


@njit(cache=True, nogil=True)
def _move_earlier(F, I, kind, arg, t):
    """The pending event (kind, arg) happens at t instead, earlier than it was (pushed if none pends)."""
    hk, ha = I[H_HK], I[H_HA]
    for i in range(I[G_HN]):
        if I[hk + i] == kind and I[ha + i] == arg:
            _sift_up(F, I, i, t, kind, arg)
            return
    push(F, I, t, kind, arg)


@njit(cache=True, nogil=True)
def _pop(F, I):
    ht, hs, hk, ha = I[H_HT], I[H_HS], I[H_HK], I[H_HA]
    t, kind, arg = F[ht], I[hk], I[ha]
    n = I[G_HN] - 1
    I[G_HN] = n
    if n > 0:
        lt, ls, lk, la = F[ht + n], I[hs + n], I[hk + n], I[ha + n]
        i = 0
        while True:
            c = 2 * i + 1
            if c >= n:
                break
            if c + 1 < n and (F[ht + c + 1] < F[ht + c] or (F[ht + c + 1] == F[ht + c] and I[hs + c + 1] < I[hs + c])):
                c += 1
            if F[ht + c] < lt or (F[ht + c] == lt and I[hs + c] < ls):
                F[ht + i], I[hs + i], I[hk + i], I[ha + i] = F[ht + c], I[hs + c], I[hk + c], I[ha + c]
                i = c
            else:
                break
        F[ht + i], I[hs + i], I[hk + i], I[ha + i] = lt, ls, lk, la
    return t, kind, arg


# --- trace ---------------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _keep(F, I, sim_id):
    """sim/runtime.py's TraceSink.keep: whole simulations by Fibonacci hashing, others by count."""
    if I[I_TRACE_ALL]:
        return True
    if sim_id < 0:
        I[G_TCOUNT] += 1
        x = uint64(I[G_TCOUNT])
    else:
        x = uint64(sim_id)
    return ((x * _GOLDEN) >> uint64(11)) * (1.0 / 9007199254740992.0) < F[C_RATE]


@njit(cache=True, nogil=True)
def _slot(F, I, r, start, end):
    """A worker number for the trace: the first whose last package ended by `start`."""
    W = I[I[H_RI] + r * N_RI + RI_W]
    n = W if W > 1 else 1
    o = I[H_SLOT] + r * I[H_WM]
    best = 0
    for i in range(n):
        e = F[o + i]
        if e <= start + 1e-12:
            best = i
            break
        if e < F[o + best]:
            best = i
    F[o + best] = end
    return best if W > 0 else -1


# --- booking -----------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _io(F, I, U, UL, NL, r, t, cost):
    """Input reaches r's IO core at t; it is noticed in the running iteration and handled in the next."""
    o = I[H_RF] + r * N_RF
    it = F[o + RF_ITER]
    nap = F[C_NAP]
    if nap > 0.0 and _rand(U) < F[o + RF_IDLE]:
        t += _rand(U) * nap  # an idle IO core naps and is not woken by arrivals
    done = pool_book(F, I, UL, NL, r, t + _rand(U) * it, cost, 1)[1]
    I[I[H_RI] + r * N_RI + RI_NMSGS] += 1
    k = F[o + RF_LAM] * it  # one poll per busy iteration, shared by the k messages it handles
    if k < 1.0:
        k = 1.0
    F[o + RF_ITERS] += 1.0 / k
    F[o + RF_POLL] += F[o + RF_LOOP] / k
    return done + it


@njit(cache=True, nogil=True)
def _pool(I, r):
    """The pool that runs rank r's packages: its workers', or without workers its IO core's."""
    return I[I_R] + r if I[I[H_RI] + r * N_RI + RI_W] > 0 else r


@njit(cache=True, nogil=True)
def _work(F, I, U, UL, NL, r, t, cost, kind, sim_id):
    """A package on r's workers (or, without workers, its IO core); returns its end."""
    G = I[I_G] if sim_id >= 0 else 1
    cost += F[C_PERPKG]
    ri = I[H_RI] + r * N_RI
    W = I[ri + RI_W]
    if W > 0:
        start, end = pool_book(F, I, UL, NL, _pool(I, r), t, cost * G, G)
    else:
        start, end = pool_book(F, I, UL, NL, _pool(I, r), t, cost, 1)
    I[ri + RI_PKG0 + kind] += G
    if I[I_TRACE] and _keep(F, I, sim_id):
        for j in range(G):
            n = I[G_PKN]
            if n >= I[H_ROWS]:
                raise RuntimeError("statistical kernel: trace buffer overflow")
            F[I[H_TPF] + 2 * n], F[I[H_TPF] + 2 * n + 1] = start, end
            o = I[H_TPI] + 4 * n
            I[o], I[o + 1], I[o + 2] = r, _slot(F, I, r, start, end), kind
            I[o + 3] = sim_id * G + j if sim_id >= 0 else -1
            I[G_PKN] = n + 1
    if I[I_VIA_IO] and W > 0:
        end = _io(F, I, U, UL, NL, r, end, F[C_PM] * G)  # a finished package goes back through the IO core
    return end


@njit(cache=True, nogil=True, inline="always")
def _handling(F, I, r, count):
    """What r's IO core pays per message beyond its bytes for `count` messages: o + per_message each, or with
    io.batched (C_BATCHED) per_message each and o once per batch. A busy iteration that takes in and sends
    one batch for each of the P other ranks lasts T = loop + 2 P o + lam T per_message at the rank's message
    rate lam, so a batch holds lam T / 2P messages."""
    if F[C_BATCHED] == 0.0:
        return F[C_OPM] * count
    o = I[H_RF] + r * N_RF
    lam, pm, ov = F[o + RF_LAM], F[C_PM], F[C_O]
    p2 = 2.0 * max(1, I[I_R] - 1)
    free = 1.0 - lam * pm
    if free < 0.05:
        free = 0.05
    k = lam * (F[o + RF_LOOP] + p2 * ov) / free / p2
    return (pm + (ov / k if k > 1.0 else ov)) * count


@njit(cache=True, nogil=True)
def _msg(F, I, U, UL, NL, r, t, dst, kind, nbytes, sim_id, stats, count):
    """r's worker hands a message to r's IO core at t; returns when dst's IO core has handled it.
    count > 1: that many messages on the same link at once, of nbytes in all (a broadcast window)."""
    G = I[I_G]
    if sim_id >= 0 and G > 1:
        count *= G
        nbytes *= G
    pb = F[C_PB]
    t_send = _io(F, I, U, UL, NL, r, t, _handling(F, I, r, count) + nbytes * pb)
    a, b = I[I[H_NODE] + r], I[I[H_NODE] + dst]
    if a == b:
        t_arr = t_send + F[C_SHML] + nbytes * F[C_SHMG]
    else:
        if nbytes > F[C_EAGER]:
            t_send += 2.0 * (F[C_L] + 2.0 * F[C_O])
        ser = nbytes * F[C_GPB]
        if ser < NIC_BOOK:  # a small message occupies the NIC for far less than anything else takes
            t_arr = t_send + F[C_L] + ser
        else:
            occ = ser if ser > F[C_GAP] else F[C_GAP]
            R2 = 2 * I[I_R]
            inject = pool_book(F, I, UL, NL, R2 + a, t_send, occ, 1)[0]
            at_rx = pool_book(F, I, UL, NL, R2 + I[I_NODES] + b, inject + F[C_L], occ, 1)[0]
            t_arr = at_rx + ser
    ri = I[H_RI] + r * N_RI
    I[ri + RI_MSG0 + kind] += count
    I[ri + RI_BYTES_OUT] += nbytes
    if I[I_TRACE] and (sim_id < 0 or _keep(F, I, sim_id)):
        for j in range(count):
            n = I[G_MSGN]
            if n >= I[H_ROWS]:
                raise RuntimeError("statistical kernel: trace buffer overflow")
            F[I[H_TMF] + 2 * n], F[I[H_TMF] + 2 * n + 1] = t_send, t_arr
            o = I[H_TMI] + 5 * n
            I[o], I[o + 1], I[o + 2], I[o + 3] = r, dst, kind, nbytes // count
            I[o + 4] = sim_id * G + j % G if sim_id >= 0 else -1
            I[G_MSGN] = n + 1
    I[I[H_RI] + dst * N_RI + RI_MSGS_IN] += count
    if kind == M_MOVE:
        F[I[H_RF] + dst * N_RF + RF_MOVES_IN] += count
    return _io(F, I, U, UL, NL, dst, t_arr, _handling(F, I, dst, count) + nbytes * (pb + (F[C_SPB] if stats else 0.0)))


# --- message sizes: model/roles/messages.py's records, with the counts the workload gives -------------------
@njit(cache=True, nogil=True, inline="always")
def _count(U, x):
    """A whole number with mean x >= 0: floor(x), plus one with the probability of its fraction."""
    n = int(x)
    if n == x:  # no draw: a whole mean leaves the random stream as it is
        return n
    return n + (1 if _rand(U) < x - n else 0)


@njit(cache=True, nogil=True, inline="always")
def _steps_bytes(n):
    """A MOVE, PLAYOUT_FWD or JOB record carrying a simulation's n step records."""
    return record_size(n, False, 0, 0)


@njit(cache=True, nogil=True, inline="always")
def _result_bytes(I, n):
    """An UPDATE (n step records) or RESULT (none) record, with the playout's AMAF map under RAVE."""
    return record_size(n, False, 0, I[I_AMAF])


@njit(cache=True, nogil=True, inline="always")
def _rows_bytes(I, nodes):
    """A SYNC, BCAST or MERGE record about `nodes` shared nodes (workload.sync_rows rows each)."""
    return record_size(0, False, nodes * I[I_ROWS], 0)


# --- simulations -------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _maybe_expand(F, I, U, UL, NL, r, t, sid):
    """The leaf is expanded with the workload's probability; selection then goes on below the new node, a
    select of its own (the roles' select parts: one per rank a simulation visits, one after each expand)."""
    if _rand(U) < F[C_EXPANDS]:
        t = _work(F, I, U, UL, NL, r, t, _draw(F, I, U, P_EXPAND), P_EXPAND, sid)
        t = _work(F, I, U, UL, NL, r, t, _draw(F, I, U, P_SELECT), P_SELECT, sid)
    return t


@njit(cache=True, nogil=True)
def _step_rank(F, I, U, step, Mg):
    """The rank (within the group) of a simulation's remote step `step`: one of that step's hot nodes'
    (workload.hot_steps), else uniform."""
    u = _rand(U)
    if step < I[I_HOT_STEPS]:
        W = I[I_HOT_W]
        n = I[I[H_HN] + step]
        for j in range(n):
            if u < F[I[H_HP] + step * W + j]:
                return I[I[H_HR] + step * W + j]
        if n:  # the rest of the step is uniform: rescale u to [0, 1)
            c = F[I[H_HP] + step * W + n - 1]
            u = (u - c) / (1.0 - c) if c < 1.0 else 0.0
    return int(u * Mg)


@njit(cache=True, nogil=True)
def _lighter(F, I, UL, NL, r, t, g0, Mg, wait):
    """The role's load rule (model/roles/core.py _lighter): the search rank of r's group booked least far
    ahead of t, if that and a margin is at most 1/C_FRATIO of this simulation's wait at r (its backlog there,
    as the thesis's rule reads it), and C_FLOAD seconds (two packages) less; else -1. The margin, C_FMARGIN,
    stands for the role's late load figures, which this exact booking lacks: a rank reports its load in a
    record it writes while running a package, and the role takes the least of the group's other Mg - 1
    figures, each as old as its last record, so the more of them the likelier one reads low. C_FMARGIN =
    C_FLOAD (Mg - 1)^-0.6 (two ranks: two packages; four: about one) is fitted: it keeps the kernel's
    playouts forwarded per simulation within ~0.02 of the roles' on 2 and 4 search ranks at the default
    floor of simulations in flight and at half of it (Go 9x9, six seeds each; the roles forward 0.03-0.05 a
    simulation on 2 ranks, 0.10-0.13 on 4: tests/test_sim_statistical_kernel.py); beyond 4 it is
    extrapolated, not checked."""
    best, least = -1, np.inf
    for d in range(g0, g0 + Mg):
        if d != r:
            x = pool_free_from(F, I, UL, NL, _pool(I, d), t) - t
            if x < least:
                best, least = d, x
    return best if best >= 0 and (least + F[C_FMARGIN]) * F[C_FRATIO] + F[C_FLOAD] <= wait else -1


@njit(cache=True, nogil=True)
def _plan(F, I, U, origin, g0, Mg):
    """A simulation's path: the ranks it visits in turn (plan[:n_plan]), then from s0 the set of them with
    its origin (plan[s0:s0 + n_steps])."""
    cur = 0 if I[I_ALGO] == A_TDS else origin
    n_remote = _count(U, _draw(F, I, U, D_REMOTE))  # a whole number with the drawn mean
    plan = np.empty(2 * n_remote + 3, np.int64)  # the ranks visited, then (from n_remote + 1) the set of them
    plan[0] = cur
    n_plan = 1
    s0 = n_remote + 1
    plan[s0] = cur
    n_steps = 1
    for step in range(n_remote):
        nxt = g0 + _step_rank(F, I, U, step, Mg)
        if nxt != cur:
            plan[n_plan] = nxt
            n_plan += 1
            cur = nxt
        new = True
        for i in range(n_steps):
            if plan[s0 + i] == nxt:
                new = False
        if new:
            plan[s0 + n_steps] = nxt
            n_steps += 1
    return plan, n_plan, s0, n_steps


@njit(cache=True, nogil=True)
def _treesplit_sim(F, I, U, UL, NL, origin, t, sid, part):
    """Book a treesplit, tds or hybrid simulation from t on; returns when its origin counts it done and when
    it left its origin (-1: it ran there from root to update). `part`: SIM_WHOLE all of it; SIM_CHAINED one
    that a chaining package runs after its first (_start_sim): all of it if it stays on its origin, else
    only its select there, with which the package ends (then it returns -1 and when it leaves); SIM_RESUME
    the rest of such a one, from its first hop on. Nothing of a simulation is kept between events, so the
    rest takes a path drawn anew among those that leave the origin, as the one drawn before did."""
    M = I[I_M]
    G = I[I_G]
    Mg = M // I[I_GROUPS]  # hybrid: a simulation stays in its origin's group of Mg ranks
    g0 = origin - origin % Mg
    plan, n_plan, s0, n_steps = _plan(F, I, U, origin, g0, Mg)
    while part == SIM_RESUME and n_plan == 1:
        plan, n_plan, s0, n_steps = _plan(F, I, U, origin, g0, Mg)
    new = True
    for i in range(n_steps):  # the origin hears the result: it counts the simulation done
        if plan[s0 + i] == origin:
            new = False
    if new:
        plan[s0 + n_steps] = origin
        n_steps += 1
    # updates go out in ascending rank order, as the reference's set of small ints iterates them
    for i in range(s0 + 1, s0 + n_steps):
        x = plan[i]
        j = i - 1
        while j >= s0 and plan[j] > x:
            plan[j + 1] = plan[j]
            j -= 1
        plan[j + 1] = x
    # step records: the k-th hop carries the top's (the duplicated nodes walked at the origin; tds: the root's,
    # selected at its owner) and one more per hop before it; the path ends with workload.tail_steps more
    top = _count(U, F[C_TOP])
    path = top + n_plan - 1 + _count(U, F[C_TAIL])
    r = origin
    t_out = -1.0
    if plan[0] != origin:  # tds: to the root's owner, before anything is selected
        t_out = t
        t = _msg(F, I, U, UL, NL, origin, t, plan[0], M_MOVE, _steps_bytes(0), sid, False, 1)
        r = plan[0]
    last = n_plan - 1
    t_here = t
    for k in range(n_plan):
        rid = plan[k]
        if k:
            if t_out < 0.0:
                t_out = t
            t = _msg(F, I, U, UL, NL, r, t, rid, M_MOVE, _steps_bytes(top + k - 1), sid, False, 1)
            r = rid
        t_here = t
        if k == 0 and part == SIM_RESUME:  # selected in the package that ran it
            continue
        t = _work(F, I, U, UL, NL, r, t, _draw(F, I, U, P_SELECT), P_SELECT, sid)
        if k == 0 and last > 0 and part == SIM_CHAINED:
            return -1.0, t
        if k < last:
            continue
        t = _maybe_expand(F, I, U, UL, NL, r, t, sid)
    # the role forwards the playout while more than K S_par/M MOVEs wait at the rank for their select: by
    # Little's law, its recent MOVE rate times the time this simulation took there (its whole path is
    # booked at once, so the backlog it waited behind is behind it now)
    dst = -1
    if part != SIM_CHAINED:  # a chaining package's playouts are fused (model/roles/core.py _sim_pkg)
        if F[C_FLOAD] > 0 and n_plan > 1:  # the role's own simulations mostly chain their playouts (kept here)
            dst = _lighter(F, I, UL, NL, r, t, g0, Mg, t - t_here)
        if dst < 0 and I[I_FORWARD] and F[I[H_RF] + r * N_RF + RF_MOVE_LAM] * (t - t_here) > F[C_FHELD]:
            dst = g0 + int(_rand(U) * (Mg - 1))
            if dst >= r:
                dst += 1
    if dst >= 0:
        if t_out < 0.0:
            t_out = t
        t = _msg(F, I, U, UL, NL, r, t, dst, M_FWD, _steps_bytes(path), sid, False, 1)
        r = dst
    t = _work(F, I, U, UL, NL, r, t, _draw(F, I, U, P_PLAYOUT), P_PLAYOUT, sid)
    I[I[H_RI] + r * N_RI + RI_PLAYOUTS] += G
    t_done = t
    # an UPDATE carries the whole path under RAVE (the receiver adds the playout's AMAF to its children) or
    # when one rank selected all of it, else the records of the ranks it goes to: about an equal share each
    mine = path if (I[I_RAVE] or n_steps == 1) else max(1, path // n_steps)
    for i in range(n_steps):
        d = plan[s0 + i]
        if d == r:
            end = _work(F, I, U, UL, NL, r, t, _draw(F, I, U, P_UPDATE), P_UPDATE, sid)
        else:
            t_in = _msg(F, I, U, UL, NL, r, t, d, M_UPDATE, _result_bytes(I, mine), sid, False, 1)
            end = _work(F, I, U, UL, NL, d, t_in, _draw(F, I, U, P_UPDATE), P_UPDATE, sid)
        if d == origin:
            t_done = end
    return t_done, t_out


@njit(cache=True, nogil=True)
def _root_sim(F, I, U, UL, NL, r, t, sid):
    """Book a root-parallel simulation (all of it at r) from t on; returns when it ends."""
    t = _work(F, I, U, UL, NL, r, t, _draw(F, I, U, P_SELECT), P_SELECT, sid)
    t = _maybe_expand(F, I, U, UL, NL, r, t, sid)
    t = _work(F, I, U, UL, NL, r, t, _draw(F, I, U, P_PLAYOUT), P_PLAYOUT, sid)
    I[I[H_RI] + r * N_RI + RI_PLAYOUTS] += I[I_G]
    return _work(F, I, U, UL, NL, r, t, _draw(F, I, U, P_UPDATE), P_UPDATE, sid)


@njit(cache=True, nogil=True)
def _workers_full(F, I, M):
    """Whether every playout rank has C_LSHARE jobs a thread out (sent and not yet backed up): then a leaf
    master with nothing else to do plays the leaf out itself (model/roles/core.py _master_plays)."""
    for d in range(1, M):
        ri = I[H_RI] + d * N_RI
        if I[ri + RI_JOBS] < F[C_LSHARE] * max(1, I[ri + RI_W]):
            return False
    return True


@njit(cache=True, nogil=True)
def _leaf_sim(F, I, U, UL, NL, master, t, sid):
    M, G = I[I_M], I[I_G]
    job = 0  # the playout rank the leaf's job goes to (0: none)
    # the master had nothing queued when this simulation began (the role's master plays out only then)
    idle = F[C_LSHARE] > 0 and pool_free_from(F, I, UL, NL, _pool(I, master), t) <= t
    t = _work(F, I, U, UL, NL, master, t, _draw(F, I, U, P_SELECT), P_SELECT, sid)
    t = _maybe_expand(F, I, U, UL, NL, master, t, sid)
    if M == 1 or (idle and _workers_full(F, I, M)):
        t = _work(F, I, U, UL, NL, master, t, _draw(F, I, U, P_PLAYOUT), P_PLAYOUT, sid)
        I[I[H_RI] + master * N_RI + RI_PLAYOUTS] += G
    else:
        wr = 1  # the playout rank with the fewest jobs out, as the role deals them
        for d in range(2, M):
            if I[I[H_RI] + d * N_RI + RI_JOBS] < I[I[H_RI] + wr * N_RI + RI_JOBS]:
                wr = d
        I[I[H_RI] + wr * N_RI + RI_JOBS] += 1
        job = wr
        t = _msg(F, I, U, UL, NL, master, t, wr, M_JOB, _steps_bytes(_count(U, F[C_TOP])), sid, False, 1)
        t = _work(F, I, U, UL, NL, wr, t, _draw(F, I, U, P_PLAYOUT), P_PLAYOUT, sid)
        I[I[H_RI] + wr * N_RI + RI_PLAYOUTS] += G
        t = _msg(F, I, U, UL, NL, wr, t, 0, M_RESULT, _result_bytes(I, 0), sid, False, 1)
    t = _work(F, I, U, UL, NL, master, t, _draw(F, I, U, P_UPDATE), P_UPDATE, sid)
    push(F, I, t, EV_DONE, master + M * job)


@njit(cache=True, nogil=True)
def _start_sim(F, I, U, UL, NL, WU, WA, origin):
    """Start a simulation of `origin` now and book it. One that runs on its origin from root to update
    finishes in the package it started in, which goes on with the origin's next simulation from the root
    (the roles' chain, model/roles/core.py _fused): up to I_CHAIN simulations in a row, unless a SYNC is
    due at an update. They are booked here one after another, so each has the origin's worker before
    anything booked later: the package keeps its worker, ahead of the queue. One that leaves the origin
    ends the package with its select there; the rest of it is booked when its MOVE leaves (EV_RESUME), as
    a simulation is booked when it starts. What a package finished counts as done when it ends (the
    roles' _chain_settle, EV_CHAIN)."""
    t = F[C_NOW]
    a = I[I_ALGO]
    left = I[I_CHAIN] - 1
    k = 0  # simulations this package finished before this one
    while True:
        I[I[H_RI] + origin * N_RI + RI_STARTED] += 1
        sid = I[G_NEXT_SIM]
        I[G_NEXT_SIM] = sid + 1
        if a == A_LEAF:
            _leaf_sim(F, I, U, UL, NL, origin, t, sid)
            return
        if a == A_ROOT:
            t_done, t_out = _root_sim(F, I, U, UL, NL, origin, t, sid), -1.0
        else:
            t_done, t_out = _treesplit_sim(F, I, U, UL, NL, origin, t, sid, SIM_CHAINED if k else SIM_WHOLE)
        if t_out < 0.0 and left > 0 and _no_sync_due(F, I, U, origin):
            k += 1
            left -= 1
            t = t_done
            continue
        if k:
            push(F, I, t_done if t_out < 0.0 else t_out, EV_CHAIN, origin + I[I_M] * k)
        if k and t_out >= 0.0:
            push(F, I, t_out, EV_RESUME, origin + I[I_M] * sid)
        else:
            push(F, I, t_done, EV_DONE, origin)
        return


@njit(cache=True, nogil=True)
def _resume(F, I, U, UL, NL, arg):
    """Simulation arg // M of origin arg % M leaves the chaining package that selected from its root: the
    rest of it."""
    M = I[I_M]
    t_done, _ = _treesplit_sim(F, I, U, UL, NL, arg % M, F[C_NOW], arg // M, SIM_RESUME)
    push(F, I, t_done, EV_DONE, arg % M)


@njit(cache=True, nogil=True)
def _no_sync_due(F, I, U, r):
    """Whether r's next completion passes no SYNC gap (see _syncs): then it is counted towards the next gap
    here, for a simulation that finishes in a chaining package; else _done counts it and sends the SYNC."""
    if I[I_ALGO] == A_ROOT:
        return True
    acc = I[H_RF] + r * N_RF + RF_SYNC_ACC
    nxt = I[H_RF] + r * N_RF + RF_SYNC_NEXT
    if F[nxt] == 0.0:  # the rank's first gap
        F[nxt] = _sync_gap(F, U)
    x = F[C_SYNCS] * I[I_G]
    if F[acc] + x >= F[nxt]:
        return False
    F[acc] += x
    return True


@njit(cache=True, nogil=True)
def _completed(F, I, U, r, k):
    """k simulations of origin r completed: counted, with the nodes they stored."""
    G = I[I_G]
    a = I[I_ALGO]
    ri = I[H_RI] + r * N_RI
    I[ri + RI_SIMS_DONE] += G * k
    if a == A_ROOT or a == A_LEAF:
        I[ri + RI_NODES] += G * k
    else:
        n = F[C_NODES] * G * k
        ni = int(n)
        I[ri + RI_NODES] += ni + (1 if _rand(U) < n - ni else 0)


@njit(cache=True, nogil=True)
def _syncs(F, I, U, UL, NL, WU, WA, r, t):
    """A simulation of origin r completed at t: the SYNCs that came due."""
    G = I[I_G]
    # a rank's SYNCs are due when its completed simulations (in units of 1 / syncs_per_sim) pass the
    # next gap; gaps drawn with the roles' spread (workload.sync_gap_cv) bunch some SYNCs closer than
    # even spacing would, and a broadcast window then merges them as the roles' are merged
    acc = I[H_RF] + r * N_RF + RF_SYNC_ACC
    nxt = I[H_RF] + r * N_RF + RF_SYNC_NEXT
    if F[nxt] == 0.0:  # the rank's first gap
        F[nxt] = _sync_gap(F, U)
    F[acc] += F[C_SYNCS] * G
    while F[acc] >= F[nxt]:
        # several due at once (short gaps, or a bundle of simulations) are as many SYNCs: syncs_per_sim
        # and sync_rows are fitted per message
        F[acc] -= F[nxt]
        F[nxt] = _sync_gap(F, U)
        _send_syncs(F, I, U, UL, NL, WU, WA, r, t, 1)


@njit(cache=True, nogil=True)
def _merges(F, I, U, UL, NL, r, k, t):
    """k more of r's own simulations completed at t: root parallelisation between groups (root: every rank
    a group of its own) sends every merge_every own simulations one MERGE to every search rank of the other
    groups, applied there in a sync package."""
    a = I[I_ALGO]
    if a != A_ROOT and a != A_HYBRID:
        return
    ri = I[H_RI] + r * N_RI
    before = I[ri + RI_DONE_LOCAL]
    I[ri + RI_DONE_LOCAL] += I[I_G] * k
    me = I[I_MERGE_EVERY]
    M = I[I_M]
    Mg = M // I[I_GROUPS]
    if I[I_GROUPS] > 1 and I[ri + RI_DONE_LOCAL] // me > before // me:
        nb = _rows_bytes(I, I[I_MERGE_DEPTH])
        for d in range(M):
            if d // Mg != r // Mg:
                t_in = _msg(F, I, U, UL, NL, r, t, d, M_MERGE, nb, -1, True, 1)
                _work(F, I, U, UL, NL, d, t_in, _draw(F, I, U, P_SYNC), P_SYNC, -1)


@njit(cache=True, nogil=True)
def _done(F, I, U, UL, NL, WU, WA, r):
    """A simulation of origin r ended: count it, maybe synchronise, start the next (S_par stays). Leaf: r is
    the master + M x the playout rank of its job (0: played at the master), whose job is backed up now."""
    a = I[I_ALGO]
    if a == A_LEAF:
        wr = r // I[I_M]
        r = r % I[I_M]
        if wr > 0:
            I[I[H_RI] + wr * N_RI + RI_JOBS] -= 1
    t = F[C_NOW]
    _completed(F, I, U, r, 1)
    if a != A_ROOT and a != A_LEAF:
        _syncs(F, I, U, UL, NL, WU, WA, r, t)
    _merges(F, I, U, UL, NL, r, 1, t)
    _start_sim(F, I, U, UL, NL, WU, WA, r)


@njit(cache=True, nogil=True)
def _chain_done(F, I, U, UL, NL, arg):
    """A chaining package of origin arg % M ended: the arg // M simulations it finished before the one it
    ended with count as done now (the one it ended with counts when that ends, _done)."""
    M = I[I_M]
    r, k = arg % M, arg // M
    _completed(F, I, U, r, k)
    _merges(F, I, U, UL, NL, r, k, F[C_NOW])


# --- synchronisation and broadcast ---------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _popcount(U, o, n):
    c = 0
    for j in range(n):
        x = U[o + j]
        while x:
            x &= x - uint64(1)
            c += 1
    return c


@njit(cache=True, nogil=True, inline="always")
def _routes(I, origin, at):
    """Where broadcast rank `at` (of its group's network) forwards a broadcast from `origin`: destinations
    lo .. hi - 1 of block rd (model/topology.py's routing, tabulated by sim/statistical.py's routes)."""
    i = I[H_RS] + origin * (I[I_B] // I[I_GROUPS]) + at
    return I[i], I[i + 1]


# A broadcast rank b's window, as the role keeps it (model/roles/broadcast.py): the first input opens it,
# and bcast_delay later it is flushed with every input that arrived by then. Inputs are registered when
# they are sent, at or before their arrival (paths are booked ahead), and out of order; they wait in b's
# pending arrivals until a flush takes them: row i of WA[b] is (arrival time, client number or -1 for a
# peer's BCAST, origin, rows as sent), row i of WU[b] their bitset of nw words over the shared nodes.
# I[nar + b] arrivals are pending; rf column RF_FLUSH of b's rank is when its window closes (-1: none open).
A_T, A_CLIENT, A_ORIGIN, A_LISTED = range(4)
N_A = 4


@njit(cache=True)
def new_arrivals(bx, rows, nw):
    """WU, WA of bx broadcast ranks with room for `rows` pending arrivals each (grown where needed); built in a
    kernel for the reason timeline._rings is."""
    WU, WA = List(), List()
    for _ in range(bx):
        WU.append(np.zeros((rows, nw), np.uint64))
        WA.append(np.zeros((rows, N_A), np.float64))
    return WU, WA


@njit(cache=True, nogil=True)
def _register(F, I, U, UL, NL, WU, WA, b, t, bits, n_listed, origin, client):
    """Rows (bitset `bits`, n_listed of them as sent) reach broadcast rank b at t, from its client number
    `client` (a SYNC) or from a peer (client -1: a BCAST) with the broadcast's origin. b counts from the
    first broadcast rank, origin from the first of b's group (hybrid: each group has a broadcast network of
    its own)."""
    o = I[H_NAR] + b
    n = I[o]
    wu, wa = WU[b], WA[b]
    if n == wa.shape[0]:  # full: twice the rows
        nu = np.zeros((2 * n, wu.shape[1]), np.uint64)
        na = np.zeros((2 * n, N_A), np.float64)
        nu[:n] = wu
        na[:n] = wa
        WU[b], WA[b] = nu, na
        wu, wa = nu, na
    for j in range(I[H_NW]):
        wu[n, j] = bits[j]
    wa[n, A_T], wa[n, A_CLIENT], wa[n, A_ORIGIN], wa[n, A_LISTED] = t, client, origin, n_listed
    I[o] = n + 1
    # the window closes bcast_delay after its first input, which may be this one
    f = I[H_RF] + (I[I_M] + b) * N_RF + RF_FLUSH
    if F[f] < 0.0:
        F[f] = t + F[C_DELAY]
        push(F, I, F[f], EV_FLUSH, I[I_M] + b)
    elif t + F[C_DELAY] < F[f]:
        F[f] = t + F[C_DELAY]
        _move_earlier(F, I, EV_FLUSH, I[I_M] + b, F[f])


@njit(cache=True, nogil=True)
def _client(I, b, r):
    """Search rank r's number among broadcast rank b's clients."""
    lo = I[I[H_CLP] + b]
    for j in range(lo, I[I[H_CLP] + b + 1]):
        if I[I[H_CLL] + j] == r:
            return j - lo
    raise RuntimeError("statistical kernel: a SYNC to a broadcast rank that does not serve its sender")


@njit(cache=True, nogil=True)
def _send_syncs(F, I, U, UL, NL, WU, WA, r, t, k):
    """k shared nodes reached their sync threshold: a sync package, then one SYNC with their rows."""
    M, B = I[I_M], I[I_B]
    end = _work(F, I, U, UL, NL, r, t, _draw(F, I, U, P_SYNC), P_SYNC, -1)
    nb = _rows_bytes(I, k)
    if B:
        bits = np.zeros(I[H_NW], np.uint64)
        for _ in range(k):
            u = _rand(U)  # a few near-root nodes take most synchronisations
            node = int(I[I_DUP] * u * u)
            bits[node >> 6] |= uint64(1) << uint64(node & 63)
        dst = I[I[H_PART] + r]
        t_in = _msg(F, I, U, UL, NL, r, end, dst, M_SYNC, nb, -1, True, 1)
        b = dst - M
        _register(F, I, U, UL, NL, WU, WA, b, t_in, bits, k, b % (B // I[I_GROUPS]), _client(I, b, r))
    else:
        for d in range(M):
            if d != r:
                t_in = _msg(F, I, U, UL, NL, r, end, d, M_SYNC, nb, -1, True, 1)
                _work(F, I, U, UL, NL, d, t_in, _draw(F, I, U, P_SYNC), P_SYNC, -1)


@njit(cache=True, nogil=True)
def _flush(F, I, U, UL, NL, WU, WA, rid):
    """The end of a broadcast rank's window: merge what arrived in it, then forward to peers and deliver to
    clients; the inputs already on their way open the next window."""
    M, B = I[I_M], I[I_B]
    nw = I[H_NW]
    t = F[C_NOW]
    f = I[H_RF] + rid * N_RF + RF_FLUSH
    b = rid - M
    Bg = B // I[I_GROUPS]
    bl = b % Bg  # b's number in its group's broadcast network
    gb = b - bl
    c0, c1 = I[I[H_CLP] + b], I[I[H_CLP] + b + 1]
    nc = c1 - c0
    # merge per node: everything (for the merged count), per origin to forward, the peers', each client's
    fwd = np.zeros(Bg * nw, np.uint64)
    src = np.zeros((nc + 1) * nw, np.uint64)  # the peers' first, then each client's
    every = np.zeros(nw, np.uint64)
    listed = 0
    wu, wa = WU[b], WA[b]
    n = I[I[H_NAR] + b]
    kept = 0
    first = -1.0
    for i in range(n):
        if wa[i, A_T] > t:  # on its way: the next window's
            if kept != i:
                wu[kept] = wu[i]
                wa[kept] = wa[i]
            if first < 0.0 or wa[i, A_T] < first:
                first = wa[i, A_T]
            kept += 1
            continue
        org, s0 = int(wa[i, A_ORIGIN]), (1 + int(wa[i, A_CLIENT])) * nw
        lo, hi = _routes(I, org, bl)
        for j in range(nw):
            x = wu[i, j]
            if hi > lo:
                fwd[org * nw + j] |= x
            src[s0 + j] |= x
            every[j] |= x
        listed += int(wa[i, A_LISTED])
    I[I[H_NAR] + b] = kept
    F[f] = -1.0
    if kept:
        F[f] = first + F[C_DELAY]
        push(F, I, F[f], EV_FLUSH, rid)
    if kept == n:
        return
    I[I[H_RI] + rid * N_RI + RI_MERGED] += listed - _popcount(every, 0, nw)
    end = _work(F, I, U, UL, NL, rid, t, _draw(F, I, U, P_BCAST), P_BCAST, -1)
    # one BCAST per (origin, dimension) and next rank, as the role sends them; booked per link
    rd = I[H_RD]
    n_items = 0
    for o in range(Bg):
        if _popcount(fwd, o * nw, nw) > 0:
            lo, hi = _routes(I, o, bl)
            n_items += hi - lo
    it_dst = np.empty(n_items, np.int64)
    it_o = np.empty(n_items, np.int64)
    it_size = np.empty(n_items, np.int64)
    n = 0
    for o in range(Bg):
        size = _popcount(fwd, o * nw, nw)
        if size > 0:
            lo, hi = _routes(I, o, bl)
            for j in range(lo, hi):
                it_dst[n], it_o[n], it_size[n] = gb + I[rd + j], o, size
                n += 1
    done = np.zeros(n_items, np.bool_)
    for i in range(n_items):
        if done[i]:
            continue
        dst = it_dst[i]
        nb = 0
        count = 0
        for j in range(i, n_items):
            if it_dst[j] == dst:
                nb += _rows_bytes(I, it_size[j])
                count += 1
        t_in = _msg(F, I, U, UL, NL, rid, end, M + dst, M_BCAST, nb, -1, True, count)
        for j in range(i, n_items):
            if it_dst[j] == dst:
                done[j] = True
                o = it_o[j] * nw
                _register(F, I, U, UL, NL, WU, WA, dst, t_in, fwd[o:o + nw], it_size[j], it_o[j], -1)
    # each client: the rows of the peers and of the other clients, never its own back
    rows = np.empty(nw, np.uint64)
    for i in range(nc):
        for j in range(nw):
            rows[j] = src[j]
        for k in range(nc):
            if k != i:
                for j in range(nw):
                    rows[j] |= src[(1 + k) * nw + j]
        nd = _popcount(rows, 0, nw)
        if nd:
            c = I[I[H_CLL] + c0 + i]
            t_in = _msg(F, I, U, UL, NL, rid, end, c, M_SYNC, _rows_bytes(I, nd), -1, True, 1)
            _work(F, I, U, UL, NL, c, t_in, _draw(F, I, U, P_SYNC), P_SYNC, -1)


# --- upkeep ------------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _load(F, I, U, UL, NL, WU, WA):
    """Re-estimate each IO core's load: the loop stretches as its handling work nears the whole core."""
    t = F[C_NOW]
    push(F, I, t + LOAD_WINDOW, EV_LOAD, 0)
    R = I[I_R]
    for r in range(R):
        o = I[H_RF] + r * N_RF
        ri = I[H_RI] + r * N_RI
        work = F[I[H_PF] + N_PF * r + PF_BOOKED]
        rho = (work - F[o + RF_MARK_WORK]) / LOAD_WINDOW
        if rho > 0.95:
            rho = 0.95
        lam = (I[ri + RI_NMSGS] - I[ri + RI_MARK_MSGS]) / LOAD_WINDOW
        F[o + RF_LAM] = lam
        F[o + RF_MARK_WORK] = work
        F[o + RF_MOVE_LAM] = (F[o + RF_MOVES_IN] - F[o + RF_MARK_MOVES]) / LOAD_WINDOW
        F[o + RF_MARK_MOVES] = F[o + RF_MOVES_IN]
        I[ri + RI_MARK_MSGS] = I[ri + RI_NMSGS]
        F[o + RF_ITER] = F[o + RF_LOOP] / (1.0 - rho)
        idle = 1.0 - rho - lam * F[o + RF_LOOP]  # busy: handling, or polling in iterations that handle
        F[o + RF_IDLE] = idle if idle > 0.0 else 0.0
        _trim(F, I, UL, NL, r, t)
        if I[ri + RI_W] > 0:
            _trim(F, I, UL, NL, R + r, t)
    for p in range(2 * R, 2 * R + 2 * I[I_NODES]):
        _trim(F, I, UL, NL, p, t)


@njit(cache=True, nogil=True)
def run_until(F, I, U, UL, NL, WU, WA, t_end, margin):
    """Process events up to t_end. Returns ST_DONE, or ST_TRACE to be called again after the caller
    drained the trace buffers (fewer than `margin` rows left)."""
    cap = I[H_ROWS] - margin
    ht = I[H_HT]
    while I[G_HN] > 0 and F[ht] <= t_end:
        if I[G_PKN] > cap or I[G_MSGN] > cap:
            return ST_TRACE
        t, kind, arg = _pop(F, I)
        F[C_NOW] = t
        if kind == EV_DONE:
            _done(F, I, U, UL, NL, WU, WA, arg)
        elif kind == EV_START:
            _start_sim(F, I, U, UL, NL, WU, WA, arg)
        elif kind == EV_CHAIN:
            _chain_done(F, I, U, UL, NL, arg)
        elif kind == EV_RESUME:
            _resume(F, I, U, UL, NL, arg)
        elif kind == EV_FLUSH:
            _flush(F, I, U, UL, NL, WU, WA, arg)
        else:
            _load(F, I, U, UL, NL, WU, WA)
        I[G_EVENTS] += 1
    F[C_NOW] = t_end
    return ST_DONE


@njit(cache=True, nogil=True)
def schedule_start(F, I, per_rank, s_par):
    """The first events: S_par simulations at time 0, the first load estimate."""
    M = I[I_M]
    if I[I_ALGO] == A_LEAF:
        for _ in range(s_par):
            push(F, I, 0.0, EV_START, 0)
    else:
        for r in range(M):
            for _ in range(per_rank):
                push(F, I, 0.0, EV_START, r)
    push(F, I, LOAD_WINDOW, EV_LOAD, 0)


@njit(cache=True, nogil=True)
def snapshot(F, I, UL, NL, t, io_used, busy):
    """Work done before t on each rank's IO core and on its workers (its IO core if it has none)."""
    R = I[I_R]
    for r in range(R):
        io_used[r] = pool_used_until(F, I, UL, NL, r, t)
        busy[r] = pool_used_until(F, I, UL, NL, R + r, t) if I[I[H_RI] + r * N_RI + RI_W] > 0 else io_used[r]


@njit(cache=True, nogil=True)
def sample(F, I, UL, NL, t, used, ahead):
    """For the trace's samples: work done before t on each rank's workers (or IO core) and how far ahead
    of t that pool is booked."""
    R = I[I_R]
    for r in range(R):
        p = R + r if I[I[H_RI] + r * N_RI + RI_W] > 0 else r
        used[r] = pool_used_until(F, I, UL, NL, p, t)
        a = pool_free_from(F, I, UL, NL, p, t) - t
        ahead[r] = a if a > 0.0 else 0.0
