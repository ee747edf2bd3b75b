"""The statistical fidelity: the same cluster model, one event per simulation, for fast sweeps at scale.

Nothing here runs a role. What a simulation does comes from a Workload (sim/workload.py): how many in-tree
steps land on nodes that are not duplicated (each owned by a rank drawn uniformly, since ownership by hash
is uniform, except the shares of the first steps that go to a few hot nodes, workload.hot_steps), whether
it expands, how many synchronisations it triggers. Costs and sizes come from the same machine profile and
the network is the same LogGP model with a NIC per node.

When a simulation starts, its whole path is booked at once on capacity timelines (sim/timeline.py): each
rank's C-1 workers, each IO core and each node's NIC (send and receive side) is a pool whose used capacity
is kept per time bin, so work can be booked ahead and out of order. A simulation's select steps (one
per rank it visits, one more after an expansion, as the roles' select parts go), hops
(MOVE), expansion, playout (forwarded as PLAYOUT_FWD when more than K S_par/M MOVEs wait at the rank,
Schaefers 2014, 4.2.5: its recent MOVE rate times the time the simulation spent there), UPDATEs and the
origin's final update are booked in order; its end is an event, which starts the next simulation of its
origin rank (S_par stays constant). A simulation that runs on its origin from root to update finishes in
its package, which goes on with the origin's next one, as the roles' packages chain (SearchParams.chain):
those are booked in the same event, one after another, ahead of what is booked later; one that leaves the
origin ends the package, and the rest of it is booked in an event of its own, when it leaves.

The IO core: a message waits for the loop to notice it (a random phase of an iteration) and for the
iteration that handles it, whose length is poll_base + poll_per_peer * peers stretched by the IO core's
recent load; its handling (LogGP o, dispatch, bytes, statistics intake) is booked on the IO core's pool.
Polling costs latency, not capacity: a busy loop shares one poll among all the messages it handles.
With io.idle_nap, input that finds the IO core idle (with the probability its recent load leaves) first
waits for the end of the nap it is in, a uniform part of idle_nap, as sim/runtime.py's napping core does.

Broadcast ranks collect SYNCs per window of bcast_delay (by arrival time), merge them per node and
broadcast origin/dimension, and at each window's end book one `bcast` package and send BCAST to their
peers (model/topology.py) and one SYNC per client with the rows the others brought (never a client's own
back); a search rank takes the rows in (IO intake) and applies them in a `sync` package.

A message costs the bytes of its record (model/roles/messages.py's record_size): a MOVE the step records
its simulation holds by then (workload.top_steps, one more per hop), an UPDATE or PLAYOUT_FWD the whole path
(top + hops + workload.tail_steps) and, under RAVE, the game's AMAF map, a SYNC, BCAST or MERGE the rows of
its shared nodes (workload.sync_rows per node and child of the game).

At large scale, `bundle` G > 1 makes each modelled simulation stand for G that take the same path side by
side (G packages at once on a rank's workers, G messages on a link): G times fewer simulations to model,
at the price of burstier load. Counts and rates are those of all G.

Algorithms: treesplit (the root is duplicated, so the first step is at the origin), tds (nothing
duplicated; the root's owner is rank 0), root (whole simulations at their origin; MERGE to every rank each
merge_every simulations), leaf (rank 0 selects and updates; JOB/RESULT to the other ranks round robin),
hybrid (G groups, each treesplit on its own search ranks and broadcast network, and root's
MERGE to every search rank of the other groups each merge_every simulations).

StatWorld runs that model in numba kernels (sim/statistical_kernel.py), a chunk of simulated time per
call. Its tests (tests/test_sim_statistical_kernel.py) hold it to the functional fidelity on the same
workload, fitted from the functional run's own trace.
"""

from __future__ import annotations

import time
from typing import Callable, NamedTuple

import numpy as np

