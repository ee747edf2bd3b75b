"""The engine's algorithm registry: name -> how to configure it and build its searcher.

`treesplit search`, `treesplit gtp` and the Player look algorithms up here and never name one in code. What
an algorithm is (its name, whether it runs on ranks, its layout rules) is model/algorithms.py's table; this
module adds how the engine runs each, in two plain tables: the shared-memory algorithms (sequential, tree,
inflight) with their searcher classes below, and the distributed ones in engine/mpi/algorithms.py (imported on
first use: it loads MPI and the roles), each with its own config class (a dataclass with validate(); --param
keys are its fields) and `needs_mpi=True`.
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


# the shared-memory algorithms; the distributed ones are engine/mpi/algorithms.py's table
SHARED_MEMORY: dict[str, Algorithm] = {a.name: a for a in (
    Algorithm("sequential", table.get("sequential").description, SearchConfig, SequentialSearcher),
    Algorithm("tree", table.get("tree").description, SearchConfig, TreeSearcher),
    Algorithm("inflight", table.get("inflight").description, InFlightConfig, InFlightSearcher),
)}


def names() -> list[str]:
    return sorted(table.ALGORITHMS)


def get(name: str) -> Algorithm:
    if name not in table.ALGORITHMS:
        raise UserError(f"unknown algorithm {name!r} (available: {', '.join(names())})")
    if name in SHARED_MEMORY:
        return SHARED_MEMORY[name]
    # the MPI table loads MPI and the roles' kernels (seconds): only when a distributed algorithm is asked for
    from engine.mpi.algorithms import DISTRIBUTED

    return DISTRIBUTED[name]


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
