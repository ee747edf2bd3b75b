"""Machine profiles: loading, validation (one message naming the field), distributions, overrides."""

import dataclasses
import tomllib

import numpy as np
import pytest

from model.errors import ConfigError
from sim.distributions import Sampler, fit_distribution, parse_distribution
from sim.profile import load_profile, profile_from_dict, shipped_profiles


def oculus_dict():
    return load_profile("oculus").to_toml()


def test_shipped_profiles_load():
    assert {"oculus", "local"} <= set(shipped_profiles())
    p = load_profile("oculus")
    assert p.node.cores == 16 and p.node.ranks_per_node == 2 and p.node.workers_per_rank == 7
    assert p.network.bandwidth_bits == pytest.approx(32e9)  # 4xQDR per node
    assert p.network.latency < 1e-6                         # sub-microsecond RDMA
    # ~0.95 ms per sequential 19x19 simulation near move 10, playouts dominating
    c = p.costs
    seq = c["select"].mean + c["playout"].mean + c["update"].mean + 0.2 * c["expand"].mean
    assert 0.85e-3 < seq < 1.05e-3
    assert c["playout"].mean > 0.7 * seq
    local = load_profile("local")
    assert local.network.latency >= 0 and local.costs["playout"].mean > 0


@pytest.mark.parametrize("path,value,field", [
    (("network", "latency"), None, "network.latency: missing"),
    (("network", "gap_per_byte"), -1e-9, "network.gap_per_byte: must be"),
    (("io", "poll_per_peer"), -1.0, "io.poll_per_peer: must be"),
    (("node", "cores"), 1, "node.cores: must be"),
    (("node", "tree_share"), 1.5, "node.tree_share: must be a fraction"),
    (("costs", "playout"), None, "costs.playout: missing"),
    (("costs", "select"), {"dist": "lognormal", "median": -1.0, "sigma": 0.1}, "costs.select.median: must be >= 0"),
    (("costs", "update"), {"dist": "lognormal", "median": 1e-6}, "costs.update.sigma: missing"),
    (("costs", "sync"), {"dist": "gamma"}, "costs.sync.dist: expected one of"),
    (("messages", "MOVE"), -5, "messages.MOVE: expected a whole number"),
    (("messages", "BOGUS"), 5, "messages.BOGUS: unknown message kind"),
])
def test_bad_profiles_name_the_field(path, value, field):
    d = oculus_dict()
    table, key = path
    if value is None:
        del d[table][key]
    else:
        d[table][key] = value
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        profile_from_dict(d, where="p.toml: ")