from model.topology import Topology
from sim import statistical_kernel as K
from sim.profile import Profile
from sim.runtime import Cluster, RunResult
from sim.timeline import N_PF, N_PI, PF_CAP, PF_H, new_rings
from sim.workload import Workload, hot_rank

ALGOS = ("treesplit", "tds", "root", "leaf", "hybrid")


def hot_tables(workload: Workload, seed: int, ranks: int) -> list[tuple[list[float], list[int]]]:
    """Per remote step with hot nodes: their cumulative shares and their ranks among `ranks` (by hash)."""
    return [(np.cumsum(shares).tolist(), [hot_rank(seed, k, j, ranks) for j in range(len(shares))])
            for k, shares in enumerate(workload.hot_steps)]


def routes(topo: Topology) -> tuple[np.ndarray, np.ndarray]:
    """model/topology.py's broadcast routing as arrays for the kernel: where rank `at` forwards a broadcast
    from `origin` is dst[start[origin * B + at]:start[origin * B + at + 1]]. The routing is a spanning tree
    per origin, so each rank hears an origin's broadcast once, with one dimension: origin and rank decide
    its forwards, which a walk down each origin's tree collects."""
    B = topo.bcast_ranks
    start = np.zeros(B * B + 1, dtype=np.int64)
    dst: list[int] = []
    for origin in range(B):
        heard = {origin: topo.n}  # rank -> the dimension it hears this origin's broadcast with
        todo = [origin]
        fw: dict[int, list[int]] = {}
        while todo:
            at = todo.pop()
            fw[at] = []
            for d, dim in topo.forwards(origin, at, heard[at]):
                if d in heard:
                    raise AssertionError(f"broadcast from {origin} reaches {d} twice")
                heard[d] = dim
                fw[at].append(d)
                todo.append(d)
        for at in range(B):
            i = origin * B + at
            dst.extend(fw.get(at, ()))
            start[i + 1] = len(dst)
    return start, np.array(dst, dtype=np.int64)


class _RankView(NamedTuple):
    loop: float  # one IO-loop iteration with nothing to handle (sim/simulate.py reads it for the summary)


