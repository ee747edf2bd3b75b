"""UCT-Treesplit's broadcast rank (Schaefers 2014, 4.2.6): delay, merge and spread synchronisation messages.

Each search rank sends its DUP and SYNC messages to its broadcast partner only, and hears the other ranks'
only from it. A broadcast rank
  - takes DUP/SYNC rows from its search ranks (its "clients") and BCAST messages from its peers;
  - holds them for `bcast_delay` seconds (a timer the runtime keeps) so that rows for the same node, from
    any number of sources, merge into one (messages per search rank then stop doubling with M);
  - then, in one `bcast` package, merges and sends: BCAST to the next broadcast ranks along the m-connected
    k-ary n-cube (model/topology.py; a message's origin and dimension decide where it goes next), and one
    SYNC (DUP when it carries a node's full child list) to each client, never echoing a client's own rows.

Rows are additive, so merging is exact: every increment reaches every search rank but its source once.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from model.roles.base import BCAST as BCAST_PKG
from model.roles.base import Actions, Layout, Package, Role, RoleStats
from model.roles.messages import BCAST, DUP, NODE_ROW, SYNC, Message, Stats, merge_stats
from model.roles.params import TreesplitParams
from model.topology import Topology


class TreesplitBroadcast(Role):
    def __init__(self, rank: int, layout: Layout, params: TreesplitParams | None = None):
        self.rank, self.layout = rank, layout
        self.params = params or TreesplitParams()
        if not layout.search_ranks <= rank < layout.world:
            raise ValueError(f"rank {rank} is not a broadcast rank of {layout}")
        self.index = rank - layout.search_ranks
        self.topo = Topology(layout.bcast_ranks, layout.peers)
        self.clients = layout.clients(rank)
        self.delay = float(self.params.bcast_delay)
        # (origin, dimension) -> row arrays to pass on in the network; client -> row arrays to deliver
        self.fwd: dict[tuple[int, int], list[np.ndarray]] = {}
        self.deliver: dict[int, list[np.ndarray]] = {c: [] for c in self.clients}
        self.held = 0
        self.timer_set = False
        self.outstanding = 0
        self.stopped = False
        self.sent = Counter()
        self.received = Counter()
        self.counts = Counter()

    def on_message(self, msg: Message) -> Actions:
        self.received[msg.kind] += 1
        if msg.kind in (SYNC, DUP):
            if not self.layout.is_search(msg.src):
                raise ValueError(f"broadcast rank {self.rank}: {msg.kind} from non-search rank {msg.src}")
            key = (self.index, self.topo.n)  # this rank is the broadcast's origin
            sources = {msg.src}
        elif msg.kind == BCAST:
            key = (msg.payload.origin, msg.payload.dim)
            sources = set()
        else:
            raise ValueError(f"broadcast rank {self.rank}: unexpected {msg.kind} message")
        rows = msg.payload.rows
        if self.topo.forwards(key[0], self.index, key[1]):
            self.fwd.setdefault(key, []).append(rows)
        for c in self.clients:
            if c not in sources:
                self.deliver[c].append(rows)
        self.held += 1
        out = Actions()
        if self.delay <= 0 or self.stopped:
            self._flush(out)
        elif not self.timer_set:
            self.timer_set = True
            out.timers.append((self.delay, "flush"))
        return out

    def on_timer(self, token) -> Actions:
        self.timer_set = False
        out = Actions()
        self._flush(out)
        return out

    def _flush(self, out: Actions) -> None:
        if not self.held:
            return
        job = (self.fwd, self.deliver)
        self.fwd, self.deliver = {}, {c: [] for c in self.clients}
        self.counts["merged_in"] += self.held
        self.held = 0
        self.outstanding += 1
        out.pkgs.append(Package(BCAST_PKG, -1, job))

    def execute(self, pkg: Package):
        fwd, deliver = pkg.payload
        sends = []
        for (origin, dim), parts in fwd.items():
            rows = merge_stats(np.concatenate(parts)) if len(parts) > 1 else parts[0]
            for dst, nd in self.topo.forwards(origin, self.index, dim):
                sends.append((BCAST, self.layout.search_ranks + dst, Stats(rows, origin, nd)))
        for c, parts in deliver.items():
            if not parts:
                continue
            rows = merge_stats(np.concatenate(parts)) if len(parts) > 1 else parts[0]
            full = bool(np.any((rows["idx"] == NODE_ROW) & (rows["move"] >= 0)))
            sends.append((DUP if full else SYNC, c, Stats(rows)))
        return sends

    def on_work_done(self, pkg: Package, result) -> Actions:
        self.outstanding -= 1
        out = Actions()
        for kind, dst, payload in result:
            self.sent[kind] += 1
            out.msgs.append(Message(kind, self.rank, dst, payload))
        return out

    def stop(self) -> Actions:
        self.stopped = True
        out = Actions()
        self._flush(out)
        return out

    def final_sync(self) -> Actions:
        return self.stop()

    def idle(self) -> bool:
        return self.held == 0 and self.outstanding == 0

    def finished(self) -> bool:
        return self.stopped and self.idle()

    def stats(self) -> RoleStats:
        st = RoleStats(queue_len=self.outstanding, messages_sent=dict(self.sent),
                       messages_received=dict(self.received))
        st.extra = dict(self.counts)
        return st

