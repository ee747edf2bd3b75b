"""What each search algorithm is, said once: its name, what it does, whether it runs on ranks, whether it has
broadcast ranks (and how many by default), and how hybrid groups its ranks.

The engine (engine/algorithms.py, engine/mpi/), the simulator (sim/simulate.py), the roles (model/roles:
make_role), validate and the CLI all read this table; none of them names an algorithm's layout rules in code.
It imports nothing heavy, so the CLI can check a layout and refuse it before any rank starts.

    resolve_layout("hybrid", 4, 1)  -> ConfigError: "hybrid: 2 groups do not divide 1 broadcast rank; ...
                                       layouts that run: 4 search + 0 broadcast ranks, 4 + 2, ..."
    resolve_layout("treesplit", 8)  -> (8, 2)      one broadcast rank per bcast_ratio (4) search ranks
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from model.errors import ConfigError

# Defaults of the layout parameters (model/roles/params.py declares its fields with these values).
DEFAULT_BCAST_RATIO = 4  # search ranks per broadcast rank (Schaefers 2014: 1:4), none below that many search ranks
DEFAULT_GROUPS = 2       # hybrid: the search ranks (and broadcast ranks) split into this many equal groups


@dataclass(frozen=True)
class Algorithm:
    name: str
    description: str
    distributed: bool = False  # runs on ranks: MPI ranks in the engine, simulated ranks in sim/ (model/roles)
    broadcast: bool = False    # has broadcast ranks (by default 1 per bcast_ratio search ranks)
    grouped: bool = False      # its search and broadcast ranks split into `groups` equal groups


ALGORITHMS: dict[str, Algorithm] = {a.name: a for a in (
    Algorithm("sequential", "UCT on one core (the reference)"),
    Algorithm("tree", "one process, threads on one shared tree with virtual loss"),
    Algorithm("inflight", "the sequential search with S_par simulations in flight (virtual loss): what "
                          "parallelism alone costs in strength"),
    Algorithm("treesplit", "UCT-Treesplit: the tree spread by hash over MPI ranks, hot nodes duplicated, "
                           "broadcast ranks", distributed=True, broadcast=True),
    Algorithm("tds", "transposition-table-driven scheduling: treesplit without duplication", distributed=True),
    Algorithm("root", "root parallelisation: independent trees, near-root statistics merged now and then",
              distributed=True),
    Algorithm("leaf", "leaf parallelisation: a master does the in-tree work, the other ranks playouts",
              distributed=True),
    Algorithm("dfuct", "TDS with depth-first UCT: delayed, merged backpropagation (Yoshizoe et al.)",
              distributed=True),
    Algorithm("hybrid", "groups of treesplit ranks joined by root parallelisation", distributed=True,
              broadcast=True, grouped=True),
)}
DISTRIBUTED = tuple(n for n, a in ALGORITHMS.items() if a.distributed)
SHARED_MEMORY = tuple(n for n, a in ALGORITHMS.items() if not a.distributed)


def get(name: str) -> Algorithm:
    if name not in ALGORITHMS:
        raise ConfigError(f"algo: unknown algorithm {name!r} (known: {', '.join(ALGORITHMS)})")
    return ALGORITHMS[name]


def distributed(name: str) -> Algorithm:
    a = get(name)
    if not a.distributed:
        raise ConfigError(f"algo: {name!r} runs in one process, not on ranks (on ranks: {', '.join(DISTRIBUTED)})")
    return a


def layout_params(params: Mapping[str, Any] | Any | None) -> tuple[int, int]:
    """(bcast_ratio, groups) from an algorithm's parameters: a dict of --param values (strings fine) or a
    validated params object (model/roles/params.py)."""
    def value(key: str, default: int) -> int:
        v = params.get(key, default) if isinstance(params, Mapping) else getattr(params, key, default)
        try:
            n = int(float(v))
        except (TypeError, ValueError):
            raise ConfigError(f"{key}: expected a whole number, got {v!r}") from None
        if n < 1:
            raise ConfigError(f"{key}: must be >= 1")
        return n

    return value("bcast_ratio", DEFAULT_BCAST_RATIO), value("groups", DEFAULT_GROUPS)


def default_bcast_ranks(algo: str, search_ranks: int, bcast_ratio: int = DEFAULT_BCAST_RATIO,
                        groups: int = DEFAULT_GROUPS) -> int:
    """The broadcast ranks an algorithm gets for M search ranks when none are asked for: 1 per bcast_ratio
    search ranks (none below that many); grouped, each group gets its own share, so the groups divide them."""
    a = distributed(algo)
    if not a.broadcast:
        return 0
    if a.grouped:
        return groups * ((search_ranks // groups) // bcast_ratio) if search_ranks % groups == 0 else 0
    return search_ranks // bcast_ratio


def resolve_layout(algo: str, search_ranks: int, bcast_ranks: int | None = None,
                   params: Mapping[str, Any] | Any | None = None) -> tuple[int, int]:
    """(search ranks, broadcast ranks) of a run: the default broadcast ranks filled in, and the layout checked.
    A layout that can't run is a ConfigError that names layouts that can."""
    a = distributed(algo)
    ratio, groups = layout_params(params or {})
    if not isinstance(search_ranks, int) or search_ranks < 1:
        raise ConfigError("ranks: need at least 1 search rank")
    M = search_ranks
    B = default_bcast_ranks(algo, M, ratio, groups) if bcast_ranks is None else bcast_ranks
    if not isinstance(B, int) or B < 0:
        raise ConfigError("bcast_ranks: need a whole number >= 0")
    if B and not a.broadcast:
        with_b = ", ".join(n for n in DISTRIBUTED if ALGORITHMS[n].broadcast)
        raise ConfigError(f"bcast_ranks: {algo} has no broadcast ranks; run it with 0 broadcast ranks "
                          f"(algorithms with broadcast ranks: {with_b})")
    if B > M:
        raise ConfigError(f"bcast_ranks: {B} broadcast ranks for {M} search rank{'s' if M > 1 else ''}; at most "
                          f"one per search rank (e.g. {M} search + {default_bcast_ranks(algo, M, ratio, groups)} "
                          f"broadcast ranks)")
    if a.grouped and (M % groups or B % groups):
        what = f"{M} search rank{'s' if M > 1 else ''}" if M % groups else f"{B} broadcast rank{'s' if B > 1 else ''}"
        raise ConfigError(f"groups: {groups} groups do not divide {what}; layouts that run: "
                          + "; ".join(grouped_layouts(M, B, groups)))
    return M, B


def grouped_layouts(M: int, B: int, groups: int) -> list[str]:
    """Layouts near M search + B broadcast ranks that `groups` equal groups can split, for an error message."""
    out = []
    m = max(groups, M - M % groups)  # the search ranks rounded down to a multiple of the groups
    for bb in sorted({B - B % groups, B - B % groups + groups}):
        if 0 <= bb <= m:
            out.append(f"{m} search + {bb} broadcast ranks")
    divisors = [g for g in range(1, M + 1) if M % g == 0 and B % g == 0 and g != groups]
    if divisors:
        out.append(f"{M} + {B} with groups={' or '.join(map(str, divisors[-2:]))}")
    return out
