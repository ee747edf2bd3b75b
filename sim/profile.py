"""Machine profiles: what a cluster costs, as the simulator charges it.

A profile is a TOML file with these tables (sim/profiles/oculus.toml is a commented example):

    name, description, source          strings
    [node]      cores, ranks_per_node   a search rank gets cores // ranks_per_node cores: 1 IO + the workers
                                        (1 core per rank: no workers, the IO core runs the packages itself
                                        between two polls, the engine's --threads 1); optional: tree_share
                                        (per other worker on the rank's tree, the fraction a simulation's
                                        packages take longer than on a worker alone; 0 = free)
    [network]   LogGP: latency L, overhead o, gap g, gap_per_byte G (per node NIC, shared by its ranks),
                eager_threshold (bytes; larger messages take a rendezvous round trip first),
                shm_latency, shm_gap_per_byte (ranks on the same node)
    [io]        the IO core's loop: poll_base + poll_per_peer * peers per iteration (MPI_Testsome polls a
                buffer per peer, Schaefers 2014, 4.3.2), per_message (dispatch/collect one message), per_byte;
                optional: per_package (the role's bookkeeping for one finished package, on the core that
                finishes it, not counted as busy), inline_slice (no workers: run packages at most this
                long between two polls; 0 = until the queue is empty), idle_nap (an idle IO core polls
                only every idle_nap seconds; 0 = it notices input at once), batched (records travel in
                one message per destination and iteration: o and g per batch)
    [costs]     one service-time distribution per work-package kind (select, expand, playout, update,
                sync, bcast), see sim/distributions.py
    [steps]     optional: per kind of a simulation's package (select, expand, update), what its cost does
                with the tree steps a part covers: { mean, base, slope } says a part of s steps costs
                (base + slope * s) / (base + slope * mean) times its draw from [costs] (mean: the steps per
                part of the calibration that fitted both); the functional fidelity charges it where the
                role says each part's steps (StepCost)
    [messages]  size in bytes per message kind, for reading (a calibration records the trace's medians);
                neither fidelity charges them: messages cost their records' sizes (model/roles/messages.py)
    [workload.<algo>]  optional: what one simulation does, for the statistical fidelity (sim/workload.py)
    [sources]   optional: where each value comes from, by dotted name or table ("io.poll_per_peer", "costs",
                "default" for the rest): "thesis", "measured" or "assumed", or a table
                { source = "assumed", range = [low, high] } (an assumed value must give its range) or
                { source = "measured", spread = 0.1 } (the relative spread of the calibration's repeats);
                `treesplit predict` draws its band from the ranges and spreads (sim/uncertainty.py)

`load_profile("oculus")` finds a shipped profile by name; any other argument is a path.
Every field not marked optional is required; a missing, mistyped or negative one is a ConfigError naming it.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from model.config import check, from_dict, parse_toml
from model.errors import ConfigError
from model.trace import MESSAGE_KINDS
from sim.distributions import Distribution, parse_distribution
from sim.workload import workload_from_dict

PROFILES_DIR = Path(__file__).resolve().parent / "profiles"
COST_KINDS = ("select", "expand", "playout", "update", "sync", "bcast")
SIM_KINDS = COST_KINDS[:4]  # one simulation's packages, which walk or grow the rank's tree
STEP_KINDS = ("select", "expand", "update")  # ... those whose parts cover tree steps


@dataclass(frozen=True)
class NodeSpec:
    cores: int
    ranks_per_node: int
    # a rank's workers walk and update one tree: per other worker, a simulation's packages on a worker take
    # this fraction longer than alone (the shared nodes' cache lines move between cores; validate measures it
    # as `tree` on 2 threads against 2 independent searches). Optional, 0 = sharing costs nothing.
    tree_share: float = 0.0

    def validate(self) -> None:
        check(self.ranks_per_node >= 1, "node.ranks_per_node", "must be >= 1")
        check(isinstance(self.cores, int) and self.cores >= self.ranks_per_node, "node.cores",
              f"must be >= ranks_per_node (each rank needs a core), got {self.cores}")
        check(isinstance(self.tree_share, (int, float)) and 0 <= self.tree_share <= 1, "node.tree_share",
              f"must be a fraction from 0 to 1, got {self.tree_share!r}")

    def sharing_factor(self, workers: int | None = None) -> float:
        """How much longer a simulation's package takes on one of `workers` (default: this layout's) workers
        sharing a tree than on a worker alone."""
        w = self.workers_per_rank if workers is None else workers
        return 1.0 + self.tree_share * max(0, w - 1)

    @property
    def cores_per_rank(self) -> int:
        return self.cores // self.ranks_per_node

    @property
    def workers_per_rank(self) -> int:
        return self.cores_per_rank - 1


@dataclass(frozen=True)
class NetworkSpec:
    latency: float          # L, s: wire + switch latency of a small message between nodes
    overhead: float         # o, s: CPU time of the IO core to post one send or complete one receive
    gap: float              # g, s: minimum time between two message injections at one NIC
    gap_per_byte: float     # G, s/byte: NIC serialisation time per byte (1 / bandwidth per node)
    eager_threshold: int    # bytes: larger messages use rendezvous (one extra round trip first)
    shm_latency: float      # s: latency between two ranks of the same node
    shm_gap_per_byte: float  # s/byte: copy time between two ranks of the same node

    def validate(self) -> None:
        _non_negative(self, "network")

    @property
    def bandwidth_bits(self) -> float:
        return math.inf if self.gap_per_byte == 0 else 8.0 / self.gap_per_byte


@dataclass(frozen=True)
class IOSpec:
    poll_base: float        # s: one IO loop iteration with nothing to do and no peers
    poll_per_peer: float    # s: added per peer the loop polls (RDMA receive buffers)
    per_message: float      # s: dispatch one received message to a worker queue or collect one to send
    per_byte: float         # s/byte: copying message payloads on the IO core
    stats_per_byte: float   # s/byte: taking in shared-node statistics (DUP/SYNC/BCAST/MERGE) on the IO core
    handles_completions: bool = False  # finished packages go back through the IO core (the roles'
    #                                    on_work_done runs there); False: the worker carries on with the
    #                                    simulation itself (Gomorra, Schaefers 2014, 4.2.4; the engine since roles'
    #                                    callbacks run on whichever thread holds the rank's lock)
    per_package: float = 0.0   # s: role bookkeeping per finished package (the engine's Python callback)
    inline_slice: float = 0.0  # s: without workers, run packages this long between polls (0: until empty)
    idle_nap: float = 0.0   # s: an idle IO core sleeps between polls and is not woken by arrivals: it sees
    #                         input at the next poll of its lattice (the engine's IDLE_WAIT nap with the OS's
    #                         timer overshoot); 0: it notices input within one loop iteration
    batched: bool = False   # an iteration sends one MPI message per destination holding every record for it,
    #                         and a message taken in is a batch of records (the engine's turns): LogGP's o and
    #                         the NIC's gap g are paid per batch, per_message and per_byte per record; False:
    #                         every record is a message of its own (Gomorra, Schaefers 2014, 4.3.2)

    def validate(self) -> None:
        _non_negative(self, "io", skip=("handles_completions", "batched"))

    def loop_time(self, peers: int) -> float:
        return self.poll_base + self.poll_per_peer * peers


@dataclass(frozen=True)
class StepCost:
    """A package kind's cost against the tree steps a part covers (a select's records, an update's records of
    its rank): base + slope * steps seconds, least squares over a calibration's parts, whose mean steps per
    part was `mean`. The kind's distribution in [costs] is that calibration's, so a part of s steps is
    charged its draw times factor(s), which is 1 at the mean: a configuration whose parts cover more steps
    than the calibration's (root's whole paths against treesplit's shares of them) pays for them."""

    mean: float   # tree steps per part in the calibration
    base: float   # s: the fitted cost of a part of no steps
    slope: float  # s per step

    def validate(self, where: str) -> None:
        _non_negative(self, where)
        check(self.base + self.slope * self.mean > 0, where, "base + slope * mean must be > 0")

    def coefficients(self) -> tuple[float, float]:
        """(k0, k1) with factor(s) = k0 + k1 * s."""
        at_mean = self.base + self.slope * self.mean
        return self.base / at_mean, self.slope / at_mean


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    source: str
    node: NodeSpec
    network: NetworkSpec
    io: IOSpec
    costs: dict[str, Distribution]
    messages: dict[str, int]
    workloads: dict[str, Any] = field(default_factory=dict)  # algo -> sim.workload.Workload (statistical)
    path: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, "ValueSource"] = field(default_factory=dict)  # dotted name or table -> where from
    steps: dict[str, StepCost] = field(default_factory=dict)  # kind -> its cost per tree step (optional)

    def source_of(self, key: str) -> "ValueSource":
        """Where the value `key` (dotted) comes from: its own entry, else its table's, else "default"'s; a
        profile that says nothing has it from its `source` line, unclassified ("unknown")."""
        parts = key.split(".")
        for i in range(len(parts), 0, -1):
            hit = self.sources.get(".".join(parts[:i]))
            if hit is not None:
                return hit
        return self.sources.get("default", ValueSource("unknown"))

    def sim_seconds(self) -> float:
        """Mean cost of one sequential simulation: a select, a playout and an update package."""
        return sum(self.costs[k].mean for k in ("select", "playout", "update"))

    def contended(self) -> "Profile":
        """The profile as its workers run: a simulation's package costs scaled by node.sharing_factor() (a
        trace shows them so on ranks of several workers; calibrate divides it out)."""
        return self.sim_scaled(self.node.sharing_factor())

    def sim_scaled(self, f: "float | Mapping[str, float]") -> "Profile":
        """The profile with a simulation's package costs (SIM_KINDS) scaled by f: one factor for all, or one
        per kind (a kind the mapping lacks keeps its cost)."""
        per = f if isinstance(f, Mapping) else {k: f for k in SIM_KINDS}
        if all(per.get(k, 1.0) == 1.0 for k in SIM_KINDS):
            return self
        return dataclasses.replace(self, costs={k: d.scaled(per[k]) if k in SIM_KINDS and k in per else d
                                                for k, d in self.costs.items()})

    def with_overrides(self, pairs: dict[str, str]) -> "Profile":
        """A copy with some fields replaced, by dotted name: network.latency=2e-6, costs.playout.median=1e-3."""
        data = self.to_toml()
        for key, value in pairs.items():
            parts = key.split(".")
            node = data
            for p in parts[:-1]:
                if not isinstance(node.get(p), dict):
                    raise ConfigError(f"profile setting {key!r}: no table {p!r}")
                node = node[p]
            if parts[-1] not in node:
                raise ConfigError(f"profile setting {key!r}: unknown field")
            node[parts[-1]] = parse_scalar(value)
        return profile_from_dict(data, where=f"{self.name} (with overrides): ")

    def to_toml(self) -> dict[str, Any]:
        return {
            "name": self.name, "description": self.description, "source": self.source,
            "node": dataclasses.asdict(self.node), "network": dataclasses.asdict(self.network),
            "io": dataclasses.asdict(self.io), "costs": {k: d.to_toml() for k, d in self.costs.items()},
            "messages": dict(self.messages),
            **({"steps": {k: dataclasses.asdict(v) for k, v in self.steps.items()}} if self.steps else {}),
            **({"workload": {a: w.to_toml() for a, w in self.workloads.items()}} if self.workloads else {}),
            **({"sources": {k: v.to_toml() for k, v in self.sources.items()}} if self.sources else {}),
        }

    def save(self, path: str | Path) -> Path:
        p = Path(path)
        p.write_text(tomli_w.dumps(self.to_toml()))
        return p


