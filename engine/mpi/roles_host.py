"""Hosting model/roles' sans-I/O roles (treesplit, tds, root, leaf) on the MPI runtime.

The adapter turns the roles' Actions into what the runtime carries out: packages for the workers, message
bytes (msg.encode(), rebuilt on arrival with model.roles.decode: struct + numpy records, never pickle),
and timers, which it keeps itself on the IO thread's 1 ms tick. Rank 0 also assembles the search's result
from every rank's final report: the chosen move, the root's statistics and a snapshot of the top of the
tree (each search rank reports its most visited nodes; rank 0 links them as the simulator does, with
model/roles/snapshot.py).
"""

from __future__ import annotations

import heapq
import itertools
from typing import Any

import numpy as np

from engine.mpi.config import DistributedConfig
from model.errors import ConfigError
from model.trace import MESSAGE_KINDS

TREE_NODES = 400  # nodes per rank in the final snapshot (the most visited ones)
PV_NODES = 64  # without a trace the reported nodes only give the result's principal variation: JSON for 400
# nodes per rank costs ~5 ms of a 0.1 s GTP move
TREE_DEPTH = 8
# rows of the final snapshot per search rank: a reported node brings its visited children, mostly leaves,
# ~10 rows a node (measured: 1,597 nodes linked into 14.8k rows, Go 9x9, 4 ranks, 20k simulations)
TREE_ROWS = 16 * TREE_NODES


def _game_spec(config: DistributedConfig):
    from model.game import GameSpec

    try:
        return GameSpec(name=config.game, size=config.board, komi=config.komi, **config.game_params)
    except TypeError as e:
        raise ConfigError(f"game_params: {e}") from None


def roles_layout(config: DistributedConfig):
    """The roles' Layout of a run: its search and broadcast ranks, workers a rank, peers a row goes to."""
    from model.roles import Layout

    peers = int(config.params.get("peers", 12))
    return Layout(config.ranks, config.resolved_bcast_ranks(), workers=max(1, config.workers), peers=peers)


def make_setup(config: DistributedConfig):
    """The roles' Setup: game params, root position after config.moves, positional history, budget."""
    from model import game
    from model.roles import Setup
    from model.uct import history_array

    if config.state is not None:
        g = np.asarray(config.g, dtype=np.int64)
        s = np.asarray(config.state, dtype=np.int64)
        history = (np.asarray(config.history, dtype=np.uint64) if config.history is not None
                   else history_array([game.position_hash(g, s)]))
        return Setup(g=g, root=s, history=history, sims=config.sims, seed=config.seed)
    g, s = _game_spec(config).make()
    hashes = [game.position_hash(g, s)]
    for i, a in enumerate(config.moves):
        if not game.play(g, s, np.int64(a)):
            raise ConfigError(f"moves: move {i + 1} ({a}) is illegal")
        hashes.append(game.position_hash(g, s))
    return Setup(g=g, root=s, history=history_array(hashes), sims=config.sims, seed=config.seed)


def check_config(config: DistributedConfig) -> None:
    from model.roles import ALGORITHMS, split_params

    if config.algo not in ALGORITHMS:
        raise ConfigError(f"algo: {config.algo!r} is not an MPI algorithm (known: {', '.join(ALGORITHMS)})")
    split_params(config.algo, config.params)
    roles_layout(config)  # checks it (model.algorithms.resolve_layout)
    _game_spec(config)


def make_roles_host(config: DistributedConfig, rank: int, world: int, cache: dict | None = None) -> "RolesHost":
    """cache (a session's, kept across searches): the rank's transposition table is reused when the
    algorithm, layout, game and table size stay the same, so the subtree of the moves played since is found
    again (model/tt.py time stamps; nothing is cleared); and the kernels are warmed up only once."""
    from model import game
    from model.roles import make_role

    check_config(config)
    layout = roles_layout(config)
    setup = make_setup(config)
    cache = {} if cache is None else cache
    key = (config.algo, layout, int(game.max_children(setup.g)), config.params.get("table_mb"))
    if cache.get("warm") != key:
        warm_up(config, layout, setup)
        cache["warm"] = key
    table = cache.get("table") if cache.get("table_key") == key else None
    role = make_role(config.algo, rank, layout, setup, config.params, table)
    if getattr(role, "t", None) is not None:
        if table is None:
            # Page the new table in before the clock starts: with transparent huge pages a node's first
            # expansion otherwise zeroes several 2 MiB pages (measured ~0.9 ms per new node on the VM).
            from model.tt import prefault

            prefault(role.t)
        cache["table"], cache["table_key"] = role.t, key
    return RolesHost(role, config, layout, setup)


