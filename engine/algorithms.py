"""The engine's algorithm registry: name -> how to configure it and build its searcher.

`treesplit search`, `treesplit gtp` and the Player look algorithms up here and never name one in code. What
an algorithm is (its name, whether it runs on ranks, its layout rules) is model/algorithms.py's table; this
module adds how the engine runs each: shared-memory algorithms (sequential, tree, inflight) register below
with their searcher classes, the distributed ones come from engine/mpi/algorithms.py (imported on first use:
it loads MPI and the roles), each with its own config class (a dataclass with validate(); --param keys are
its fields) and `needs_mpi=True`.
A searcher has `search(Position, Budget, plan=None) -> SearchResult`, `reset()` and `close()`
(engine/sequential.py). MPI algorithms that run as a job rather than in-process give `run` instead:
`run(args) -> exit code`, called by `treesplit search` with its parsed arguments (--ranks, --bcast-ranks,
--trace, --telemetry, --param ... are all there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from engine.inflight import InFlightConfig, InFlightSearcher
from engine.sequential import SearchConfig, SequentialSearcher
from engine.tree_parallel import TreeSearcher
from model import algorithms as table
from model.config import from_dict, with_overrides
from model.errors import UserError

MPI_ALGORITHMS = table.DISTRIBUTED


@dataclass(frozen=True)
class Algorithm:
    name: str
    description: str
    config_cls: type                                  # dataclass; --param keys are its fields
    make_searcher: Callable[[Any], Any] | None = None  # config -> in-process searcher
    run: Callable[[Any], int] | None = None           # parsed search args -> exit code (MPI jobs)
    needs_mpi: bool = False


_REGISTRY: dict[str, Algorithm] = {}


def register(algo: Algorithm) -> None:
    _REGISTRY[algo.name] = algo


def names() -> list[str]:
    return sorted(table.ALGORITHMS)


def get(name: str) -> Algorithm:
    if name not in table.ALGORITHMS:
        raise UserError(f"unknown algorithm {name!r} (available: {', '.join(names())})")
    if name not in _REGISTRY:  # a distributed one, not loaded yet
        from engine.mpi.algorithms import register_all

        register_all()
    return _REGISTRY[name]


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
    for name, config_cls, searcher in (("sequential", SearchConfig, SequentialSearcher),
                                       ("tree", SearchConfig, TreeSearcher),
                                       ("inflight", InFlightConfig, InFlightSearcher)):
        register(Algorithm(name, table.get(name).description, config_cls, searcher))


_builtin()
