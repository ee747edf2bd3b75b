"""A stand-in distributed search for the MPI runtime's tests: small, fast and with exact bookkeeping.

Search ranks 0..M-1 each keep `inflight` simulations going. A simulation is SELECT steps, each at some rank
(after a step it moves to a random search rank with a MOVE message), then a PLAYOUT, then UPDATE messages to
every rank it visited; the origin rank counts it done when its own UPDATE arrives ("root visits"). Every
`sync_every` completed simulations a rank sends a SYNC to its broadcast rank, which holds it for `delay`
seconds and sends BCAST to the other search ranks. Counters let the tests check that nothing is lost or
doubled, with the same Host protocol (engine.mpi.host) the real roles use.
"""

from __future__ import annotations

import random
import struct
import time

MOVE = struct.Struct("<qiii")  # sim_id, origin, steps left, number of visited ranks; then visited ranks
UPD = struct.Struct("<qi")


class SearchHost:
    inline = False

    def __init__(self, cfg, rank, world):
        p = cfg.params
        self.rank, self.M = rank, cfg.ranks
        self.B = world - cfg.ranks
        self.inflight = int(p.get("inflight", 4))
        self.depth = int(p.get("depth", 3))
        self.hop = float(p.get("hop", 0.5))
        self.work = float(p.get("work", 0.0002))
        self.sync_every = int(p.get("sync_every", 5))
        self.fail_after = int(p.get("fail_after", -1)) if int(p.get("fail_rank", -1)) == rank else -1
        self.hang_after = int(p.get("hang_after", -1)) if int(p.get("hang_rank", -1)) == rank else -1
        self.rng = random.Random(cfg.seed * 1000 + rank)
        self.next_id = 0
        self.stopped = False
        self.c = dict(sims_done=0, playouts_done=0, nodes_stored=0, nodes_duplicated=0, in_flight=0,
                      updates_applied=0, updates_sent=0, moves_in=0, bcast_in=0, sync_sent=0, started=0)
        self.unsynced = 0
        self.root = [0] * 5

    # --- simulations ---
    def _new_sim(self):
        sid = (self.rank << 40) | self.next_id
        self.next_id += 1
        self.c["started"] += 1
        self.c["in_flight"] += 1
        return ("select", sid, self.rank, self.depth, [self.rank])

    def start(self):
        return [self._new_sim() for _ in range(self.inflight)], []

    def execute(self, pkg):
        if pkg[0] == "playout":
            if self.fail_after >= 0 and self.c["playouts_done"] >= self.fail_after:
                raise RuntimeError("stand-in failure injected")
            time.sleep(self.work)
            return self.rng.random()
        return self.rng.randrange(5)

    def describe(self, pkg):
        return pkg[0], pkg[1]

    def on_work_done(self, pkg, result):
        kind, sid, origin, left, visited = pkg
        if kind == "select":
            self.c["nodes_stored"] += 1
            if left <= 1:
                return [("playout", sid, origin, 0, visited)], []
            if self.M > 1 and self.rng.random() < self.hop:
                dst = self.rng.choice([r for r in range(self.M) if r != self.rank])
                return [], [(dst, "MOVE", self._move(sid, origin, left - 1, visited + [dst]), sid)]
            return [("select", sid, origin, left - 1, visited)], []
        self.c["playouts_done"] += 1
        msgs = [(r, "UPDATE", UPD.pack(sid, origin), sid) for r in sorted(set(visited))]
        self.c["updates_sent"] += len(msgs)
        return [], msgs

    @staticmethod
    def _move(sid, origin, left, visited):
        return MOVE.pack(sid, origin, left, len(visited)) + struct.pack(f"<{len(visited)}i", *visited)

    def on_message(self, src, kind, sim_id, payload):
        if kind == "MOVE":
            if 0 <= self.hang_after <= self.c["moves_in"]:
                time.sleep(3600)  # a role call that never returns (the IO thread's watchdog must fire)
            sid, origin, left, n = MOVE.unpack_from(payload)
            visited = list(struct.unpack_from(f"<{n}i", payload, MOVE.size))
            self.c["moves_in"] += 1
            return [("select", sid, origin, left, visited)], []
        if kind == "UPDATE":
            sid, origin = UPD.unpack(payload)
            self.c["updates_applied"] += 1
            if origin != self.rank:
                return None
            self.c["sims_done"] += 1
            self.c["in_flight"] -= 1
            self.root[sid % 5] += 1
            self.unsynced += 1
            msgs = []
            if self.B and self.unsynced >= self.sync_every:
                msgs.append(self._sync())
            pk = [] if self.stopped else [self._new_sim()]
            return pk, msgs
        if kind == "BCAST":
            self.c["bcast_in"] += 1
            return None
        raise ValueError(f"unexpected {kind}")

    def _sync(self):
        n, self.unsynced = self.unsynced, 0
        self.c["sync_sent"] += 1
        return (self.M + self.rank % self.B, "SYNC", struct.pack("<ii", self.rank, n), -1)

    def tick(self, now):
        return None

    def stop(self):
        self.stopped = True
        return None

    def final_sync(self):
        return ([], [self._sync()]) if self.B and self.unsynced else None

    def quiescent(self):
        return True

    def sims_done(self):
        return self.c["sims_done"]

    def counters(self):
        return self.c

    def report(self):
        return {"role": "search", "root": list(self.root), **self.c}

    def tree(self, reports=None):
        return {"t": [0.0], "hash": [self.rank + 1], "parent": [0], "move": [-1], "depth": [0],
                "visits": [self.c["sims_done"]], "wins": [0.0], "owner": [self.rank], "duplicated": [False]}

    def result(self, reports):
        root = [sum(r["host"].get("root", [0] * 5)[i] for r in reports.values()) for i in range(5)]
        return {"move": max(range(5), key=root.__getitem__), "root_visits": sum(root),
                "updates_sent": sum(r["host"].get("updates_sent", 0) for r in reports.values()),
                "updates_applied": sum(r["host"].get("updates_applied", 0) for r in reports.values()),
                "sync_sent": sum(r["host"].get("sync_sent", 0) for r in reports.values()),
                "bcast_in": sum(r["host"].get("bcast_in", 0) for r in reports.values())}