def warm_up(config: DistributedConfig, layout, setup, sims_per_rank: int = 16) -> None:
    """Load (or compile) the numba kernels before the clock starts: a few simulations of the same algorithm
    and layout, every rank's role in this process (the loopback runtime), on small tables, duplicating
    nodes early so that the synchronisation kernels are loaded too."""
    import dataclasses

    from model.roles import Setup, make_roles
    from model.roles.loopback import BatchLoopback, Loopback
    from model.roles.params import ALGO_PARAMS

    params = dict(config.params, table_mb=1)
    own = {f.name for f in dataclasses.fields(ALGO_PARAMS[config.algo])}
    if "n_dup" in own and layout.search_ranks > 1:
        params.update(n_dup=2, n_sync_min=1, n_sync_max=2)
    tiny = Setup(g=setup.g, root=setup.root.copy(), history=setup.history,
                 sims=sims_per_rank * layout.search_ranks, seed=setup.seed)
    Loopback(make_roles(config.algo, layout, tiny, params), workers=layout.workers, serialize=True).run()
    if config.workers == 0:  # the batch kernels of a rank that runs its own packages (RolesHost.batch)
        roles = make_roles(config.algo, layout, tiny, params)
        for r in roles:
            if hasattr(r, "record_parts"):
                r.record_parts(True, stamps=True)
        BatchLoopback(roles, seed=setup.seed).run()
        from engine.mpi import native

        search = [r for r in roles if getattr(r, "batch", False)]
        if search and native.available():
            native.compile_turn(search[0])


