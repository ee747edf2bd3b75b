"""One simulated run, from settings to figures: what `treesplit simulate` and `treesplit predict` call.

--param keys go to three places, by name: the algorithm's and UCT's parameters (model/roles/params.py),
`game.<field>` to the game (model.game.GameSpec: game.branching=8, game.cost=100, ...), and
`<table>.<field>` to the machine profile (network.latency=2e-6, costs.playout.median=1e-3, ...), and
`workload.<field>` to the statistical fidelity's workload (workload.syncs_per_sim=0.5).
"""

from __future__ import annotations

import dataclasses
import gc
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from model.algorithms import DISTRIBUTED, resolve_layout
from model.config import check
from model.errors import ConfigError
from sim.profile import Profile, load_profile
from sim.runtime import Cluster, World

FIDELITIES = ("functional", "statistical")
PROFILE_TABLES = ("node", "network", "io", "costs", "messages")
# Wall seconds per simulated work package on one core of the development machine (sim/benchmarks/sim.py
# measures them); only used to tell the user beforehand roughly how long a run will take.
WALL_PER_PACKAGE = {"functional": 20e-6, "statistical": 1.5e-6}  # bench sim, 2026-11-26 (the kernel)


@dataclass
class SimConfig:
    algo: str = "treesplit"
    profile: str = "oculus"
    nodes: int = 1                  # search nodes (each holds profile.node.ranks_per_node search ranks)
    bcast_nodes: int | None = None  # None: the algorithm's default (model.algorithms.resolve_layout)
    seconds: float = 0.1            # simulated seconds measured
    warmup: float | None = None     # simulated seconds before measuring (None: default_warmup, set by prepare)
    fidelity: str = "functional"
    game: str = "pgame"
    board: int = 19
    params: dict[str, Any] = field(default_factory=dict)
    workload: str | None = None     # statistical: fit from this trace directory (None: profile's / defaults)
    trace: str | None = None
    sample_rate: float = 1.0
    sample_interval: float = 0.01
    seed: int = 0
    drain: bool = False             # after the run: stop, drain, final sync (the conservation invariants)
    bundle: int = 1                 # statistical: simulations each modelled one stands for (sim/statistical.py)
    costs: str | None = None        # a profile whose node costs replace `profile`'s (sim.uncertainty.mixed)

    def validate(self) -> None:
        check(self.algo in DISTRIBUTED, "algo", f"unknown algorithm {self.algo!r} (known: {', '.join(DISTRIBUTED)})")
        check(isinstance(self.nodes, int) and self.nodes >= 1, "nodes", "need at least 1 node")
        check(self.bcast_nodes is None or (isinstance(self.bcast_nodes, int) and self.bcast_nodes >= 0),
              "bcast_nodes", "need a whole number >= 0")
        check(self.seconds > 0 and math.isfinite(self.seconds), "seconds", "need a simulated time > 0")
        check(self.warmup is None or self.warmup >= 0, "warmup", "need >= 0")
        check(self.fidelity in FIDELITIES, "fidelity", f"one of {', '.join(FIDELITIES)}")
        from model.game import NAMES

        check(self.game in NAMES, "game", f"one of {', '.join(NAMES)}")
        check(0 < self.sample_rate <= 1, "sample_rate", "need a fraction in (0, 1]")
        check(self.sample_interval > 0, "sample_interval", "need > 0")
        check(isinstance(self.bundle, int) and self.bundle >= 1, "bundle", "need a whole number >= 1")
        check(self.bundle == 1 or self.fidelity == "statistical", "bundle", "only the statistical fidelity bundles")

    @property
    def warmup_s(self) -> float:
        return 0.1 * self.seconds if self.warmup is None else self.warmup


def split_keys(params: dict[str, Any]) -> tuple[dict, dict, dict, dict]:
    """(algorithm params, game fields, profile overrides, workload fields) from one --param dict."""
    algo, game, prof, work = {}, {}, {}, {}
    for k, v in params.items():
        head = k.split(".", 1)[0]
        if "." in k and head == "game":
            game[k.split(".", 1)[1]] = v
        elif "." in k and head == "workload":
            work[k.split(".", 1)[1]] = v
        elif "." in k and head in PROFILE_TABLES:
            prof[k] = v
        else:
            algo[k] = v
    return algo, game, prof, work


def game_spec(cfg: SimConfig, fields: dict[str, Any]):
    from model.config import from_dict
    from model.game import GameSpec

    base = {"name": cfg.game, "size": cfg.board}
    if cfg.game == "pgame":
        # a tree wide and deep enough that a big cluster's simulations do not all meet in a few nodes
        base.update({"branching": 16, "depth": 40})
    base.update(fields)
    return from_dict(GameSpec, base, where="game.")


@dataclass
class Prepared:
    cfg: SimConfig
    profile: Profile
    world: Any  # sim.runtime.World (functional) or sim.statistical.StatWorld
    layout: Any
    roles: list
    meta: Any
    writer: Any
    workload: Any = None


