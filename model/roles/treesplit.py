"""UCT-Treesplit's search rank (Schaefers 2014, 4.2), and TDS (the same with N_dup = inf).

A search rank owns the nodes whose hash maps to it (eq. 4.6/4.7, model/ownership.py) and keeps W*O of its
own simulations in flight (S_par / M). A simulation's life (the worker FSM of Figure 4.2):

    SELECT  at the origin from the root, then on every rank that owns (or holds a duplicate of) the next
            node; between ranks it travels as a MOVE message carrying its step stack
    EXPAND  the owner stores the children of a node met for the first time, then selection goes on
    PLAYOUT from the leaf; forwarded (PLAYOUT_FWD) to a random rank while more than K S_par/M MOVEs wait
            here (4.2.5)
    UPDATE  one per rank that selected a step (a package here, an UPDATE message elsewhere); the origin
            counts the simulation done when its own update has run, and starts the next one

A simulation's steps on one rank run as one package (fused): select, expand, select, ..., playout and this
rank's update, stopping where it leaves the rank; a simulation started here that runs from the root to its
update without leaving is finished in that package, which goes on with the next one (chaining).

Duplication and synchronisation (4.2.2, model/roles/dup.py): the root is duplicated on every rank from the
start; an owned node that reaches N_dup visits is duplicated (DUP, its full statistics); a duplicated
node's increments are sent (SYNC, all its changed children in one message) once some child's delta
reaches N_sync(s,a). Both go to the rank's broadcast partner (model/roles/broadcast.py), or straight to
every other search rank when the run has no broadcast ranks. All sync work runs in `sync` packages, one at
a time per rank; while a DUP snapshot waits, update packages are held back so none slips between the
snapshot and the delta counters.

The state machine itself is model/roles/core.py (numba kernels over the rank's arrays); this class hosts it
for the role contract (one event at a time: the simulator, the loopback runtime, an engine rank with worker
threads) and for the engine's batches (`receive_batch`, `run_batch`, `take_outbox`: a whole MPI buffer of
records in one call, the rank's packages run to the end of a time slice in another).
"""

from __future__ import annotations

import threading

import numpy as np

from model import game
from model.ownership import owner
from model.rng import new_rng
from model.roles import core as K
from model.roles.base import PART_KINDS, SYNC, Actions, Layout, Package, Role, RoleStats, Setup
from model.roles.dup import D_DROPPED, D_REFUSED, D_ROWS, new_dup_table
from model.roles.fastcall import Bound
from model.roles.messages import CODE, DUP, MESSAGE_KINDS, MOVE, PLAYOUT_FWD, Message, Record
from model.roles.messages import SYNC as SYNC_MSG
from model.roles.messages import UPDATE as UPDATE_MSG
from model.roles.params import TreesplitParams
from model.roles.steps import (Y_ALPHA, Y_DUP_DEPTH, Y_LEN, Y_NDUP, Y_NSYNC_MAX, Y_NSYNC_MIN, Y_TRACK)
from model.tt import current_nodes, new_table, slots_for
from model.uct import P_MAX_DEPTH, P_RAVE, UctParams

PKG_KINDS = PART_KINDS + (SYNC,)
# kernels, each bound once per process to the types of a Core (model.roles.fastcall)
_K = ("start", "receive", "execute", "done", "run", "stop", "final_sync", "kick", "idle", "take_queue")
LOG_PARTS = 1 << 15  # parts a batch may log before the trace takes them