class RolesHost:
    def __init__(self, role, config: DistributedConfig, layout, setup):
        from model.roles import decode

        self.role, self.config, self.layout, self.setup = role, config, layout, setup
        self.rank = role.rank
        self.inline = not layout.is_search(self.rank)  # broadcast ranks are single threaded (Schaefers 2014, 4.2.6)
        # A search rank without worker threads whose role runs its own packages: the IO loop hands it whole
        # batches of records and takes whole outboxes (rank.RankRuntime._loop_batch)
        self.batch = (not self.inline and config.workers == 0 and hasattr(role, "run_batch")
                      and role.batchable())
        role.batch = self.batch if hasattr(role, "batch") else False
        self._decode = decode
        self._timers: list = []  # heap of (due, seq, token)
        self._seq = itertools.count()
        self.now = 0.0

    def _out(self, acts):
        if not acts:
            return None
        for delay, token in acts.timers:
            heapq.heappush(self._timers, (self.now + delay, next(self._seq), token))
        msgs = [(m.dst, m.kind, m.record(), m.sim_id) for m in acts.msgs]
        return acts.pkgs, msgs

    # --- the runtime's calls ----------------------------------------------------------------------------------
    def start(self):
        return self._out(self.role.start())

    def on_message(self, src: int, kind: str, sim_id: int, payload):
        return self._out(self.role.on_message(self._decode(kind, src, self.rank, sim_id, payload)))

    # --- batches (self.batch) ---------------------------------------------------------------------------------
    def receive_batch(self, records, n: int, log: bool, src: int, t_send: float) -> None:
        self.role.receive_batch(records, n, log, src, t_send)

    def run_batch(self, max_ticks: int, log: bool) -> None:
        self.role.run_batch(max_ticks, log)

    def queued(self) -> int:
        return self.role.queued()

    def take_outbox(self):
        return self.role.take_outbox()

    def sent_counts(self) -> list[tuple[int, str, int, int]]:
        """(dst, kind, messages, bytes) the role sent itself (batch mode: the endpoint sees only batches)."""
        return self.role.sent_counts() if self.batch else []

    def record_received(self, rec, src: int, t_send: float, t_recv: float) -> None:
        """The trace's rows of the records received since the last call (all from src, sent at t_send)."""
        _, rx = self.role.take_logs(parts=False)
        rank = self.rank
        rec.messages.extend((t_send, t_recv, src, rank, MESSAGE_KINDS[int(k)], int(b), int(sim))
                            for k, b, sim in rx[:, :3].tolist())

    def record_parts_run(self, rec, t0: float, t1: float, c0: int, c1: int) -> None:
        """The trace's rows of the parts run_batch ran between t0 and t1 (cycle counter c0 .. c1)."""
        self.record_turn(rec, t0, t1, c0, c1, received=False)

    def record_turn(self, rec, t0: float, t1: float, c0: int, c1: int, received: bool = True) -> None:
        """The trace's rows of what a compiled turn (engine/mpi/native.py) did between t0 and t1, the cycle
        counter going from c0 to c1: the parts it ran, and the records it took in (their receive time from
        the counter, their send time from their batch)."""
        from engine.mpi.recorder import LOGGED

        (kinds, sims, s0, s1, steps), rx = self.role.take_logs(rx=received)
        scale = (t1 - t0) / (c1 - c0) if c1 > c0 else 0.0
        if len(kinds):
            starts = np.clip(t0 + (s0 - c0) * scale, t0, t1)
            ends = np.clip(t0 + (s1 - c0) * scale, t0, t1)
            rec.io_packages.append((t0, t1, -1, LOGGED, (starts, ends, kinds, sims, steps)))
        if received and len(rx):
            t_recv = np.clip(t0 + (rx[:, 5] - c0) * scale, t0, t1).tolist()
            rank = self.rank
            rec.messages.extend((ts, tr, int(src), rank, MESSAGE_KINDS[int(k)], int(b), int(sim))
                                for (k, b, sim, src, ts), tr in zip(rx[:, :5].tolist(), t_recv))

    def execute(self, pkg):
        return self.role.execute(pkg)

    def describe(self, pkg) -> tuple[str, int]:
        return pkg.kind, pkg.sim_id

    def record_parts(self, on: bool) -> None:
        self.role.record_parts(on, stamps=True)  # the runtime places logged parts (recorder.run_recorded)

    def on_work_done(self, pkg, result):
        return self._out(self.role.on_work_done(pkg, result))

    def tick(self, now: float):
        self.now = now
        if not self._timers or self._timers[0][0] > now:
            return None
        pkgs, msgs = [], []
        while self._timers and self._timers[0][0] <= now:
            _, _, token = heapq.heappop(self._timers)
            out = self._out(self.role.on_timer(token))
            if out:
                pkgs.extend(out[0])
                msgs.extend(out[1])
        return pkgs, msgs

    def stop(self):
        return self._out(self.role.stop())

    def final_sync(self):
        return self._out(self.role.final_sync())

    def quiescent(self) -> bool:
        return self.role.idle()

    def sims_done(self) -> int:
        return self.role.sims_done()

    def counters(self) -> dict[str, int]:
        st = self.role.stats()
        return {"sims_done": st.sims_done, "playouts_done": st.playouts, "nodes_stored": st.nodes_stored,
                "nodes_duplicated": st.nodes_duplicated, "in_flight": st.sims_started - st.sims_done,
                "queue_len": st.queue_len}

    def report(self) -> dict[str, Any]:
        rep = _jsonable(self.role.report())
        rep["search_rank"] = self.layout.is_search(self.rank)
        t = getattr(self.role, "t", None)
        if t is not None:
            from model.roles.snapshot import held_nodes

            rep["tree_nodes"] = held_nodes(self.role, TREE_NODES if self.config.trace else PV_NODES)
            rep["table_slots"] = int(t.key.shape[0])
            rep["kernel_ranks"] = int(getattr(self.role, "kernel_ranks", self.layout.search_ranks))
            dt = getattr(self.role, "dt", None)
            if dt is not None and self.layout.search_ranks > 1:
                rep["dup_digest"] = _dup_digest(t, dt)
        return rep

    def tree(self, reports: dict[int, dict] | None = None):
        if self.rank != 0 or not reports:
            return None
        return assemble_tree(self.setup, self.layout, reports)

    def result(self, reports: dict[int, dict]) -> dict[str, Any]:
        return search_result(self.config, self.setup, self.layout, reports)


