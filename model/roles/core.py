"""A UCT-Treesplit search rank as numba kernels over arrays: the role's whole state machine, compiled.

The search rank of Distributed-Tree-Parallelization (Schaefers 2014, 4.2) handles a simulation
a few microseconds at a time: a MOVE arrives, one select step runs, an UPDATE leaves. In Python each of those
events cost tens of microseconds of interpreter; here they cost about what the tree work costs. Everything a
search rank knows lives in the arrays of one `Arrays` record: scalar state in one record (`cs`, fields CST),
counters, a pool of simulation slots (a simulation while it is on this rank: its step stack, position,
random stream), the package queue, the synchronisation job's buffers, and one outbox byte buffer per
destination rank into which messages are written as records (model/roles/messages.py). The kernels take
them as one `Core`, a numba StructRef holding the same arrays: a call passes one pointer, where a
NamedTuple of ~70 arrays cost ~1,000 cycles a call to pass by value. The transitions are compiled without
reference counting (`_nrt=False`; Core is registered with model/borrowed_struct.py, so a field read is a
load): counted, each small function's reads of the core's arrays were half of what a hop added to a
simulation. They allocate nothing (array copies are `copy_to` loops, model/roles/steps.py); the kernels
Python calls (below) are counting wrappers around them (`run` around `_run`, ...), `start` counts throughout.

The transitions are the role contract's (model/roles/__init__.py), each one kernel call:

    start(c)                         the root in the table (shared on every rank), the first simulations
    receive(c, buf, off, n, ...)     the records of buf[off:n] arrived (MOVE, UPDATE, PLAYOUT_FWD, DUP, SYNC,
                                     MERGE), each turned into packages (queued) and messages (the outbox)
    execute(c, pkg, sc)              a package's compute (runs on a worker, concurrently with the others and
                                     with the transitions; touches only its own slot and the tables)
    done(c, pkg)                     a package finished: the next packages and messages
    run(c, sc, max_cycles, log)      the IO thread's turn without workers: take, execute, done until the queue
                                     is empty or the slice is used (the engine's --threads 1)
    stop(c) / final_sync(c) / kick(c)

A package is a slot number (a simulation or an update job) or SYNC_PKG (the rank's one synchronisation
job); its kind is the slot's. Every transition first checks that the buffers it may write have room; where
one has not it writes nothing, records what it needs in cs.need/cs.need_size and returns NEED_ROOM, and the
Python host (model/roles/treesplit.py) grows that buffer and calls again.

The logic is Schaefers 2014, 4.2.1-4.2.5, as in the role's docstring (model/roles/treesplit.py); the kernels
that do the tree work are model/roles/steps.py's and model/roles/dup.py's.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numba
from numba import njit, types
from numba.experimental import structref

from model import game
from model.atomics import atomic_add, atomic_load, atomic_store
from model.borrowed_struct import register_borrowed
from model.cycles import cycles
from model.ownership import owner
from model.rng import randint
from model.roles.dup import apply_rows, flush_rows, share_kept_root, share_root, write_dup
from model.roles.dfuct_kernels import F_POP, F_REPORT, apply_reports, fill_frames, fold_result
from model.roles.messages import (F_FRAMES, FRAME, HEAD, K_DUP, K_JOB, K_RESULT, body_frames, K_FWD, K_MERGE, K_MOVE, K_SYNC, K_UPDATE, NODE_ROW, STAT, STEP,
                                  body_amaf, body_rows, body_steps, head, record_size, write_head)
from model.roles.steps import (ST_EXPAND, ST_LOSS, ST_MOVE, ST_PLAYOUT, add_path_vloss, copy_to, expand_node, new_kids,
                               playout, replay, reset_kids, select_steps, update_steps)
from model.tt import M_SEARCH, UNEXPANDED, lookup
from model.uct import P_RAVE, P_VLOSS, expand

# package kinds: model.roles.base.PART_KINDS order, then the synchronisation job
PK_SELECT, PK_EXPAND, PK_PLAYOUT, PK_UPDATE, PK_SYNC = 0, 1, 2, 3, 4
SYNC_PKG = -1  # the package id of the sync job
# slot roles
R_FREE, R_SIM, R_UJOB = 0, 1, 2
# where a fused package stopped (the kind of its last part)
F_SELECT, F_EXPAND, F_PLAYOUT, F_UPDATE = 0, 1, 2, 3
# the most rows a DUP/SYNC record carries (a sync job's rows go in several records when they are more), so a
# record is at most MAX_RECORD bytes (an UPDATE with a full path of 402 steps and 4,096 AMAF bytes, or a df-UCT
# job's, is less)
ROWS_PER_RECORD = 2000
MAX_RECORD = 1 << 16
# transition outcomes
OK, NEED_ROOM, NO_ROOT = 0, 1, 2
# cs.need: which buffer wants room
N_NONE, N_SLOTS, N_OUTBOX, N_SROWS, N_ROWS_IN, N_RX = 0, 1, 2, 3, 4, 5

_I = "<i8"
_FIELDS = [
    # configuration
    "rank", "lrank", "M", "kernel_ranks", "local_slots", "G", "group", "world", "quota", "target", "chain",
    "fuse", "forward", "adopt", "gate_syncs", "dup_kind", "sync_kind", "rave", "shared_rng", "seed",
    "n_actions", "depth_cap", "share_root", "merge_every", "n_peers", "track", "accept", "mode", "per_leaf", "slmp", "leaf_ranks",
    "leaf_share",
    "report_every", "vloss", "balance_load",
    # state
    "started", "done", "reserved", "in_flight", "stopped", "final_synced", "outstanding", "moves_held",
    "updates_running", "sync_running", "dup_running", "flush_all", "gate_wait", "n_to_dup", "n_to_flush",
    "n_rows_in", "q_head", "q_len", "h_head", "h_len", "n_free", "root_slot", "since_merge", "sync_seq",
    "job_rows", "job_dup", "job_flush", "job_flush_all", "job_dup_rows", "job_sync_rows", "job_dropped",
    "need", "need_size", "log_n", "rx_n", "pend", "jobs", "jobs_launched", "root_owner", "rng_draws", "n_waiting",
    # hybrid: merging between groups
    "merging", "n_merged", "n_mpeers", "export_due", "final_merge", "n_kept",
]
CST = np.dtype([(f, _I) for f in _FIELDS] + [("balance_limit", "<f8"), ("switch_margin", "<f8"),
                                             ("root_hash", "<u8"), ("root_pos", "<u8")])
# what a rank's core is (cs.mode): a UCT-Treesplit search rank (treesplit, tds, root, hybrid), a leaf-parallel
# master or playout rank, a df-UCT search rank
MODE_TREESPLIT, MODE_LEAF_MASTER, MODE_LEAF_WORKER, MODE_DFUCT = 0, 1, 2, 3
# a simulation slot (a simulation while it is on this rank, or an update job)
SIM = np.dtype([("sim_id", _I), ("n", _I), ("role", _I), ("kind", _I), ("front", _I), ("insert", _I),
                ("moved", _I), ("fuse", _I), ("fuse_playout", _I), ("may_update", _I), ("replayed", _I),
                ("origin_done", _I), ("has_amaf", _I), ("expands", _I), ("exp_slot", _I), ("chain_left", _I),
                ("chain_done", _I), ("chain_records", _I), ("chain_edges", _I), ("chain_missing", _I),
                ("stop", _I), ("st", _I), ("arg", _I), ("ns", _I), ("nd", _I), ("missing", _I),
                ("playouts", _I), ("waiting", _I), ("tickets", _I), ("carry", _I), ("result", "<f8")])
# counters (the role's `counts`)
COUNTS = ("playouts", "expands", "playouts_forwarded", "update_missing", "updates", "updates_local",
          "records_finished", "edges_finished", "sync_rows", "sync_rows_dropped", "dups", "merges",
          "playouts_remote", "jobs", "jobs_ended", "partial_reports", "resumes", "resume_depth", "updates_carried",
          "report_records", "root_reports")
(C_PLAYOUTS, C_EXPANDS, C_FORWARDED, C_MISSING, C_UPDATES, C_UPDATES_LOCAL, C_RECORDS, C_EDGES, C_SYNC_ROWS,
 C_DROPPED, C_DUPS, C_MERGES, C_REMOTE, C_JOBS, C_JOBS_ENDED, C_PARTIAL, C_RESUMES, C_RESUME_DEPTH, C_CARRIED,
 C_REPORT_RECORDS, C_ROOT_REPORTS) = range(len(COUNTS))


class Arrays(NamedTuple):
    """Everything a search rank holds. P simulation slots of D = max_depth + 2 steps; W ranks in the job."""

    t: tuple              # model.tt.Table
    dt: tuple             # model.roles.dup.DupTable
    g: np.ndarray         # the game's parameters
    root: np.ndarray      # the root position
    kids: np.ndarray      # uint64[K, 3]   the root's children's hashes (model.roles.steps.new_kids)
    history: np.ndarray   # uint64[h]      positions of the game so far, sorted (superko)
    p: np.ndarray         # float64[15]    UCT parameters (model.uct.UctParams.to_array)
    y: np.ndarray         # float64[6]     synchronisation parameters (model.roles.steps.Y_*)
    cs: np.ndarray        # CST[1]         scalar state
    cnt: np.ndarray       # int64[12]      COUNTS
    sent: np.ndarray      # int64[W, K]    messages sent to each rank, by kind code
    sent_bytes: np.ndarray  # int64[W, K]  their bytes
    received: np.ndarray  # int64[K]       messages received, by kind code
    ids: np.ndarray       # int64[1]       next simulation number (atomic: chaining workers draw from it)
    halt: np.ndarray      # int64[2]       what chaining packages look at: stopped, a duplication waits
    glob: np.ndarray      # int64[M]       global rank of each search rank of the group
    peers: np.ndarray     # int64[n]       where DUP/SYNC rows go (the broadcast partner, or every other rank)
    seen: np.ndarray      # int64[M]       scratch of the transitions (ranks a simulation visited; a df-UCT
                          #                report's records per rank)
    rsteps: np.ndarray    # STEP[2D]       scratch of the transitions: a df-UCT job's report records ...
    rframes: np.ndarray   # FRAME[2D]      ... and their frames
    wjobs: np.ndarray     # int64[M]       leaf master: playout jobs out at each rank
    load: np.ndarray      # int64[W]       packages each rank has to run, as its last MOVE/UPDATE/PLAYOUT_FWD said
    #                                       (and raised by each playout forwarded there since)
    rng: np.ndarray       # uint64[1]      the shared random stream (one worker)
    prng: np.ndarray      # uint64[1]      the role's own choices (where to forward a playout)
    sims: np.ndarray      # SIM[P]
    steps: np.ndarray     # STEP[P, D]
    frames: np.ndarray    # FRAME[P, D']   a df-UCT job's frame per step (D' = D for dfuct, else 0)
    pos: np.ndarray       # int64[P, L]    a simulation's position here
    path_pos: np.ndarray  # uint64[P, D]   position hashes along its path
    pslots: np.ndarray    # int64[P, D]    table slot of each step selected here (0: look it up)
    amaf: np.ndarray      # int8[P, A]     its playout's AMAF map (A = actions with RAVE, else 0)
    rngs: np.ndarray      # uint64[P]      its random stream (0: not drawn yet)
    osync: np.ndarray     # int64[P, D]    an update's rows to synchronise
    odup: np.ndarray      # int64[P, D]    ... and slots to duplicate
    parts: np.ndarray     # int64[P, 4]    parts a package ran, by kind
    free: np.ndarray      # int64[P]       free slots (a stack)
    q: np.ndarray         # int64[P + 1]   the package queue (a ring; SYNC_PKG for the sync job)
    held: np.ndarray      # int64[P]       update jobs held back while a DUP snapshot waits (a ring)
    rows_in: np.ndarray   # STAT[R]        rows heard from other ranks, for the next sync job
    jrows: np.ndarray     # STAT[R]        ... the running sync job's
    to_flush: np.ndarray  # int64[Dr]      duplicated rows whose deltas are due
    flush_mark: np.ndarray  # int64[Dr]    1: already in to_flush
    jflush: np.ndarray    # int64[Dr]      the running job's
    to_dup: np.ndarray    # int64[T]       owned slots to duplicate
    jdup: np.ndarray      # int64[T]       the running job's
    srows: np.ndarray     # STAT[S]        the running job's output rows (DUP rows, then SYNC rows)
    ob: np.ndarray        # uint8[W, B]    outbox: records to each rank
    ob_used: np.ndarray   # int64[W]       bytes ...
    ob_count: np.ndarray  # int64[W]       ... and records in each
    rx: np.ndarray        # float64[X, 6]  received records, when logging: kind, bytes, sim_id, source rank, the
    #                                       sender's t_send (seconds), the cycle counter when it was taken in
    log_kind: np.ndarray  # int8[L]        parts run by run(), when logging: kind, simulation, the cycle
    log_sim: np.ndarray   # int64[L]       counter at its start and end (model/cycles.py), and the tree steps
    log_t0: np.ndarray    # int64[L]       it covered (_log)
    log_t1: np.ndarray    # int64[L]
    log_steps: np.ndarray  # int64[L]
    # hybrid's merged nodes (Nm of them; none for the other algorithms), shared with the other groups
    mhash: np.ndarray     # uint64[Nm]     their hashes, sorted
    mslot: np.ndarray     # int64[Nm]      ... their table slots
    mrow: np.ndarray      # int64[Nm]      ... and duplicated rows
    mpeers: np.ndarray    # int64[Q]       the other groups' search ranks (global), where MERGEs go
    macc_n: np.ndarray    # int64[Nm, C+1, 2]    this rank's own increments flushed since the last MERGE: visits
    macc_w: np.ndarray    # float64[Nm, C+1, 2]  and values (n, an; w, aw) of the node (0) and each child (1 + idx)
    mtouch: np.ndarray    # int64[Nm]      1: the node has increments in macc
    mout: np.ndarray      # STAT[Nm (C+1)] a MERGE's rows


# the arrays with one row per simulation slot (growing the pool grows these; free, q, held and to_dup are
# the pool's own bookkeeping)
PER_SLOT = ("sims", "steps", "frames", "pos", "path_pos", "pslots", "amaf", "rngs", "osync", "odup", "parts")


class Scratch(NamedTuple):
    """A thread's buffers for execute(): the update's copy of the AMAF map, the expansion's, and a part log
    (log_kind empty: no log)."""

    amaf_up: np.ndarray   # int8[A]
    buf: np.ndarray       # int64[n_actions]
    log_kind: np.ndarray  # int8[L]
    log_sim: np.ndarray   # int64[L]
    log_t: np.ndarray     # int64[L + 1]
    log_steps: np.ndarray  # int64[L]
    log_n: np.ndarray     # int64[1]
    score: np.ndarray     # float64[max_children]  a node's children's scores (df-UCT's frames)
    pos: np.ndarray       # int64[L]       the position a fused package plays on (see _fused)
    path: np.ndarray      # uint64[D]      ... and its position hashes along the path


# --- small helpers ------------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True, inline="always")
def _need(cs, what, size):
    cs.need = what
    cs.need_size = size
    return NEED_ROOM


@njit(cache=True, nogil=True, _nrt=False)
def msg_bound(c):
    """The most bytes one transition writes to one rank, sync rows aside: an UPDATE with a full path."""
    cs = c.cs[0]
    if c.frames.shape[1]:  # a df-UCT job's path and the reports it carries, each with its frame
        return record_size(2 * cs.depth_cap, True, 0, 0)
    return record_size(cs.depth_cap, False, 0, c.amaf.shape[1])


@njit(cache=True, nogil=True, _nrt=False)
def _room(c):
    """Whether a simulation transition may run: slots for every simulation it may start, outbox room."""
    cs = c.cs[0]
    want = cs.target + 4
    if cs.n_free < want:
        return _need(cs, N_SLOTS, want)
    bound = msg_bound(c)
    for d in range(c.ob.shape[0]):
        if c.ob.shape[1] - c.ob_used[d] < bound:
            return _need(cs, N_OUTBOX, bound)
    return OK


@njit(cache=True, nogil=True, _nrt=False)
def _alloc(c):
    cs = c.cs[0]
    cs.n_free -= 1
    slot = c.free[cs.n_free]
    s = c.sims[slot]
    s.role = R_SIM
    s.n = 0
    s.front = 0
    s.insert = 1
    s.moved = 0
    s.fuse = 0
    s.fuse_playout = 0
    s.may_update = 0
    s.replayed = 0
    s.origin_done = 0
    s.has_amaf = 0
    s.expands = 0
    s.chain_left = 0
    s.chain_done = 0
    s.chain_records = 0
    s.chain_edges = 0
    s.chain_missing = 0
    s.ns = 0
    s.nd = 0
    s.missing = 0
    s.playouts = 1
    s.waiting = 0
    s.tickets = 0
    s.carry = -1
    c.rngs[slot] = 0
    return slot


@njit(cache=True, nogil=True, _nrt=False)
def _release(c, slot):
    cs = c.cs[0]
    c.sims[slot].role = R_FREE
    c.free[cs.n_free] = slot
    cs.n_free += 1


@njit(cache=True, nogil=True, _nrt=False)
def _push(c, pkg, front):
    cs = c.cs[0]
    cap = c.q.shape[0]
    if front:
        cs.q_head = (cs.q_head - 1) % cap
        c.q[cs.q_head] = pkg
    else:
        c.q[(cs.q_head + cs.q_len) % cap] = pkg
    cs.q_len += 1


@njit(cache=True, nogil=True, _nrt=False)
def pop(c):
    """The next package of the queue, -2 if none."""
    cs = c.cs[0]
    if cs.q_len == 0:
        return -2
    pkg = c.q[cs.q_head]
    cs.q_head = (cs.q_head + 1) % c.q.shape[0]
    cs.q_len -= 1
    return pkg


@njit(cache=True, nogil=True, _nrt=False)
def pkg_front(c, pkg):
    return pkg >= 0 and c.sims[pkg].front != 0


@njit(cache=True, nogil=True, _nrt=False)
def pkg_kind(c, pkg):
    return PK_SYNC if pkg < 0 else c.sims[pkg].kind


@njit(cache=True, nogil=True, _nrt=False)
def _pkg(c, slot, kind, front):
    cs = c.cs[0]
    cs.outstanding += 1
    s = c.sims[slot]
    s.kind = kind
    s.front = 1 if front else 0
    _push(c, slot, front)


@njit(cache=True, nogil=True, _nrt=False)
def _lighter(c):
    """The search rank (group-local) with the fewest packages to run, as far as this rank knows, if it has at
    most 1/balance_load of this rank's and two fewer (then a playout is better run there); else -1. A rank's
    load is its outstanding packages (queued or running, wherever its runtime keeps them). The ratio keeps
    two busy ranks from trading playouts on the noise of late load figures: at 1 (two fewer suffice) two
    ranks at 19x19 forwarded a third of their playouts both ways and gained nothing; at 8 they forward a
    tenth, mostly to a rank whose queue ran dry."""
    cs = c.cs[0]
    best, best_load = -1, 1 << 40
    for r in range(cs.M):
        if r != cs.lrank:
            x = c.load[c.glob[r]]
            if x < best_load:
                best, best_load = r, x
    return best if best >= 0 and best_load * cs.balance_load + 2 <= cs.outstanding else -1


@njit(cache=True, nogil=True, _nrt=False)
def _master_plays(c):
    """Whether a leaf master plays a leaf out itself: it has nothing else queued (its in-tree work comes
    first: where that is the bottleneck, playing out would only slow it) and every playout rank has its share
    of jobs (leaf_share, 0: never)."""
    cs = c.cs[0]
    if cs.leaf_share <= 0 or cs.q_len > 0:
        return False
    for r in range(1, cs.leaf_ranks + 1):
        if c.wjobs[r] < cs.leaf_share:
            return False
    return True


@njit(cache=True, nogil=True, _nrt=False)
def _forwarding(c, by_load):
    """Whether a leaf reached here leaves the rank for its playout (4.2.5; a leaf master's playout ranks);
    by_load: also to a lighter rank (a playout forwarded here stays: estimates of others' load are late, and
    two ranks would hand it back and forth)."""
    cs = c.cs[0]
    if cs.mode == MODE_LEAF_MASTER:
        return cs.leaf_ranks > 0 and not _master_plays(c)
    if cs.M <= 1 or cs.forward == 0:
        return False
    return cs.moves_held > cs.balance_limit or (by_load and cs.balance_load != 0 and _lighter(c) >= 0)


@njit(cache=True, nogil=True, _nrt=False)
def _dup_waits(c):
    cs = c.cs[0]
    return cs.n_to_dup > 0 or cs.gate_wait != 0


@njit(cache=True, nogil=True, _nrt=False)
def _sim_pkg(c, slot, kind, front):
    """A package of a simulation; fused when the role fuses. A fused package that may update counts as a
    running update from now on (the DUP snapshot waits for it)."""
    cs = c.cs[0]
    if cs.fuse:
        s = c.sims[slot]
        s.fuse = 1
        s.fuse_playout = 1 if (kind == PK_PLAYOUT or not _forwarding(c, True)) else 0
        s.may_update = 1 if (s.fuse_playout and not (_dup_waits(c) or cs.dup_running)) else 0
        if s.may_update:
            cs.updates_running += 1
    _pkg(c, slot, kind, front)


@njit(cache=True, nogil=True, _nrt=False)
def _origin(c, sim_id):
    """The group-local search rank that started simulation sim_id (ids are (rank + M k) G + group)."""
    cs = c.cs[0]
    return (sim_id // cs.G) % cs.M


@njit(cache=True, nogil=True, inline="always")
def _label_in(cs, k):
    return (cs.lrank + cs.M * k) * cs.G + cs.group


@njit(cache=True, nogil=True, _nrt=False)
def _label(c, k):
    return _label_in(c.cs[0], k)


# --- the outbox ---------------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True, _nrt=False)
def _open(c, dst, kind, sim_id, n_steps, result, n_rows, n_amaf, aux, dim):
    """Start a record to global rank dst; returns its offset in c.ob[dst]. The caller checked the room."""
    return _open_f(c, dst, kind, sim_id, n_steps, False, result, n_rows, n_amaf, aux, dim)


@njit(cache=True, nogil=True, _nrt=False)
def _open_f(c, dst, kind, sim_id, n_steps, frames, result, n_rows, n_amaf, aux, dim):
    off = c.ob_used[dst]
    size = write_head(c.ob[dst], off, kind, sim_id, n_steps, frames, result, n_rows, n_amaf, aux, dim)
    c.ob_used[dst] = off + size
    c.ob_count[dst] += 1
    c.sent[dst, kind] += 1
    c.sent_bytes[dst, kind] += size
    return off


@njit(cache=True, nogil=True, _nrt=False)
def _send_steps(c, kind, dst_local, slot):
    s = c.sims[slot]
    n = s.n
    dst = c.glob[dst_local]
    off = _open(c, dst, kind, s.sim_id, n, 0.0, 0, 0, c.cs[0].outstanding, -1)
    copy_to(body_steps(c.ob[dst], off, n), c.steps[slot, :n])


@njit(cache=True, nogil=True, _nrt=False)
def _send_rows(c, kind, dst, rows, n, aux):
    """Rows (a sync job's DUP snapshot or increments, a MERGE) in records of ROWS_PER_RECORD at most (rows are
    additive: a node's rows may be split between records); aux numbers the parts a rank sends (a sync job's:
    2 sync_seq + 0 for its snapshot, + 1 for its increments), dim is the first row's index in the part."""
    for a in range(0, n, ROWS_PER_RECORD):
        k = min(ROWS_PER_RECORD, n - a)
        off = _open(c, dst, kind, -1, 0, 0.0, k, 0, aux, a)
        copy_to(body_rows(c.ob[dst], off, 0, False, k), rows[a:a + k])


# --- simulations --------------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True, _nrt=False)
def _may_start(c):
    cs = c.cs[0]
    if cs.mode == MODE_DFUCT:
        return cs.stopped == 0 and cs.jobs_launched == 0
    if cs.mode == MODE_LEAF_WORKER:
        return False
    return cs.stopped == 0 and (cs.quota < 0 or cs.started + cs.reserved < cs.quota)


@njit(cache=True, nogil=True, _nrt=False)
def _new_sim(c):
    cs = c.cs[0]
    k = atomic_add(c.ids, 0, 1)
    slot = _alloc(c)
    s = c.sims[slot]
    s.sim_id = _label(c, k)
    if cs.mode == MODE_LEAF_MASTER:  # a leaf reserves one simulation per playout it gets (SLMP: per thread)
        s.playouts = cs.per_leaf if cs.quota < 0 else min(cs.per_leaf, cs.quota - cs.started)
    cs.started += s.playouts
    cs.in_flight += s.playouts
    # s.replayed stays 0: its package plays from the root, on its thread's scratch position when fused
    if cs.fuse and cs.chain > 1 and not (cs.mode == MODE_LEAF_MASTER and cs.leaf_ranks > 0):
        # (a leaf master playing out a chain would leave its playout ranks' results waiting)
        left = cs.chain - 1
        if cs.quota >= 0:  # only what the quota has beyond keeping S_par / M in flight
            spare = cs.quota - cs.started - cs.reserved - max(cs.target - cs.in_flight, 0)
            left = min(left, spare)
        s.chain_left = max(left, 0)
        cs.reserved += s.chain_left
    _sim_pkg(c, slot, PK_SELECT, False)


@njit(cache=True, nogil=True, _nrt=False)
def _fill(c):
    cs = c.cs[0]
    if cs.mode == MODE_DFUCT:
        _launch_jobs(c)
        return
    if cs.mode == MODE_LEAF_MASTER:
        while _may_start(c):
            k = cs.per_leaf if cs.quota < 0 else min(cs.per_leaf, cs.quota - cs.started)
            if cs.in_flight + k > cs.target:
                return
            _new_sim(c)
        return
    while cs.in_flight < cs.target and _may_start(c):
        _new_sim(c)


@njit(cache=True, nogil=True, _nrt=False)
def _arrived(c, buf, off, h):
    """A simulation that came in a MOVE or PLAYOUT_FWD record."""
    slot = _alloc(c)
    s = c.sims[slot]
    n = np.int64(h.n_steps)
    s.sim_id = h.sim_id
    s.n = n
    copy_to(c.steps[slot], body_steps(buf, off, n))
    c.pslots[slot, :n] = 0  # selected elsewhere (or here, before it left): looked up at its update
    return slot


@njit(cache=True, nogil=True, _nrt=False)
def _playout_or_forward(c, slot, by_load):
    cs = c.cs[0]
    if cs.mode == MODE_LEAF_MASTER and _forwarding(c, by_load):
        _leaf_jobs(c, slot)
        return
    if cs.mode == MODE_DFUCT:
        _dfuct_playout_or_forward(c, slot)
        return
    if _forwarding(c, by_load):
        dst = _lighter(c) if by_load and cs.balance_load != 0 else -1
        if dst < 0:
            dst = randint(c.prng, cs.M - 1)
            dst += 1 if dst >= cs.lrank else 0
        c.load[c.glob[dst]] += 1
        c.cnt[C_FORWARDED] += 1
        _send_steps(c, K_FWD, dst, slot)
        _release(c, slot)
        return
    _sim_pkg(c, slot, PK_PLAYOUT, True)


@njit(cache=True, nogil=True, _nrt=False)
def _edges(steps, n):
    """Tree edges among the records steps[:n]: all but a final leaf record (idx -1)."""
    return n - (1 if n > 0 and steps[n - 1].idx < 0 else 0)


@njit(cache=True, nogil=True, _nrt=False)
def _finish_sim(c, slot, result, local):
    """Back up a finished simulation: UPDATE records to the other ranks it visited, and here an update job
    (in the simulation's own slot) or, with local, the update a fused package already ran (its rows are the
    slot's). The slot is given back or becomes the update job."""
    cs = c.cs[0]
    s = c.sims[slot]
    if cs.mode == MODE_LEAF_MASTER and not local:  # every playout the leaf reserved ends with this result
        for _ in range(s.playouts):
            _leaf_update(c, slot, result, c.amaf[slot], s.has_amaf != 0)
        _release(c, slot)
        return
    n = s.n
    steps = c.steps[slot]
    origin = _origin(c, s.sim_id)
    c.cnt[C_RECORDS] += n
    c.cnt[C_EDGES] += _edges(steps, n)
    seen = c.seen
    seen[:] = 0
    seen[origin] = 1  # the origin hears the end even if it selected nothing (an unshared root)
    distinct = 1
    for k in range(n):
        r = steps[k].rank
        if seen[r] == 0:
            seen[r] = 1
            distinct += 1
    one = distinct == 1
    na = c.amaf.shape[1] if (cs.rave and s.has_amaf) else 0
    for r in range(cs.M):
        if seen[r] == 0 or r == cs.lrank:
            continue
        if cs.rave or one:
            ns = n
        else:
            ns = 0
            for k in range(n):
                if steps[k].rank == r:
                    ns += 1
        dst = c.glob[r]
        off = _open(c, dst, K_UPDATE, s.sim_id, ns, result, 0, na, cs.outstanding, -1)
        out = body_steps(c.ob[dst], off, ns)
        if ns == n:
            copy_to(out, steps[:n])
        else:
            i = 0
            for k in range(n):
                if steps[k].rank == r:
                    out[i] = steps[k]
                    i += 1
        if na:
            copy_to(body_amaf(c.ob[dst], off, ns, False, 0, na), c.amaf[slot])
    mine = seen[cs.lrank] != 0
    if not mine:
        _release(c, slot)
        return
    c.cnt[C_UPDATES_LOCAL] += 1
    origin_done = origin == cs.lrank
    if local:
        _update_done(c, slot, origin_done)
        _release(c, slot)
        return
    s.role = R_UJOB
    s.result = result
    s.origin_done = 1 if origin_done else 0
    _update(c, slot)


@njit(cache=True, nogil=True, _nrt=False)
def _update(c, slot):
    """An update job for this rank: to the queue, or held back while a DUP snapshot waits."""
    cs = c.cs[0]
    c.sims[slot].kind = PK_UPDATE
    c.sims[slot].front = 0
    if _dup_waits(c) or cs.dup_running:
        c.held[(cs.h_head + cs.h_len) % c.held.shape[0]] = slot
        cs.h_len += 1
        return
    cs.outstanding += 1
    cs.updates_running += 1
    _push(c, slot, False)


@njit(cache=True, nogil=True, _nrt=False)
def _flush_due(c, row):
    """The duplicated row's deltas go out at the next sync job (once, however often it is asked for)."""
    if c.flush_mark[row] == 0:
        c.flush_mark[row] = 1
        c.to_flush[c.cs[0].n_to_flush] = row
        c.cs[0].n_to_flush += 1


@njit(cache=True, nogil=True, _nrt=False)
def _update_done(c, slot, origin_done):
    cs = c.cs[0]
    s = c.sims[slot]
    if s.missing:
        c.cnt[C_MISSING] += s.missing
    c.cnt[C_UPDATES] += 1
    for i in range(s.ns):
        _flush_due(c, c.osync[slot, i])
    for i in range(s.nd):
        x = c.odup[slot, i]
        new = True
        for j in range(cs.n_to_dup):
            if c.to_dup[j] == x:
                new = False
                break
        if new and cs.n_to_dup < c.to_dup.shape[0]:
            c.to_dup[cs.n_to_dup] = x
            cs.n_to_dup += 1
        atomic_store(c.halt, 1, 1)
    if origin_done:
        cs.done += 1
        cs.in_flight -= 1
        _after_done(c, 1)
        _fill(c)
    _kick(c)


@njit(cache=True, nogil=True, _nrt=False)
def _after_done(c, k):
    """k more of this rank's simulations completed: root parallelisation's merge period, or hybrid's (the
    merged nodes' increments are flushed, and sent to the other groups when that sync job is done)."""
    cs = c.cs[0]
    if cs.merging:
        cs.since_merge += k
        if cs.since_merge >= cs.merge_every and cs.stopped == 0:
            cs.since_merge -= cs.merge_every  # a chaining package may pass it by several
            cs.export_due = 1
            for i in range(cs.n_merged):
                _flush_due(c, c.mrow[i])
            _kick(c)
        return
    if cs.merge_every <= 0 or cs.M <= 1:
        return
    cs.since_merge += k
    if cs.since_merge >= cs.merge_every:
        cs.since_merge -= cs.merge_every  # a chaining package may pass it by several
        c.cnt[C_MERGES] += 1
        cs.flush_all = 1


@njit(cache=True, nogil=True, _nrt=False)
def _chain_settle(c, slot):
    """Take in what a chaining package finished and give back the simulations it was allowed to start and
    did not."""
    cs = c.cs[0]
    s = c.sims[slot]
    k = s.chain_done
    if k:
        cs.started += k
        cs.done += k
        c.cnt[C_PLAYOUTS] += k
        c.cnt[C_UPDATES] += k
        c.cnt[C_UPDATES_LOCAL] += k
        c.cnt[C_RECORDS] += s.chain_records
        c.cnt[C_EDGES] += s.chain_edges
        c.cnt[C_MISSING] += s.chain_missing
        s.chain_done = 0
        s.chain_records = 0
        s.chain_edges = 0
        s.chain_missing = 0
        _after_done(c, k)
    cs.reserved -= k + s.chain_left
    s.chain_left = 0


@njit(cache=True, nogil=True, _nrt=False)
def _loss_amaf(c, slot):
    """A simulation lost in the tree (an illegal or repeating move): no playout; with RAVE its AMAF map
    holds the tree moves only."""
    if c.amaf.shape[1]:
        c.amaf[slot, :] = -1
        c.sims[slot].has_amaf = 1
    return -1.0 if c.sims[slot].arg == 0 else 1.0


# --- leaf parallelisation (Schaefers 2014, 4.1.1): the master's leaves, the playout ranks' jobs ----------------------
@njit(cache=True, nogil=True, _nrt=False)
def _leaf_jobs(c, slot):
    """Hand a leaf's playouts to the playout ranks as JOB records (SLMP: one to every playout thread; MLMP:
    one, to the rank with the fewest jobs out); the leaf waits here for their RESULTs (aux: its slot)."""
    cs = c.cs[0]
    s = c.sims[slot]
    k = s.playouts
    s.waiting = k
    cs.n_waiting += 1
    n = s.n
    for i in range(k):
        if cs.slmp:
            r = 1 + i % cs.leaf_ranks
        else:
            r = 1
            for w in range(2, cs.leaf_ranks + 1):
                if c.wjobs[w] < c.wjobs[r]:
                    r = w
        c.wjobs[r] += 1
        dst = c.glob[r]
        off = _open(c, dst, K_JOB, s.sim_id, n, 0.0, 0, 0, slot, -1)
        copy_to(body_steps(c.ob[dst], off, n), c.steps[slot, :n])


@njit(cache=True, nogil=True, _nrt=False)
def _leaf_update(c, slot, result, amaf, has_amaf):
    """One result of a leaf: an update job of its own (a copy of the path) for this rank."""
    s = c.sims[slot]
    n = s.n
    u = _alloc(c)
    j = c.sims[u]
    j.sim_id = s.sim_id
    j.n = n
    j.role = R_UJOB
    j.result = result
    j.origin_done = 1
    copy_to(c.steps[u, :n], c.steps[slot, :n])
    copy_to(c.pslots[u, :n], c.pslots[slot, :n])
    if has_amaf and c.amaf.shape[1]:
        copy_to(c.amaf[u], amaf)
        j.has_amaf = 1
    c.cnt[C_RECORDS] += n
    c.cnt[C_EDGES] += _edges(c.steps[slot], n)
    c.cnt[C_UPDATES_LOCAL] += 1
    _update(c, u)


@njit(cache=True, nogil=True, _nrt=False)
def _leaf_result(c, buf, off, h, src):
    """A RESULT record from playout rank src for the leaf in slot aux: back it up; the leaf is done with its
    last result."""
    slot = np.int64(h.aux)
    s = c.sims[slot]
    c.wjobs[src] -= 1
    na = np.int64(h.n_amaf)
    c.cnt[C_REMOTE] += 1
    _leaf_update(c, slot, h.result, body_amaf(buf, off, np.int64(h.n_steps), False, 0, na), na > 0)
    s.waiting -= 1
    if s.waiting == 0:
        c.cs[0].n_waiting -= 1
        _release(c, slot)


@njit(cache=True, nogil=True, _nrt=False)
def _leaf_playout_done(c, slot):
    """A playout rank's job done: its RESULT (the result and the AMAF map) back to the master's leaf."""
    cs = c.cs[0]
    s = c.sims[slot]
    na = c.amaf.shape[1] if cs.rave else 0
    off = _open(c, c.glob[0], K_RESULT, s.sim_id, 0, s.result, 0, na, s.arg, -1)
    if na:
        copy_to(body_amaf(c.ob[c.glob[0]], off, 0, False, 0, na), c.amaf[slot])
    c.cnt[C_PLAYOUTS] += 1
    _release(c, slot)


# --- df-UCT (Yoshizoe et al. 2011): jobs that stay below a node while its best child stays best ---------------------

@njit(cache=True, nogil=True, _nrt=False)
def _launch_jobs(c):
    """All of this rank's jobs at once (S_par / M), each with its share of the budget's simulations."""
    cs = c.cs[0]
    if not _may_start(c):
        return
    cs.jobs_launched = 1
    n_jobs = cs.target if cs.quota < 0 else min(cs.target, cs.quota)
    for i in range(n_jobs):
        slot = _alloc(c)
        s = c.sims[slot]
        s.sim_id = _label(c, i)
        s.tickets = -1 if cs.quota < 0 else cs.quota // n_jobs + (1 if i < cs.quota % n_jobs else 0)
        copy_to(c.pos[slot], c.root)
        c.path_pos[slot, 0] = cs.root_pos
        s.replayed = 1
        c.cnt[C_JOBS] += 1
        _pkg(c, slot, PK_SELECT, False)


@njit(cache=True, nogil=True, _nrt=False)
def _job_arrived(c, buf, off, h):
    """A job that came in a MOVE or PLAYOUT_FWD record: its path records (not its reports) and their frames."""
    slot = _alloc(c)
    s = c.sims[slot]
    ns = np.int64(h.n_steps)
    steps = body_steps(buf, off, ns)
    frames = body_frames(buf, off, ns)
    n = 0
    for k in range(ns):
        if steps[k].flags & F_REPORT == 0:
            c.steps[slot, n] = steps[k]
            c.frames[slot, n] = frames[k]
            n += 1
    s.sim_id = h.sim_id
    s.n = n
    s.tickets = h.aux
    return slot


@njit(cache=True, nogil=True, _nrt=False)
def _send_job(c, kind, dst_local, slot, extra):
    """A job's path (and `extra` carried report records from c.rsteps/c.rframes) to a rank."""
    s = c.sims[slot]
    n = s.n
    dst = c.glob[dst_local]
    off = _open_f(c, dst, kind, s.sim_id, n + extra, True, 0.0, 0, 0, s.tickets, -1)
    st = body_steps(c.ob[dst], off, n + extra)
    fr = body_frames(c.ob[dst], off, n + extra)
    copy_to(st, c.steps[slot, :n])
    copy_to(fr, c.frames[slot, :n])
    if extra:
        copy_to(st[n:], c.rsteps[:extra])
        copy_to(fr[n:], c.rframes[:extra])


@njit(cache=True, nogil=True, _nrt=False)
def _continue(c, slot, front):
    if c.cs[0].stopped:
        _end_job(c, slot)
        return
    _pkg(c, slot, PK_SELECT, front)


@njit(cache=True, nogil=True, _nrt=False)
def _dfuct_playout_or_forward(c, slot):
    cs = c.cs[0]
    if cs.stopped:
        _end_job(c, slot)
    elif cs.M > 1 and cs.forward != 0 and cs.moves_held > cs.balance_limit:
        dst = randint(c.prng, cs.M - 1)
        dst += 1 if dst >= cs.lrank else 0
        c.cnt[C_FORWARDED] += 1
        _send_job(c, K_FWD, dst, slot, 0)
        _release(c, slot)
    else:
        cs.started += 1
        _pkg(c, slot, PK_PLAYOUT, True)


@njit(cache=True, nogil=True, _nrt=False)
def _apply_here(c, a, b, job):
    """Report records c.rsteps[a:b] for this rank: an update package, carrying the job (slot, or -1) on."""
    cs = c.cs[0]
    c.cnt[C_UPDATES_LOCAL] += 1
    cs.updates_running += 1
    u = _alloc(c)
    j = c.sims[u]
    n = b - a
    j.role = R_UJOB
    j.n = n
    j.carry = job
    j.sim_id = c.sims[job].sim_id if job >= 0 else -1
    copy_to(c.steps[u, :n], c.rsteps[a:b])
    copy_to(c.frames[u, :n], c.rframes[a:b])
    _pkg(c, u, PK_UPDATE, job >= 0)


@njit(cache=True, nogil=True, _nrt=False)
def _report(c, m, keep, sim_id, job):
    """Send the report records c.rsteps[:m] to their ranks: an UPDATE each, or an update package here. The
    records for rank `keep` are moved to the front of c.rsteps and their count returned (carried by the job
    to that rank), unless keep is this rank: then they are applied here first, carrying `job` on."""
    cs = c.cs[0]
    use_vl = c.p[P_VLOSS] > 0.0
    k = 0
    for i in range(m):  # useful records: results to add, or a virtual loss to take off
        if c.rframes[i].dn > 0 or (use_vl and c.rsteps[i].flags & F_POP != 0):
            c.rsteps[k] = c.rsteps[i]
            c.rframes[k] = c.rframes[i]
            c.cnt[C_RECORDS] += c.rframes[k].dn
            if c.rsteps[k].idx >= 0:
                c.cnt[C_EDGES] += c.rframes[k].dn
            k += 1
    # group by rank, each rank's records in their order: a counting sort through the scratch's second half,
    # c.seen holding where each rank's next record goes
    at = c.seen
    for r in range(cs.M):
        at[r] = 0
    for i in range(k):
        at[c.rsteps[i].rank] += 1
    total = 0
    for r in range(cs.M):
        n_r = at[r]
        at[r] = total
        total += n_r
    h = c.rsteps.shape[0] // 2
    for i in range(k):
        j = h + at[c.rsteps[i].rank]
        at[c.rsteps[i].rank] += 1
        c.rsteps[j] = c.rsteps[i]
        c.rframes[j] = c.rframes[i]
    copy_to(c.rsteps, c.rsteps[h:h + k])
    copy_to(c.rframes, c.rframes[h:h + k])
    carried = 0
    a = 0
    while a < k:
        r = np.int64(c.rsteps[a].rank)
        b = a
        while b < k and c.rsteps[b].rank == r:
            b += 1
        if r == keep and keep != cs.lrank:
            carried = b - a  # moved to the front below
        elif r == cs.lrank:
            _apply_here(c, a, b, job if r == keep else -1)
            if r == keep:
                carried = -1
        else:
            dst = c.glob[r]
            off = _open_f(c, dst, K_UPDATE, sim_id, b - a, True, 0.0, 0, 0, 0, -1)
            copy_to(body_steps(c.ob[dst], off, b - a), c.rsteps[a:b])
            copy_to(body_frames(c.ob[dst], off, b - a), c.rframes[a:b])
        a = b
    if carried > 0:
        a = 0
        while c.rsteps[a].rank != keep:
            a += 1
        copy_to(c.rsteps, c.rsteps[a:a + carried])  # forwards: the source starts at or after the destination
        copy_to(c.rframes, c.rframes[a:a + carried])
    return carried


@njit(cache=True, nogil=True, _nrt=False)
def _dfuct_receive(c, buf, off, h, kind):
    cs = c.cs[0]
    if kind == K_MOVE:
        slot = _job_arrived(c, buf, off, h)
        c.sims[slot].moved = 1
        cs.moves_held += 1
        ns = np.int64(h.n_steps)
        steps = body_steps(buf, off, ns)
        frames = body_frames(buf, off, ns)
        m = 0
        for k in range(ns):  # this rank's part of the job's report: applied before it selects here
            if steps[k].flags & F_REPORT != 0:
                c.rsteps[m] = steps[k]
                c.rframes[m] = frames[k]
                m += 1
        if m:
            c.cnt[C_CARRIED] += 1
            _apply_here(c, 0, m, slot)
        else:
            _continue(c, slot, False)
    elif kind == K_UPDATE:
        cs.updates_running += 1
        u = _alloc(c)
        j = c.sims[u]
        ns = np.int64(h.n_steps)
        j.role = R_UJOB
        j.n = ns
        j.sim_id = h.sim_id
        copy_to(c.steps[u], body_steps(buf, off, ns))
        copy_to(c.frames[u], body_frames(buf, off, ns))
        _pkg(c, u, PK_UPDATE, False)
    else:
        _dfuct_playout_or_forward(c, _job_arrived(c, buf, off, h))


@njit(cache=True, nogil=True, _nrt=False)
def _end_job(c, slot):
    """Pop every frame: all pending results (and the job's virtual loss) go to their owners."""
    cs = c.cs[0]
    s = c.sims[slot]
    if s.moved:
        s.moved = 0
        cs.moves_held -= 1
    n = s.n
    for i in range(n):
        c.rsteps[i] = c.steps[slot, i]
        c.rframes[i] = c.frames[slot, i]
        c.rsteps[i].flags = (F_POP if c.rsteps[i].idx >= 0 else 0) | F_REPORT
    c.cnt[C_JOBS_ENDED] += 1
    _report(c, n, -1, s.sim_id, -1)
    _release(c, slot)


@njit(cache=True, nogil=True, _nrt=False)
def _dfuct_finish(c, slot, result):
    """A result for the job: fold it into the frames, report what leaves, select again (or end)."""
    cs = c.cs[0]
    s = c.sims[slot]
    cs.done += 1
    if s.tickets > 0:
        s.tickets -= 1
    n = s.n
    k = fold_result(c.g, c.p, c.steps[slot], c.frames[slot], n, result, cs.switch_margin)
    if cs.stopped or s.tickets == 0:
        _end_job(c, slot)
        return
    m = 0
    if cs.report_every > 0:  # kept frames whose pending results reached report_every report them, unpopped
        for i in range(k):
            if c.frames[slot, i].dn >= cs.report_every:
                c.rsteps[m] = c.steps[slot, i]
                c.rframes[m] = c.frames[slot, i]
                c.rsteps[m].flags = F_REPORT
                c.frames[slot, i].dn = 0
                c.frames[slot, i].dw = 0.0
                m += 1
    c.cnt[C_PARTIAL] += m
    for i in range(k, n):  # popped frames
        c.rsteps[m] = c.steps[slot, i]
        c.rframes[m] = c.frames[slot, i]
        c.rsteps[m].flags = (F_POP if c.rsteps[m].idx >= 0 else 0) | F_REPORT
        m += 1
    c.cnt[C_RESUMES] += 1
    c.cnt[C_RESUME_DEPTH] += k  # / resumes: how deep jobs stay (TDS: always 0)
    dst = np.int64(c.steps[slot, k].rank) if k < n else cs.root_owner
    s.n = k
    s.replayed = 0  # the position at node k: replayed where selection goes on
    s.insert = 1
    carried = _report(c, m, dst, s.sim_id, slot)
    if dst == cs.lrank:
        if carried == 0:
            _continue(c, slot, True)
        return
    _send_job(c, K_MOVE, dst, slot, carried)
    _release(c, slot)


@njit(cache=True, nogil=True, _nrt=False)
def _dfuct_done(c, slot):
    """on_work_done of a df-UCT package (outstanding already taken down)."""
    cs = c.cs[0]
    s = c.sims[slot]
    if s.role == R_UJOB:
        cs.updates_running -= 1
        c.cnt[C_UPDATES] += 1
        if s.missing:
            c.cnt[C_MISSING] += s.missing
        c.cnt[C_REPORT_RECORDS] += s.n
        for i in range(s.n):
            if c.steps[slot, i].hash == cs.root_hash:
                c.cnt[C_ROOT_REPORTS] += 1
        if s.carry >= 0:
            _continue(c, s.carry, True)
        _release(c, slot)
        return
    kind = s.kind
    if kind == PK_PLAYOUT:
        c.cnt[C_PLAYOUTS] += 1
        _dfuct_finish(c, slot, s.result)
        return
    if kind == PK_EXPAND:
        c.cnt[C_EXPANDS] += 1
        if s.st:
            s.insert = 1
            _pkg(c, slot, PK_SELECT, True)
        else:
            _dfuct_playout_or_forward(c, slot)
        return
    st = s.st
    if st != ST_LOSS and (cs.stopped or st == ST_MOVE):
        if cs.stopped:  # no new simulation: the job flushes and ends here
            _end_job(c, slot)
            return
        if s.moved:
            s.moved = 0
            cs.moves_held -= 1
        _send_job(c, K_MOVE, s.arg, slot, 0)
        _release(c, slot)
        return
    if s.moved:
        s.moved = 0
        cs.moves_held -= 1
    if st == ST_LOSS:  # a tree move that loses at once: a simulation without a playout
        cs.started += 1
        _dfuct_finish(c, slot, -1.0 if s.arg == 0 else 1.0)
    elif st == ST_PLAYOUT:
        _dfuct_playout_or_forward(c, slot)
    else:  # ST_EXPAND
        s.exp_slot = s.arg
        _pkg(c, slot, PK_EXPAND, True)


# --- synchronisation ----------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True, _nrt=False)
def _kick(c):
    """Start the sync job if there is something to do and none runs (Schaefers 2014, 4.2.2)."""
    cs = c.cs[0]
    if cs.sync_running:
        return
    has_dups = _dup_waits(c) and cs.updates_running == 0
    if not (cs.n_rows_in or cs.n_to_flush or cs.flush_all or has_dups):
        return
    if cs.gate_syncs and cs.updates_running:
        cs.gate_wait = 1  # holds back new updates until the running ones are done
        atomic_store(c.halt, 1, 1)
        return
    n_dup = cs.n_to_dup if has_dups else 0
    K = c.t.child_move.shape[1]
    rows_used = c.dt.meta[0]
    n_flush = rows_used + cs.n_rows_in if cs.flush_all else cs.n_to_flush
    want = (n_dup + n_flush) * (K + 1)
    if want > c.srows.shape[0]:
        _need(cs, N_SROWS, want)
        return
    cs.gate_wait = 0
    atomic_store(c.halt, 1, 1 if cs.n_to_dup > 0 else 0)
    cs.job_rows = cs.n_rows_in
    copy_to(c.jrows, c.rows_in[:cs.n_rows_in])
    cs.n_rows_in = 0
    cs.job_dup = n_dup
    copy_to(c.jdup, c.to_dup[:n_dup])
    cs.job_flush = cs.n_to_flush
    for i in range(cs.n_to_flush):
        r = c.to_flush[i]
        c.jflush[i] = r
        c.flush_mark[r] = 0
    cs.n_to_flush = 0
    cs.job_flush_all = cs.flush_all
    cs.flush_all = 0
    if n_dup > 0 or cs.gate_syncs:
        cs.n_to_dup = 0
        atomic_store(c.halt, 1, 0)
        cs.dup_running = 1
    cs.sync_running = 1
    cs.outstanding += 1
    _push(c, SYNC_PKG, False)


@njit(cache=True, nogil=True, _nrt=False)
def _exec_sync(c):
    cs = c.cs[0]
    t, dt = c.t, c.dt
    dropped = apply_rows(t, dt, c.jrows, cs.job_rows, cs.adopt != 0)
    nd = 0
    if cs.job_dup:
        nd = write_dup(t, dt, c.jdup, cs.job_dup, c.srows)
    ns = 0
    if cs.job_flush or cs.job_flush_all:
        ns = flush_rows(t, dt, c.jflush, cs.job_flush, cs.job_flush_all != 0, c.srows[nd:])
    cs.job_dup_rows = nd
    cs.job_sync_rows = ns
    cs.job_dropped = dropped


@njit(cache=True, nogil=True, _nrt=False)
def _sync_done(c):
    cs = c.cs[0]
    nd, ns = cs.job_dup_rows, cs.job_sync_rows
    per = ROWS_PER_RECORD
    want = (nd + ns) * 32 + ((nd + per - 1) // per + (ns + per - 1) // per) * HEAD
    for i in range(cs.n_peers):
        d = c.peers[i]
        if c.ob.shape[1] - c.ob_used[d] < want + msg_bound(c):
            return _need(cs, N_OUTBOX, want + msg_bound(c))
    if cs.merging and (cs.export_due or cs.final_merge):
        r = _merge_room(c, ns)
        if r != OK:
            return r
    cs.outstanding -= 1
    c.cnt[C_DROPPED] += cs.job_dropped
    if nd or ns:
        cs.sync_seq += 1
    if nd:
        nodes = 0
        for i in range(nd):
            if c.srows[i].idx == NODE_ROW:
                nodes += 1
        c.cnt[C_DUPS] += nodes
        for i in range(cs.n_peers):
            _send_rows(c, cs.dup_kind, c.peers[i], c.srows, nd, 2 * cs.sync_seq)
    if ns:
        c.cnt[C_SYNC_ROWS] += ns
        for i in range(cs.n_peers):
            _send_rows(c, cs.sync_kind, c.peers[i], c.srows[nd:], ns, 2 * cs.sync_seq + 1)
    if cs.merging:
        _keep_merged(c, nd, ns)
        if cs.export_due or cs.final_merge:
            cs.export_due = 0
            _export_merged(c)
    cs.sync_running = 0
    if cs.dup_running:
        cs.dup_running = 0
        if not _dup_waits(c):
            while cs.h_len > 0:
                slot = c.held[cs.h_head]
                cs.h_head = (cs.h_head + 1) % c.held.shape[0]
                cs.h_len -= 1
                cs.outstanding += 1
                cs.updates_running += 1
                _push(c, slot, False)
    _kick(c)
    return OK


# --- hybrid: merging between groups (model/roles/hybrid.py) ---------------------------------------------------------
@njit(cache=True, nogil=True, _nrt=False)
def _merged_index(c, h):
    """The index of node h among the merged nodes (c.mhash is sorted), -1 if it is not one."""
    lo, hi = 0, c.cs[0].n_merged
    while lo < hi:
        mid = (lo + hi) >> 1
        if c.mhash[mid] < h:
            lo = mid + 1
        else:
            hi = mid
    return lo if lo < c.cs[0].n_merged and c.mhash[lo] == h else -1


@njit(cache=True, nogil=True, _nrt=False)
def _keep_merged(c, a, n):
    """Keep the merged nodes' rows among the sync job's SYNC rows c.srows[a:a + n] (this rank's own
    increments: nothing it heard is ever flushed) for the next MERGE, summed per node and child."""
    cs = c.cs[0]
    for i in range(a, a + n):
        h = c.srows[i].hash
        m = _merged_index(c, h)
        if m < 0:
            continue
        j = np.int64(c.srows[i].idx) + 1
        c.macc_n[m, j, 0] += c.srows[i].n
        c.macc_n[m, j, 1] += c.srows[i].an
        c.macc_w[m, j, 0] += c.srows[i].w
        c.macc_w[m, j, 1] += c.srows[i].aw
        if c.mtouch[m] == 0:
            c.mtouch[m] = 1
            cs.n_kept += 1


@njit(cache=True, nogil=True, _nrt=False)
def _merge_room(c, extra):
    """OK if every MERGE peer's outbox has room for the kept rows and `extra` more, else what to grow."""
    cs = c.cs[0]
    if cs.n_mpeers == 0:
        return OK
    n = extra
    for m in range(cs.n_merged):
        if c.mtouch[m]:
            for j in range(c.macc_n.shape[1]):
                if j == 0 or c.macc_n[m, j, 0] != 0 or c.macc_n[m, j, 1] != 0:
                    n += 1
    want = n * 32 + (n // ROWS_PER_RECORD + 1) * HEAD + msg_bound(c)
    for i in range(cs.n_mpeers):
        d = c.mpeers[i]
        if c.ob.shape[1] - c.ob_used[d] < want:
            return _need(cs, N_OUTBOX, want)
    return OK


@njit(cache=True, nogil=True, _nrt=False)
def _export_merged(c):
    """One MERGE to every search rank of the other groups with the kept increments: each merged node's row
    and a row for each child with any (the caller checked the room)."""
    cs = c.cs[0]
    if cs.n_kept == 0:
        return
    k = 0
    cm = c.t.child_move
    for m in range(cs.n_merged):
        if c.mtouch[m] == 0:
            continue
        for j in range(c.macc_n.shape[1]):
            n, an = c.macc_n[m, j, 0], c.macc_n[m, j, 1]
            if j > 0 and n == 0 and an == 0:
                continue
            c.mout[k].hash = c.mhash[m]
            c.mout[k].idx = j - 1
            c.mout[k].move = -1 if j == 0 else cm[c.mslot[m], j - 1]
            c.mout[k].n = n
            c.mout[k].w = c.macc_w[m, j, 0]
            c.mout[k].an = an
            c.mout[k].aw = c.macc_w[m, j, 1]
            c.macc_n[m, j, 0] = 0
            c.macc_n[m, j, 1] = 0
            c.macc_w[m, j, 0] = 0.0
            c.macc_w[m, j, 1] = 0.0
            k += 1
        c.mtouch[m] = 0
    cs.n_kept = 0
    c.cnt[C_MERGES] += 1
    for i in range(cs.n_mpeers):
        _send_rows(c, K_MERGE, c.mpeers[i], c.mout, k, c.cnt[C_MERGES])  # numbered by export


# --- the contract -------------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def start(c, buf):
    """Begin a new search on the rank's table (a kept table's old nodes become replaceable, not lost)."""
    cs = c.cs[0]
    r = _room(c)
    if r != OK:
        return r
    t = c.t
    t.meta[M_SEARCH] += 1
    h = game.hash(c.g, c.root)
    slot, _ = lookup(t, h, True)
    if slot == 0:
        return NO_ROOT
    cs.root_slot = slot
    reset_kids(c.kids)
    cs.root_hash = h
    cs.root_pos = game.position_hash(c.g, c.root)
    cs.root_owner = owner(h, cs.M, cs.local_slots) if cs.M > 1 else 0
    if cs.M > 1 and cs.share_root:
        # the root is shared by all ranks from the start (Schaefers 2014, 4.2.4), with the same children
        t.vloss[slot, :] = 0
        if _keeps_root(c, slot):
            share_kept_root(t, c.dt, slot, h)
        else:
            t.visits[slot] = 0
            t.value[slot] = 0.0
            t.child_visits[slot, :] = 0
            t.child_value[slot, :] = 0.0
            t.amaf_visits[slot, :] = 0
            t.amaf_value[slot, :] = 0.0
            if t.n_children[slot] < 0 and not game.is_terminal(c.g, c.root):
                t.n_children[slot] = UNEXPANDED
                expand(t, c.g, c.root.copy(), slot, buf)
            share_root(t, c.dt, slot, h)
    _fill(c)
    return OK


@njit(cache=True, nogil=True, _nrt=False)
def _keeps_root(c, slot):
    """Whether this rank brings the statistics an earlier search of the session left at the root (tree
    reuse): in treesplit the root's owner holds all of them after that search's final synchronisation (the
    other ranks' copies of a node are stale or partial), so it alone keeps them and the others start from
    zero. Root parallelisation and hybrid groups, whose ranks each hold merged sums, start afresh."""
    cs = c.cs[0]
    return (cs.adopt == 0 and cs.G == 1 and cs.root_owner == cs.lrank and c.t.n_children[slot] > 0
            and c.t.visits[slot] > 0)


@njit(cache=True, nogil=True, _nrt=False)
def _receive(c, buf, off, n, log, src, t_send):
    """Take in the records of buf[off:n] (a batch from rank src, sent at t_send). Returns (outcome, offset
    reached): on NEED_ROOM the caller grows what cs.need names and calls again from there; -1 - offset for a
    record that does not fit the buffer (a corrupt batch); -1 - n - kind for a kind this role does not take."""
    cs = c.cs[0]
    while off < n:
        r = _room(c)
        if r != OK:
            return r, off
        if log and cs.rx_n >= c.rx.shape[0]:
            return _need(cs, N_RX, c.rx.shape[0]), off
        if n - off < HEAD:
            return -1 - off, off
        h = head(buf, off)
        kind = np.int64(h.kind)
        size = np.int64(h.size)
        if (size < HEAD or off + size > n or record_size(np.int64(h.n_steps), h.flags & F_FRAMES != 0,
                                                         np.int64(h.n_rows), np.int64(h.n_amaf)) != size):
            return -1 - off, off
        if (cs.accept >> kind) & 1 == 0:
            return -1 - n - kind, off
        if src >= 0 and cs.mode == MODE_TREESPLIT and (kind == K_MOVE or kind == K_UPDATE or kind == K_FWD):
            c.load[src] = h.aux  # the sender's outstanding packages when it wrote the record
        if cs.mode == MODE_DFUCT and (kind == K_MOVE or kind == K_UPDATE or kind == K_FWD):
            _dfuct_receive(c, buf, off, h, kind)
        elif kind == K_MOVE:
            slot = _arrived(c, buf, off, h)
            c.sims[slot].moved = 1
            cs.moves_held += 1
            _sim_pkg(c, slot, PK_SELECT, False)
        elif kind == K_UPDATE:
            slot = _alloc(c)
            s = c.sims[slot]
            n_st = np.int64(h.n_steps)
            s.sim_id = h.sim_id
            s.n = n_st
            s.role = R_UJOB
            s.result = h.result
            copy_to(c.steps[slot], body_steps(buf, off, n_st))
            c.pslots[slot, :n_st] = 0
            na = np.int64(h.n_amaf)
            if na and c.amaf.shape[1]:
                copy_to(c.amaf[slot], body_amaf(buf, off, n_st, False, 0, na))
                s.has_amaf = 1
            s.origin_done = 1 if _origin(c, h.sim_id) == cs.lrank else 0
            _update(c, slot)
        elif kind == K_FWD:
            _playout_or_forward(c, _arrived(c, buf, off, h), False)
        elif kind == K_JOB:  # a leaf's playout, for the master
            slot = _arrived(c, buf, off, h)
            c.sims[slot].arg = h.aux
            x = (np.uint64(cs.seed) * np.uint64(0x9E3779B1) + np.uint64(cs.rank) * np.uint64(1000003)
                 + np.uint64(cs.jobs)) & np.uint64((1 << 62) - 1)
            x = x * np.uint64(0x9E3779B97F4A7C15) + np.uint64(0x632BE59BD9B4E019)
            c.rngs[slot] = x if x != 0 else np.uint64(0x9E3779B97F4A7C15)
            cs.jobs += 1
            _pkg(c, slot, PK_PLAYOUT, False)
        elif kind == K_RESULT:
            _leaf_result(c, buf, off, h, src)
        else:  # DUP, SYNC, MERGE
            nr = np.int64(h.n_rows)
            if cs.n_rows_in + nr > c.rows_in.shape[0]:
                return _need(cs, N_ROWS_IN, cs.n_rows_in + nr), off
            copy_to(c.rows_in[cs.n_rows_in:], body_rows(buf, off, 0, False, nr))
            cs.n_rows_in += nr
            _kick(c)
        c.received[kind] += 1
        if log:
            i = cs.rx_n
            c.rx[i, 0] = kind
            c.rx[i, 1] = size
            c.rx[i, 2] = h.sim_id
            c.rx[i, 3] = src
            c.rx[i, 4] = t_send
            c.rx[i, 5] = cycles()
            cs.rx_n = i + 1
        off += size
    return OK, off


@njit(cache=True, nogil=True)
def receive(c, buf, off, n, log, src, t_send):
    return _receive(c, buf, off, n, log, src, t_send)


@njit(cache=True, nogil=True, inline="always")
def _log(sc, kind, sim_id, steps):
    """A part ran: its kind, simulation and the tree steps it covered (records a select or expand added, the
    rank's records an update backed up; 0 for the others), stamped with the cycle counter at its end."""
    i = sc.log_n[0]
    if i < sc.log_kind.shape[0]:
        sc.log_kind[i] = kind
        sc.log_sim[i] = sim_id
        sc.log_steps[i] = steps
        sc.log_t[i + 1] = cycles()
        sc.log_n[0] = i + 1


@njit(cache=True, nogil=True, _nrt=False)
def _mine(steps, n, me):
    """How many of the records steps[:n] were selected on rank `me` (the ones its update backs up)."""
    k = 0
    for i in range(n):
        if steps[i].rank == me:
            k += 1
    return k


@njit(cache=True, nogil=True, inline="always")
def _rng_in(cs, sim_id, rng, rngs, slot):
    if cs.shared_rng:
        return rng
    r = rngs[slot:slot + 1]
    if r[0] == 0:
        # the stream of model.rng.new_rng((seed * 0x9E3779B1 + sim_id * 2654435761 + rank) mod 2**62)
        x = (np.uint64(cs.seed) * np.uint64(0x9E3779B1) + np.uint64(sim_id) * np.uint64(2654435761)
             + np.uint64(cs.lrank)) & np.uint64((1 << 62) - 1)
        x = x * np.uint64(0x9E3779B97F4A7C15) + np.uint64(0x632BE59BD9B4E019)
        r[0] = x if x != 0 else np.uint64(0x9E3779B97F4A7C15)
    return r


@njit(cache=True, nogil=True, inline="always")
def _rng(c, slot):
    """The random stream of the simulation in slot (the shared one with shared_rng)."""
    return _rng_in(c.cs[0], c.sims[slot].sim_id, c.rng, c.rngs, slot)


@njit(cache=True, nogil=True, _nrt=False)
def _run_fused(c, slot, sc, logging):
    """A fused package from its first part (select or playout) on, while the simulation stays here: select
    -> expand -> select ... -> playout (if fuse_playout) -> this rank's update (if may_update); and, for a
    simulation started here that ends in an update with no sync or duplication due, on with the origin's
    next simulation from the root, up to chain_left times, unless the role raised a flag in halt (stopped,
    a duplication waits; read between simulations). Each part exactly as its own kernel in steps.py."""
    _fused(c, slot, sc, logging)
    s = c.sims[slot]
    if c.cs[0].slmp and s.playouts > 1 and c.p[P_VLOSS] > 0 and (
            (s.stop == F_SELECT and (s.st == ST_PLAYOUT or s.st == ST_LOSS)) or s.stop == F_EXPAND):
        # the path got one virtual loss per edge; each of the leaf's results takes one away
        add_path_vloss(c.t, c.steps[slot], s.n, s.playouts - 1)


@njit(cache=True, nogil=True, _nrt=False)
def _fused(c, slot, sc, logging):
    """_run_fused's parts and its chain of simulations (s.stop: the kind of the part it stopped after)."""
    cs, s = c.cs[0], c.sims[slot]
    t, dt, g, p, y, root, history, ids, halt = c.t, c.dt, c.g, c.p, c.y, c.root, c.history, c.ids, c.halt
    pos, path, steps, pslots, parts = c.pos[slot], c.path_pos[slot], c.steps[slot], c.pslots[slot], c.parts[slot]
    rng1, rngs, amafs, osync, odup = c.rng, c.rngs, c.amaf, c.osync[slot], c.odup[slot]
    for i in range(parts.shape[0]):
        parts[i] = 0
    # from the root, select_steps copies the root position only for a simulation that stays here
    lazy = s.n == 0 and s.kind != PK_PLAYOUT
    if s.replayed == 0 and sc.pos.shape[0] == root.shape[0] and sc.path.shape[0] >= path.shape[0]:
        # The package plays on its thread's position, warm in cache, not on the slot's, which with S_par
        # slots of 25 kB each (19x19) is cold by the time the package runs. s.replayed stays 0: what the
        # package leaves for later (a playout or selection here) replays steps[:s.n] first.
        pos, path = sc.pos, sc.path
        if not lazy:
            replay(g, root, steps, s.n, pos, path)
    elif s.replayed == 0 and not lazy:
        replay(g, root, steps, s.n, pos, path)
        s.replayed = 1
    if lazy:
        path[0] = cs.root_pos
    rng = _rng_in(cs, s.sim_id, rng1, rngs, slot)
    rave = amafs.shape[1] > 0
    amaf = amafs[slot] if rave else sc.amaf_up
    me, kr, ls = cs.lrank, cs.kernel_ranks, cs.local_slots
    n = s.n
    insert = s.insert != 0
    first = s.kind
    while True:
        if first != PK_PLAYOUT:
            while True:
                parts[PK_SELECT] += 1
                n0 = n
                st, n, arg = select_steps(t, dt, g, pos, p, rng, steps, n, path, history, me, kr, ls, insert,
                                          pslots, sc.score, root, c.kids)
                if logging:
                    _log(sc, PK_SELECT, s.sim_id, n - n0)
                if st == ST_EXPAND:
                    parts[PK_EXPAND] += 1
                    n0 = n
                    ok, n = expand_node(t, g, pos, np.int64(arg), sc.buf, steps, n, me, pslots)
                    s.expands += 1
                    if logging:
                        _log(sc, PK_EXPAND, s.sim_id, n - n0)
                    if ok:
                        insert = True
                        continue
                    if not s.fuse_playout:
                        s.n = n
                        s.stop = F_EXPAND
                        return
                elif st != ST_PLAYOUT or not s.fuse_playout:
                    s.n = n
                    s.stop = F_SELECT
                    s.st = st
                    s.arg = arg
                    return
                break
        first = PK_SELECT
        parts[PK_PLAYOUT] += 1
        result = playout(g, pos, rng, amaf)
        s.has_amaf = 1
        if logging:
            _log(sc, PK_PLAYOUT, s.sim_id, 0)
        s.n = n
        s.result = result
        if not s.may_update:
            s.stop = F_PLAYOUT
            return
        parts[PK_UPDATE] += 1
        if rave:  # the update consumes its copy; the UPDATE records carry the original
            copy_to(sc.amaf_up, amaf)
        ns, nd, missing = update_steps(t, dt, g, steps, n, me, result, sc.amaf_up if rave else sc.amaf_up[:0], p,
                                       y, kr, ls, osync, odup, pslots)
        if logging:
            _log(sc, PK_UPDATE, s.sim_id, _mine(steps, n, me))
        if (s.chain_left <= 0 or ns != 0 or nd != 0 or atomic_load(halt, 0) != 0
                or atomic_load(halt, 1) != 0):
            s.ns = ns
            s.nd = nd
            s.missing = missing
            s.stop = F_UPDATE
            return
        s.chain_left -= 1
        s.chain_done += 1
        s.chain_records += n
        s.chain_edges += _edges(steps, n)
        s.chain_missing += missing
        s.sim_id = _label_in(cs, atomic_add(ids, 0, 1))
        s.replayed = 0  # select_steps copies the root to pos where the next simulation stays here
        n = 0
        path[0] = cs.root_pos
        insert = True


@njit(cache=True, nogil=True, _nrt=False)
def _execute(c, pkg, sc):
    """Run a package (a worker's part: only the package's slot, the tables and sc are written)."""
    logging = sc.log_kind.shape[0] > 0
    if logging:
        sc.log_n[0] = 0
        sc.log_t[0] = cycles()
    if pkg == SYNC_PKG:
        _exec_sync(c)
        if logging:
            _log(sc, PK_SYNC, -1, 0)
        return
    s = c.sims[pkg]
    if s.fuse and s.role == R_SIM:
        _run_fused(c, pkg, sc, logging)
        return
    c.parts[pkg, :] = 0
    kind = s.kind
    if s.role == R_UJOB and c.cs[0].mode == MODE_DFUCT:
        s.missing = apply_reports(c.t, c.steps[pkg], c.frames[pkg], s.n, c.p)
        c.parts[pkg, PK_UPDATE] = 1
        if logging:
            _log(sc, PK_UPDATE, s.sim_id, s.n)
        return
    if s.role == R_UJOB:
        n = s.n
        amaf = c.amaf[pkg] if (s.has_amaf and c.amaf.shape[1]) else sc.amaf_up[:0]
        ns, nd, missing = update_steps(c.t, c.dt, c.g, c.steps[pkg], n, c.cs[0].lrank, s.result, amaf, c.p, c.y,
                                       c.cs[0].kernel_ranks, c.cs[0].local_slots, c.osync[pkg], c.odup[pkg],
                                       c.pslots[pkg])
        s.ns = ns
        s.nd = nd
        s.missing = missing
        c.parts[pkg, PK_UPDATE] = 1
        if logging:
            _log(sc, PK_UPDATE, s.sim_id, _mine(c.steps[pkg], n, c.cs[0].lrank))
        return
    cs = c.cs[0]
    if s.replayed == 0 and s.n == 0 and kind == PK_SELECT:
        c.path_pos[pkg, 0] = cs.root_pos  # select_steps copies the root where the simulation stays here
    elif s.replayed == 0:
        replay(c.g, c.root, c.steps[pkg], s.n, c.pos[pkg], c.path_pos[pkg])
        s.replayed = 1
    rng = _rng(c, pkg)
    n0 = s.n
    if kind == PK_SELECT:
        c.parts[pkg, PK_SELECT] = 1
        st, n, arg = select_steps(c.t, c.dt, c.g, c.pos[pkg], c.p, rng, c.steps[pkg], s.n, c.path_pos[pkg],
                                  c.history, cs.lrank, cs.kernel_ranks, cs.local_slots, s.insert != 0, c.pslots[pkg],
                                  sc.score, c.root, c.kids)
        if st != ST_MOVE:
            s.replayed = 1
        s.n = n
        s.st = st
        s.arg = arg
    elif kind == PK_EXPAND:
        c.parts[pkg, PK_EXPAND] = 1
        ok, n = expand_node(c.t, c.g, c.pos[pkg], s.exp_slot, sc.buf, c.steps[pkg], s.n, cs.lrank, c.pslots[pkg])
        s.n = n
        s.st = 1 if ok else 0
    elif kind == PK_PLAYOUT:
        c.parts[pkg, PK_PLAYOUT] = 1
        amaf = c.amaf[pkg] if c.amaf.shape[1] else sc.amaf_up
        s.result = playout(c.g, c.pos[pkg], rng, amaf)
        s.has_amaf = 1
    if cs.mode == MODE_DFUCT and kind != PK_PLAYOUT:
        fill_frames(c.t, c.p, c.steps[pkg], c.frames[pkg], n0, s.n, c.pslots[pkg], sc.score)
    elif cs.slmp and s.playouts > 1 and c.p[P_VLOSS] > 0 and (
            (kind == PK_SELECT and (s.st == ST_PLAYOUT or s.st == ST_LOSS)) or (kind == PK_EXPAND and s.st == 0)):
        add_path_vloss(c.t, c.steps[pkg], s.n, s.playouts - 1)
    if logging:
        _log(sc, kind, s.sim_id, s.n - n0 if kind != PK_PLAYOUT else 0)


@njit(cache=True, nogil=True)
def execute(c, pkg, sc):
    return _execute(c, pkg, sc)


@njit(cache=True, nogil=True, _nrt=False)
def _sim_done(c, slot):
    """on_work_done of a simulation's package (room checked by the caller)."""
    cs = c.cs[0]
    s = c.sims[slot]
    if s.fuse:
        if s.moved:
            s.moved = 0
            cs.moves_held -= 1
        if s.chain_left or s.chain_done:
            _chain_settle(c, slot)
            c.rngs[slot] = 0  # the next simulation of the slot: a stream of its own (workers > 1)
        if s.expands:
            c.cnt[C_EXPANDS] += s.expands
            s.expands = 0
        counted = s.may_update != 0
        if counted:
            s.may_update = 0
            cs.updates_running -= 1
        stop = s.stop
        if stop == F_SELECT:
            if s.st == ST_MOVE:
                _send_steps(c, K_MOVE, s.arg, slot)
                _release(c, slot)
            elif s.st == ST_PLAYOUT:
                _playout_or_forward(c, slot, True)
            else:  # ST_LOSS (as in the unfused path)
                _finish_sim(c, slot, _loss_amaf(c, slot), False)
        elif stop == F_EXPAND:  # another thread expanded the node first: a leaf, playout not fused
            _playout_or_forward(c, slot, True)
        elif stop == F_PLAYOUT:
            c.cnt[C_PLAYOUTS] += 1
            _finish_sim(c, slot, s.result, False)
        else:  # played out and this rank's records updated in the package
            c.cnt[C_PLAYOUTS] += 1
            _finish_sim(c, slot, s.result, True)
        if counted:
            _kick(c)
        return
    kind = s.kind
    if kind == PK_SELECT:
        if s.moved:
            s.moved = 0
            cs.moves_held -= 1
        if s.st == ST_MOVE:
            _send_steps(c, K_MOVE, s.arg, slot)
            _release(c, slot)
        elif s.st == ST_PLAYOUT:
            _playout_or_forward(c, slot, True)
        elif s.st == ST_EXPAND:
            s.exp_slot = s.arg
            _pkg(c, slot, PK_EXPAND, True)
        else:  # ST_LOSS: the mover played an illegal or repeating move: a loss for it, no playout
            _finish_sim(c, slot, _loss_amaf(c, slot), False)
    elif kind == PK_PLAYOUT:
        c.cnt[C_PLAYOUTS] += 1
        _finish_sim(c, slot, s.result, False)
    elif kind == PK_EXPAND:
        c.cnt[C_EXPANDS] += 1
        if s.st:
            s.insert = 1
            _sim_pkg(c, slot, PK_SELECT, True)
        else:
            _playout_or_forward(c, slot, True)


@njit(cache=True, nogil=True, _nrt=False)
def _done(c, pkg):
    """A package finished (the role's on_work_done). NEED_ROOM: nothing changed, call again after growing."""
    cs = c.cs[0]
    if pkg == SYNC_PKG:
        return _sync_done(c)
    r = _room(c)
    if r != OK:
        return r
    cs.outstanding -= 1
    s = c.sims[pkg]
    if cs.mode == MODE_DFUCT:
        _dfuct_done(c, pkg)
        return OK
    if cs.mode == MODE_LEAF_WORKER:
        _leaf_playout_done(c, pkg)
        return OK
    if s.role == R_UJOB:
        cs.updates_running -= 1
        _update_done(c, pkg, s.origin_done != 0)
        _release(c, pkg)
        return OK
    _sim_done(c, pkg)
    return OK


@njit(cache=True, nogil=True)
def done(c, pkg):
    return _done(c, pkg)


@njit(cache=True, nogil=True, _nrt=False)
def _run(c, sc, max_cycles, logging):
    """Packages from the queue, each executed and done, until the queue is empty, the slice of max_cycles
    cycle-counter ticks is used (0: no limit), or a buffer wants room (the engine's IO thread without
    workers). With logging, every part goes to c.log_* (the trace); a full log ends the call. Returns OK or
    NEED_ROOM (then grow and call again: a package that ran and could not be done is done first)."""
    cs = c.cs[0]
    if cs.pend:
        r = _done(c, cs.pend - 2)
        if r != OK:
            return r
        cs.pend = 0
    t0 = cycles()
    while cs.q_len > 0:
        r = _room(c)
        if r != OK:
            return r
        if logging and cs.log_n + 2 * cs.depth_cap + 8 > c.log_kind.shape[0]:
            return OK  # the trace takes the log first
        pkg = pop(c)
        _execute(c, pkg, sc)
        if logging:
            i = cs.log_n
            for k in range(sc.log_n[0]):
                c.log_kind[i] = sc.log_kind[k]
                c.log_sim[i] = sc.log_sim[k]
                c.log_t0[i] = sc.log_t[k]
                c.log_t1[i] = sc.log_t[k + 1]
                c.log_steps[i] = sc.log_steps[k]
                i += 1
            cs.log_n = i
        r = _done(c, pkg)
        if r != OK:
            cs.pend = pkg + 2
            return r
        if cs.need != N_NONE:
            return NEED_ROOM
        if max_cycles > 0 and cycles() - t0 > max_cycles:
            break
    return OK


@njit(cache=True, nogil=True)
def run(c, sc, max_cycles, logging):
    return _run(c, sc, max_cycles, logging)


@njit(cache=True, nogil=True, _nrt=False)
def _stop(c):
    cs = c.cs[0]
    cs.stopped = 1
    atomic_store(c.halt, 0, 1)


@njit(cache=True, nogil=True)
def stop(c):
    return _stop(c)


@njit(cache=True, nogil=True, _nrt=False)
def _final_sync(c):
    cs = c.cs[0]
    if cs.merging:
        r = _merge_room(c, 0)
        if r != OK:
            return r
    cs.stopped = 1
    atomic_store(c.halt, 0, 1)
    if cs.track:
        cs.flush_all = 1
        _kick(c)
    cs.final_synced = 1
    if cs.merging:  # what the flushes kept so far goes now, the final flush's rows when its job is done
        cs.final_merge = 1
        _export_merged(c)
    return OK


@njit(cache=True, nogil=True)
def final_sync(c):
    return _final_sync(c)


@njit(cache=True, nogil=True)
def kick(c):
    _kick(c)
    return OK


@njit(cache=True, nogil=True, _nrt=False)
def _idle(c):
    cs = c.cs[0]
    return (cs.outstanding == 0 and cs.h_len == 0 and cs.n_rows_in == 0 and cs.n_to_flush == 0
            and not _dup_waits(c) and cs.flush_all == 0 and not _may_start(c) and cs.n_waiting == 0
            and not (cs.final_merge and cs.n_kept > 0))


@njit(cache=True, nogil=True)
def idle(c):
    return _idle(c)


@njit(cache=True, nogil=True, _nrt=False)
def _take_queue(c, out_pkg, out_front):
    """Empty the queue into out_pkg/out_front (the hosts that hand packages to a runtime); returns the count."""
    k = 0
    while c.cs[0].q_len > 0 and k < out_pkg.shape[0]:
        pkg = pop(c)
        out_pkg[k] = pkg
        out_front[k] = 1 if pkg_front(c, pkg) else 0
        k += 1
    return k


@njit(cache=True, nogil=True)
def take_queue(c, out_pkg, out_front):
    return _take_queue(c, out_pkg, out_front)


@register_borrowed
class CoreType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class Core(structref.StructRefProxy):
    """The kernels' handle on a rank's Arrays (bind() makes one; Python code reads the Arrays)."""


structref.define_proxy(Core, CoreType, list(Arrays._fields))


def bind(a: Arrays) -> Core:
    if numba.config.DISABLE_JIT:  # the kernels as plain Python (debugging): they read the arrays themselves,
        # records through attributes as numba reads them
        return Arrays(*[x.view(np.recarray) if isinstance(x, np.ndarray) and x.dtype.names else x for x in a])
    return _new_core(a)


@njit(cache=True)
def _new_core(a):
    # Core(*a) from Python compiles StructRefProxy's constructor afresh in every process (numba does not cache
    # it): ~7 s of each rank's start-up. Built here, the constructor is cached like any kernel.
    return Core(*a)


def new_arrays(t, dt, g, root, history, p, y, *, world: int, M: int, glob, peers, slots: int, depth_cap: int,
               rave: bool, frames: bool = False, outbox: int = 1 << 16, rows: int = 4096, sync_rows: int = 4096,
               rx: int = 4096, log: int = 0) -> Arrays:
    """A rank's arrays with empty state (the host fills cs's configuration fields)."""
    na = int(game.n_actions(g))
    L = int(np.asarray(root).shape[0])
    P, D = int(slots), int(depth_cap)
    dr = int(dt.ready.shape[0])
    cs = np.zeros(1, CST)
    cs[0]["n_free"] = P
    sims = np.zeros(P, SIM)
    return Arrays(
        t=t, dt=dt, g=g, root=np.asarray(root), kids=new_kids(int(t.child_move.shape[1])), history=history, p=p,
        y=y, cs=cs,
        cnt=np.zeros(len(COUNTS), np.int64), sent=np.zeros((world, 16), np.int64),
        sent_bytes=np.zeros((world, 16), np.int64), received=np.zeros(16, np.int64),
        ids=np.zeros(1, np.int64), halt=np.zeros(2, np.int64), glob=np.asarray(glob, np.int64),
        peers=np.asarray(peers, np.int64), seen=np.zeros(M, np.int64), wjobs=np.zeros(M, np.int64),
        load=np.zeros(world, np.int64),
        rsteps=np.zeros(2 * D, STEP), rframes=np.zeros(2 * D if frames else 0, FRAME), rng=np.zeros(1, np.uint64),
        prng=np.zeros(1, np.uint64), sims=sims, steps=np.zeros((P, D), STEP),
        frames=np.zeros((P, D if frames else 0), FRAME), pos=np.zeros((P, L), np.int64),
        path_pos=np.zeros((P, D), np.uint64), pslots=np.zeros((P, D), np.int64), amaf=np.zeros((P, na if rave else 0), np.int8),
        rngs=np.zeros(P, np.uint64), osync=np.zeros((P, D), np.int64), odup=np.zeros((P, D), np.int64),
        parts=np.zeros((P, 4), np.int64), free=np.arange(P - 1, -1, -1, dtype=np.int64),
        q=np.zeros(P + 1, np.int64), held=np.zeros(P, np.int64), rows_in=np.zeros(rows, STAT),
        jrows=np.zeros(rows, STAT), to_flush=np.zeros(dr, np.int64), flush_mark=np.zeros(dr, np.int64),
        jflush=np.zeros(dr, np.int64), to_dup=np.zeros(P * D + 1, np.int64), jdup=np.zeros(P * D + 1, np.int64),
        srows=np.zeros(sync_rows, STAT), ob=np.zeros((world, outbox), np.uint8), ob_used=np.zeros(world, np.int64),
        ob_count=np.zeros(world, np.int64),
        rx=np.zeros((rx, 6), np.float64), log_kind=np.zeros(log, np.int8), log_sim=np.zeros(log, np.int64),
        log_t0=np.zeros(log, np.int64), log_t1=np.zeros(log, np.int64), log_steps=np.zeros(log, np.int64),
        **merged_arrays(0, 0, ()))


def merged_arrays(n_merged: int, max_children: int, peers) -> dict[str, np.ndarray]:
    """Arrays fields for hybrid's merged nodes (filled in when the search shares them) and its MERGE peers."""
    C1 = int(max_children) + 1
    return dict(mhash=np.zeros(n_merged, np.uint64), mslot=np.zeros(n_merged, np.int64),
                mrow=np.zeros(n_merged, np.int64), mpeers=np.asarray(peers, np.int64).reshape(-1),
                macc_n=np.zeros((n_merged, C1, 2), np.int64), macc_w=np.zeros((n_merged, C1, 2), np.float64),
                mtouch=np.zeros(n_merged, np.int64), mout=np.zeros(n_merged * C1, STAT))


def new_scratch(c: Arrays, rave: bool, log: int = 0) -> Scratch:
    """A thread's Scratch for the rank whose arrays are c."""
    na = int(game.n_actions(c.g))
    return Scratch(amaf_up=np.zeros(na, np.int8), buf=np.zeros(na, np.int64), log_kind=np.zeros(log, np.int8),
                   log_sim=np.zeros(log, np.int64), log_t=np.zeros(log + 1, np.int64),
                   log_steps=np.zeros(log, np.int64), log_n=np.zeros(1, np.int64),
                   score=np.zeros(int(game.max_children(c.g)), np.float64), pos=np.zeros_like(c.root),
                   path=np.zeros(c.path_pos.shape[1], np.uint64))
