"""What the runtime asks of the roles it hosts: the `Host` protocol, and how a host is found for a config.

A host wraps one rank's role (a search rank, a broadcast rank, a master, ...) and speaks in plain values:

    start() -> Out                                    the first work and messages
    on_message(src, kind, sim_id, payload) -> Out     a message from another rank (payload: bytes)
    on_work_done(pkg, result) -> Out                  a package a worker (or the IO thread) finished
    execute(pkg) -> result                            run one package; called on worker threads
    describe(pkg) -> (kind, sim_id)                   package kind (model.trace.PACKAGE_KINDS) for the trace
    record_parts(on)                                  (optional) the trace records packages: the role runs
                                                      them so that each part gets a record of its own
    tick(now) -> Out                                  time passes (broadcast ranks delay and merge by it)
    stop() -> Out                                     start no new simulations
    final_sync() -> Out                               push the last synchronisation (duplicated nodes)
    quiescent() -> bool                               nothing held back (delayed messages, timers)
    sims_done() -> int                                simulations completed here (cumulative; read at every
                                                      progress count, every 2-20 ms: must cost microseconds)
    counters() -> dict                                sims_done, playouts_done, nodes_stored, nodes_duplicated,
                                                      in_flight (cumulative; read every telemetry sample)
    report() -> dict                                  JSON-able final statistics of this rank
    tree(reports) -> dict of columns | None           a snapshot of the top of the tree (trace `tree` table);
                                                      rank 0 gets every rank's report, the others {}
    result(reports) -> dict                           rank 0 only: the chosen move etc. from all REPORTs
    inline: bool                                      True: the IO thread runs the packages (broadcast ranks)

Out is (packages, messages) with messages a list of (dst, kind, payload: bytes, sim_id).
Messages to the rank itself are delivered locally, without MPI.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

from engine.mpi.config import DistributedConfig
from engine.mpi.roles_host import check_config as check_roles, make_roles_host
from model.errors import ConfigError

Out = tuple[list, list[tuple[int, str, bytes, int]]]
NOTHING: Out = ((), ())


class Host(Protocol):
    inline: bool

    def start(self) -> Out: ...
    def on_message(self, src: int, kind: str, sim_id: int, payload: bytes) -> Out: ...
    def on_work_done(self, pkg: Any, result: Any) -> Out: ...
    def execute(self, pkg: Any) -> Any: ...
    def describe(self, pkg: Any) -> tuple[str, int]: ...
    def tick(self, now: float) -> Out: ...
    def stop(self) -> Out: ...
    def final_sync(self) -> Out: ...
    def quiescent(self) -> bool: ...
    def sims_done(self) -> int: ...
    def counters(self) -> dict[str, int]: ...
    def report(self) -> dict[str, Any]: ...
    def tree(self, reports: dict[int, dict]) -> dict[str, Any] | None: ...
    def result(self, reports: dict[int, dict]) -> dict[str, Any]: ...


def load_factory(spec: str):
    """`module:function` -> the function; ConfigError if it is not there."""
    mod, _, fn = spec.partition(":")
    try:
        return getattr(importlib.import_module(mod), fn)
    except (ImportError, AttributeError) as e:
        raise ConfigError(f"role_factory {spec!r}: {e}") from None


def make_host(config: DistributedConfig, rank: int, world: int, cache: dict | None = None) -> Host:
    """The host for `rank`: from config.role_factory if set, else from the model's algorithm roles.
    cache: what a session keeps from one search to the next (engine.mpi.session)."""
    if config.role_factory:
        return load_factory(config.role_factory)(config, rank, world)

    return make_roles_host(config, rank, world, cache)


def check_config(config: DistributedConfig) -> None:
    """Catch a bad algorithm name or parameter before any rank starts (one clear message, not one per rank)."""
    if config.role_factory:
        load_factory(config.role_factory)
        return

    check_roles(config)