# --- the result at rank 0 -----------------------------------------------------------------------------------
def search_result(config: DistributedConfig, setup, layout, reports: dict[int, dict]) -> dict[str, Any]:
    """The chosen move: the most visited root child that repeats no position of the game. After the final
    synchronisation every search rank that holds the root holds all of it (treesplit, root and hybrid share
    it; tds, dfuct and leaf keep it on one rank), so the rank with the most root visits speaks for the run."""
    from model.roles.snapshot import principal_variation
    from model.uct import repeats_history

    hosts = [reports[r]["host"] for r in sorted(reports)]
    search = [h for h in hosts if h.get("search_rank") and "root" in h]
    if not search:
        return {"move": -1, "move_str": "none", "root_visits": 0, "children": [], "pv": []}
    root = max(search, key=lambda rep: rep["root"]["visits"])["root"]
    visits = dict(zip(root["moves"], root["child_visits"]))
    values = dict(zip(root["moves"], root["child_value"]))
    root_visits, root_value = root["visits"], root["value"]
    order = sorted(visits, key=lambda m: (-visits[m], -values[m]))
    move = next((m for m in order if visits[m] > 0
                 and not repeats_history(setup.g, setup.root, int(m), setup.history)), -1)
    name = (lambda a: _action_name(config, a))
    n_move = visits.get(move, 0)
    digests = {rep["dup_digest"] for rep in search if rep.get("dup_digest") is not None}
    res = {
        "move": int(move),
        "move_str": name(move),
        "move_visits": int(n_move),
        "move_value": float(values.get(move, 0.0) / n_move) if n_move else 0.0,
        "root_visits": int(root_visits),
        "root_value": float(root_value / root_visits) if root_visits else float("nan"),
        "root_visits_by_rank": [int(rep["root"]["visits"]) for rep in search],
        # most visited first: [action, visits, mean value for the player to move at the root]
        "children": [[int(m), int(visits[m]), float(values[m] / visits[m]) if visits[m] else float("nan")]
                     for m in order],
        "pv": principal_variation(setup.g, setup.root, _reported_nodes(reports), move),
    }
    res["pv_names"] = [name(a) for a in res["pv"]]
    if digests and config.algo in ("treesplit", "root"):  # hybrid's groups duplicate different nodes
        res["dup_consistent"] = len(digests) == 1
    return res


def _action_name(config: DistributedConfig, action: int) -> str:
    from engine.commands.search import action_name

    return action_name(config.game, config.board, int(action))


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return obj


def _dup_digest(t, dt) -> str | None:
    """A fingerprint of the duplicated nodes' statistics here: equal on every rank after the final sync."""
    from model.roles.dup import D_ROWS

    rows = [r for r in range(int(dt.meta[D_ROWS])) if dt.ready[r] == 1]
    if not rows:
        return None
    parts = []
    for r in sorted(rows, key=lambda r: int(dt.key[r])):
        slot = int(dt.slot[r])
        nc = max(int(t.n_children[slot]), 0)
        parts.append((int(dt.key[r]), int(t.visits[slot]), int(t.child_visits[slot, :nc].sum())))
    import hashlib

    return hashlib.sha1(repr(parts).encode()).hexdigest()


def _reported_nodes(reports: dict[int, dict]) -> dict[int, list]:
    """hash -> the record of the node (model/roles/snapshot.py) that the ranks' final reports hold."""
    from model.roles.snapshot import merge_records

    return merge_records(reports[r]["host"].get("tree_nodes", ()) for r in sorted(reports))


def assemble_tree(setup, layout, reports: dict[int, dict]) -> dict[str, np.ndarray] | None:
    """The snapshot rank 0 links from the reported nodes (model/roles/snapshot.py, as the simulator's)."""
    from model.roles.snapshot import link

    M = layout.search_ranks
    rep0 = reports[0]["host"] if 0 in reports else {}
    cols = link(setup.g, setup.root, _reported_nodes(reports), int(rep0.get("kernel_ranks", M)),
                rep0.get("table_slots"), TREE_DEPTH, TREE_ROWS * max(1, M))
    n = len(cols["hash"])
    return {"t": np.zeros(n), **cols} if n else None
