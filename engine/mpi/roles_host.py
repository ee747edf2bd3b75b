"""Hosting model/roles' sans-I/O roles (treesplit, tds, root, leaf) on the MPI runtime.

The adapter turns the roles' Actions into what the runtime carries out: packages for the workers, message
bytes (msg.encode(), rebuilt on arrival with model.roles.decode: struct + numpy records, never pickle),
and timers, which it keeps itself on the IO thread's 1 ms tick. Rank 0 also assembles the search's result
from every rank's final report: the chosen move, the root's statistics and a snapshot of the top of the
tree (each search rank reports its most visited nodes; rank 0 links them by replaying the moves).
"""

from __future__ import annotations

import heapq
import itertools
from typing import Any

import numpy as np

from engine.mpi.config import DistributedConfig
from model.errors import ConfigError

TREE_NODES = 400  # nodes per rank in the final snapshot (the most visited ones)
TREE_DEPTH = 8


def _game_spec(config: DistributedConfig):
    from model.game import GameSpec

    try:
        return GameSpec(name=config.game, size=config.board, komi=config.komi, **config.game_params)
    except TypeError as e:
        raise ConfigError(f"game_params: {e}") from None


def _layout(config: DistributedConfig):
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
    layout = _layout(config)
    if layout.bcast_ranks and config.algo not in ("treesplit", "hybrid"):
        raise ConfigError(f"bcast_ranks: {config.algo} has no broadcast ranks")
    _game_spec(config)


def make_roles_host(config: DistributedConfig, rank: int, world: int, cache: dict | None = None) -> "RolesHost":
    """cache (a session's, kept across searches): the rank's transposition table is reused when the
    algorithm, layout, game and table size stay the same, so the subtree of the moves played since is found
    again (model/tt.py time stamps; nothing is cleared); and the kernels are warmed up only once."""
    from model import game
    from model.roles import make_role

    check_config(config)
    layout = _layout(config)
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
    from model.roles.loopback import Loopback
    from model.roles.params import ALGO_PARAMS

    params = dict(config.params, table_mb=1)
    own = {f.name for f in dataclasses.fields(ALGO_PARAMS[config.algo])}
    if "n_dup" in own and layout.search_ranks > 1:
        params.update(n_dup=2, n_sync_min=1, n_sync_max=2)
    tiny = Setup(g=setup.g, root=setup.root.copy(), history=setup.history,
                 sims=sims_per_rank * layout.search_ranks, seed=setup.seed)
    Loopback(make_roles(config.algo, layout, tiny, params), workers=layout.workers, serialize=True).run()


class RolesHost:
    def __init__(self, role, config: DistributedConfig, layout, setup):
        from model.roles import decode

        self.role, self.config, self.layout, self.setup = role, config, layout, setup
        self.rank = role.rank
        self.inline = not layout.is_search(self.rank)  # broadcast ranks are single threaded (seed 000 4.2.6)
        self._decode = decode
        self._timers: list = []  # heap of (due, seq, token)
        self._seq = itertools.count()
        self.now = 0.0

    def _out(self, acts):
        if not acts:
            return None
        for delay, token in acts.timers:
            heapq.heappush(self._timers, (self.now + delay, next(self._seq), token))
        msgs = [(m.dst, m.kind, m.encode(), m.sim_id) for m in acts.msgs]
        return acts.pkgs, msgs

    # --- the runtime's calls ----------------------------------------------------------------------------------
    def start(self):
        return self._out(self.role.start())

    def on_message(self, src: int, kind: str, sim_id: int, payload: bytes):
        return self._out(self.role.on_message(self._decode(kind, src, self.rank, sim_id, payload)))

    def execute(self, pkg):
        return self.role.execute(pkg)

    def describe(self, pkg) -> tuple[str, int]:
        return pkg.kind, pkg.sim_id

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
            rep["tree_nodes"] = _top_nodes(t, getattr(self.role, "dt", None), TREE_NODES)
            rep["table_slots"] = int(t.key.shape[0])
            dt = getattr(self.role, "dt", None)
            if dt is not None and self.layout.search_ranks > 1:
                rep["dup_digest"] = _dup_digest(t, dt)
        return rep

    def tree(self, reports: dict[int, dict] | None = None):
        if self.rank != 0 or not reports:
            return None
        return _assemble_tree(self.setup, self.layout, reports)

    def result(self, reports: dict[int, dict]) -> dict[str, Any]:
        return search_result(self.config, self.setup, self.layout, reports)


