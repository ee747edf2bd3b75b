"""Parameters of the distributed algorithms (all settable with --param key=value), thesis values as defaults.

One flat namespace per run: `split_params(algo, {"n_dup": "2048", "c": "0.5"})` gives the in-tree policy's
UctParams (model/uct.py) and the algorithm's own dataclass, each validated, and names unknown keys.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from model.algorithms import DEFAULT_BCAST_RATIO, DEFAULT_GROUPS
from model.config import check, from_dict
from model.errors import ConfigError
from model.tt import BUDGET_MB
from model.uct import UctParams


@dataclass
class SearchParams:
    """What every distributed algorithm shares."""

    table_mb: float = BUDGET_MB   # transposition table per rank (MiB)
    overload: int = 5             # O: simulations in flight per worker, S_par = (C-1) M O (Schaefers 2014, 4.2.4)
    fuse: bool = True             # a simulation's steps on one rank run as one package (treesplit, tds, root,
    #                               hybrid; leaf and dfuct always run one package per step)
    chain: int = 64               # most simulations one fused package runs back to back while each stays on
    #                               its origin rank from root to update with no sync due (1: one per package;
    #                               a package costs ~0.1 ms of Python, a 9x9 simulation ~20 us of kernel)

    def in_flight(self, workers: int, hop_ranks: int) -> int:
        """S_par / M: the simulations a search rank keeps in flight with `workers` workers when a simulation
        may move among `hop_ranks` ranks."""
        return max(1, workers) * self.overload

    def package_chain(self) -> int:
        """The most simulations one package runs back to back: `chain` where packages fuse (else 1), and no
        more than a merge period where ranks merge their trees (root, hybrid: no package finishes more)."""
        chain = self.chain if self.fuse else 1
        merge_every = getattr(self, "merge_every", None)
        return min(chain, merge_every) if merge_every else chain

    def validate(self) -> None:
        check(self.table_mb > 0, "table_mb", "must be > 0")
        check(isinstance(self.overload, int) and self.overload >= 1, "overload", "must be an integer >= 1")
        check(isinstance(self.chain, int) and self.chain >= 1, "chain", "must be an integer >= 1")


@dataclass
class HopParams(SearchParams):
    """What the algorithms whose simulations hop between ranks (treesplit, tds, hybrid, dfuct) add."""

    min_in_flight: int = 80       # S_par / M at least this where simulations hop between ranks (1: S_par =
    #                               (C-1) M O as in the thesis). O "should be sufficiently large to effectively
    #                               overlap communication" (Schaefers 2014, 4.2.4): a rank of one worker whose
    #                               simulations take 10-60 us waits 50-200 us for a hop and at O = 5 idles ~20%
    #                               of the time; 80 pays at equal time (docs/ARCHITECTURE.md)

    def in_flight(self, workers: int, hop_ranks: int) -> int:
        own = super().in_flight(workers, hop_ranks)
        return max(own, self.min_in_flight) if hop_ranks > 1 else own

    def validate(self) -> None:
        super().validate()
        check(isinstance(self.min_in_flight, int) and self.min_in_flight >= 1, "min_in_flight",
              "must be an integer >= 1")


@dataclass
class TreesplitParams(HopParams):
    """UCT-Treesplit (Schaefers 2014, 4.2); tds is this with n_dup = inf."""

    n_dup: float = 8192           # visits after which a node is duplicated on all ranks (inf: never)
    n_sync_min: int = 8           # N_sync(s,a) = min(N_sync_max, max(N_sync_min, alpha (N_delta + N)))
    n_sync_max: int = 16
    alpha: float = 0.02
    balance_k: float = 1.2        # K: forward playouts while more than K S_par / M MOVEs wait here
    forward_playouts: bool = True
    balance_load: int = 8         # also forward a playout to the rank known to have the fewest packages to run
    #                               when it has at most 1/balance_load of this rank's, 2 fewer at least (0: never;
    #                               docs/ARCHITECTURE.md, "Work to an idle rank")
    bcast_delay: float = 0.001    # seconds a broadcast rank holds SYNCs to merge them (0: forward at once)
    peers: int = 12               # L: most broadcast peers per broadcast rank (Table 4.1)
    bcast_ratio: int = DEFAULT_BCAST_RATIO  # search ranks per broadcast rank, when not given explicitly
    dup_rows: int = 8192          # most duplicated nodes per rank
    share_root: bool = True       # the root is duplicated on all ranks from the start (4.2.4); tds: no

    def validate(self) -> None:
        super().validate()
        check(self.n_dup >= 1, "n_dup", "must be >= 1 (inf: never duplicate)")
        check(isinstance(self.n_sync_min, int) and self.n_sync_min >= 1, "n_sync_min", "must be an integer >= 1")
        check(isinstance(self.n_sync_max, int) and self.n_sync_max >= self.n_sync_min, "n_sync_max",
              "must be an integer >= n_sync_min")
        check(self.alpha >= 0 and math.isfinite(self.alpha), "alpha", "must be >= 0")
        check(self.balance_k > 1, "balance_k", "K must be > 1 (Schaefers 2014, 4.2.5)")
        check(isinstance(self.balance_load, int) and not isinstance(self.balance_load, bool) and self.balance_load >= 0,
              "balance_load", "must be an integer >= 0 (0: never)")
        check(self.bcast_delay >= 0, "bcast_delay", "must be >= 0")
        check(isinstance(self.peers, int) and self.peers >= 1, "peers", "must be an integer >= 1")
        check(isinstance(self.bcast_ratio, int) and self.bcast_ratio >= 1, "bcast_ratio", "must be >= 1")
        check(isinstance(self.dup_rows, int) and self.dup_rows >= 1, "dup_rows", "must be >= 1")


@dataclass
class RootParams(SearchParams):
    """Root parallelisation: independent trees whose near-root statistics are merged now and then."""

    merge_every: int = 256        # a rank sends its near-root increments after this many own simulations
    merge_depth: int = 1          # tree levels merged below the root (1: the root's children)
    merge_min_visits: int = 16    # only nodes with at least this many visits take part

    def validate(self) -> None:
        super().validate()
        check(isinstance(self.merge_every, int) and self.merge_every >= 1, "merge_every", "must be >= 1")
        check(isinstance(self.merge_depth, int) and self.merge_depth >= 1, "merge_depth", "must be >= 1")
        check(isinstance(self.merge_min_visits, int) and self.merge_min_visits >= 0, "merge_min_visits",
              "must be >= 0")


@dataclass
class LeafParams(SearchParams):
    """Leaf parallelisation: rank 0 (master) does the in-tree work, the other ranks compute playouts."""

    variant: str = "mlmp"         # mlmp: one playout per leaf, to one worker; slmp: every worker, same leaf
    master_playouts: bool = True   # mlmp: the master plays a leaf out itself when it has nothing else queued
    #                               and every playout rank has its W playout_jobs (False: in-tree work only, as
    #                               in Schaefers 2014, 4.1.1)
    playout_jobs: int = 64        # ... jobs a playout thread holds first: enough to last a round trip of the
    #                               master's and its rank's run slices (~0.5 ms; a 9x9 playout ~12 us)

    def master_plays(self, ranks: int) -> bool:
        """Whether the master plays leaves out itself beside `ranks` - 1 playout ranks (MLMP only)."""
        return self.master_playouts and self.variant == "mlmp" and ranks > 1

    def master_in_flight(self, workers: int, ranks: int) -> int:
        """S_par: the simulations the master keeps in flight with `ranks` ranks of `workers` threads each.
        MLMP: O W a playout rank (the thesis), or with master_playouts W playout_jobs a playout rank and O W
        for the master's own playouts; SLMP: O leaves of a playout per playout thread."""
        w, playout_ranks = max(1, workers), ranks - 1
        if playout_ranks <= 0:
            return w * self.overload
        if self.master_plays(ranks):
            return w * (self.playout_jobs * playout_ranks + self.overload)
        return w * self.overload * playout_ranks

    def validate(self) -> None:
        super().validate()
        check(self.variant in ("mlmp", "slmp"), "variant", "one of mlmp, slmp")
        check(isinstance(self.playout_jobs, int) and self.playout_jobs >= 1, "playout_jobs", "must be an integer >= 1")