def test_profile_file_errors(tmp_path):
    with pytest.raises(ConfigError, match="no such file or shipped profile"):
        load_profile(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("name = = 1")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_profile(bad)


def test_save_and_reload_roundtrip(tmp_path):
    p = load_profile("oculus")
    q = load_profile(p.save(tmp_path / "copy.toml"))
    assert q.to_toml() == p.to_toml()
    assert tomllib.loads((tmp_path / "copy.toml").read_text())["name"] == "oculus"


def test_overrides_by_dotted_name():
    p = load_profile("oculus").with_overrides({"network.latency": "2e-6", "costs.playout.median": "1e-3"})
    assert p.network.latency == 2e-6 and p.costs["playout"].median == 1e-3
    with pytest.raises(ConfigError, match="network.nope"):
        load_profile("oculus").with_overrides({"network.nope": "1"})
    with pytest.raises(ConfigError, match="network.latency: must be"):
        load_profile("oculus").with_overrides({"network.latency": "-1"})


def test_distributions_sample_their_mean():
    rng = np.random.default_rng(0)
    for spec in ({"dist": "const", "value": 3e-6}, {"dist": "lognormal", "median": 1e-4, "sigma": 0.5},
                 {"dist": "empirical", "quantiles": [1.0, 2.0, 4.0]},
                 {"dist": "empirical", "quantiles": [1.0, 2.0, 10.0], "probs": [0.0, 0.9, 1.0]}):
        d = parse_distribution("x", spec)
        s = Sampler(d, rng, block=1000)
        draws = np.array([s.next() for _ in range(20000)])
        assert draws.mean() == pytest.approx(d.mean, rel=0.03)
        assert draws.min() >= 0


def test_fit_keeps_the_mean_despite_a_long_tail():
    x = np.random.default_rng(1).lognormal(-9, 0.5, 20000)
    x[:10] = 0.05  # a few descheduled threads
    d = fit_distribution(x)
    assert d.mean == pytest.approx(x.mean(), rel=0.05)
    assert fit_distribution(np.full(10, 2.0)).dist == "const"
    # one outlier among many: interpolating up to it would spread 0.1 % of the mass up to 11 ms
    y = np.random.default_rng(2).normal(4.5e-6, 5e-7, 170_000).clip(1e-6)
    y[7] = 0.011
    f = fit_distribution(y)
    assert f.mean == pytest.approx(y.mean(), rel=0.01)
    assert f.quantiles[-2] <= f.quantiles[-1] <= y.max()
    with pytest.raises(ConfigError, match="probs: must rise"):
        parse_distribution("x", {"dist": "empirical", "quantiles": [1, 2], "probs": [0.5, 1.0]})


def test_tree_share_slows_the_workers_of_one_tree_and_calibration_divides_it_out(tmp_path):
    from engine.trace_files import read_trace
    from sim.calibrate import calibrate
    from sim.simulate import SimConfig, simulate

    base = load_profile("oculus")  # 2 ranks of 1 IO core + 7 workers per node
    assert base.node.tree_share == 0 and base.contended() is base  # optional; old profiles share for free
    shared = dataclasses.replace(base, node=dataclasses.replace(base.node, tree_share=0.05))
    assert shared.node.sharing_factor() == pytest.approx(1.30) and shared.node.sharing_factor(1) == 1.0
    c = shared.contended()
    assert c.costs["playout"].mean == pytest.approx(1.30 * base.costs["playout"].mean)
    assert c.costs["select"].mean == pytest.approx(1.30 * base.costs["select"].mean)
    assert c.costs["sync"].mean == pytest.approx(base.costs["sync"].mean)  # not one simulation's
    assert profile_from_dict(shared.to_toml()).node.tree_share == 0.05  # saved and read back

    def run(prof, trace=None):
        cfg = SimConfig(algo="treesplit", profile="oculus", nodes=1, seconds=0.1, fidelity="functional",
                        game="pgame", seed=3, trace=trace)
        return simulate(cfg, profile=prof)

    alone, slowed = run(base), run(shared, str(tmp_path / "t"))
    assert slowed["sims_per_s"] / alone["sims_per_s"] == pytest.approx(1 / 1.30, rel=0.1)
    # the trace shows the slowed packages; a calibration that knows the share recovers a worker alone
    tr = read_trace(tmp_path / "t")
    knows = calibrate(tr, base, name="knows", tree_share=0.05)
    ignores = calibrate(tr, base, name="ignores")
    # a part's cost per tree step only where asked for (the trace says every part's steps either way)
    assert knows.steps == {} and (tr.packages.loc[tr.packages["kind"].astype(str) == "select", "steps"] >= 0).all()
    stepped = calibrate(tr, base, name="stepped", tree_share=0.05, per_step=True)
    assert set(stepped.steps) == {"select", "update"} and stepped.costs == knows.costs
    assert knows.node.tree_share == 0.05 and "divided by 1.300" in knows.source
    assert knows.costs["playout"].mean == pytest.approx(base.costs["playout"].mean, rel=0.1)
    assert ignores.costs["playout"].mean == pytest.approx(1.30 * base.costs["playout"].mean, rel=0.1)


def test_a_part_is_charged_for_the_tree_steps_it_covered():
    from sim.profile import StepCost

    d = oculus_dict()
    d["steps"] = {"select": {"mean": 2.0, "base": 1e-6, "slope": 1e-6}}
    p = profile_from_dict(d)
    assert p.steps["select"] == StepCost(2.0, 1e-6, 1e-6)
    assert profile_from_dict(p.to_toml()).steps == p.steps  # saved and read back
    # factor(s) = (base + slope s) / (base + slope mean): 1 at the calibration's mean
    s = Sampler(parse_distribution("x", 3.0), np.random.default_rng(0), per_step=p.steps["select"].coefficients())
    assert s.at(2) == pytest.approx(3.0) and s.at(5) == pytest.approx(3.0 * 6 / 3) and s.at(0) == pytest.approx(1.0)
    assert s.at(-1) == 3.0 and s.next() == 3.0  # steps not known: the plain draw
    for bad, msg in (({"playout": {"mean": 1, "base": 1, "slope": 1}}, "steps.playout: no steps"),
                     ({"select": {"mean": 1, "base": 1}}, "steps.select: expected a table"),
                     ({"update": {"mean": 1, "base": -1.0, "slope": 1}}, "steps.update.base: must be"),
                     ({"update": {"mean": 1, "base": 0, "slope": 0}}, "steps.update: base \\+ slope"),
                     ({"update": {"mean": "x", "base": 0, "slope": 0}}, "steps.update.mean: expected a number")):
        with pytest.raises(ConfigError, match=msg):
            profile_from_dict({**oculus_dict(), "steps": bad}, where="p.toml: ")


def test_calibration_fits_the_cost_of_a_step():
    import pandas as pd

    from sim.calibrate import step_costs

    rng = np.random.default_rng(1)
    n = 4000
    steps = rng.integers(0, 7, n)
    dur = 1e-6 + 0.5e-6 * steps + rng.normal(0, 5e-8, n)
    dur[::997] += 5e-3  # a descheduled thread now and then: left out of the line
    kind = np.where(np.arange(n) % 2 == 0, "select", "update")
    pk = pd.DataFrame({"t_start": np.zeros(n), "t_end": dur, "kind": kind, "steps": steps})
    pk.loc[pk["kind"] == "update", "steps"] = 3  # steps that never vary say nothing of a step's cost
    fit = step_costs(pk)
    assert set(fit) == {"select"}
    sel = fit["select"]
    assert sel.base == pytest.approx(1e-6, rel=0.05) and sel.slope == pytest.approx(0.5e-6, rel=0.05)
    assert sel.mean == pytest.approx(steps[kind == "select"].mean())
    assert step_costs(pk.assign(steps=-1)) == {}  # a trace that does not say (schema version 1)


def test_the_functional_fidelity_charges_a_long_path_more(tmp_path):
    """Root parallelisation's selects cover whole paths: under a profile whose select cost grows with the
    steps, its simulations are slower than under the same profile without, and its trace says each part's
    steps as charged."""
    from engine.trace_files import read_trace
    from sim.profile import StepCost
    from sim.simulate import SimConfig, simulate

    base = load_profile("oculus")
    sel = base.costs["select"].mean
    steep = dataclasses.replace(base, steps={"select": StepCost(mean=1.0, base=0.0, slope=sel)})

    def run(prof, trace=None):
        cfg = SimConfig(algo="root", profile="oculus", nodes=1, seconds=0.05, fidelity="functional",
                        game="pgame", seed=3, trace=trace)
        return simulate(cfg, profile=prof)

    flat, steeped = run(base), run(steep, str(tmp_path / "t"))
    assert steeped["sims_per_s"] < flat["sims_per_s"]
    pk = read_trace(tmp_path / "t").packages
    s = pk[pk["kind"].astype(str) == "select"]
    assert (s["steps"] >= 0).all() and s["steps"].mean() > 1.5  # whole paths, several steps each
    cost = (s["t_end"] - s["t_start"]).to_numpy()
    assert np.corrcoef(s["steps"].to_numpy(), cost)[0, 1] > 0.5
