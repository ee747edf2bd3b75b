"""TDS with depth-first UCT, df-UCT (Yoshizoe et al. 2011; seed 001 3.4.2 and 4.4.3.2).

The tree is spread over the search ranks by hash exactly as in TDS (treesplit.py with N_dup = inf), but a
simulation does not climb back to the root after its playout. A *job* keeps searching below a node for as
long as the child it chose there stays the best, and carries for every node of its path a FRAME
(messages.py): the node's visits and the best and second-best children's statistics as the job saw them
when it selected there, and the results it gathered below the node since it last reported to its owner.

After each playout (or a tree move that loses at once) the job adds the result to every frame: to the
pending sums and to its own copy of the best child's statistics. Then it looks for the shallowest node
whose second-best child now scores higher (UCB on the copies) than the best:
    found at depth k   frames k and below are popped and the job selects again at node k, on k's owner;
    none               the deepest frame is popped and the job selects again there (the leaf's parent).
A popped frame's results go to its owner, merged (dn visits and a reward sum per edge, one UPDATE per
rank); the report the owner of node k must apply before it selects again travels inside the job (MOVE).
A kept frame whose pending count reaches `report_every` reports too, without popping (its virtual loss
stays), so near-root statistics never lag by more than that many results per job.

A job holds `tickets` simulations of its origin's share of the budget (-1: until stop). When they are
spent, or on a rank that has stopped, it pops every frame (the final flush) and ends: once every job has
ended, the tree holds exactly the completed simulations, root visits == simulations completed, and the
invariants of model/roles/invariants.py hold. A simulation counts as started and done on the rank that
ran its playout.

RAVE is refused: merged reports carry visit counts and reward sums, not each playout's moves; UCB with
c = 0.7 is the default (params.UCT_DEFAULTS). Priors (progressive bias) are left out of the switch test.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from model import game
from model.atomics import atomic_add, atomic_add2
from model.ownership import owner
from model.rng import new_rng
from model.roles.base import EXPAND, PLAYOUT, SELECT, UPDATE, Actions, Layout, Package, Setup
from model.roles.fastcall import Bound
from model.roles.messages import FRAME, MOVE, PLAYOUT_FWD, STEP, Message, Result, Steps
from model.roles.messages import UPDATE as UPDATE_MSG
from model.roles.params import DfuctParams, TreesplitParams, check_uct
from model.roles.steps import ST_LOSS, ST_MOVE, Y_TRACK
from model.roles.treesplit import Sim, TreesplitSearch
from model.tt import lookup
from model.uct import P_RAVE, P_VLOSS, UctParams, _score

# STEP.flags of report records: take the job's virtual loss off the edge (the frame is popped); the record
# is a report to apply on arrival, not a step of the job's path (MOVE)
F_POP, F_REPORT = 1, 2


@njit(cache=True, nogil=True)
def fill_frames(t, p, steps, frames, n0, n):
    """Frames of the steps a selection just appended (steps[n0:n]): the node's visits, the chosen child's
    and the best other child's statistics (visit counts with the virtual loss of other jobs, as selection
    saw them), nothing pending yet."""
    vw = p[P_VLOSS]
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
        slot, _ = lookup(t, steps[k].hash, False)
        if slot == 0:
            continue
        log_n = math.log(max(float(t.visits[slot]), 1.0))
        best = -np.inf
        second = -1
        for c in range(t.n_children[slot]):
            if c == j:
                continue
            sc = _score(float(t.child_visits[slot, c]) + vw * t.vloss[slot, c], t.child_value[slot, c], 0.0, 0.0,
                        0.0, log_n, p)
            if sc > best:
                best, second = sc, c
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


class Job(Sim):
    """A df-UCT job while it is on this rank (package payload): its path, one frame per step, its tickets."""

    __slots__ = ("frames", "tickets")

    def __init__(self, sim_id: int, steps: np.ndarray, frames: np.ndarray, n: int, tickets: int):
        super().__init__(sim_id, steps, n)
        self.frames = frames
        self.tickets = tickets


class Reports:
    """UPDATE package payload: report records to apply here, and the job to select next (if carried)."""

    __slots__ = ("steps", "frames", "job")

    def __init__(self, steps: np.ndarray, frames: np.ndarray, job: Job | None):
        self.steps = steps
        self.frames = frames
        self.job = job


class DfuctSearch(TreesplitSearch):
    def __init__(self, rank: int, layout: Layout, setup: Setup, uct: UctParams | None = None,
                 params: DfuctParams | None = None, table=None):
        self.df = params or DfuctParams()
        uct = uct or UctParams(rave=False, c=0.7)
        check_uct("dfuct", uct)
        ts = TreesplitParams(table_mb=self.df.table_mb, overload=self.df.overload, n_dup=math.inf,
                             share_root=False, balance_k=self.df.balance_k,
                             forward_playouts=self.df.forward_playouts, dup_rows=1)
        super().__init__(rank, layout, setup, uct, ts, table)
        self.fuse = False  # its hooks look at every step's result
        self.y[Y_TRACK] = 0.0
        assert self.p[P_RAVE] == 0.0
        self.jobs_launched = False
        self.rng_draws = 0
        self.root_owner = 0
        self._fill_frames, self._fold, self._apply = Bound(fill_frames), Bound(fold_result), Bound(apply_reports)

    # --- jobs -----------------------------------------------------------------------------------------------
    def start(self) -> Actions:
        out = super().start()  # the root in the table; _fill below launches the jobs
        self.root_owner = owner(self.root_hash, self.M, self.local_slots) if self.M > 1 else 0
        return out

    def _may_start(self) -> bool:
        return not self.stopped and not self.jobs_launched

    def _fill(self, out: Actions) -> None:
        if not self._may_start():
            return
        self.jobs_launched = True
        n_jobs = self.target if self.quota is None else min(self.target, self.quota)
        for i in range(n_jobs):
            tickets = -1 if self.quota is None else self.quota // n_jobs + (1 if i < self.quota % n_jobs else 0)
            sim_id = self.rank + self.M * i
            job = Job(sim_id, np.empty(self.max_depth + 2, STEP), np.empty(self.max_depth + 2, FRAME), 0, tickets)
            job.s = self.root.copy()
            job.path_pos = np.empty(self.max_depth + 2, np.uint64)
            job.path_pos[0] = self.root_pos
            self.counts["jobs"] += 1
            self._pkg(out, SELECT, sim_id, job)

    def _arrived_job(self, p: Steps, sim_id: int) -> Job:
        """A job from a MOVE or PLAYOUT_FWD payload, in buffers of its own (message arrays may be read-only)."""
        path = (p.steps["flags"] & F_REPORT) == 0
        n = int(np.count_nonzero(path))
        job = Job(sim_id, np.empty(self.max_depth + 2, STEP), np.empty(self.max_depth + 2, FRAME), n, p.tickets)
        job.steps[:n] = p.steps[path]
        job.frames[:n] = p.frames[path]
        return job

    def _rng(self, sim: Sim):
        if self.shared_rng is not None:
            return self.shared_rng
        if sim.rng is None:  # a job comes back to a rank many times: a fresh stream each time
            self.rng_draws += 1
            sim.rng = new_rng((self.setup.seed * 0x9E3779B1 + sim.sim_id * 2654435761 + self.rank * 40503
                               + self.rng_draws * 0x632BE5AB) & (2**62 - 1))
        return sim.rng

    def _continue(self, out: Actions, job: Job, front: bool) -> None:
        if self.stopped:
            self._end_job(out, job)
            return
        self._pkg(out, SELECT, job.sim_id, job, front)

    def _playout_or_forward(self, out: Actions, job: Job) -> None:
        if self.stopped:
            self._end_job(out, job)
        elif self.M > 1 and self.params.forward_playouts and self.moves_held > self.balance_limit:
            dst = self.py_rng.randrange(self.M - 1)
            dst += dst >= self.rank
            self.counts["playouts_forwarded"] += 1
            self._send(out, PLAYOUT_FWD, dst, Steps(job.steps[:job.n], job.frames[:job.n], job.tickets), job.sim_id)
        else:
            self.started += 1
            self._pkg(out, PLAYOUT, job.sim_id, job, front=True)

    def _finish_sim(self, out: Actions, job: Job, result: float, amaf) -> None:
        """A result for the job: fold it into the frames, report what leaves, select again (or end)."""
        self.done += 1
        if job.tickets > 0:
            job.tickets -= 1
        k = int(self._fold(self.g, self.p, job.steps, job.frames, job.n, result, self.df.switch_margin))
        if self.stopped or job.tickets == 0:
            self._end_job(out, job)
            return
        n = job.n
        dn = job.frames["dn"][:k]
        partial = np.flatnonzero(dn >= self.df.report_every) if self.df.report_every > 0 else np.zeros(0, np.int64)
        idx = np.concatenate([partial, np.arange(k, n)])
        steps, frames = job.steps[idx], job.frames[idx]
        steps["flags"] = np.where((np.arange(len(idx)) >= len(partial)) & (steps["idx"] >= 0), F_POP, 0) | F_REPORT
        job.frames["dn"][partial] = 0
        job.frames["dw"][partial] = 0.0
        self.counts["partial_reports"] += len(partial)
        self.counts["resumes"] += 1
        self.counts["resume_depth"] += k  # / resumes: how deep jobs stay (TDS: always 0)
        job.n = k
        job.s = None  # the position at node k: replayed where selection goes on
        job.insert = True
        dst = int(job.steps[k]["rank"]) if k < n else self.root_owner
        carried = self._report(out, steps, frames, dst, job.sim_id)
        if dst == self.rank:
            if carried is not None:
                self._apply_here(out, carried[0], carried[1], job)
            else:
                self._continue(out, job, front=True)
            return
        if carried is not None:
            steps_out = np.concatenate([job.steps[:k], carried[0]])
            frames_out = np.concatenate([job.frames[:k], carried[1]])
        else:
            steps_out, frames_out = job.steps[:k].copy(), job.frames[:k].copy()
        self._send(out, MOVE, dst, Steps(steps_out, frames_out, job.tickets), job.sim_id)

    def _end_job(self, out: Actions, job: Job) -> None:
        """Pop every frame: all pending results (and the job's virtual loss) go to their owners."""
        if job.moved:
            job.moved = False
            self.moves_held -= 1
        n = job.n
        steps, frames = job.steps[:n].copy(), job.frames[:n].copy()
        steps["flags"] = np.where(steps["idx"] >= 0, F_POP, 0) | F_REPORT
        self.counts["jobs_ended"] += 1
        self._report(out, steps, frames, -1, job.sim_id)

    def _report(self, out: Actions, steps: np.ndarray, frames: np.ndarray, keep: int, sim_id: int):
        """Send report records to their ranks (a package here); those for rank `keep` are returned instead."""
        use_vl = self.p[P_VLOSS] > 0.0
        useful = (frames["dn"] > 0) | (use_vl & ((steps["flags"] & F_POP) != 0))
        steps, frames = steps[useful], frames[useful]
        dn = frames["dn"].astype(np.int64)
        self.counts["records_finished"] += int(dn.sum())
        self.counts["edges_finished"] += int(dn[steps["idx"] >= 0].sum())
        carried = None
        for r in np.unique(steps["rank"]).tolist():
            mine = steps["rank"] == r
            s, f = steps[mine], frames[mine]
            if r == keep:
                carried = (s, f)
            elif r == self.rank:
                self._apply_here(out, s, f, None)
            else:
                self._send(out, UPDATE_MSG, r, Result(0.0, s, None, f), sim_id)
        return carried

    def _apply_here(self, out: Actions, steps: np.ndarray, frames: np.ndarray, job: Job | None) -> None:
        self.counts["updates_local"] += 1
        self.updates_running += 1
        carries = job is not None
        self._pkg(out, UPDATE, job.sim_id if carries else -1, Reports(steps, frames, job), front=carries)

    # --- the contract -----------------------------------------------------------------------------------------
    def on_message(self, msg: Message) -> Actions:
        out = Actions()
        kind = msg.kind
        self.received[kind] += 1
        p = msg.payload
        if kind == MOVE:
            job = self._arrived_job(p, msg.sim_id)
            job.moved = True
            self.moves_held += 1
            reports = (p.steps["flags"] & F_REPORT) != 0
            if reports.any():  # this rank's part of the job's report: applied before it selects here
                self.counts["updates_carried"] += 1
                self._apply_here(out, p.steps[reports].copy(), p.frames[reports].copy(), job)
            else:
                self._continue(out, job, front=False)
        elif kind == UPDATE_MSG:
            self.updates_running += 1
            self._pkg(out, UPDATE, msg.sim_id, Reports(p.steps.copy(), p.frames.copy(), None))
        elif kind == PLAYOUT_FWD:
            self._playout_or_forward(out, self._arrived_job(p, msg.sim_id))
        else:
            raise ValueError(f"dfuct search rank {self.rank}: unexpected {kind} message")
        return out

    def execute(self, pkg: Package):
        kind = pkg.kind
        if kind == UPDATE:
            rep = pkg.payload
            return self._apply(self.t, rep.steps, rep.frames, len(rep.steps), self.p)
        if kind in (SELECT, EXPAND):
            job = pkg.payload
            n0 = job.n
            res = super().execute(pkg)
            self._fill_frames(self.t, self.p, job.steps, job.frames, n0, job.n)
            return res
        return super().execute(pkg)

    def on_work_done(self, pkg: Package, result) -> Actions:
        kind = pkg.kind
        if kind == PLAYOUT:
            out = Actions()
            self.outstanding -= 1
            self.counts["playouts"] += 1
            self._finish_sim(out, pkg.payload, result[0], None)
            return out
        if kind == UPDATE:
            out = Actions()
            self.outstanding -= 1
            self.updates_running -= 1
            self.counts["updates"] += 1
            if result:
                self.counts["update_missing"] += int(result)
            rep = pkg.payload
            self.counts["report_records"] += len(rep.steps)
            self.counts["root_reports"] += int(np.count_nonzero(rep.steps["hash"] == self.root_hash))
            job = rep.job
            if job is not None:
                self._continue(out, job, front=True)
            return out
        if kind == SELECT:
            job = pkg.payload
            st, arg = result
            if st == ST_LOSS:
                self.started += 1  # a tree move that loses at once: a simulation without a playout
            elif self.stopped or st == ST_MOVE:
                out = Actions()
                self.outstanding -= 1
                if self.stopped:  # no new simulation: the job flushes and ends here
                    self._end_job(out, job)
                    return out
                if job.moved:
                    job.moved = False
                    self.moves_held -= 1
                self._send(out, MOVE, int(arg), Steps(job.steps[:job.n].copy(), job.frames[:job.n].copy(),
                                                      job.tickets), job.sim_id)
                return out
        return super().on_work_done(pkg, result)  # SELECT (playout, expand, loss) and EXPAND as treesplit

    def idle(self) -> bool:
        return self.outstanding == 0 and not self._may_start()
