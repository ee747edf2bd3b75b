"""The statistical fidelity: the same cluster model, one event per simulation, for fast sweeps at scale.

Nothing here runs a role. What a simulation does comes from a Workload (sim/workload.py): how many in-tree
steps land on nodes that are not duplicated (each owned by a rank drawn uniformly, since ownership by hash
is uniform, except the shares of the first steps that go to a few hot nodes, workload.hot_steps), whether
it expands, how many synchronisations it triggers. Costs and sizes come from the same machine profile and
the network is the same LogGP model with a NIC per node.

When a simulation starts, its whole path is booked at once on capacity timelines (sim/timeline.py): each
rank's C-1 workers, each IO core and each node's NIC (send and receive side) is a pool whose used capacity
is kept per time bin, so work can be booked ahead and out of order. A simulation's select steps, hops
(MOVE), expansion, playout (forwarded as PLAYOUT_FWD when more than K S_par/M MOVEs wait at the rank,
seed 000 4.2.5: its recent MOVE rate times the time the simulation spent there), UPDATEs and the
origin's final update are booked in order; the only event is its end, which starts the next simulation
of its origin rank (S_par stays constant).

The IO core: a message waits for the loop to notice it (a random phase of an iteration) and for the
iteration that handles it, whose length is poll_base + poll_per_peer * peers stretched by the IO core's
recent load; its handling (LogGP o, dispatch, bytes, statistics intake) is booked on the IO core's pool.
Polling costs latency, not capacity: a busy loop shares one poll among all the messages it handles.
With io.idle_nap, input that finds the IO core idle (with the probability its recent load leaves) first
waits for the end of the nap it is in, a uniform part of idle_nap, as sim/runtime.py's napping core does.

Broadcast ranks collect SYNCs per window of bcast_delay (by arrival time), merge them per node and
broadcast origin/dimension, and at each window's end book one `bcast` package and send BCAST to their
peers (model/topology.py) and one SYNC per client; a search rank takes the rows in (IO intake) and applies
them in a `sync` package.

At large scale, `bundle` G > 1 makes each modelled simulation stand for G that take the same path side by
side (G packages at once on a rank's workers, G messages on a link): G times fewer simulations to model,
at the price of burstier load. Counts and rates are those of all G.

Algorithms: treesplit (the root is duplicated, so the first step is at the origin), tds (nothing
duplicated; the root's owner is rank 0), root (whole simulations at their origin; MERGE to every rank each
merge_every simulations), leaf (rank 0 selects and updates; JOB/RESULT to the other ranks round robin),
hybrid (StatWorld only: G groups, each treesplit on its own search ranks and broadcast network, and root's
MERGE to every search rank of the other groups each merge_every simulations).

Two implementations of that model: StatWorld runs it in one numba kernel (sim/statistical_kernel.py), a
chunk of simulated time per call; ReferenceStatWorld is the same model in plain Python, one event at a
time, kept as the readable specification the kernel is tested against (tests/test_sim_statistical_kernel.py).
They draw from different random streams, so they agree to within noise, not bit for bit.
"""

from __future__ import annotations

import heapq
import random
import time
from typing import Callable, NamedTuple

import numpy as np
from numba.typed import List

from sim import statistical_kernel as K
from sim.distributions import Sampler
from sim.profile import Profile
from sim.runtime import Cluster, RunResult, TraceSink
from sim.timeline import Pool
from sim.statistical_kernel import LOAD_WINDOW, NIC_BOOK
from sim.workload import Workload, hot_rank

ALGOS = ("treesplit", "tds", "root", "leaf", "hybrid")  # StatWorld's; ReferenceStatWorld has the first four


def hot_tables(workload: Workload, seed: int, ranks: int) -> list[tuple[list[float], list[int]]]:
    """Per remote step with hot nodes: their cumulative shares and their ranks among `ranks` (by hash)."""
    return [(np.cumsum(shares).tolist(), [hot_rank(seed, k, j, ranks) for j in range(len(shares))])
            for k, shares in enumerate(workload.hot_steps)]


class _Rank:
    __slots__ = ("rid", "node", "workers", "io", "loop", "iter", "lam", "n_msgs", "poll", "iters", "mark_work",
                 "mark_msgs", "msgs_out", "bytes_out", "msgs_in", "pkgs", "sims_done", "playouts", "nodes",
                 "sims_started", "sync_acc", "done_local", "rr", "windows", "merged", "busy_mark", "idle_p",
                 "moves_in", "mark_moves", "move_lam")

    def __init__(self, rid: int, node: int, workers: int, loop: float, h: float, h_workers: float):
        self.rid, self.node = rid, node
        self.workers = Pool(workers, h_workers) if workers else None
        self.io = Pool(1, h)
        self.loop = loop          # one loop iteration with nothing to handle
        self.iter = loop          # current iteration length (stretched by load)
        self.lam = 0.0            # recent messages per second through the IO core
        self.idle_p = 1.0         # recent fraction of time the IO core had nothing to do (napping, with idle_nap)
        self.n_msgs = 0
        self.poll = 0.0           # IO time spent polling in iterations that handled something
        self.iters = 0.0          # such iterations
        self.mark_work = 0.0
        self.mark_msgs = 0
        self.msgs_out: dict[str, int] = {}
        self.bytes_out = 0
        self.msgs_in = 0
        self.pkgs: dict[str, int] = {}
        self.sims_done = self.playouts = self.nodes = self.sims_started = 0
        self.sync_acc = 0.0
        self.done_local = 0
        self.rr = 0
        self.windows: dict[int, list] = {}  # broadcast rank: window -> [fwd {(origin, dim): nodes}, deliver]
        self.merged = 0
        self.busy_mark = 0.0
        self.moves_in = self.mark_moves = 0  # MOVEs received, and the count at the last load estimate
        self.move_lam = 0.0                  # recent MOVEs per second received