# --- the result at rank 0 -----------------------------------------------------------------------------------
def search_result(config: DistributedConfig, setup, layout, reports: dict[int, dict]) -> dict[str, Any]:
    """The chosen move: the most visited root child that repeats no position of the game. After the final
    synchronisation every search rank that holds the root holds all of it (treesplit, root and hybrid share
    it; tds, dfuct and leaf keep it on one rank), so the rank with the most root visits speaks for the run."""
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
        "pv": _principal_variation(setup, _reported_nodes(reports)[0], move),
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


def _top_nodes(t, dt, limit: int) -> list:
    """[[hash, visits, value, [moves], [child visits], [child values], duplicated], ...] of the most visited
    nodes stored here in the current search (children without visits left out)."""
    live = np.flatnonzero((t.stamp == t.meta[0]) & (t.visits > 0))
    if len(live) > limit:
        live = live[np.argsort(t.visits[live])[-limit:]]
    out = []
    for slot in live.tolist():
        nc = max(int(t.n_children[slot]), 0)
        cv = t.child_visits[slot, :nc]
        keep = np.flatnonzero(cv > 0)
        out.append([int(t.key[slot]), int(t.visits[slot]), float(t.value[slot]),
                    t.child_move[slot, keep].astype(int).tolist(), cv[keep].astype(int).tolist(),
                    t.child_value[slot, keep].astype(float).tolist(),
                    bool(dt is not None and dt.row_of[slot] >= 0)])
    return out


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


def _reported_nodes(reports: dict[int, dict]) -> tuple[dict[int, list], set[int]]:
    """hash -> the most visited report of that node (the owner's, or any copy of a duplicated node), and
    the hashes of duplicated nodes."""
    nodes: dict[int, list] = {}
    dup: set[int] = set()
    for rank in sorted(reports):
        for e in reports[rank]["host"].get("tree_nodes", ()):
            h = e[0]
            if e[6]:
                dup.add(h)
            if h not in nodes or e[1] > nodes[h][1]:
                nodes[h] = e
    return nodes, dup


def _principal_variation(setup, nodes: dict[int, list], first: int, max_len: int = 20) -> list[int]:
    """The chosen move, then the most visited child of each reported node after it."""
    from model import game

    if first < 0:
        return []
    pv, s = [first], setup.root.copy()
    if not game.play(setup.g, s, np.int64(first)):
        return pv
    while len(pv) < max_len:
        e = nodes.get(int(game.hash(setup.g, s)))
        if e is None or not e[4]:
            break
        m = e[3][int(np.argmax(e[4]))]
        if not game.play(setup.g, s, np.int64(m)):
            break
        pv.append(int(m))
    return pv


def _assemble_tree(setup, layout, reports: dict[int, dict]) -> dict[str, list] | None:
    """Link the reported nodes into the tree below the root (breadth first, by replaying moves)."""
    from model import game
    from model.ownership import owner

    nodes, dup_hashes = _reported_nodes(reports)
    if not nodes:
        return None
    M = layout.search_ranks
    local_slots = reports[0]["host"].get("table_slots") if 0 in reports else None
    g, root = setup.g, setup.root
    cols: dict[str, list] = {k: [] for k in ("hash", "parent", "move", "depth", "visits", "wins", "owner",
                                              "duplicated")}
    frontier = [(root.copy(), int(game.hash(g, root)), 0, -1, 0, None)]
    seen = set()
    while frontier and len(cols["hash"]) < TREE_NODES * max(1, M):
        nxt = []
        for s, h, parent, move, depth, wins in frontier:
            if h in seen or h not in nodes:
                continue
            seen.add(h)
            _, visits, value, moves, cvis, cval, _ = nodes[h]
            cols["hash"].append(h)
            cols["parent"].append(parent)
            cols["move"].append(move)
            cols["depth"].append(depth)
            cols["visits"].append(visits)
            cols["wins"].append(value if wins is None else wins)  # the mover's reward sum (root: its own)
            cols["owner"].append(int(owner(np.uint64(h), M, local_slots)) if local_slots and M > 1 else 0)
            cols["duplicated"].append(h in dup_hashes)
            if depth >= TREE_DEPTH:
                continue
            for m, w in zip(moves, cval):
                c = s.copy()
                if game.play(g, c, np.int64(m)):
                    nxt.append((c, int(game.hash(g, c)), h, int(m), depth + 1, float(w)))
        frontier = nxt
    n = len(cols["hash"])
    return {"t": [0.0] * n, **cols}
