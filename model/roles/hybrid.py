"""Hybrid: groups of UCT-Treesplit ranks joined by root parallelisation (the combination Schaefers 2014, 4.4 proposes).

The M search ranks and B broadcast ranks form G equal groups (search ranks g*M/G.., broadcast ranks
M + g*B/G..). A group is a complete UCT-Treesplit search (treesplit.py, broadcast.py) that sees itself as
ranks 0..M/G-1 plus its broadcast ranks; GroupRank runs its roles under the global rank numbers (message
ranks, and sim ids: global = local * G + group). With G = 1 the hybrid is treesplit.

Between groups the search is root-parallel, as in root.py. The "merged nodes", those fewer than
`merge_depth` moves below the root (found by playing every legal move from the root), are shared by every
search rank of every group from the start, the way treesplit shares the root: stored, expanded, zeroed
and given delta counters (dup.py). Inside a group their increments travel as treesplit's SYNCs. Each rank
also keeps the rows of merged nodes its SYNC flushes carry (its own increments, nothing it heard), summed;
every `merge_every` of its own simulations it flushes the merged nodes and, when that is done, sends what
it kept in one MERGE to every search rank of the other groups, which add it to their tables (never to their
deltas, so nothing echoes). The core's kernels do all of it (model/roles/core.py, "hybrid"), so the engine
runs a hybrid rank in batches like any treesplit rank. After the final synchronisation every search rank holds
the same merged nodes, the root included: the sum over all groups. Below them each group grows its own tree.
"""

from __future__ import annotations

import math

import numpy as np

from model import game
from model.errors import ConfigError
from model.ownership import owner
from model.roles.base import Actions, Layout, Package, Role, RoleStats, Setup
from model.roles.broadcast import TreesplitBroadcast
from model.roles.core import merged_arrays
from model.roles.dup import new_dup_table, share_root
from model.roles.invariants import treesplit_problems
from model.roles.messages import CODE, MERGE, Message
from model.roles.params import HybridParams
from model.roles.steps import Y_NDUP, Y_TRACK
from model.roles.treesplit import TreesplitSearch
from model.tt import lookup
from model.uct import UctParams, expand


class Groups:
    """The split of a Layout into G groups, and rank numbers between global and group-local."""

    def __init__(self, layout: Layout, groups: int):
        M, B = layout.search_ranks, layout.bcast_ranks
        if M % groups:
            raise ConfigError(f"groups: {groups} groups do not divide {M} search ranks")
        if B % groups:
            raise ConfigError(f"groups: {groups} groups do not divide {B} broadcast ranks")
        self.layout, self.G, self.m, self.b = layout, groups, M // groups, B // groups
        self.inner = Layout(self.m, self.b, workers=layout.workers, peers=layout.peers)

    def group(self, rank: int) -> int:
        M = self.layout.search_ranks
        return rank // self.m if rank < M else (rank - M) // self.b

    def local(self, rank: int) -> int:
        M = self.layout.search_ranks
        return rank % self.m if rank < M else self.m + (rank - M) % self.b

    def glob(self, group: int, local: int) -> int:
        if local < self.m:
            return group * self.m + local
        return self.layout.search_ranks + group * self.b + local - self.m

    def search(self, group: int) -> range:
        return range(group * self.m, (group + 1) * self.m)

    def bcast(self, group: int) -> range:
        M = self.layout.search_ranks
        return range(M + group * self.b, M + (group + 1) * self.b)


