"""Configuration files: read a TOML file into a table or a config dataclass (model/config.py parses and
validates; reading the file happens here, so that model/ stays free of I/O)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from model.config import from_toml, parse_toml
from model.errors import ConfigError

T = TypeVar("T")


def _text(p: Path, missing: str) -> str:
    try:
        return p.read_text()
    except FileNotFoundError:
        raise ConfigError(f"{p}: {missing}") from None
    except OSError as e:
        raise ConfigError(f"{p}: cannot be read ({e.strerror})") from None


def read_toml(path: str | Path, missing: str = "no such file") -> dict[str, Any]:
    """A TOML file's table; a missing or malformed file is one ConfigError naming it."""
    p = Path(path)
    return parse_toml(_text(p, missing), str(p))


def load_toml(cls: type[T], path: str | Path, section: str | None = None) -> T:
    """A config dataclass from a TOML file (optionally one [section] of it)."""
    p = Path(path)
    return from_toml(cls, _text(p, "no such file"), str(p), section)
