"""Where a profile's values come from, the band they give a prediction, and a profile made of two: one
calibration's node costs on another profile's network and nodes."""

import dataclasses
import json

import pytest

from model.errors import ConfigError
from sim.profile import StepCost, ValueSource, load_profile, profile_from_dict
from sim.simulate import SimConfig, simulate
from sim.uncertainty import corner, mixed, uncertain


def test_every_shipped_value_says_where_it_comes_from_and_assumed_ones_give_a_range():
    from sim.uncertainty import _leaves

    for name in ("oculus", "local", "lengau"):
        p = load_profile(name)
        for key in _leaves(p.to_toml()):
            src = p.source_of(key)
            assert src.source in ("thesis", "measured", "assumed"), (name, key, src)
    oc = load_profile("oculus")
    assert oc.source_of("network.latency").source == "thesis"
    pp = oc.source_of("io.poll_per_peer")
    assert pp.source == "assumed" and pp.range[0] < oc.io.poll_per_peer < pp.range[1]
    assert ("io.poll_per_peer", pp) in uncertain(oc)


@pytest.mark.parametrize("entry, match", [
    ('"io.poll_per_peer" = "assumed"', "needs its range"),
    ('"io.nonsense" = "thesis"', "no such profile value"),
    ('"io.poll_per_peer" = "guessed"', "one of thesis, measured, assumed"),
    ('"io.poll_per_peer" = { source = "assumed", range = [2e-6, 1e-6] }', "low <= high"),
])
def test_bad_sources_are_one_clear_error(entry, match):
    import tomllib

    data = load_profile("oculus").to_toml()
    data["sources"] = tomllib.loads(entry)
    with pytest.raises(ConfigError, match=match):
        profile_from_dict(data, where="x.toml: ")


def test_the_corners_put_every_uncertain_value_at_one_end():
    oc = load_profile("oculus")
    lo, hi = corner(oc, "low"), corner(oc, "high")
    for key, src in uncertain(oc):
        section, *rest = key.split(".")
        if section == "io":
            assert getattr(lo.io, rest[0]) == src.range[0] and getattr(hi.io, rest[0]) == src.range[1]
    assert lo.network.latency == oc.network.latency == hi.network.latency  # from the thesis: not varied
    # a measured value with a spread over the calibration's repeats: scaled by 1 -/+ spread
    from sim.profile import ValueSource

    cal = dataclasses.replace(load_profile("local"), sources={"default": ValueSource("measured"),
                                                              "costs": ValueSource("measured", spread=0.1)})
    assert corner(cal, "high").costs["playout"].mean == pytest.approx(1.1 * cal.costs["playout"].mean)
    assert corner(cal, "low").costs["select"].mean == pytest.approx(0.9 * cal.costs["select"].mean)


def _rate(profile, costs=None, nodes=2):
    cfg = SimConfig(algo="treesplit", profile=str(profile), costs=str(costs) if costs else None, nodes=nodes,
                    seconds=0.01, warmup=0.002, fidelity="statistical", seed=1)
    return simulate(cfg)


def test_a_mixed_profile_runs_the_node_costs_of_one_on_the_network_of_the_other(tmp_path):
    oc, here = load_profile("oculus"), load_profile("local")
    m = mixed(oc, here)
    assert m.costs == here.costs and m.messages == here.messages and m.io.per_package == here.io.per_package
    assert m.network == oc.network and m.node.cores == oc.node.cores and m.io.poll_per_peer == oc.io.poll_per_peer
    assert m.source_of("costs.playout").source == "measured" and m.source_of("network.latency").source == "thesis"
    assert m.source_of("io.poll_per_peer") == oc.source_of("io.poll_per_peer")  # its range goes with it
    # a calibrated profile's cost per tree step is a node cost too
    stepped = dataclasses.replace(here, steps={"select": StepCost(mean=2.0, base=1e-6, slope=3e-7)},
                                  sources={**here.sources, "steps": ValueSource("measured")})
    ms = mixed(oc, stepped)
    assert ms.steps == stepped.steps and mixed(oc, here).steps == {}
    assert ms.source_of("steps.select.slope").source == "measured"
    # the simulator: slower packages in the costs profile slow the mixed one; a slower network in the costs
    # profile changes nothing, in the layout profile it does
    slow_cpu = dataclasses.replace(here, costs={k: d.scaled(3.0) for k, d in here.costs.items()})
    slow_net = dataclasses.replace(here, network=dataclasses.replace(here.network, latency=5e-3))
    paths = {}
    for name, p in {"here": here, "slow_cpu": slow_cpu, "slow_net": slow_net}.items():
        paths[name] = p.save(tmp_path / f"{name}.toml")
    far = dataclasses.replace(oc, network=dataclasses.replace(oc.network, latency=5e-3))
    paths["far"] = far.save(tmp_path / "far.toml")
    base = _rate("oculus", paths["here"])["sims_per_s"]
    assert _rate("oculus", paths["slow_cpu"])["sims_per_s"] < 0.6 * base
    assert _rate("oculus", paths["slow_net"])["sims_per_s"] == pytest.approx(base, rel=1e-9)
    assert _rate(paths["far"], paths["here"])["sims_per_s"] < 0.9 * base


@pytest.mark.timeout(300)
def test_predict_draws_a_band_a_sweep_and_another_clusters_curve(run_cli, tmp_path):
    r = run_cli("predict", "--nodes", "1,4", "--seconds", "0.005", "--json", "--no-save", "--quiet", timeout=200)
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(r.stdout)
    assert "io.poll_per_peer" in res["uncertain"]
    for p in res["points"]:
        assert p["sims_per_s_low"] <= p["sims_per_s"] <= p["sims_per_s_high"]
    assert any(p["sims_per_s_low"] < p["sims_per_s_high"] for p in res["points"])
    r = run_cli("predict", "--nodes", "1,4", "--seconds", "0.005", "--sweep", "io.poll_per_peer=0.5e-6,2.5e-6",
                "--no-band", "--costs", "local", "--out", str(tmp_path), "--quiet", timeout=200)
    assert r.returncode == 0, r.stderr[-2000:]
    import pandas as pd

    df = pd.read_csv(tmp_path / "treesplit-oculus+local-costs.csv")
    assert list(df["curve"].unique()) == ["io.poll_per_peer=0.5e-6", "io.poll_per_peer=2.5e-6"]
    assert (df.groupby("curve")["nodes"].apply(list) == pd.Series([[1, 4], [1, 4]], index=df.curve.unique())).all()
    for bad in (["--sweep", "io.poll_per_peer"], ["--sweep", "io.nope=1,2"], ["--costs", "/nonexistent.toml"]):
        r = run_cli("predict", "--nodes", "1,2", "--no-save", *bad, timeout=60)
        assert r.returncode != 0 and "Traceback" not in r.stderr, (bad, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, (bad, r.stderr)
