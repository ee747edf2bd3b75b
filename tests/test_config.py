from dataclasses import dataclass

import pytest

from engine.config_files import load_toml
from model.config import check, from_dict, parse_overrides, with_overrides
from model.errors import ConfigError


@dataclass
class Demo:
    n_dup: int = 8192
    alpha: float = 0.02
    name: str = "x"
    rave: bool = True

    def validate(self):
        check(self.n_dup >= 1, "n_dup", "must be >= 1")


def test_toml_and_overrides(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text("[algo]\nn_dup = 16\nalpha = 0.5\n")
    c = load_toml(Demo, p, "algo")
    assert (c.n_dup, c.alpha) == (16, 0.5)
    c2 = with_overrides(c, parse_overrides(["rave=off", "n_dup=32"]))
    assert c2.rave is False and c2.n_dup == 32


@pytest.mark.parametrize("data,msg", [({"n_dup": 0}, "n_dup: must be"), ({"bogus": 1}, "bogus: unknown"),
                                      ({"alpha": "fast"}, "alpha: expected a number"),
                                      ({"n_dup": 1.5}, "n_dup: expected an integer")])
def test_bad_values_name_the_field(data, msg):
    with pytest.raises(ConfigError, match=msg):
        from_dict(Demo, data)


def test_bad_toml_file(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text("n_dup = = 3")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_toml(Demo, p)
    with pytest.raises(ConfigError, match="no such file"):
        load_toml(Demo, tmp_path / "missing.toml")
    with pytest.raises(ConfigError, match="expected key=value"):
        parse_overrides(["novalue"])