class GroupRank(Role):
    """One group's role (inner, group-local rank numbers) under its global rank number."""

    def __init__(self, rank: int, groups: Groups, inner: Role):
        self.rank, self.layout, self.groups, self.inner = rank, groups.layout, groups, inner
        self.group = groups.group(rank)

    def _sim(self, local_id: int) -> int:
        return -1 if local_id < 0 else local_id * self.groups.G + self.group

    def _out(self, acts: Actions) -> Actions:
        out = Actions()
        for pkg in acts.pkgs:
            pkg.sim_id = self._sim(pkg.sim_id)  # for the runtime's trace only; the inner role reads payloads
            out.pkgs.append(pkg)
        for m in acts.msgs:
            dst = self.groups.glob(self.group, m.dst)
            out.msgs.append(Message(m.kind, self.rank, dst, m.payload, self._sim(m.sim_id)))
        out.timers.extend(acts.timers)
        return out

    def start(self) -> Actions:
        return self._out(self.inner.start())

    def on_message(self, msg: Message) -> Actions:
        if self.groups.group(msg.src) != self.group:
            raise ValueError(f"hybrid rank {self.rank}: {msg.kind} from rank {msg.src} of another group")
        local = Message(msg.kind, self.groups.local(msg.src), self.groups.local(self.rank), msg.payload,
                        -1 if msg.sim_id < 0 else msg.sim_id // self.groups.G)
        return self._out(self.inner.on_message(local))

    def execute(self, pkg: Package):
        return self.inner.execute(pkg)

    def on_work_done(self, pkg: Package, result) -> Actions:
        return self._out(self.inner.on_work_done(pkg, result))

    def on_timer(self, token) -> Actions:
        return self._out(self.inner.on_timer(token))

    def record_parts(self, on: bool, stamps: bool = False) -> None:
        self.inner.record_parts(on, stamps)

    def stop(self) -> Actions:
        return self._out(self.inner.stop())

    def final_sync(self) -> Actions:
        return self._out(self.inner.final_sync())

    def idle(self) -> bool:
        return self.inner.idle()

    def finished(self) -> bool:
        return self.inner.finished()

    def stats(self) -> RoleStats:
        st = self.inner.stats()
        st.extra["group"] = self.group
        return st

    def sims_done(self) -> int:
        return self.inner.sims_done()

    def report(self) -> dict:
        d = self.inner.report()
        d["group"] = self.group
        return d


def merged_positions(g, root, depth: int, limit: int) -> list[tuple[np.uint64, np.ndarray]]:
    """(hash, position) of every node fewer than `depth` moves below the root, the root first, each once."""
    buf = np.empty(int(game.n_actions(g)), np.int64)
    level = [root.copy()]
    seen = {int(game.hash(g, root))}
    out = [(np.uint64(game.hash(g, root)), root.copy())]
    for _ in range(depth - 1):
        nxt = []
        for s in level:
            if game.is_terminal(g, s):
                continue
            for a in buf[:game.legal_actions(g, s, buf)].tolist():
                c = s.copy()
                if not game.play(g, c, a):
                    continue
                h = int(game.hash(g, c))
                if h in seen:
                    continue
                seen.add(h)
                out.append((np.uint64(h), c))
                nxt.append(c)
                if len(out) > limit:
                    raise ConfigError(f"merge_depth: more than {limit} nodes within {depth} moves of the root "
                                      f"(dup_rows is the limit)")
        level = nxt
    return out


class HybridSearch(TreesplitSearch):
    """A search rank of one group: UCT-Treesplit among the group's ranks (under global rank numbers and
    simulation ids), root parallelisation of the merged nodes with the other groups."""

    def __init__(self, rank: int, groups: Groups, setup: Setup, uct: UctParams | None = None,
                 params: HybridParams | None = None, table=None):
        self.hparams = params or HybridParams()
        G = groups.G
        group = groups.group(rank)
        self.groups, self.group = groups, group
        share = None if setup.sims is None else setup.sims // G + (1 if group < setup.sims % G else 0)
        # every group its own random streams (group 0 keeps the run's: G = 1 is treesplit exactly)
        gsetup = Setup(setup.g, setup.root, setup.history, share, setup.seed + 7919 * group)
        local = groups.local(rank)
        inner = groups.inner
        peers = ([groups.glob(group, inner.partner(local))] if inner.bcast_ranks > 0
                 else [groups.glob(group, r) for r in range(inner.search_ranks) if r != local])
        super().__init__(rank, inner, gsetup, uct, self.hparams, table, G=G, group=group,
                         glob=[groups.glob(group, r) for r in range(inner.search_ranks)], lrank=local, peers=peers,
                         world=groups.layout.world)
        self.layout = groups.layout
        self._set(accept=int(self.a.cs[0]["accept"]) | (1 << CODE[MERGE]))
        self.merging = G > 1
        self.chain = self.hparams.package_chain()
        self.merged = np.zeros(0, np.uint64)
        self.peers = [r for h in range(G) if h != group for r in groups.search(h)]
        if self.merging:
            if self.M == 1:  # a one-rank group: deltas for the merged nodes only, nothing else to duplicate
                self._replace_dup_table(new_dup_table(self.local_slots, self.t.child_move.shape[1],
                                                      self.hparams.dup_rows))
                self.y[Y_NDUP] = math.inf
            self.y[Y_TRACK] = 1.0
            self._set(track=1)
            self.positions = merged_positions(setup.g, np.asarray(setup.root), self.hparams.merge_depth,
                                              self.hparams.dup_rows)
            self.merged = np.sort(np.array([h for h, _ in self.positions], np.uint64))
            self._use(self.a._replace(**merged_arrays(len(self.merged), self.t.child_move.shape[1], self.peers)))
            self.a.mhash[:] = self.merged
            self._set(merging=1, merge_every=self.hparams.merge_every, n_merged=len(self.merged),
                      n_mpeers=len(self.peers))

    @property
    def inner(self) -> "HybridSearch":
        """The group's view of this rank (hybrid_problems reads group-local rank numbers through lrank)."""
        return self

    # --- merging between groups -----------------------------------------------------------------------------
    def _share_merged(self) -> None:
        """Store, expand, zero and share the merged nodes (start() has begun the search)."""
        t, dt, g = self.t, self.dt, self.g
        buf = np.empty(self.n_actions, np.int64)
        for h, s in self.positions:
            slot, _ = lookup(t, h, True)
            if slot == 0:
                raise ConfigError("table_mb: no room in the transposition table for the merged nodes")
            if dt.row_of[slot] < 0:
                t.visits[slot] = 0
                t.value[slot] = 0.0
                for a in (t.child_visits, t.child_value, t.amaf_visits, t.amaf_value, t.vloss):
                    a[slot, :] = 0
                if t.n_children[slot] < 0 and not game.is_terminal(g, s):
                    t.n_children[slot] = -1
                    expand(t, g, s.copy(), slot, buf)
                if not share_root(t, dt, slot, h):
                    raise ConfigError("dup_rows: too few rows for the merged nodes")
            m = int(np.searchsorted(self.merged, np.uint64(h)))
            self.a.mslot[m] = slot
            self.a.mrow[m] = int(dt.row_of[slot])

    def start(self) -> Actions:
        out = super().start()
        if self.merging:
            self._share_merged()
        return out

    def stats(self) -> RoleStats:
        st = super().stats()
        st.extra["group"] = self.group
        return st

    def report(self) -> dict:
        d = super().report()
        d["group"] = self.group
        return d


class HybridBroadcast(GroupRank):
    def __init__(self, rank: int, groups: Groups, params: HybridParams | None = None):
        super().__init__(rank, groups, TreesplitBroadcast(groups.local(rank), groups.inner, params))


def make_hybrid_role(rank: int, layout: Layout, setup: Setup, uct: UctParams | None = None,
                     params: HybridParams | None = None, table=None) -> Role:
    params = params or HybridParams()
    groups = Groups(layout, params.groups)
    if layout.is_search(rank):
        return HybridSearch(rank, groups, setup, uct, params, table)
    return HybridBroadcast(rank, groups, params)


# --- what must hold after a drained, synchronised hybrid search ------------------------------------------------
# treesplit_problems findings that merged statistics change on purpose (they are checked over all groups below)
_GROUP_ONLY = ("root visits", "visits in the tables add up")


def hybrid_problems(roles, messages=None) -> list[str]:
    """treesplit_problems for each group (its roles in group numbers; its SYNC/DUP messages plus the MERGE
    rows it received), then, over all groups: every search rank's root visits equal all simulations
    completed, the merged nodes are the same on every search rank, every MERGE sent was received, and every
    update asked for by a finished simulation is in the tables once (each group's own nodes once per group,
    merged nodes once)."""
    groups: Groups = roles[0].groups
    G = groups.G
    bad: list[str] = []
    for grp in range(G):
        search = [roles[r].inner for r in groups.search(grp)]
        everyone = search + [roles[r].inner for r in groups.bcast(grp)]
        msgs = None
        if messages is not None:
            msgs = []
            for m in messages:
                if m.kind == MERGE and groups.group(m.dst) == grp:
                    msgs.append(Message(MERGE, -1 - m.src, groups.local(m.dst), m.payload))  # from outside, per sender
                elif m.kind != MERGE and groups.group(m.src) == grp:
                    msgs.append(Message(m.kind, groups.local(m.src), groups.local(m.dst), m.payload))
        for p in treesplit_problems(search, msgs, everyone, between=(MERGE,)):
            if G == 1 or not any(s in p for s in _GROUP_ONLY):
                bad.append(f"group {grp}: {p}")
    if G == 1:
        return bad
    searchers = [r for r in roles if r.layout.is_search(r.rank)]
    done = sum(r.inner.done for r in searchers)
    merged = set(searchers[0].merged.tolist())
    views: dict[int, set] = {}
    edges = nodes = 0
    for r in searchers:
        t, dt, inner = r.inner.t, r.inner.dt, r.inner
        if int(t.visits[inner.root_slot]) != done:
            bad.append(f"rank {r.rank}: root visits {int(t.visits[inner.root_slot])} != simulations completed {done}")
        for slot in np.flatnonzero(t.stamp == t.meta[0]).tolist():
            h = int(t.key[slot])
            nc = max(int(t.n_children[slot]), 0)
            view = (int(t.visits[slot]), tuple(t.child_visits[slot, :nc].tolist()))
            if h in merged:
                views.setdefault(h, set()).add(view)
                continue
            if dt.row_of[slot] >= 0:
                if inner.lrank != 0:
                    continue  # a node shared within a group: counted once, on the group's first rank
            elif inner.kernel_ranks > 1 and owner(t.key[slot], inner.M, inner.local_slots) != inner.lrank:
                continue
            nodes += view[0]
            edges += sum(view[1])
    for h, v in views.items():
        if len(v) != 1:
            bad.append(f"merged node {h:#x}: differs between search ranks")
        visits, child = next(iter(v))
        nodes += visits
        edges += sum(child)
    want_edges = sum(r.inner.counts["edges_finished"] for r in searchers)
    want_nodes = sum(r.inner.counts["records_finished"] for r in searchers)
    if edges != want_edges:
        bad.append(f"edge visits in the tables add up to {edges}, finished simulations asked for {want_edges}")
    if nodes != want_nodes:
        bad.append(f"node visits in the tables add up to {nodes}, finished simulations asked for {want_nodes}")
    sent, received = sum(r.sent[MERGE] for r in searchers), sum(r.received[MERGE] for r in searchers)
    if sent != received:
        bad.append(f"{sent} MERGE messages sent, {received} received")
    if len(views) != len(merged):
        bad.append(f"{len(views)} of {len(merged)} merged nodes are in the tables")
    return bad