def prepare(cfg: SimConfig, profile: Profile | None = None) -> Prepared:
    """Build the world for `cfg` (validates everything first; raises ConfigError/UserError on bad input)."""
    from model.game import trace_board
    from model.roles import Layout, Setup, make_role, split_params
    from engine.trace_files import TraceWriter
    from model.trace import Meta

    cfg.validate()
    algo_params, game_fields, _, work_fields = split_keys(cfg.params)
    prof = profile or resolve_profile(cfg)
    uct, own = split_params(cfg.algo, algo_params)
    if hasattr(own, "chain") and "chain" not in algo_params:
        own.chain = modelled_chain(own.chain, prof)
        algo_params = {**algo_params, "chain": own.chain}
    if cfg.warmup is None:
        cfg = dataclasses.replace(cfg, warmup=default_warmup(cfg, prof, own))
    rpn = prof.node.ranks_per_node
    M = cfg.nodes * rpn
    M, B = resolve_layout(cfg.algo, M, None if cfg.bcast_nodes is None else cfg.bcast_nodes * rpn, own)
    W = prof.node.workers_per_rank
    layout = Layout(search_ranks=M, bcast_ranks=B, workers=max(1, W), peers=getattr(own, "peers", 12))
    spec = game_spec(cfg, game_fields)
    workload = None
    roles = []
    if cfg.fidelity == "functional":
        g, root = spec.make()
        setup = Setup(g=g, root=root, seed=cfg.seed)
        roles = [make_role(cfg.algo, r, layout, setup, algo_params) for r in range(layout.world)]
    else:
        from sim.statistical import ALGOS as STAT_ALGOS

        if cfg.algo not in STAT_ALGOS:
            raise ConfigError(f"--algo {cfg.algo}: the statistical fidelity models {', '.join(STAT_ALGOS)}; "
                              f"use --fidelity functional")
        if cfg.drain:
            raise ConfigError("--drain: only the functional fidelity runs roles that can be drained")
        from sim.workload import default_workload, workload_from_dict

        if cfg.workload:
            from engine.trace_files import read_trace
            from sim.workload import fit_workload

            workload = fit_workload(read_trace(cfg.workload))
        else:
            workload = prof.workloads.get(cfg.algo) or default_workload(cfg.algo)
        if work_fields:
            from sim.profile import parse_scalar

            data = workload.to_toml()
            data.update({k: parse_scalar(str(v)) for k, v in work_fields.items()})
            workload = workload_from_dict(data)
    cluster = Cluster(M, B, rpn)
    meta = Meta(runtime="sim", algo=cfg.algo, game=cfg.game, board=trace_board(cfg.game, cfg.board),
                params={**dataclasses.asdict(uct), **dataclasses.asdict(own)}, ranks={"search": M, "broadcast": B},
                threads=W + 1, machine=f"profile {prof.name}", seed=cfg.seed, sample_rate=cfg.sample_rate,
                extra={"fidelity": cfg.fidelity, "bundle": cfg.bundle, "nodes": cfg.nodes, "warmup": cfg.warmup,
                       "bcast_nodes": cluster.bcast_nodes,
                       "profile": prof.to_toml(), "game_spec": dataclasses.asdict(spec),
                       "workload": workload.to_toml() if workload else None})
    writer = TraceWriter(cfg.trace, meta) if cfg.trace else None
    # the worlds charge what the workers pay (sharing a tree); the trace's meta keeps the profile as given
    charged = prof.contended()
    if cfg.fidelity == "statistical":
        from model.game import n_actions
        from sim.statistical import StatWorld

        world = StatWorld(cfg.algo, charged, cluster, layout, workload, own, seed=cfg.seed, trace_writer=writer,
                          sample_rate=cfg.sample_rate, sample_interval=cfg.sample_interval, bundle=cfg.bundle,
                          actions=int(n_actions(spec.make()[0])), rave=uct.rave)
    else:
        topo = None
        if B:
            from model.topology import Topology

            topo = Topology(B, layout.peers)
        world = World(charged, cluster, lambda r: roles[r], seed=cfg.seed, trace_writer=writer,
                      sample_rate=cfg.sample_rate, sample_interval=cfg.sample_interval,
                      bcast_peers=(lambda b: len(topo.in_peers(b))) if topo else None)
    return Prepared(cfg, prof, world, layout, roles, meta, writer, workload)


# How long a package's chain of simulations (params.chain) lasts in the engine that the default was set for:
# 64 simulations of 20-70 us on the 2-core VM (9x9 .. 19x19), enough to share a package's ~0.1 ms of Python.
CHAIN_SECONDS = 2e-3


def modelled_chain(chain: int, prof: Profile) -> int:
    """The default chain in simulations of the profile's length: as many as fill CHAIN_SECONDS (at least 1).
    A profile of 1 ms simulations (oculus: Gomorra) chains none; left at 64 it would finish a package's
    simulations together 64 ms after they began, longer than many measured windows. --param chain=N is kept."""
    seq = prof.sim_seconds()
    return max(1, min(chain, int(CHAIN_SECONDS / max(seq, 1e-9))))