class TreesplitSearch(Role):
    """The search rank of treesplit and tds (and, configured, of root and hybrid). rank: the global rank;
    G/group/glob: a hybrid's groups (sim ids are (local rank + M k) G + group; glob maps the group's search
    ranks to global ones, peers are global)."""

    def __init__(self, rank: int, layout: Layout, setup: Setup, uct: UctParams | None = None,
                 params: TreesplitParams | None = None, table=None, *, G: int = 1, group: int = 0,
                 glob=None, lrank: int | None = None, peers=None, world: int | None = None, frames: bool = False):
        self.rank, self.layout, self.setup = rank, layout, setup
        self.lrank = rank if lrank is None else lrank
        self.uct = uct or UctParams()
        self.params = params or TreesplitParams()
        self.g = setup.g
        self.root = np.asarray(setup.root)
        self.history = np.asarray(setup.history, dtype=np.uint64)
        self.p = self.uct.to_array()
        self.M = layout.search_ranks
        self.n_actions = int(game.n_actions(self.g))
        self.max_depth = int(self.p[P_MAX_DEPTH])
        self.rave = self.p[P_RAVE] != 0.0
        if table is None:
            k = int(game.max_children(self.g))
            table = new_table(slots_for(self.params.table_mb, k), k)
        self.local_slots = int(table.key.shape[0])  # |H|/M: every rank's table must have the same size
        dt = new_dup_table(self.local_slots, table.child_move.shape[1], self.params.dup_rows if self.M > 1 else 1)
        y = np.zeros(Y_LEN)
        y[Y_NSYNC_MIN], y[Y_NSYNC_MAX] = self.params.n_sync_min, self.params.n_sync_max
        y[Y_ALPHA], y[Y_NDUP] = self.params.alpha, self.params.n_dup
        y[Y_TRACK], y[Y_DUP_DEPTH] = float(self.M > 1), np.inf
        glob = list(range(self.M)) if glob is None else list(glob)
        if peers is None:
            peers = ([layout.partner(self.lrank)] if layout.bcast_ranks > 0
                     else [glob[r] for r in range(self.M) if r != self.lrank])
        world = layout.world if world is None else world
        self.quota = setup.quota(self.lrank, self.M)
        target = self.params.in_flight(layout.workers, self.M)   # S_par / M
        self._use(K.new_arrays(table, dt, self.g, self.root, self.history, self.p, y, world=world, M=self.M, glob=glob,
                            peers=peers, slots=max(16, 4 * target + 8), depth_cap=self.max_depth + 2,
                                 rave=self.rave, frames=frames))
        cs = self.a.cs[0]
        for name, v in dict(rank=rank, lrank=self.lrank, M=self.M, kernel_ranks=self.M, local_slots=self.local_slots,
                            G=G, group=group, world=world, quota=-1 if self.quota is None else self.quota,
                            target=target, chain=int(self.params.chain), fuse=int(bool(self.params.fuse)),
                            forward=int(bool(self.params.forward_playouts)),
                            balance_load=int(self.params.balance_load), dup_kind=CODE[DUP],
                            sync_kind=CODE[SYNC_MSG], rave=int(self.rave), shared_rng=int(layout.workers == 1),
                            seed=setup.seed, n_actions=self.n_actions, depth_cap=self.max_depth + 2,
                            share_root=int(bool(self.params.share_root)), n_peers=len(peers),
                            track=int(self.M > 1),
                            accept=_mask(MOVE, UPDATE_MSG, PLAYOUT_FWD, DUP, SYNC_MSG)).items():
            cs[name] = v
        cs["balance_limit"] = self.params.balance_k * target
        self.a.rng[:] = new_rng(setup.seed * 1000003 + self.lrank)
        self.a.prng[:] = new_rng(setup.seed * 7919 + self.lrank)
        self._k = {name: Bound(getattr(K, name)) for name in _K}
        self._local = threading.local()  # per worker thread: its Scratch
        self.batch = False                # the engine drives the core in batches (run_batch, take_outbox)
        self._log = False                 # record_parts: part logs for the trace
        self._stamps = False
        self._batch_sc = None
        self._qbuf = np.zeros(0, np.int64)
        self._qfront = np.zeros(0, np.int64)
        self._buf = np.empty(self.n_actions, np.int64)
        self.root_slot = 0
        self.root_hash = np.uint64(0)
        self.root_kept = 0  # root visits an earlier search on this table left and this one keeps (tree reuse)

    def _use(self, arrays: K.Arrays) -> None:
        """Work on these arrays from now on (new, or grown): Python reads them, the kernels get a Core."""
        self.a = arrays
        self.core = K.bind(arrays)

    # --- configuration the variants change (root, hybrid) --------------------------------------------------------
    @property
    def t(self):
        return self.a.t

    @property
    def dt(self):
        return self.a.dt

    @property
    def y(self):
        return self.a.y

    def _set(self, **fields) -> None:
        cs = self.a.cs[0]
        for k, v in fields.items():
            cs[k] = v

    @property
    def kernel_ranks(self) -> int:
        return int(self.a.cs[0]["kernel_ranks"])

    @property
    def chain(self) -> int:
        return int(self.a.cs[0]["chain"])

    @chain.setter
    def chain(self, v: int) -> None:
        self._set(chain=int(v))

    @property
    def target(self) -> int:
        return int(self.a.cs[0]["target"])

    @property
    def balance_limit(self) -> float:
        return float(self.a.cs[0]["balance_limit"])

    # --- the state, read (the invariants, the reports and tests look at it) ---------------------------------------
    def _cs(self, name: str) -> int:
        return int(self.a.cs[0][name])

    started = property(lambda self: self._cs("started"))
    done = property(lambda self: self._cs("done"))
    in_flight = property(lambda self: self._cs("in_flight"))
    reserved = property(lambda self: self._cs("reserved"))
    outstanding = property(lambda self: self._cs("outstanding"))
    moves_held = property(lambda self: self._cs("moves_held"))
    updates_running = property(lambda self: self._cs("updates_running"))
    stopped = property(lambda self: bool(self._cs("stopped")))
    dup_running = property(lambda self: bool(self._cs("dup_running")))
    held_updates = property(lambda self: self._cs("h_len"))

    @property
    def counts(self) -> dict:
        from collections import Counter

        return Counter({k: int(v) for k, v in zip(K.COUNTS, self.a.cnt.tolist())})

    def _by_kind(self, a: np.ndarray) -> dict:
        return {MESSAGE_KINDS[k]: int(v) for k, v in enumerate(a.tolist()) if v and k < len(MESSAGE_KINDS)}

    @property
    def sent(self) -> dict:
        from collections import Counter

        return Counter(self._by_kind(self.a.sent.sum(axis=0)))

    @property
    def received(self) -> dict:
        from collections import Counter

        return Counter(self._by_kind(self.a.received))

    def _replace_dup_table(self, dt) -> None:
        n = int(dt.ready.shape[0])
        self._use(self.a._replace(dt=dt, to_flush=np.zeros(n, np.int64), flush_mark=np.zeros(n, np.int64),
                                  jflush=np.zeros(n, np.int64)))

    def batchable(self) -> bool:
        """Whether the engine may run this rank's packages in batches (run_batch) rather than one by one."""
        return True

    def sync_pending(self, slot: int) -> None:
        """Ask for slot's duplication (as an update that found it due would; tests)."""
        c = self.a
        cs = c.cs[0]
        c.to_dup[int(cs["n_to_dup"])] = slot
        cs["n_to_dup"] += 1
        c.halt[1] = 1

    # --- growing the buffers (a kernel said NEED_ROOM) ------------------------------------------------------------
    def _grow(self) -> None:
        c = self.a
        cs = c.cs[0]
        what, size = int(cs["need"]), int(cs["need_size"])
        cs["need"] = K.N_NONE
        if what == K.N_SLOTS:
            self._use(_grow_slots(c, max(2 * len(c.sims), size + len(c.sims))))
        elif what == K.N_OUTBOX:
            ob = np.zeros((c.ob.shape[0], max(2 * c.ob.shape[1], c.ob.shape[1] + size)), np.uint8)
            ob[:, :c.ob.shape[1]] = c.ob
            self._use(c._replace(ob=ob))
        elif what == K.N_SROWS:
            self._use(c._replace(srows=np.zeros(max(2 * len(c.srows), size), c.srows.dtype)))
            self._k["kick"](self.core)
        elif what == K.N_ROWS_IN:
            n = max(2 * len(c.rows_in), size)
            rows = np.zeros(n, c.rows_in.dtype)
            rows[:len(c.rows_in)] = c.rows_in
            jrows = np.zeros(n, c.jrows.dtype)  # a queued sync job's rows wait here to be applied: kept too
            jrows[:len(c.jrows)] = c.jrows
            self._use(c._replace(rows_in=rows, jrows=jrows))
        elif what == K.N_RX:
            rx = np.zeros((2 * len(c.rx), c.rx.shape[1]), c.rx.dtype)
            rx[:len(c.rx)] = c.rx
            self._use(c._replace(rx=rx))
        else:
            raise RuntimeError(f"rank {self.rank}: a kernel asked for room in buffer {what}")

    def _call(self, name: str, *args) -> int:
        """Call a kernel on the core, growing what it asks for until it has run."""
        while True:
            r = self._k[name](self.core, *args)
            if r == K.NO_ROOT:
                raise RuntimeError("no room for the root in the transposition table")
            if self.a.cs[0]["need"] == K.N_NONE:
                if r == K.NEED_ROOM:
                    raise RuntimeError(f"rank {self.rank}: {name} wants room it did not name")
                return r
            self._grow()
            if r != K.NEED_ROOM:
                return r

    # --- the contract (one event at a time) ------------------------------------------------------------------------
    def _actions(self) -> Actions:
        """The packages the core queued and the messages it wrote, as the contract's objects (none in batch
        mode: the engine takes them from the core itself)."""
        out = Actions()
        if self.batch:
            return out
        c = self.a
        if len(self._qbuf) < len(c.q):
            self._qbuf = np.zeros(len(c.q), np.int64)
            self._qfront = np.zeros(len(c.q), np.int64)
        n = int(self._k["take_queue"](self.core, self._qbuf, self._qfront))
        if n:
            sims = c.sims
            for pkg, front in zip(self._qbuf[:n].tolist(), self._qfront[:n].tolist()):
                if pkg < 0:
                    out.pkgs.append(Package(SYNC, -1, pkg))
                else:
                    out.pkgs.append(Package(PKG_KINDS[int(sims[pkg]["kind"])], int(sims[pkg]["sim_id"]), pkg,
                                            bool(front)))
        for dst, data, _ in self.take_outbox():
            off = 0
            while off < len(data):
                rec = Record(data[off:])
                size = rec.nbytes
                rec = Record(data[off:off + size].copy())
                out.msgs.append(Message(rec.kind, self.rank, dst, rec, rec.sim_id))
                off += size
        return out

    def start(self) -> Actions:
        self._call("start", self._buf)
        c = self.a
        self.root_slot = int(c.cs[0]["root_slot"])
        self.root_hash = np.uint64(c.cs[0]["root_hash"])
        self.root_kept = int(self.t.visits[self.root_slot])
        return self._actions()

    def on_message(self, msg: Message) -> Actions:
        data = msg.record()
        if not data.flags.writeable or not data.flags.c_contiguous:
            data = data.copy()
        self._receive(data, len(data), False, msg.src)
        return self._actions()

    def _receive(self, buf: np.ndarray, n: int, log: bool, src: int = -1, t_send: float = 0.0) -> None:
        off = 0
        while True:
            r, off = self._k["receive"](self.core, buf, off, n, log, src, t_send)
            if r == K.OK:
                return
            if r < 0:
                self.refuse(r, n)
            self._grow()

    def refuse(self, r: int, n: int) -> None:
        """Raise the error of receive's negative answer r for a batch of n bytes."""
        if -1 - r < n:
            raise ValueError(f"search rank {self.rank}: a corrupt batch of {n} B (at byte {-1 - r})")
        raise ValueError(f"search rank {self.rank}: unexpected {MESSAGE_KINDS[-1 - n - r]} message")

    def _scratch(self) -> K.Scratch:
        sc = getattr(self._local, "sc", None)
        if sc is None or (len(sc.log_kind) > 0) != self._log:
            sc = self._local.sc = K.new_scratch(self.a, self.rave, log_capacity(self) if self._log else 0)
        return sc

    def execute(self, pkg: Package):
        sc = self._scratch()
        self._k["execute"](self.core, pkg.payload, sc)
        if pkg.payload >= 0:
            pkg.parts = self.a.parts[pkg.payload].copy()
            pkg.sim_id = int(self.a.sims[pkg.payload]["sim_id"])
        if self._log:
            m = int(sc.log_n[0])
            sims = sc.log_sim[:m].copy()
            kinds = sc.log_kind[:m].copy()
            if pkg.payload < 0:  # the sync job: one part of its own kind, not a PART_KINDS one
                pkg.parts = None
            else:
                pkg.log = (kinds, np.arange(m, dtype=np.int32), sc.log_t[:m + 1].copy() if self._stamps
                           else np.zeros(m + 1, np.int64), sims.tolist(), sc.log_steps[:m].copy())
        return None

    def on_work_done(self, pkg: Package, result) -> Actions:
        self._call("done", pkg.payload)
        return self._actions()

    def record_parts(self, on: bool, stamps: bool = False) -> None:
        """Log every part a package runs (kind, simulation; with stamps the cycle counter after each, which the
        engine places in time); the simulator charges and records the parts from the log."""
        from model.cycles import counting

        self._log = bool(on)
        self._stamps = bool(on and stamps and counting())

    def stop(self) -> Actions:
        self._k["stop"](self.core)
        return self._actions()

    def final_sync(self) -> Actions:
        self._call("final_sync")
        return self._actions()

    def idle(self) -> bool:
        return bool(self._k["idle"](self.core))

    def finished(self) -> bool:
        return bool(self.a.cs[0]["final_synced"]) and self.idle()

    # --- the engine's batches --------------------------------------------------------------------------------------
    def receive_batch(self, buf: np.ndarray, n: int, log: bool, src: int = -1, t_send: float = 0.0) -> None:
        """Take in the records of buf[:n] (a corrupt buffer is an error, not a crash)."""
        self._receive(buf, n, log, src, t_send)

    def batch_scratch(self, log: bool) -> K.Scratch:
        """The scratch of the batch runs (with a part log when logging; the core's batch log made once)."""
        sc = self._batch_sc
        if sc is None or (len(sc.log_kind) > 0) != log:
            sc = self._batch_sc = K.new_scratch(self.a, self.rave, log_capacity(self) if log else 0)
        if log and len(self.a.log_kind) == 0:
            self._use(self.a._replace(log_kind=np.zeros(LOG_PARTS, np.int8), log_sim=np.zeros(LOG_PARTS, np.int64),
                                      log_t0=np.zeros(LOG_PARTS, np.int64), log_t1=np.zeros(LOG_PARTS, np.int64),
                                      log_steps=np.zeros(LOG_PARTS, np.int64)))
        return sc

    def run_batch(self, max_cycles: int, log: bool) -> None:
        """Run queued packages for up to max_cycles cycle-counter ticks (the IO thread's slice)."""
        self._call("run", self.batch_scratch(log), max_cycles, log)

    def grow(self) -> None:
        """Grow what a kernel said it needs (cs.need), so that it can be called again."""
        if self.a.cs[0]["need"] != K.N_NONE:
            self._grow()

    def queued(self) -> int:
        """Packages run_batch has to run: the queue's, and one that ran but waits for room to be done."""
        cs = self.a.cs[0]
        return int(cs["q_len"]) + (1 if cs["pend"] else 0)

    def take_outbox(self):
        """[(dst, records, count)] written since the last call (views, valid until the next kernel call)."""
        c = self.a
        out = []
        for dst in np.flatnonzero(c.ob_used).tolist():
            n = int(c.ob_used[dst])
            out.append((dst, c.ob[dst, :n], int(c.ob_count[dst])))
            c.ob_used[dst] = 0
            c.ob_count[dst] = 0
        return out

    def sent_counts(self) -> list[tuple[int, str, int, int]]:
        """(dst, kind, messages, bytes) sent so far."""
        c = self.a
        return [(int(d), MESSAGE_KINDS[int(k)], int(c.sent[d, k]), int(c.sent_bytes[d, k]))
                for d, k in zip(*np.nonzero(c.sent))]

    def take_logs(self, parts: bool = True, rx: bool = True):
        """(parts run: kind codes, sims, t0, t1 cycle stamps, tree steps; records received: core.Arrays.rx
        rows) since the last call, of what is asked for."""
        c = self.a
        cs = c.cs[0]
        p = r = None
        if parts:
            n = int(cs["log_n"])
            p = (c.log_kind[:n].copy(), c.log_sim[:n].copy(), c.log_t0[:n].copy(), c.log_t1[:n].copy(),
                 c.log_steps[:n].copy())
            cs["log_n"] = 0
        if rx:
            m = int(cs["rx_n"])
            r = c.rx[:m].copy()
            cs["rx_n"] = 0
        return p, r

    # --- reporting ------------------------------------------------------------------------------------------------
    def holds_root(self) -> bool:
        """Whether this rank's root statistics are the search's (the root is shared, or owned here)."""
        return (self.M == 1 or self.dt.row_of[self.root_slot] >= 0
                or owner(self.root_hash, self.M, self.local_slots) == self.lrank)

    def root_stats(self) -> dict:
        """The root as this rank sees it: visits, and per child move, visits, value (for the player to move)."""
        t, s = self.t, self.root_slot
        nc = max(int(t.n_children[s]), 0)
        return {
            "visits": int(t.visits[s]), "value": float(t.value[s]),
            "moves": t.child_move[s, :nc].astype(int).tolist(),
            "child_visits": t.child_visits[s, :nc].astype(int).tolist(),
            "child_value": t.child_value[s, :nc].astype(float).tolist(),
        }

    def best_move(self) -> int:
        t, s = self.t, self.root_slot
        nc = int(t.n_children[s])
        if nc <= 0:
            return -1
        return int(t.child_move[s, int(np.argmax(t.child_visits[s, :nc]))])

    def sims_done(self) -> int:
        return int(self.a.cs[0]["done"])

    def stats(self) -> RoleStats:
        cs = self.a.cs[0]
        st = RoleStats(sims_started=int(cs["started"]), sims_done=self.sims_done(),
                       playouts=int(self.a.cnt[K.C_PLAYOUTS]), nodes_stored=current_nodes(self.t),
                       nodes_duplicated=int(self.dt.meta[D_ROWS]), queue_len=int(cs["outstanding"]),
                       moves_held=int(cs["moves_held"]), messages_sent=dict(self.sent),
                       messages_received=dict(self.received))
        st.extra = dict(self.counts)
        st.extra["dup_refused"] = int(self.dt.meta[D_REFUSED])
        st.extra["dup_dropped"] = int(self.dt.meta[D_DROPPED])
        return st

    def report(self) -> dict:
        d = self.stats().as_dict()
        if self.holds_root():
            d["root"] = self.root_stats()
            d["best_move"] = self.best_move()
        return d


