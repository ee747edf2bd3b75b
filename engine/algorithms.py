"""The algorithm registry: name -> how to configure it and build its searcher.

`treesplit search`, `treesplit gtp` and the Player look algorithms up here and never name one in code.
Shared-memory algorithms (sequential, tree) register below. The MPI algorithms (leaf, root, tds, dfuct,
treesplit, hybrid) register from the modules in PROVIDERS, imported on first use if present; each gives
its own config class (a dataclass with validate(); --param keys are its fields) and `needs_mpi=True`.
A searcher has `search(Position, Budget, plan=None) -> SearchResult`, `reset()` and `close()`
(engine/sequential.py). MPI algorithms that run as a job rather than in-process give `run` instead:
`run(args) -> exit code`, called by `treesplit search` with its parsed arguments (--ranks, --bcast-ranks,
--trace, --telemetry, --param ... are all there).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

from model.config import from_dict, with_overrides
from model.errors import UserError

# The distributed algorithms of DESIGN.md; named so an unavailable one gives a clear message.
MPI_ALGORITHMS = ("leaf", "root", "tds", "dfuct", "treesplit", "hybrid")
# Modules that register more algorithms when imported (skipped if they do not exist yet).
PROVIDERS = ("engine.mpi.algorithms",)


@dataclass(frozen=True)
class Algorithm:
    name: str
    description: str
    config_cls: type                                  # dataclass; --param keys are its fields
    make_searcher: Callable[[Any], Any] | None = None  # config -> in-process searcher
    run: Callable[[Any], int] | None = None           # parsed search args -> exit code (MPI jobs)
    needs_mpi: bool = False


_REGISTRY: dict[str, Algorithm] = {}
_providers_loaded = False


def register(algo: Algorithm) -> None:
    _REGISTRY[algo.name] = algo


def _load_providers() -> None:
    global _providers_loaded
    if _providers_loaded:
        return
    _providers_loaded = True
    for mod in PROVIDERS:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name is None or not mod.startswith(e.name):
                raise


def names() -> list[str]:
    _load_providers()
    return sorted(_REGISTRY)


def get(name: str) -> Algorithm:
    _load_providers()
    if name in _REGISTRY:
        return _REGISTRY[name]
    if name in MPI_ALGORITHMS:
        raise UserError(f"algorithm {name!r} needs MPI ranks and is not available yet "
                        f"(available: {', '.join(names())})")
    raise UserError(f"unknown algorithm {name!r} (available: {', '.join(names())}; "
                    f"planned: {', '.join(a for a in MPI_ALGORITHMS if a not in _REGISTRY)})")


def make_config(name: str, params: dict[str, Any] | None = None, **settings: Any):
    """The algorithm's validated config from --param pairs plus explicit settings (None values skipped);
    an unknown key is a ConfigError that lists the known ones."""
    algo = get(name)
    data = {k: v for k, v in settings.items() if v is not None}
    cfg = from_dict(algo.config_cls, data, where=f"{name}: ")
    return with_overrides(cfg, params) if params else cfg


def make_searcher(name: str, config) -> Any:
    algo = get(name)
    if algo.make_searcher is None:
        raise UserError(f"algorithm {name!r} runs as an MPI job, not inside this process")
    return algo.make_searcher(config)


def _builtin() -> None:
    from engine.inflight import InFlightConfig, InFlightSearcher
    from engine.sequential import SearchConfig, SequentialSearcher
    from engine.tree_parallel import TreeSearcher

    register(Algorithm("sequential", "UCT on one core (the reference)", SearchConfig, SequentialSearcher))
    register(Algorithm("tree", "one process, threads on one shared tree with virtual loss", SearchConfig,
                       TreeSearcher))
    register(Algorithm("inflight", "the sequential search with S_par simulations in flight (virtual loss), one "
                       "core: the strength cost of parallelism alone (seed 000 Figure 4.15)", InFlightConfig,
                       InFlightSearcher))


_builtin()