class ReferenceStatWorld:
    """The statistical fidelity in plain Python, event by event (the specification StatWorld's kernel
    follows); run() gives the same RunResult as sim.runtime.World."""

    def __init__(self, algo: str, profile: Profile, cluster: Cluster, layout, workload: Workload, params,
                 seed: int = 0, trace_writer=None, sample_rate: float = 1.0, sample_interval: float = 0.01,
                 bin_width: float = 10e-6, worker_bin_width: float = 100e-6, bundle: int = 1):
        if algo not in ALGOS[:4]:
            raise ValueError(algo)
        self.algo, self.profile, self.cluster, self.layout, self.workload = algo, profile, cluster, layout, workload
        self.params = params
        M, B = cluster.M, cluster.B
        self.M, self.B = M, B
        W = profile.node.workers_per_rank
        self.workers_per_rank = W
        self.rng = random.Random(seed)
        self.samplers = {k: Sampler(d, np.random.default_rng([seed, i]))
                         for i, (k, d) in enumerate(sorted(profile.costs.items()))}
        self.remote = Sampler(workload.remote_steps, np.random.default_rng([seed, 99]))
        self.hot = hot_tables(workload, seed, M)
        self.trace = TraceSink(trace_writer, sample_rate) if trace_writer is not None else None
        self.sample_interval = sample_interval
        topo = None
        if B:
            from model.topology import Topology

            topo = Topology(B, layout.peers)
        self.topo = topo
        self._fw: dict[tuple[int, int, int], list] = {}  # the topology's routing, which never changes
        self._slots: dict[int, list[float]] = {}
        io = profile.io
        node_of = cluster.node_of()
        self.node_of = node_of
        self.ranks: list[_Rank] = []
        for r in range(M + B):
            if r < M:
                peers = (M - 1) + (1 if B else 0)
                self.ranks.append(_Rank(r, node_of[r], W, io.loop_time(peers), bin_width, worker_bin_width))
            else:
                peers = len(topo.in_peers(r - M)) + len(layout.clients(r))
                self.ranks.append(_Rank(r, node_of[r], 0, io.loop_time(peers), bin_width, worker_bin_width))
        n_nodes = max(node_of) + 1
        self.nic_tx = [Pool(1, bin_width) for _ in range(n_nodes)]
        self.nic_rx = [Pool(1, bin_width) for _ in range(n_nodes)]
        self.clients = {r: layout.clients(r) for r in range(M, M + B)}
        self.partner = [layout.partner(r) if B else -1 for r in range(M)]
        # bundle G: each modelled simulation stands for G that take the same path side by side (G packages
        # on G workers, G messages on the same link); counts are G times the modelled ones
        self.G = G = max(1, int(bundle))
        self.s_par = max(1, round(max(W, 1) * M * params.overload / G))
        self.per_rank = max(1, round(self.s_par / M))
        self.forward = (getattr(params, "forward_playouts", True) and M > 1 and W > 0
                        and algo in ("treesplit", "tds"))
        self.per_package = io.per_package  # the role's bookkeeping after each package, on the same core
        # S_par/M = W * overload simulations per rank; a rank where K times that many MOVEs wait is
        # overloaded (4.2.5): forward its playouts (model/roles/treesplit.py's balance_limit)
        self.forward_held = getattr(params, "balance_k", 1.2) * params.overload * max(W, 1)
        self.bcast_delay = max(1e-6, float(getattr(params, "bcast_delay", 1e-3)))
        self.merge_every = int(getattr(params, "merge_every", 256))
        self.merge_depth = int(getattr(params, "merge_depth", 1))
        m = profile.message_bytes
        self.b = {k: m(k) for k in ("MOVE", "UPDATE", "SYNC", "BCAST", "PLAYOUT_FWD", "JOB", "RESULT", "MERGE")}
        net = profile.network
        self._o, self._pm, self._pb, self._spb = net.overhead, io.per_message, io.per_byte, io.stats_per_byte
        self._L, self._g, self._G, self._eager = net.latency, net.gap, net.gap_per_byte, net.eager_threshold
        self._shmL, self._shmG = net.shm_latency, net.shm_gap_per_byte
        self.via_io = io.handles_completions
        self._nap = io.idle_nap
        self._opm = self._o + self._pm
        self.events: list = []
        self.seq = 0
        self.n_events = 0
        self.now = 0.0
        self.next_sim = 0
        self._started = False

    # --- events ------------------------------------------------------------------------------------------
    def at(self, t: float, fn: Callable, *args) -> None:
        self.seq += 1
        heapq.heappush(self.events, (t, self.seq, fn, args))

    # --- booking -----------------------------------------------------------------------------------------
    def work(self, r: _Rank, t: float, cost: float, kind: str, sim_id: int) -> float:
        """A package on r's workers (or, on a broadcast rank, its only core); returns its end."""
        G = self.G if sim_id >= 0 else 1
        cost += self.per_package
        if r.workers is not None:
            start, end = r.workers.book(t, cost * G, G)
        else:
            start, end = r.io.book(t, cost)
        r.pkgs[kind] = r.pkgs.get(kind, 0) + G
        tr = self.trace
        if tr is not None and tr.keep(sim_id):
            for j in range(G):
                tr.w.package(start, end, r.rid, self._slot(r, start, end), kind, sim_id * G + j if sim_id >= 0 else -1)
        if self.via_io and r.workers:
            end = self._io(r, end, self._pm * G)  # the engine: a finished package goes back through the IO core
        return end

    def _slot(self, r: _Rank, start: float, end: float) -> int:
        """A worker number for the trace: the first whose last package ended by `start` (the pools have
        no worker identity; this keeps a trace's per-worker rows from overlapping as far as it can)."""
        ends = self._slots.get(r.rid)
        if ends is None:
            ends = self._slots[r.rid] = [0.0] * max(1, self.workers_per_rank if r.workers else 1)
        best = 0
        for i, e in enumerate(ends):
            if e <= start + 1e-12:
                best = i
                break
            if e < ends[best]:
                best = i
        ends[best] = end
        return best if r.workers else -1

    def _io(self, r: _Rank, t: float, cost: float) -> float:
        """Input reaches r's IO core at t; it is noticed in the running iteration and handled in the next."""
        it = r.iter
        rnd = self.rng.random
        if self._nap > 0.0 and rnd() < r.idle_p:
            # an idle IO core naps and is not woken by arrivals (sim/runtime.py): it sees the input at the end
            # of the nap it is in, then handles it in the next iteration
            t += rnd() * self._nap
        _, done = r.io.book(t + rnd() * it, cost)
        r.n_msgs += 1
        # one poll per busy iteration, shared by the k messages such an iteration handles
        k = r.lam * it
        if k < 1.0:
            k = 1.0
        r.iters += 1.0 / k
        r.poll += r.loop / k
        return done + it

    def msg(self, r: _Rank, t: float, dst: int, kind: str, nbytes: int, sim_id: int = -1,
            stats: bool = False, count: int = 1) -> float:
        """r's worker hands a message to r's IO core at t; returns when dst's IO core has handled it.
        count > 1: that many messages on the same link at once, of nbytes in all (a broadcast window)."""
        if sim_id >= 0 and self.G > 1:
            count *= self.G
            nbytes *= self.G
        pb = self._pb
        base = self._opm * count
        t_send = self._io(r, t, base + nbytes * pb)
        a, b = r.node, self.node_of[dst]
        if a == b:
            t_arr = t_send + self._shmL + nbytes * self._shmG
        else:
            if nbytes > self._eager:
                t_send += 2.0 * (self._L + 2.0 * self._o)
            ser = nbytes * self._G
            if ser < NIC_BOOK:
                # a small message occupies the NIC for far less than anything else takes: uncontended
                t_arr = t_send + self._L + ser
            else:
                occ = ser if ser > self._g else self._g
                inject, _ = self.nic_tx[a].book(t_send, occ)
                at_rx, _ = self.nic_rx[b].book(inject + self._L, occ)
                t_arr = at_rx + ser
        r.msgs_out[kind] = r.msgs_out.get(kind, 0) + count
        r.bytes_out += nbytes
        tr = self.trace
        if tr is not None and tr.keep_msg(sim_id):
            for j in range(count):
                tr.w.message(t_send, t_arr, r.rid, dst, kind, nbytes // count,
                             sim_id * self.G + j % self.G if sim_id >= 0 else -1)
        d = self.ranks[dst]
        d.msgs_in += count
        if kind == "MOVE":
            d.moves_in += count
        return self._io(d, t_arr, base + nbytes * (pb + (self._spb if stats else 0.0)))

    # --- simulations -------------------------------------------------------------------------------------
    def start_sim(self, origin: int) -> None:
        r = self.ranks[origin]
        sid = self.next_sim
        self.next_sim += 1
        r.sims_started += 1
        t = self.now
        if self.algo in ("treesplit", "tds"):
            self._treesplit_sim(r, t, sid)
        elif self.algo == "root":
            self._root_sim(r, t, sid)
        else:
            self._leaf_sim(r, t, sid)

    def _treesplit_sim(self, origin: _Rank, t: float, sid: int) -> None:
        M = self.M
        rnd = self.rng.random
        s = self.samplers
        ranks = self.ranks
        cur = origin.rid if self.algo == "treesplit" else 0
        plan = [cur]
        steps = {cur}
        for step in range(int(self.remote.next() + 0.5)):
            nxt = self._step_rank(step)
            if nxt != cur:
                plan.append(nxt)
                cur = nxt
            steps.add(nxt)
        steps.add(origin.rid)  # the origin hears the result: it counts the simulation done
        r = origin
        if plan[0] != origin.rid:
            t = self.msg(origin, t, plan[0], "MOVE", self.b["MOVE"], sid)
            r = ranks[plan[0]]
        last = len(plan) - 1
        t_here = t
        for k, rid in enumerate(plan):
            if k:
                t = self.msg(r, t, rid, "MOVE", self.b["MOVE"], sid)
                r = ranks[rid]
            t_here = t
            t = self.work(r, t, s["select"].next(), "select", sid)
            if k < last:
                continue
            if rnd() < self.workload.expands_per_sim:
                t = self.work(r, t, s["expand"].next(), "expand", sid)
        # forward while more than K S_par/M MOVEs wait here (Little's law: MOVE rate x time spent here)
        if self.forward and r.move_lam * (t - t_here) > self.forward_held:
            dst = int(rnd() * (M - 1))
            dst += dst >= r.rid
            t = self.msg(r, t, dst, "PLAYOUT_FWD", self.b["PLAYOUT_FWD"], sid)
            r = ranks[dst]
        t = self.work(r, t, s["playout"].next(), "playout", sid)
        r.playouts += self.G
        t_done = t
        for d in steps:
            if d == r.rid:
                end = self.work(r, t, s["update"].next(), "update", sid)
            else:
                t_in = self.msg(r, t, d, "UPDATE", self.b["UPDATE"], sid)
                end = self.work(ranks[d], t_in, s["update"].next(), "update", sid)
            if d == origin.rid:
                t_done = end
        self.at(t_done, self._sim_done, origin)

    def _step_rank(self, step: int) -> int:
        """The rank of a simulation's remote step `step`: one of that step's hot nodes', else uniform."""
        u = self.rng.random()
        if step < len(self.hot):
            cum, ranks = self.hot[step]
            for c, r in zip(cum, ranks):
                if u < c:
                    return r
            if cum:
                u = (u - cum[-1]) / (1.0 - cum[-1]) if cum[-1] < 1.0 else 0.0
        return int(u * self.M)

    def _sim_done(self, r: _Rank) -> None:
        t = self.now
        G = self.G
        r.sims_done += G
        w = self.workload
        n = w.nodes_per_sim * G
        r.nodes += int(n) + (1 if self.rng.random() < n - int(n) else 0)
        r.sync_acc += w.syncs_per_sim * G
        if r.sync_acc >= 1.0:
            k = int(r.sync_acc)
            r.sync_acc -= k
            self._send_syncs(r, t, k)
        self.start_sim(r.rid)

    def _dup_node(self) -> int:
        u = self.rng.random()  # a few near-root nodes take most synchronisations
        return int(self.workload.dup_nodes * u * u)

    def _send_syncs(self, r: _Rank, t: float, k: int) -> None:
        """k shared nodes reached their sync threshold: a sync package, then one SYNC with their rows."""
        end = self.work(r, t, self.samplers["sync"].next(), "sync", -1)
        nodes = [self._dup_node() for _ in range(k)]
        nb = self.b["SYNC"] * k
        if self.B:
            dst = self.partner[r.rid]
            t_in = self.msg(r, end, dst, "SYNC", nb, stats=True)
            self._register(self.ranks[dst], t_in, nodes, dst - self.M, self.topo.n)
        else:
            for d in range(self.M):
                if d != r.rid:
                    t_in = self.msg(r, end, d, "SYNC", nb, stats=True)
                    self.work(self.ranks[d], t_in, self.samplers["sync"].next(), "sync", -1)

    def _register(self, br: _Rank, t: float, nodes, origin: int, dim: int) -> None:
        """Rows reach a broadcast rank at t: they wait in the window that ends after t."""
        w = int(t / self.bcast_delay)
        win = br.windows.get(w)
        if win is None:
            win = br.windows[w] = [{}, set()]
        if self._forwards(origin, br.rid - self.M, dim):
            win[0].setdefault((origin, dim), set()).update(nodes)
        before = len(win[1])
        win[1].update(nodes)
        br.merged += before + len(nodes) - len(win[1])

    def _flush(self, rid: int) -> None:
        """The end of a broadcast rank's window: merge, then forward to peers and deliver to clients."""
        br = self.ranks[rid]
        t = self.now
        w = int(round(t / self.bcast_delay)) - 1
        self.at(t + self.bcast_delay, self._flush, rid)
        win = br.windows.pop(w, None)
        if win is None:
            return
        fwd, deliver = win
        end = self.work(br, t, self.samplers["bcast"].next(), "bcast", -1)
        b = rid - self.M
        # one BCAST per (origin, dimension) and next rank, as the role sends them; booked per link
        links: dict[int, list] = {}
        for (origin, dim), nodes in fwd.items():
            for dst, d in self._forwards(origin, b, dim):
                links.setdefault(dst, []).append((nodes, origin, d))
        per_node = self.b["BCAST"]
        for dst, items in links.items():
            nb = per_node * sum(len(x[0]) for x in items)
            t_in = self.msg(br, end, self.M + dst, "BCAST", nb, stats=True, count=len(items))
            peer = self.ranks[self.M + dst]
            for nodes, origin, d in items:
                self._register(peer, t_in, nodes, origin, d)
        if deliver:
            nb = self.b["SYNC"] * len(deliver)
            for c in self.clients[rid]:
                t_in = self.msg(br, end, c, "SYNC", nb, stats=True)
                self.work(self.ranks[c], t_in, self.samplers["sync"].next(), "sync", -1)

    def _forwards(self, origin: int, at: int, dim: int) -> list:
        key = (origin, at, dim)
        f = self._fw.get(key)
        if f is None:
            f = self._fw[key] = self.topo.forwards(origin, at, dim)
        return f

    def _root_sim(self, r: _Rank, t: float, sid: int) -> None:
        s = self.samplers
        t = self.work(r, t, s["select"].next(), "select", sid)
        if self.rng.random() < self.workload.expands_per_sim:
            t = self.work(r, t, s["expand"].next(), "expand", sid)
        t = self.work(r, t, s["playout"].next(), "playout", sid)
        r.playouts += self.G
        t = self.work(r, t, s["update"].next(), "update", sid)
        self.at(t, self._root_done, r)

    def _root_done(self, r: _Rank) -> None:
        G = self.G
        r.sims_done += G
        r.nodes += G
        before = r.done_local
        r.done_local += G
        if self.M > 1 and r.done_local // self.merge_every > before // self.merge_every:
            nb = self.b["MERGE"] * self.merge_depth
            for d in range(self.M):
                if d != r.rid:
                    t_in = self.msg(r, self.now, d, "MERGE", nb, stats=True)
                    self.work(self.ranks[d], t_in, self.samplers["sync"].next(), "sync", -1)
        self.start_sim(r.rid)

    def _leaf_sim(self, master: _Rank, t: float, sid: int) -> None:
        s = self.samplers
        t = self.work(master, t, s["select"].next(), "select", sid)
        if self.rng.random() < self.workload.expands_per_sim:
            t = self.work(master, t, s["expand"].next(), "expand", sid)
        if self.M == 1:
            t = self.work(master, t, s["playout"].next(), "playout", sid)
            master.playouts += self.G
        else:
            master.rr = master.rr % (self.M - 1) + 1
            wr = self.ranks[master.rr]
            t = self.msg(master, t, wr.rid, "JOB", self.b["JOB"], sid)
            t = self.work(wr, t, s["playout"].next(), "playout", sid)
            wr.playouts += self.G
            t = self.msg(wr, t, 0, "RESULT", self.b["RESULT"], sid)
        t = self.work(master, t, s["update"].next(), "update", sid)
        self.at(t, self._leaf_done, master)

    def _leaf_done(self, r: _Rank) -> None:
        r.sims_done += self.G
        r.nodes += self.G
        self.start_sim(0)

    # --- upkeep ------------------------------------------------------------------------------------------
    def _load(self) -> None:
        """Re-estimate each IO core's load: the loop stretches as its handling work nears the whole core."""
        t = self.now
        self.at(t + LOAD_WINDOW, self._load)
        for r in self.ranks:
            work = r.io.booked
            rho = min(0.95, (work - r.mark_work) / LOAD_WINDOW)
            r.lam = (r.n_msgs - r.mark_msgs) / LOAD_WINDOW
            r.mark_work, r.mark_msgs = work, r.n_msgs
            r.move_lam = (r.moves_in - r.mark_moves) / LOAD_WINDOW
            r.mark_moves = r.moves_in
            r.iter = r.loop / (1.0 - rho)
            # busy: handling (rho) or polling in iterations that handle something (lam of them, shared)
            r.idle_p = max(0.0, 1.0 - rho - r.lam * r.loop)
            r.io.trim(t)
            if r.workers:
                r.workers.trim(t)
        for p in self.nic_tx + self.nic_rx:
            p.trim(t)

    def _sample(self) -> None:
        t = self.now
        w = self.trace.w
        dt = self.sample_interval
        for r in self.ranks:
            pool = r.workers or r.io
            b = pool.used_until(t)
            busy = (b - r.busy_mark) / ((pool.cap / pool.h) * dt)
            r.busy_mark = b
            backlog = max(0.0, pool.book(t, 0.0)[0] - t)  # how far ahead the pool is booked
            qlen = int(backlog / max(self.samplers["select"].dist.mean, 1e-9))
            w.sample(t, r.rid, qlen, min(1.0, max(0.0, busy)), r.sims_done, r.playouts, r.nodes,
                     self.workload.dup_nodes if (self.algo == "treesplit" and r.rid < self.M) else 0)
        self.at(t + dt, self._sample)

    def _start(self) -> None:
        if self.algo == "leaf":
            for _ in range(self.s_par):
                self.at(0.0, self.start_sim, 0)
        else:
            for r in range(self.M):
                for _ in range(self.per_rank):
                    self.at(0.0, self.start_sim, r)
        for rid in range(self.M, self.M + self.B):
            self.at(self.bcast_delay, self._flush, rid)
        self.at(LOAD_WINDOW, self._load)
        if self.trace is not None:
            self.at(self.sample_interval, self._sample)
        self._started = True

    def counters(self) -> list[tuple]:
        return [(r.sims_done, r.playouts, r.nodes, 0) for r in self.ranks]

    def stats_snapshot(self) -> list[dict]:
        t = self.now
        out = []
        for r in self.ranks:
            io_used = r.io.used_until(t)
            busy = r.workers.used_until(t) if r.workers else io_used
            if r.workers and self.per_package:  # bookkeeping is not busy (the engine's clock stops first)
                busy = max(0.0, busy - self.per_package * sum(r.pkgs.values()))
            out.append({"msgs_out": dict(r.msgs_out), "bytes_out": r.bytes_out, "msgs_in": r.msgs_in,
                        "busy": busy, "io_busy": io_used + r.poll, "io_loops": r.iters,
                        "io_loop_time": io_used + r.poll, "pkgs": dict(r.pkgs)})
        return out

    def _run_until(self, t_end: float) -> None:
        ev = self.events
        pop = heapq.heappop
        n = 0
        while ev and ev[0][0] <= t_end:
            t, _, fn, args = pop(ev)
            self.now = t
            fn(*args)
            n += 1
        self.n_events += n
        self.now = t_end

    def _finish(self) -> None:
        pass  # its trace rows are written as they happen

    def run(self, seconds: float, warmup: float = 0.0, progress: Callable[[float], None] | None = None,
            chunks: int = 100) -> RunResult:
        return run_chunked(self, seconds, warmup, progress, chunks)