class StatWorld:
    """A cluster simulated by the statistical fidelity on the numba kernels (sim/statistical_kernel.py);
    run() gives the same RunResult as sim.runtime.World."""

    RING = 256              # bins per pool to start with; the kernel doubles a pool's when it must
    ARRIVALS = 16           # pending inputs per broadcast rank to start with; doubled likewise
    TRACE_ROWS = 1 << 17    # trace rows buffered in the kernel before they go to the writer
    TRACE_MARGIN = 1 << 15  # rows one event may write at most (a broadcast window to every peer)

    def __init__(self, algo: str, profile: Profile, cluster: Cluster, layout, workload: Workload, params,
                 seed: int = 0, trace_writer=None, sample_rate: float = 1.0, sample_interval: float = 0.01,
                 bin_width: float = 10e-6, worker_bin_width: float = 100e-6, bundle: int = 1,
                 actions: int = 0, rave: bool = False):
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
            topo = Topology(Bg, layout.peers)
        rs, rd = routes(topo) if topo is not None else (np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64))
        loops = [io.loop_time((M - 1) + (1 if B else 0)) for _ in range(M)]
        loops += [io.loop_time(len(topo.in_peers(b % Bg)) + len(clients[b])) for b in range(B)]
        self.ranks = [_RankView(x) for x in loops]
        node_of = cluster.node_of()
        N = max(node_of) + 1
        G = max(1, int(bundle))
        self.G = G
        in_flight = params.in_flight(max(W, 1), Mg)  # S_par / M, as the role computes it
        # (a leaf master that plays out keeps LeafParams.master_in_flight; the thesis's keeps (M-1) W O, which the
        # kernel rounds to M W O)
        s_par = params.master_in_flight(max(W, 1), M) if algo == "leaf" and params.master_playouts else M * in_flight
        self.s_par = max(1, round(s_par / G))
        self.per_rank = max(1, round(self.s_par / M))
        may_forward = (getattr(params, "forward_playouts", True) and Mg > 1
                       and algo in ("treesplit", "tds", "hybrid"))
        forward = may_forward and W > 0
        c = profile.costs
        self._select_mean = c["select"].mean
        dists = [c[k] for k in K.PKG_KINDS] + [workload.remote_steps]
        Q = max([len(d.quantiles) for d in dists] + [2])
        Bx = max(B, 1)
        rows = self.TRACE_ROWS if trace_writer is not None else 1
        self._margin = self.TRACE_MARGIN if trace_writer is not None else 0
        P = 2 * R + 2 * N  # IO cores, workers, sending NICs, receiving NICs
        # a package runs the simulations that stay on their origin back to back (a leaf master with playout
        # ranks does not chain: model/roles/core.py _new_sim)
        chain = params.package_chain() if algo != "leaf" else 1
        # an event per simulation in flight, and one more for a chaining package that ends before it does
        heap = (2 if chain > 1 else 1) * max(self.s_par, self.per_rank * M) + B + 8
        nw = (workload.dup_nodes + 63) // 64
        self._dims = {"P": P, "R": R, "Wm": max(W, 1), "Q": Q, "heap": heap, "rows": rows, "M": max(M, 1), "B": B,
                      "cl": max(1, sum(len(x) for x in clients)), "Bx": Bx, "nw": nw,
                      "hk": max(1, len(workload.hot_steps)), "hw": max([1] + [len(x) for x in workload.hot_steps]),
                      "rs": len(rs), "rd": max(1, len(rd))}
        self.F, self.I, self.U = K.allocate(self._shapes())
        F, I, U, v = self.F, self.I, self.U, self._views()
        I[K.H_NW], I[K.H_BX], I[K.H_Q], I[K.H_HEAP], I[K.H_ROWS], I[K.H_WM] = nw, Bx, Q, heap, rows, max(W, 1)
        self.UL, self.NL = new_rings(P, self.RING)
        self.WU, self.WA = K.new_arrivals(Bx, self.ARRIVALS, nw)

        net = profile.network
        F[K.C_O], F[K.C_PM], F[K.C_PB], F[K.C_SPB] = net.overhead, io.per_message, io.per_byte, io.stats_per_byte
        F[K.C_L], F[K.C_GAP], F[K.C_GPB], F[K.C_EAGER] = net.latency, net.gap, net.gap_per_byte, net.eager_threshold
        F[K.C_SHML], F[K.C_SHMG], F[K.C_NAP] = net.shm_latency, net.shm_gap_per_byte, io.idle_nap
        F[K.C_OPM], F[K.C_PERPKG] = net.overhead + io.per_message, io.per_package
        F[K.C_BATCHED] = float(io.batched)
        # a rank with K times its share of S_par waiting is overloaded (4.2.5): forward when the wait is that long
        F[K.C_FHELD] = getattr(params, "balance_k", 1.2) * in_flight
        # ... and a simulation that came by MOVE goes to the rank of its group with at most 1/balance_load of
        # the work ahead and two packages fewer to run, as the role does: two packages of about 0.3 of a
        # simulation's work each (a 2-rank run's simulations take ~3 packages: a select, a select after the
        # hop with the playout, an update)
        ratio = int(getattr(params, "balance_load", 0))
        F[K.C_FLOAD] = 0.6 * sum(c[k].mean for k in ("select", "playout", "update")) if may_forward and ratio else 0.0
        F[K.C_FMARGIN] = F[K.C_FLOAD] * (Mg - 1) ** -0.6 if Mg > 1 else 0.0  # statistical_kernel._lighter
        F[K.C_FRATIO] = float(ratio)
        # a leaf master plays a leaf out itself while every playout rank has its jobs (master_playouts, MLMP)
        F[K.C_LSHARE] = params.playout_jobs if algo == "leaf" and params.master_plays(M) else 0.0
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
        I[K.I_CHAIN] = chain
        v["rs"][:], v["rd"][:len(rd)] = rs, rd
        I[K.I_TRACE] = int(trace_writer is not None)
        I[K.I_TRACE_ALL] = int(sample_rate >= 1.0)
        I[K.I_R], I[K.I_NODES], I[K.I_GROUPS] = R, N, groups
        I[K.I_HOT_STEPS], I[K.I_HOT_W] = len(workload.hot_steps), self._dims["hw"]
        U[0] = new_rng(seed)[0]

        # message records as model/roles/messages.py lays them out: the step records, AMAF map and statistics
        # rows they carry; the game's actions size the AMAF map and a synced node's rows
        I[K.I_AMAF], I[K.I_RAVE] = (actions, 1) if rave else (0, 0)
        I[K.I_ROWS] = max(1, round(workload.sync_rows * (actions + 1)))
        F[K.C_TOP], F[K.C_TAIL] = workload.top_steps, workload.tail_steps
        F[K.C_SYNC_SHAPE] = workload.sync_gap_shape
        v["pf"][:, PF_H] = v["pf"][:, PF_CAP] = bin_width
        v["pf"][R:2 * R, PF_H] = worker_bin_width
        v["pf"][R:2 * R, PF_CAP] = max(W, 1) * worker_bin_width
        v["rf"][:, K.RF_LOOP] = v["rf"][:, K.RF_ITER] = loops
        v["rf"][:, K.RF_IDLE] = 1.0
        v["ri"][:M, K.RI_W] = W
        v["node"][:] = node_of
        if B:
            v["part"][:] = partner
            v["clp"][1:] = np.cumsum([len(x) for x in clients])
            v["cll"][:v["clp"][-1]] = [c for x in clients for c in x]
        v["rf"][:, K.RF_FLUSH] = -1.0  # no broadcast window open
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
        return {"pf": (P, N_PF), "rf": (R, K.N_RF), "slot": (R, d["Wm"]), "dp": (nd, 2), "dq": (nd, d["Q"]),
                "dpr": (nd, d["Q"]), "ht": (heap,), "tpf": (rows, 2), "tmf": (rows, 2),
                "pi": (P, N_PI), "ri": (R, K.N_RI), "node": (R,), "part": (d["M"],), "clp": (d["B"] + 1,),
                "cll": (d["cl"],), "nar": (d["Bx"],), "hs": (heap,), "hk": (heap,), "ha": (heap,), "dk": (nd,),
                "dn": (nd,), "tpi": (rows, 4), "tmi": (rows, 5), "hp": (d["hk"], d["hw"]), "hr": (d["hk"], d["hw"]),
                "hn": (d["hk"],), "rs": (d["rs"],), "rd": (d["rd"],)}

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
        while K.run_until(self.F, self.I, self.U, self.UL, self.NL, self.WU, self.WA, t_end,
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
        """Run warmup + seconds of simulated time in `chunks` steps (progress after each), with the counters
        taken where the measurement starts."""
        if not self._started:
            self._start()
        wall0 = time.perf_counter()
        t_begin = self.now
        t_meas = t_begin + warmup
        total = warmup + seconds
        c0 = s0 = None
        if warmup <= 0:
            c0, s0 = self.counters(), self.stats_snapshot()
        for i in range(1, chunks + 1):
            target = t_begin + total * i / chunks
            if c0 is None and target > t_meas:
                self._run_until(t_meas)
                c0, s0 = self.counters(), self.stats_snapshot()
            self._run_until(target)
            if progress:
                progress(self.now - t_begin)
        self._finish()
        return RunResult(self.cluster, self.workers_per_rank, t_meas, self.now, c0, self.counters(), s0,
                         self.stats_snapshot(), self.n_events, time.perf_counter() - wall0)


_PKG_NAMES = np.array(K.PKG_KINDS, dtype=object)
_MSG_NAMES = np.array(K.MSG_KINDS, dtype=object)

