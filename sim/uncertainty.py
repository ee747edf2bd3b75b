"""What a profile does not know, and profiles made of two: the band `treesplit predict` draws, and a profile
that takes its node costs from one calibration and its network and node layout from another profile.

The band: every value a profile marks uncertain ([sources]: an assumed value's range, a measured one's spread
over the calibration's repeats) is set to its low end at once, then to its high end at once. Each of them is a
cost (seconds, seconds per byte or per peer), so a run gets no faster as any of them grows: the two corners
bound the curve the values in between give, and the band is what lies between them at each node count.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from model.errors import ConfigError
from sim.profile import Profile, ValueSource, profile_from_dict

# A profile's node costs: what the engine's CPU pays per package, per message and per byte, and how its
# ranks run (--threads 1 inline slices, idle naps, one tree shared by the workers). The rest (node layout,
# the network's LogGP, the IO loop's poll over its peers) belongs to the cluster.
NODE_COST_IO = ("per_message", "per_byte", "stats_per_byte", "handles_completions", "per_package",
                "inline_slice", "idle_nap", "batched")


def uncertain(prof: Profile) -> list[tuple[str, ValueSource]]:
    """The values the band varies: those with a range or a spread (sorted by name)."""
    return sorted((k, v) for k, v in prof.sources.items() if k != "default" and (v.range or v.spread))


def corner(prof: Profile, end: str) -> Profile:
    """`prof` with every uncertain value at its `end` ("low" or "high"): ranged values at that end of their
    range, measured ones with a spread scaled by 1 -/+ spread."""
    if end not in ("low", "high"):
        raise ValueError(end)
    data = prof.to_toml()
    scale_costs: dict[str, float] = {}
    for key, src in uncertain(prof):
        parts = key.split(".")
        if src.range:
            _set(data, parts, src.range[0] if end == "low" else src.range[1])
            continue
        f = 1.0 - src.spread if end == "low" else 1.0 + src.spread
        if parts[0] == "costs":
            # a kind with an entry of its own (a cost the calibration took from elsewhere) keeps that one
            for kind in ([k for k in prof.costs if prof.source_of(f"costs.{k}") is src] if len(parts) == 1
                         else [parts[1]]):
                scale_costs[kind] = f
        else:
            _scale(data, parts, f)
    out = profile_from_dict(data, where=f"{prof.name} ({end} corner): ")
    if scale_costs:
        out = dataclasses.replace(out, costs={k: d.scaled(scale_costs.get(k, 1.0)) for k, d in out.costs.items()})
    return dataclasses.replace(out, path=prof.path)


def _set(data: dict[str, Any], parts: list[str], value: float) -> None:
    node = data
    for p in parts[:-1]:
        node = node[p]
    node[parts[-1]] = type(node[parts[-1]])(value) if isinstance(node[parts[-1]], int) else value


def _scale(data: dict[str, Any], parts: list[str], f: float) -> None:
    node = data
    for p in parts[:-1]:
        node = node[p]
    v = node[parts[-1]]
    if isinstance(v, dict):  # a table: its real-valued fields (counts and switches stay)
        for k, x in v.items():
            if isinstance(x, float):
                v[k] = x * f
    elif isinstance(v, float):
        node[parts[-1]] = v * f


def mixed(layout: Profile, costs: Profile) -> Profile:
    """A profile with `costs`'s node costs (package service times and their cost per tree step, message sizes,
    the engine's per-message, per-package and per-byte CPU costs, NodeSpec.tree_share) on `layout`'s cluster
    (cores and ranks per node, the network, the IO loop's poll cost per iteration and per peer, the statistical
    workloads, which describe the search on the layout's problem). Each value keeps the source its own profile
    gives it."""
    io = dataclasses.replace(layout.io, **{k: getattr(costs.io, k) for k in NODE_COST_IO})
    node = dataclasses.replace(layout.node, tree_share=costs.node.tree_share)
    sources: dict[str, ValueSource] = {}
    cost_keys = ["costs", "steps", "messages", "node.tree_share"] + [f"io.{k}" for k in NODE_COST_IO]
    for key in _leaves({**layout.to_toml(), **({"steps": costs.to_toml()["steps"]} if costs.steps else {})}):
        src = costs if any(key == c or key.startswith(c + ".") for c in cost_keys) else layout
        v = src.source_of(key)
        if v.source != "unknown":
            sources[key] = v
    # a spread or range given for a whole table applies to the leaves it now covers, which _leaves lists
    prof = Profile(name=f"{layout.name}+{costs.name}-costs",
                   description=f"{costs.name}'s node costs on {layout.name}'s network and nodes",
                   source=f"node costs: {costs.source} | network and node layout: {layout.source}",
                   node=node, network=layout.network, io=io, costs=dict(costs.costs), messages=dict(costs.messages),
                   workloads=dict(layout.workloads), sources=_collapse(sources), steps=dict(costs.steps))
    try:
        return profile_from_dict(prof.to_toml(), where=f"profile {prof.name}: ")
    except ConfigError as e:
        raise ConfigError(f"--costs: {e}") from None


def _leaves(data: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for k, v in data.items():
        if k in ("name", "description", "source", "sources", "workload"):
            continue
        key = f"{prefix}{k}"
        if isinstance(v, dict) and not (prefix == "costs." or "dist" in v):
            out += _leaves(v, key + ".")
        else:
            out.append(key)
    return out


def _collapse(sources: dict[str, ValueSource]) -> dict[str, ValueSource]:
    """The same sources with the commonest plain one as "default", the others by name; a spread given for a
    table stays on each of its leaves."""
    plain = [v.source for v in sources.values() if not (v.range or v.spread)]
    if not plain:
        return sources
    common = max(set(plain), key=plain.count)
    out = {"default": ValueSource(common)}
    out.update({k: v for k, v in sources.items() if v.range or v.spread or v.source != common})
    return out