SOURCES = ("thesis", "measured", "assumed")


@dataclass(frozen=True)
class ValueSource:
    """Where a profile value comes from, and what it may be instead: an assumed value's range (low, high),
    a measured one's relative spread over the calibration's repeats."""

    source: str
    range: tuple[float, float] | None = None
    spread: float = 0.0

    def to_toml(self) -> Any:
        if self.range is None and not self.spread:
            return self.source
        return {"source": self.source, **({"range": list(self.range)} if self.range else {}),
                **({"spread": self.spread} if self.spread else {})}


def parse_sources(data: Any, known: dict[str, Any], where: str) -> dict[str, ValueSource]:
    """[sources]: each key a dotted name or table of the profile (`known`, its TOML dict) or "default"."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}sources: expected a table")
    out = {}
    for key, v in data.items():
        node: Any = known
        if key != "default":
            for part in key.split("."):
                if not isinstance(node, dict) or part not in node:
                    raise ConfigError(f"{where}sources.{key}: no such profile value or table")
                node = node[part]
        if isinstance(v, str):
            v = {"source": v}
        if not isinstance(v, dict) or set(v) - {"source", "range", "spread"}:
            raise ConfigError(f"{where}sources.{key}: expected one of {', '.join(SOURCES)}, or a table with "
                              f"source and range or spread")
        src = v.get("source")
        if src not in SOURCES:
            raise ConfigError(f"{where}sources.{key}: source must be one of {', '.join(SOURCES)}, got {src!r}")
        rng = v.get("range")
        if rng is not None:
            ok = (isinstance(rng, list) and len(rng) == 2 and all(isinstance(x, (int, float)) and not
                                                                  isinstance(x, bool) for x in rng))
            if not ok or not (0 <= rng[0] <= rng[1]) or not isinstance(node, (int, float)):
                raise ConfigError(f"{where}sources.{key}: range must be [low, high] with 0 <= low <= high, "
                                  f"for a number")
            rng = (float(rng[0]), float(rng[1]))
        if src == "assumed" and key != "default" and rng is None and isinstance(node, (int, float)):
            raise ConfigError(f"{where}sources.{key}: an assumed value needs its range = [low, high]")
        spread = v.get("spread", 0.0)
        if not isinstance(spread, (int, float)) or not 0 <= spread < 1:
            raise ConfigError(f"{where}sources.{key}: spread must be a fraction from 0 to 1")
        out[key] = ValueSource(src, rng, float(spread))
    return out


def parse_scalar(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _non_negative(obj: Any, section: str, skip: tuple[str, ...] = ()) -> None:
    for f in dataclasses.fields(obj):
        if f.name in skip:
            continue
        v = getattr(obj, f.name)
        check(isinstance(v, (int, float)) and math.isfinite(v) and v >= 0, f"{section}.{f.name}",
              f"must be a finite number >= 0, got {v!r}")


def _section(cls: type, data: dict[str, Any], name: str, where: str) -> Any:
    sub = data.get(name)
    if sub is None:
        raise ConfigError(f"{where}[{name}]: missing table")
    if not isinstance(sub, dict):
        raise ConfigError(f"{where}{name}: expected a table")
    for f in dataclasses.fields(cls):
        if f.name not in sub and f.default is dataclasses.MISSING:
            raise ConfigError(f"{where}{name}.{f.name}: missing")
    try:
        return from_dict(cls, sub, where=f"{where}{name}.")
    except ConfigError as e:
        msg = str(e)
        raise ConfigError(msg if msg.startswith(where) else f"{where}{msg}") from None


def profile_from_dict(data: dict[str, Any], where: str = "") -> Profile:
    for key in ("name",):
        if not isinstance(data.get(key), str) or not data[key]:
            raise ConfigError(f"{where}{key}: missing (a non-empty string)")
    known = {"name", "description", "source", "node", "network", "io", "costs", "messages", "workload", "sources",
             "steps"}
    unknown = set(data) - known
    if unknown:
        raise ConfigError(f"{where}{sorted(unknown)[0]}: unknown setting (known: {', '.join(sorted(known))})")
    node = _section(NodeSpec, data, "node", where)
    network = _section(NetworkSpec, data, "network", where)
    io = _section(IOSpec, data, "io", where)
    costs_in = data.get("costs")
    if not isinstance(costs_in, dict):
        raise ConfigError(f"{where}[costs]: missing table")
    costs = {}
    for kind in COST_KINDS:
        if kind not in costs_in:
            raise ConfigError(f"{where}costs.{kind}: missing")
        costs[kind] = parse_distribution(f"{where}costs.{kind}", costs_in[kind])
    extra = set(costs_in) - set(COST_KINDS)
    if extra:
        raise ConfigError(f"{where}costs.{sorted(extra)[0]}: unknown package kind (known: {', '.join(COST_KINDS)})")
    msgs_in = data.get("messages")
    if not isinstance(msgs_in, dict):
        raise ConfigError(f"{where}[messages]: missing table")
    messages = {}
    for kind, v in msgs_in.items():
        if kind not in MESSAGE_KINDS:
            raise ConfigError(f"{where}messages.{kind}: unknown message kind (known: {', '.join(MESSAGE_KINDS)})")
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ConfigError(f"{where}messages.{kind}: expected a whole number of bytes >= 0, got {v!r}")
        messages[kind] = v
    for kind in ("MOVE", "UPDATE", "SYNC", "BCAST", "CONTROL"):
        if kind not in messages:
            raise ConfigError(f"{where}messages.{kind}: missing")

    steps_in = data.get("steps", {})
    if not isinstance(steps_in, dict):
        raise ConfigError(f"{where}steps: expected a table of {{ mean, base, slope }} per package kind")
    steps = {}
    for kind, v in steps_in.items():
        if kind not in STEP_KINDS:
            raise ConfigError(f"{where}steps.{kind}: no steps for this kind (known: {', '.join(STEP_KINDS)})")
        names = [f.name for f in dataclasses.fields(StepCost)]
        if not isinstance(v, dict) or set(v) != set(names):
            raise ConfigError(f"{where}steps.{kind}: expected a table {{ {', '.join(names)} }}, got {v!r}")
        for f in names:
            x = v[f]
            check(isinstance(x, (int, float)) and not isinstance(x, bool), f"{where}steps.{kind}.{f}",
                  f"expected a number, got {x!r}")
        steps[kind] = StepCost(**{f: float(v[f]) for f in names})
        steps[kind].validate(f"{where}steps.{kind}")
    wl_in = data.get("workload", {})
    if not isinstance(wl_in, dict):
        raise ConfigError(f"{where}workload: expected tables [workload.<algo>]")
    workloads = {}
    for algo, w in wl_in.items():
        if not isinstance(w, dict):
            raise ConfigError(f"{where}workload.{algo}: expected a table")
        try:
            workloads[algo] = workload_from_dict(w, where=f"workload.{algo}")
        except ConfigError as e:
            raise ConfigError(f"{where}{e}") from None
    sources = parse_sources(data.get("sources", {}), {k: v for k, v in data.items() if k != "sources"}, where)
    return Profile(name=data["name"], description=str(data.get("description", "")),
                   source=str(data.get("source", "")), node=node, network=network, io=io, costs=costs,
                   messages=messages, workloads=workloads, sources=sources, steps=steps)


def shipped_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILES_DIR.glob("*.toml"))


def load_profile(name_or_path: str | Path) -> Profile:
    """A shipped profile by name (`oculus`, `local`) or a profile TOML file by path."""
    s = str(name_or_path)
    p = Path(s)
    if not s.endswith(".toml") and "/" not in s and (PROFILES_DIR / f"{s}.toml").exists():
        p = PROFILES_DIR / f"{s}.toml"
    if not p.exists():
        raise ConfigError(f"profile {s!r}: no such file or shipped profile (shipped: {', '.join(shipped_profiles())})")
    prof = profile_from_dict(parse_toml(p.read_text(), str(p)), where=f"{p.name}: ")
    return dataclasses.replace(prof, path=str(p))
