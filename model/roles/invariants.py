"""What must hold after a UCT-Treesplit / TDS search has drained and synchronised (any runtime that keeps
the roles in one process can check it: loopback tests, the functional simulator).

`treesplit_problems(search_roles, messages)` returns a list of violations (empty: all good):
  - every search rank completed its share; the root's visits on every rank that holds it equal the
    simulations completed (plus those an earlier search on a kept table left at the root);
  - every duplicated node is usable on every rank with the same statistics there, equal to the owner's
    DUP snapshot plus every SYNC increment any search rank sent (given the sent messages);
  - nothing is left in the delta counters or as virtual loss;
  - every edge and node update a finished simulation asked for was applied exactly once: the visits in
    all the tables (each distributed node on its owner, each duplicated node once) add up to the records
    of the finished simulations;
  - every message of each kind sent was received once.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

from model.ownership import owner
from model.roles.dup import D_DROPPED, D_ROWS
from model.roles.messages import DUP, MERGE, NODE_ROW, SYNC, Record


def _node(t, slot):
    nc = max(int(t.n_children[slot]), 0)
    return (int(t.visits[slot]), float(t.value[slot]), tuple(t.child_move[slot, :nc].tolist()),
            tuple(t.child_visits[slot, :nc].tolist()), tuple(t.child_value[slot, :nc].tolist()),
            tuple(t.amaf_visits[slot, :nc].tolist()), tuple(np.round(t.amaf_value[slot, :nc], 3).tolist()))


def treesplit_problems(roles, messages=None, all_roles=None, between=()) -> list[str]:
    """roles: the search ranks' TreesplitSearch (or RootSearch) objects, rank order. messages: Message
    objects the search ranks sent (to check shared nodes against snapshot + increment sums), or None.
    all_roles: every rank's role, for the sent == received check (defaults to roles); between: message kinds
    that also go to ranks outside `roles` (left out of that check)."""
    bad: list[str] = []
    M = len(roles)
    if not any(r.holds_root() for r in roles):
        bad.append("no rank holds the root's statistics")
    done = sum(r.done for r in roles)
    # a kept table's root starts with an earlier search's visits on the rank that brings them, zero elsewhere
    kept = max((getattr(r, "root_kept", 0) for r in roles if r.holds_root()), default=0)
    for r in roles:
        if r.quota is not None and not r.stopped and r.done != r.quota:
            bad.append(f"rank {r.rank}: completed {r.done} of its {r.quota} simulations")
        if r.done != r.started:
            bad.append(f"rank {r.rank}: started {r.started} simulations, completed {r.done}")
        if r.holds_root() and int(r.t.visits[r.root_slot]) != done + kept:
            bad.append(f"rank {r.rank}: root visits {int(r.t.visits[r.root_slot])} != simulations completed {done}"
                       + (f" + {kept} kept from an earlier search" if kept else ""))
        if np.any(r.t.vloss != 0):
            bad.append(f"rank {r.rank}: virtual loss left on {int(np.count_nonzero(r.t.vloss))} edges")
        dt = r.dt
        used = int(dt.meta[D_ROWS])
        if (np.any(dt.n[:used] != 0) or np.any(dt.node_n[:used] != 0) or np.any(dt.an[:used] != 0)
                or np.any(dt.w[:used] != 0) or np.any(dt.node_w[:used] != 0)):
            bad.append(f"rank {r.rank}: increments left unsent after the final synchronisation")
        if int(dt.meta[D_DROPPED]) or r.counts["update_missing"]:
            bad.append(f"rank {r.rank}: {int(dt.meta[D_DROPPED])} sync rows dropped, "
                       f"{r.counts['update_missing']} update records found no node")

    # duplicated nodes: same everywhere, = DUP snapshot + all SYNC increments
    dup_hashes = set()
    for r in roles:
        dt = r.dt
        for row in range(int(dt.meta[D_ROWS])):
            dup_hashes.add(int(dt.key[row]))
    views: dict[int, list] = defaultdict(list)
    for r in roles:
        dt = r.dt
        for row in range(int(dt.meta[D_ROWS])):
            if dt.ready[row] == 1:
                views[int(dt.key[row])].append((r.rank, _node(r.t, int(dt.slot[row]))))
    for h in dup_hashes:
        v = views.get(h, [])
        if M > 1 and len(v) != M:
            bad.append(f"node {h:#x}: duplicated on {len(v)} of {M} ranks")
        if len({x[1][:5] for x in v}) > 1:
            bad.append(f"node {h:#x}: statistics differ between ranks after the final synchronisation")
    if messages is not None and M > 1:
        want_n: Counter = Counter()
        want_w: Counter = Counter()
        seen = set()
        for m in messages:
            # without broadcast ranks one sync job's rows go to every other rank: count them once (a search
            # rank's records carry the sync job's number and the first row's index in it)
            if m.kind not in (DUP, SYNC, MERGE) or m.src >= M:
                continue
            key = ((m.src, m.kind, m.payload.origin, m.payload.dim) if isinstance(m.payload, Record)
                   else id(m.payload.rows))
            if key not in seen:
                seen.add(key)
                for row in m.payload.rows:
                    key = (int(row["hash"]), int(row["idx"]))
                    want_n[key] += int(row["n"])
                    want_w[key] += float(row["w"])
        for h, v in views.items():
            _, (visits, value, moves, cv, cw, _, _) = v[0]
            got = {(h, NODE_ROW): (visits, value)}
            for j in range(len(moves)):
                got[(h, j)] = (cv[j], cw[j])
            for key, (n, w) in got.items():
                if want_n[key] != n or abs(want_w[key] - w) > 1e-3 * max(1.0, abs(w)):
                    bad.append(f"node {h:#x} idx {key[1]}: has ({n}, {w:g}) but DUP + SYNC sent "
                               f"({want_n[key]}, {want_w[key]:g})")
                    break

    # every requested update applied once
    edges = sum(r.counts["edges_finished"] for r in roles)
    records = sum(r.counts["records_finished"] for r in roles)
    tot_edges = 0
    tot_nodes = 0
    for r in roles:
        t = r.t
        live = np.flatnonzero(t.stamp == t.meta[0])
        for slot in live.tolist():
            if M > 1 and r.dt.row_of[slot] >= 0:
                continue
            if r.kernel_ranks > 1 and owner(t.key[slot], M, r.local_slots) != getattr(r, "lrank", r.rank):
                if t.visits[slot] != 0:
                    bad.append(f"rank {r.rank}: holds statistics of node {int(t.key[slot]):#x} it does not own")
                continue
            tot_nodes += int(t.visits[slot])
            nc = max(int(t.n_children[slot]), 0)
            tot_edges += int(t.child_visits[slot, :nc].sum())
    for h, v in views.items():
        _, (visits, _, _, cv, _, _, _) = v[0]
        tot_nodes += visits
        tot_edges += sum(cv)
    if tot_edges != edges:
        bad.append(f"edge visits in the tables add up to {tot_edges}, finished simulations asked for {edges}")
    if tot_nodes != records:
        bad.append(f"node visits in the tables add up to {tot_nodes}, finished simulations asked for {records}")

    everyone = all_roles if all_roles is not None else roles
    sent: Counter = Counter()
    received: Counter = Counter()
    for r in everyone:
        sent.update({k: v for k, v in r.sent.items() if k not in between})
        received.update({k: v for k, v in r.received.items() if k not in between})
    if sent != received:
        bad.append(f"messages sent {dict(sent)} != received {dict(received)}")
    updates = sum(r.counts["updates"] for r in roles)
    asked = received["UPDATE"] + sum(r.counts["updates_local"] for r in roles)
    if updates != asked:
        bad.append(f"{updates} update packages ran, {asked} were asked for")
    return bad