class _RankView(NamedTuple):
    loop: float  # one IO-loop iteration with nothing to handle (sim/simulate.py reads it for the summary)


class StatWorld:
    """A cluster simulated by the statistical fidelity on the numba kernels (sim/statistical_kernel.py);
    run() gives the same RunResult as sim.runtime.World. Same arguments as ReferenceStatWorld."""

    RING = 256              # bins per pool to start with; the kernel doubles a pool's when it must
    WINDOWS = 16            # broadcast windows per broadcast rank to start with; doubled likewise
    TRACE_ROWS = 1 << 17    # trace rows buffered in the kernel before they go to the writer
    TRACE_MARGIN = 1 << 15  # rows one event may write at most (a broadcast window to every peer)

    def __init__(self, algo: str, profile: Profile, cluster: Cluster, layout, workload: Workload, params,
                 seed: int = 0, trace_writer=None, sample_rate: float = 1.0, sample_interval: float = 0.01,
                 bin_width: float = 10e-6, worker_bin_width: float = 100e-6, bundle: int = 1):
        from model.rng import new_rng

        if algo not in ALGOS:
            raise ValueError(algo)
        self.algo, self.profile, self.cluster, self.layout, self.workload = algo, profile, cluster, layout, workload
        M, B = cluster.M, cluster.B
        self.M, self.B = M, B
        W = profile.node.workers_per_rank
        self.workers_per_rank = W
        R = M + B
        io = profile.io
        # groups of search ranks that root parallelisation joins: hybrid's G treesplit groups, each with a
        # broadcast network of its own; root's M groups of one rank; else one group
        groups = M if algo == "root" else 1
        partner = [layout.partner(r) for r in range(M)] if B else []
        clients = [layout.clients(M + b) for b in range(B)]
        if algo == "hybrid":
            from model.roles.hybrid import Groups

            hg = Groups(layout, params.groups)  # ConfigError if the groups do not divide the ranks
            groups = hg.G
            if B:
                partner = [hg.glob(hg.group(r), hg.inner.partner(hg.local(r))) for r in range(M)]
                clients = [[hg.glob(hg.group(M + b), c) for c in hg.inner.clients(hg.local(M + b))] for b in range(B)]
        Mg, Bg = M // groups, B // groups
        topo = None
        if B:
            from model.topology import Topology

            topo = Topology(Bg, layout.peers)
        loops = [io.loop_time((M - 1) + (1 if B else 0)) for _ in range(M)]
        loops += [io.loop_time(len(topo.in_peers(b % Bg)) + len(clients[b])) for b in range(B)]
        self.ranks = [_RankView(x) for x in loops]
        node_of = cluster.node_of()
        N = max(node_of) + 1
        G = max(1, int(bundle))
        self.G = G
        self.s_par = max(1, round(max(W, 1) * M * params.overload / G))
        self.per_rank = max(1, round(self.s_par / M))
        forward = (getattr(params, "forward_playouts", True) and Mg > 1 and W > 0
                   and algo in ("treesplit", "tds", "hybrid"))
        c = profile.costs
        self._select_mean = c["select"].mean
        dists = [c[k] for k in K.PKG_KINDS] + [workload.remote_steps]
        Q = max([len(d.quantiles) for d in dists] + [2])
        Bx = max(B, 1)
        rows = self.TRACE_ROWS if trace_writer is not None else 1
        self._margin = self.TRACE_MARGIN if trace_writer is not None else 0
        P = 2 * R + 2 * N  # IO cores, workers, sending NICs, receiving NICs
        heap = max(self.s_par, self.per_rank * M) + B + 8
        nw = (workload.dup_nodes + 63) // 64
        self._dims = {"P": P, "R": R, "Wm": max(W, 1), "Q": Q, "heap": heap, "rows": rows, "M": max(M, 1), "B": B,
                      "cl": max(1, sum(len(x) for x in clients)), "Bx": Bx, "nw": nw,
                      "hk": max(1, len(workload.hot_steps)), "hw": max([1] + [len(x) for x in workload.hot_steps])}
        self.F, self.I, self.U = K.allocate(self._shapes())
        F, I, U, v = self.F, self.I, self.U, self._views()
        I[K.H_NW], I[K.H_BX], I[K.H_Q], I[K.H_HEAP], I[K.H_ROWS], I[K.H_WM] = nw, Bx, Q, heap, rows, max(W, 1)
        self.UL, self.NL, self.WU, self.WI = List(), List(), List(), List()
        for _ in range(P):
            self.UL.append(np.zeros(self.RING))
            self.NL.append(np.arange(self.RING, dtype=np.int64))
        for _ in range(Bx):
            self.WU.append(np.zeros((self.WINDOWS, (1 + Bx) * nw), dtype=np.uint64))
            self.WI.append(np.full((self.WINDOWS, 1 + Bx), -1, dtype=np.int64))

        net = profile.network
        F[K.C_O], F[K.C_PM], F[K.C_PB], F[K.C_SPB] = net.overhead, io.per_message, io.per_byte, io.stats_per_byte
        F[K.C_L], F[K.C_GAP], F[K.C_GPB], F[K.C_EAGER] = net.latency, net.gap, net.gap_per_byte, net.eager_threshold
        F[K.C_SHML], F[K.C_SHMG], F[K.C_NAP] = net.shm_latency, net.shm_gap_per_byte, io.idle_nap
        F[K.C_OPM], F[K.C_PERPKG] = net.overhead + io.per_message, io.per_package
        # S_par/M simulations per rank keep each worker's queue about `overload` simulations long; a rank
        # with K times its share waiting is overloaded (4.2.5): forward when the wait is that long
        F[K.C_FHELD] = getattr(params, "balance_k", 1.2) * params.overload * max(W, 1)
        F[K.C_DELAY] = max(1e-6, float(getattr(params, "bcast_delay", 1e-3)))
        F[K.C_EXPANDS], F[K.C_SYNCS], F[K.C_NODES] = (workload.expands_per_sim, workload.syncs_per_sim,
                                                      workload.nodes_per_sim)
        F[K.C_RATE] = sample_rate
        I[K.I_ALGO] = ALGOS.index(algo)
        I[K.I_M], I[K.I_B], I[K.I_W], I[K.I_G] = M, B, W, G
        I[K.I_VIA_IO], I[K.I_FORWARD] = int(io.handles_completions), int(forward)
        I[K.I_MERGE_EVERY] = int(getattr(params, "merge_every", 256))
        I[K.I_MERGE_DEPTH] = int(getattr(params, "merge_depth", 1))
        I[K.I_DUP] = workload.dup_nodes
        if topo is not None:
            I[K.I_TK], I[K.I_TN], I[K.I_TM] = topo.k, topo.n, topo.m
        I[K.I_TRACE] = int(trace_writer is not None)
        I[K.I_TRACE_ALL] = int(sample_rate >= 1.0)
        I[K.I_R], I[K.I_NODES], I[K.I_GROUPS] = R, N, groups
        I[K.I_HOT_STEPS], I[K.I_HOT_W] = len(workload.hot_steps), self._dims["hw"]
        U[0] = new_rng(seed)[0]

        v["mb"][:] = [profile.message_bytes(k) for k in K.MSG_KINDS]
        v["pf"][:, K.PF_H] = v["pf"][:, K.PF_CAP] = bin_width
        v["pf"][R:2 * R, K.PF_H] = worker_bin_width
        v["pf"][R:2 * R, K.PF_CAP] = max(W, 1) * worker_bin_width
        v["rf"][:, K.RF_LOOP] = v["rf"][:, K.RF_ITER] = loops
        v["rf"][:, K.RF_IDLE] = 1.0
        v["ri"][:M, K.RI_W] = W
        v["node"][:] = node_of
        if B:
            v["part"][:] = partner
            v["clp"][1:] = np.cumsum([len(x) for x in clients])
            v["cll"][:v["clp"][-1]] = [c for x in clients for c in x]
        v["blast"][:] = -1
        for k, (cum, hr) in enumerate(hot_tables(workload, seed, Mg)):
            v["hn"][k] = len(cum)
            v["hp"][k, :len(cum)] = cum
            v["hr"][k, :len(cum)] = hr
        for i, d in enumerate(dists):
            if d.dist == "const":
                v["dk"][i], v["dp"][i, 0] = K.DIST_CONST, d.value
            elif d.dist == "lognormal":
                v["dk"][i], v["dp"][i] = K.DIST_LOGNORMAL, (d.median, d.sigma)
            else:
                k = len(d.quantiles)
                v["dk"][i], v["dn"][i] = K.DIST_EMPIRICAL, k
                v["dq"][i, :k] = d.quantiles
                v["dpr"][i, :k] = d.probs if d.probs else np.linspace(0.0, 1.0, k)
        self.trace = trace_writer
        self.sample_interval = sample_interval
        self._next_sample = sample_interval
        self._samples = 0
        self._busy_mark = np.zeros(R)
        self._sample_servers = np.array([max(W, 1) if (r < M and W > 0) else 1 for r in range(R)], dtype=np.float64)
        self._started = False

    # --- the kernels' arrays -----------------------------------------------------------------------------
    def _shapes(self) -> dict[str, tuple[int, ...]]:
        d = self._dims
        P, R, rows, heap, nd = d["P"], d["R"], d["rows"], d["heap"], K.N_DISTS
        return {"pf": (P, 4), "rf": (R, K.N_RF), "slot": (R, d["Wm"]), "dp": (nd, 2), "dq": (nd, d["Q"]),
                "dpr": (nd, d["Q"]), "ht": (heap,), "tpf": (rows, 2), "tmf": (rows, 2), "mb": (len(K.MSG_KINDS),),
                "pi": (P, 2), "ri": (R, K.N_RI), "node": (R,), "part": (d["M"],), "clp": (d["B"] + 1,),
                "cll": (d["cl"],), "blast": (d["Bx"],), "hs": (heap,), "hk": (heap,), "ha": (heap,), "dk": (nd,),
                "dn": (nd,), "tpi": (rows, 4), "tmi": (rows, 5), "hp": (d["hk"], d["hw"]), "hr": (d["hk"], d["hw"]),
                "hn": (d["hk"],)}

    def _views(self) -> dict[str, np.ndarray]:
        return K.views(self.F, self.I, self.U, self._shapes())

    @property
    def now(self) -> float:
        return float(self.F[K.C_NOW])

    @property
    def n_events(self) -> int:
        return int(self.I[K.G_EVENTS]) + self._samples

    # --- driving the kernel ------------------------------------------------------------------------------
    def _advance(self, t_end: float) -> None:
        while K.run_until(self.F, self.I, self.U, self.UL, self.NL, self.WU, self.WI, t_end,
                          self._margin) == K.ST_TRACE:
            self._drain_trace()

    def _drain_trace(self) -> None:
        I, w, v = self.I, self.trace, self._views()
        n = int(I[K.G_PKN])
        if n:
            tpf, tpi = v["tpf"], v["tpi"]
            w.extend("packages", {"t_start": tpf[:n, 0], "t_end": tpf[:n, 1], "rank": tpi[:n, 0],
                                  "worker": tpi[:n, 1], "kind": _PKG_NAMES[tpi[:n, 2]].tolist(), "sim_id": tpi[:n, 3]})
            I[K.G_PKN] = 0
        n = int(I[K.G_MSGN])
        if n:
            tmf, tmi = v["tmf"], v["tmi"]
            w.extend("messages", {"t_send": tmf[:n, 0], "t_recv": tmf[:n, 1], "src": tmi[:n, 0], "dst": tmi[:n, 1],
                                  "kind": _MSG_NAMES[tmi[:n, 2]].tolist(), "bytes": tmi[:n, 3], "sim_id": tmi[:n, 4]})
            I[K.G_MSGN] = 0

    def _sample(self, t: float) -> None:
        """The trace's samples table: every rank at t (always exact, not sampled)."""
        R = self.M + self.B
        used, ahead = np.zeros(R), np.zeros(R)
        K.sample(self.F, self.I, self.UL, self.NL, t, used, ahead)
        busy = np.clip((used - self._busy_mark) / (self._sample_servers * self.sample_interval), 0.0, 1.0)
        self._busy_mark = used
        dup = np.zeros(R, dtype=np.int64)
        if self.algo in ("treesplit", "hybrid"):
            dup[:self.M] = self.workload.dup_nodes
        ri = self._views()["ri"]
        self.trace.extend("samples", {
            "t": np.full(R, t), "rank": np.arange(R),
            "queue_len": (ahead / max(self._select_mean, 1e-9)).astype(np.int64), "busy_frac": busy,
            "sims_done": ri[:, K.RI_SIMS_DONE], "playouts_done": ri[:, K.RI_PLAYOUTS],
            "nodes_stored": ri[:, K.RI_NODES], "nodes_duplicated": dup})
        self._samples += 1

    def _run_until(self, t_end: float) -> None:
        if self.trace is not None:
            while self._next_sample <= t_end:
                t = self._next_sample
                self._advance(t)
                self._sample(t)
                self._next_sample = t + self.sample_interval
        self._advance(t_end)

    # --- figures -----------------------------------------------------------------------------------------
    def counters(self) -> list[tuple]:
        ri = self._views()["ri"]
        return [(int(a), int(b), int(c), 0) for a, b, c in
                zip(ri[:, K.RI_SIMS_DONE], ri[:, K.RI_PLAYOUTS], ri[:, K.RI_NODES])]

    def stats_snapshot(self) -> list[dict]:
        R = self.M + self.B
        io_used, busy = np.zeros(R), np.zeros(R)
        K.snapshot(self.F, self.I, self.UL, self.NL, self.now, io_used, busy)
        v = self._views()
        ri, rf = v["ri"], v["rf"]
        msgs = ri[:, K.RI_MSG0:K.RI_MSG0 + len(K.MSG_KINDS)]
        pkgs = ri[:, K.RI_PKG0:K.RI_PKG0 + len(K.PKG_KINDS)]
        pp = self.profile.io.per_package
        out = []
        for r in range(R):
            b = float(busy[r])
            if ri[r, K.RI_W] > 0 and pp:  # bookkeeping is not busy (the engine's clock stops first)
                b = max(0.0, b - pp * int(pkgs[r].sum()))
            io_t = float(io_used[r] + rf[r, K.RF_POLL])
            out.append({"msgs_out": {k: int(x) for k, x in zip(K.MSG_KINDS, msgs[r]) if x},
                        "bytes_out": int(ri[r, K.RI_BYTES_OUT]), "msgs_in": int(ri[r, K.RI_MSGS_IN]),
                        "busy": b, "io_busy": io_t, "io_loops": float(rf[r, K.RF_ITERS]), "io_loop_time": io_t,
                        "pkgs": {k: int(x) for k, x in zip(K.PKG_KINDS, pkgs[r]) if x}})
        return out

    def _start(self) -> None:
        K.schedule_start(self.F, self.I, self.per_rank, self.s_par)
        self._started = True

    def _finish(self) -> None:
        if self.trace is not None:
            self._drain_trace()

    def run(self, seconds: float, warmup: float = 0.0, progress: Callable[[float], None] | None = None,
            chunks: int = 100) -> RunResult:
        return run_chunked(self, seconds, warmup, progress, chunks)


def run_chunked(world, seconds: float, warmup: float, progress: Callable[[float], None] | None,
                chunks: int) -> RunResult:
    """Run either world for warmup + seconds of simulated time in `chunks` steps (progress after each), with
    the counters taken where the measurement starts."""
    if not world._started:
        world._start()
    wall0 = time.perf_counter()
    t_begin = world.now
    t_meas = t_begin + warmup
    total = warmup + seconds
    c0 = s0 = None
    if warmup <= 0:
        c0, s0 = world.counters(), world.stats_snapshot()
    for i in range(1, chunks + 1):
        target = t_begin + total * i / chunks
        if c0 is None and target > t_meas:
            world._run_until(t_meas)
            c0, s0 = world.counters(), world.stats_snapshot()
        world._run_until(target)
        if progress:
            progress(world.now - t_begin)
    world._finish()
    return RunResult(world.cluster, world.workers_per_rank, t_meas, world.now, c0, world.counters(), s0,
                     world.stats_snapshot(), world.n_events, time.perf_counter() - wall0)


_PKG_NAMES = np.array(K.PKG_KINDS, dtype=object)
_MSG_NAMES = np.array(K.MSG_KINDS, dtype=object)