def _mask(*kinds: str) -> int:
    """The set of message kinds a role takes (a bit per kind code)."""
    return sum(1 << CODE[k] for k in set(kinds))


def log_capacity(role: TreesplitSearch) -> int:
    """Part-log entries one package may need: a chain of simulations, each at most 1 + e selects for
    e <= max_depth + 1 expansions, one playout and one update."""
    return max(1, role.chain) * (2 * role.max_depth + 5) + 1



def _grow_slots(c: K.Core, P: int) -> K.Core:
    """The core with P simulation slots (the old ones kept, the queue and the held ring in order)."""
    old = len(c.sims)
    cs = c.cs[0]

    def bigger(a):
        b = np.zeros((P,) + a.shape[1:], a.dtype)
        b[:old] = a
        return b

    q = np.zeros(P + 1, np.int64)
    ql, qh = int(cs["q_len"]), int(cs["q_head"])
    q[:ql] = [int(c.q[(qh + i) % len(c.q)]) for i in range(ql)]
    held = np.zeros(P, np.int64)
    hl, hh = int(cs["h_len"]), int(cs["h_head"])
    held[:hl] = [int(c.held[(hh + i) % len(c.held)]) for i in range(hl)]
    nf = int(cs["n_free"])
    free = np.zeros(P, np.int64)
    free[:nf] = c.free[:nf]
    free[nf:nf + P - old] = np.arange(P - 1, old - 1, -1)
    cs["n_free"] = nf + P - old
    cs["q_head"] = 0
    cs["h_head"] = 0
    D = c.steps.shape[1]
    to_dup = np.zeros(P * D + 1, np.int64)
    to_dup[:len(c.to_dup)] = c.to_dup
    return c._replace(**{f: bigger(getattr(c, f)) for f in K.PER_SLOT}, free=free, q=q, held=held, to_dup=to_dup,
                      jdup=np.zeros(P * D + 1, np.int64))