def default_warmup(cfg: SimConfig, prof: Profile, own) -> float:
    """10 % of the measured time, but at least two simulation lifetimes: a run starts with S_par
    simulations at once, and until they have spread out (a simulation takes about `overload` sequential
    simulation times, queued behind the others) the rates are a transient. On oculus at 32 nodes the
    functional fidelity measured 0.001-0.01 s: 16 % below its steady rate (0.01-0.02 s)."""
    seq = prof.sim_seconds()
    return max(0.1 * cfg.seconds, 2.0 * getattr(own, "overload", 1) * seq)


def resolve_profile(cfg: SimConfig) -> Profile:
    prof = load_profile(cfg.profile)
    if cfg.costs:
        from sim.uncertainty import mixed

        prof = mixed(prof, load_profile(cfg.costs))
    over = split_keys(cfg.params)[2]
    return prof.with_overrides(over) if over else prof


def estimate_wall(cfg: SimConfig, profile: Profile | None = None) -> float:
    """A rough guess of the wall seconds a run will take (said before it starts): packages the cluster can
    run in the simulated time, times the wall cost of one (sim/benchmarks/sim.py measures it)."""
    prof = profile or resolve_profile(cfg)
    seq = prof.sim_seconds()
    workers = cfg.nodes * prof.node.ranks_per_node * prof.node.workers_per_rank
    pkgs_per_sim = 6.0 if cfg.algo in ("treesplit", "tds") else 3.0
    total = (cfg.seconds + cfg.warmup_s) * workers / max(seq, 1e-9) * pkgs_per_sim / cfg.bundle
    return total * WALL_PER_PACKAGE[cfg.fidelity]


SNAPSHOTS = 5  # tree snapshots a functional run records in its trace (the last one at its end)


def record_snapshot(p: Prepared, t: float) -> bool:
    """Append the top of the search tree, read from every search rank's role (model/roles/snapshot.py), to
    the trace's tree table; False for roles that keep no shared tree table (root's and leaf's are
    per rank or on the master: the snapshot then shows the rank that holds the root)."""
    import numpy as np

    from model.roles.snapshot import tree_rows

    search = [r for r in p.roles[: p.layout.search_ranks] if hasattr(r, "t") and hasattr(r, "dt")]
    if not search or not hasattr(search[0], "kernel_ranks"):
        return False
    rows = tree_rows(search)
    if len(rows["hash"]) == 0:
        return False
    p.writer.tree({"t": np.full(len(rows["hash"]), t), **rows})
    return True


def run(p: Prepared, progress: Callable[[float], None] | None = None) -> dict[str, Any]:
    """Run a prepared world; returns the summary (sim/summary.py) plus run facts."""
    from sim.summary import summarize

    cfg = p.cfg
    world = p.world
    snap = progress
    if p.writer is not None and p.roles:
        # tree snapshots, as the engine records them: every SNAPSHOT_EVERY of the run and at its end
        total = cfg.seconds + cfg.warmup_s
        every = total / SNAPSHOTS
        nxt = [every]

        def snap(t: float) -> None:
            if t >= nxt[0] - 1e-12 and t < total - 1e-12:
                record_snapshot(p, world.env.now)
                nxt[0] += every
            if progress:
                progress(t)

    res = world.run(cfg.seconds, warmup=cfg.warmup_s, progress=snap)
    res.extra["warmup"] = cfg.warmup_s
    loop_times = [getattr(r, "loop_time", getattr(r, "loop", 0.0)) for r in world.ranks]
    summary = summarize(res, loop_times)
    summary.update({"algo": cfg.algo, "profile": p.profile.name, "fidelity": cfg.fidelity, "nodes": cfg.nodes,
                    "bcast_nodes": world.cluster.bcast_nodes, "game": cfg.game})
    if cfg.drain:
        t0 = time.perf_counter()
        summary["drain"] = world.drain()
        summary["wall_s"] += time.perf_counter() - t0
    if p.writer is not None:
        if p.roles:
            record_snapshot(p, world.env.now)
        p.writer.close(t_end=summary["drain"]["t_quiet"] if cfg.drain else res.t_end)
        summary["trace"] = str(Path(cfg.trace))
    return summary


def simulate(cfg: SimConfig, progress: Callable[[float], None] | None = None,
             profile: Profile | None = None) -> dict[str, Any]:
    try:
        return run(prepare(cfg, profile), progress)
    finally:
        # A simulated world is a web of cycles (processes, roles, their tables) that only the cyclic collector
        # frees, and its big arrays do not count towards the collector's thresholds: a sweep of functional
        # dfuct runs from 1 to 128 CNs held 9 GB of dead worlds (and killed `experiment algorithms` once)
        gc.collect()
        _give_back_memory()


def _give_back_memory() -> None:
    """Hand the freed heap back to the OS (glibc keeps it otherwise: a functional dfuct run on 128 CNs left
    6.6 GB resident after it was freed, 0.2 GB after malloc_trim)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to do
        pass