@dataclass
class DfuctParams(HopParams):
    """TDS with depth-first UCT (model/roles/dfuct.py): jobs stay below a node while its best child stays best."""

    report_every: int = 32        # a job reports a node's pending results once this many gathered (0: only
    #                               when it leaves the node)
    switch_margin: float = 0.0    # a job leaves a node when the second-best child's score exceeds the best's
    #                               by more than this (0: Yoshizoe et al.; > 0 keeps jobs deeper on near-ties)
    balance_k: float = 1.2        # K: forward playouts while more than K S_par / M jobs wait here
    forward_playouts: bool = True
    min_in_flight: int = 40       # a job's nodes stay warm in fewer of them (80: its 19x19 jobs ran 6% slower)

    def validate(self) -> None:
        super().validate()
        check(isinstance(self.report_every, int) and self.report_every >= 0, "report_every", "must be an integer >= 0")
        check(self.switch_margin >= 0 and math.isfinite(self.switch_margin), "switch_margin", "must be >= 0")
        check(self.balance_k > 1, "balance_k", "K must be > 1 (Schaefers 2014, 4.2.5)")


@dataclass
class HybridParams(TreesplitParams):
    """Groups of UCT-Treesplit ranks joined by root parallelisation (model/roles/hybrid.py)."""

    groups: int = DEFAULT_GROUPS  # G: the search ranks (and broadcast ranks) split into G equal groups
    merge_every: int = 256        # a rank sends its merged-node increments to the other groups this often
    merge_depth: int = 1          # tree levels below the root merged between groups (1: the root's children)

    def validate(self) -> None:
        super().validate()
        check(isinstance(self.groups, int) and self.groups >= 1, "groups", "must be an integer >= 1")
        check(isinstance(self.merge_every, int) and self.merge_every >= 1, "merge_every", "must be >= 1")
        check(isinstance(self.merge_depth, int) and 1 <= self.merge_depth <= 4, "merge_depth", "must be in 1..4")