class BroadcastHost:
    inline = True

    def __init__(self, cfg, rank, world):
        self.rank, self.M = rank, cfg.ranks
        self.delay = float(cfg.params.get("delay", 0.002))
        self.held = []  # (due, payload)
        self.now = 0.0
        self.c = dict(sims_done=0, playouts_done=0, nodes_stored=0, nodes_duplicated=0, in_flight=0, merged=0)

    def start(self):
        return None

    def on_message(self, src, kind, sim_id, payload):
        self.held.append((self.now + self.delay, src, payload))
        return None

    def tick(self, now):
        self.now = now
        if not self.held or self.held[0][0] > now:
            return None
        due = [h for h in self.held if h[0] <= now]
        self.held = [h for h in self.held if h[0] > now]
        msgs = [(r, "BCAST", payload, -1) for _, src, payload in due for r in range(self.M) if r != src]
        self.c["merged"] += len(due)
        return [], msgs

    def stop(self):
        return None

    def final_sync(self):
        return None

    def quiescent(self):
        return not self.held

    def execute(self, pkg):
        return None

    def describe(self, pkg):
        return "bcast", -1

    def on_work_done(self, pkg, result):
        return None

    def sims_done(self):
        return self.c["sims_done"]

    def counters(self):
        return self.c

    def report(self):
        return {"role": "broadcast", **self.c}

    def tree(self, reports=None):
        return None

    def result(self, reports):
        return {}


def make(cfg, rank, world):
    return SearchHost(cfg, rank, world) if rank < cfg.ranks else BroadcastHost(cfg, rank, world)