ALGO_PARAMS: dict[str, type] = {"treesplit": TreesplitParams, "tds": TreesplitParams, "root": RootParams,
                                "leaf": LeafParams, "dfuct": DfuctParams, "hybrid": HybridParams}
ALGO_DEFAULTS: dict[str, dict[str, Any]] = {"tds": {"n_dup": math.inf, "share_root": False}}
# What the thesis ran and reproductions of its figures pin: S_par = (C-1) M O (Schaefers 2014, 4.2.4),
# playouts forwarded only while more than K S_par / M MOVEs wait (4.2.5), a leaf master that only selects
# and backs up (4.1.1)
THESIS_RULES: dict[str, Any] = {"min_in_flight": 1, "balance_load": 0, "master_playouts": False}


def thesis_rules(algo: str) -> dict[str, Any]:
    """THESIS_RULES, those of its settings that algo has."""
    names = {f.name for f in dataclasses.fields(ALGO_PARAMS[algo])}
    return {k: v for k, v in THESIS_RULES.items() if k in names}


# in-tree policy defaults that differ by algorithm: df-UCT's merged reports carry no AMAF data, so plain UCB
UCT_DEFAULTS: dict[str, dict[str, Any]] = {"dfuct": {"rave": False, "c": 0.7}}


def check_uct(algo: str, uct: UctParams) -> None:
    """The in-tree policy settings an algorithm can't run with: a ConfigError (at configuration, before any
    rank starts)."""
    if algo == "dfuct" and uct.rave:
        raise ConfigError("rave: dfuct reports merged visit counts and rewards, without AMAF data; "
                          "use rave=off (dfuct's default)")


def split_params(algo: str, values: dict[str, Any]) -> tuple[UctParams, Any]:
    """(UctParams, algorithm params) from one dict of key -> value (strings are coerced)."""
    if algo not in ALGO_PARAMS:
        raise ConfigError(f"algo: unknown distributed algorithm {algo!r} (known: {', '.join(ALGO_PARAMS)})")
    cls = ALGO_PARAMS[algo]
    uct_keys = {f.name for f in dataclasses.fields(UctParams)}
    algo_keys = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - uct_keys - algo_keys)
    if unknown:
        known = ", ".join(sorted(uct_keys | algo_keys))
        raise ConfigError(f"--param {unknown[0]}: unknown for {algo} (known: {known})")
    uct_values = dict(UCT_DEFAULTS.get(algo, {}))
    uct_values.update({k: v for k, v in values.items() if k in uct_keys})
    uct = from_dict(UctParams, uct_values)
    check_uct(algo, uct)
    own = dict(ALGO_DEFAULTS.get(algo, {}))
    own.update({k: v for k, v in values.items() if k in algo_keys})
    return uct, from_dict(cls, own)
