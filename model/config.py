"""Configuration dataclasses: loading from TOML, `key=value` overrides, and field validation.

Every configuration in treesplit is a dataclass whose `validate()` raises ConfigError naming the field.
This module holds the shared mechanics so each config only declares its fields and its checks.
"""

from __future__ import annotations

import dataclasses
import functools
import tomllib
import typing
from typing import Any, TypeVar

from model.errors import ConfigError

T = TypeVar("T")


def _coerce(name: str, typ: Any, value: Any) -> Any:
    """Convert a TOML or command-line value to the field's declared type, or raise ConfigError."""
    origin = typing.get_origin(typ)
    if origin is typing.Union or (origin is not None and str(origin) == "<class 'types.UnionType'>"):
        args = [a for a in typing.get_args(typ) if a is not type(None)]
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null")):
            return None
        typ = args[0]
    if typ is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("1", "true", "yes", "on"):
            return True
        if isinstance(value, str) and value.lower() in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{name}: expected true/false, got {value!r}")
    if typ is int:
        if isinstance(value, bool):
            raise ConfigError(f"{name}: expected an integer, got {value!r}")
        if isinstance(value, float) and value == float("inf"):
            return value
        try:
            if isinstance(value, str) and value.lower() in ("inf", "infinity"):
                return float("inf")
            f = float(value)
            if f != int(f):
                raise ValueError
            return int(f)
        except (TypeError, ValueError):
            raise ConfigError(f"{name}: expected an integer, got {value!r}") from None
    if typ is float:
        if isinstance(value, bool):
            raise ConfigError(f"{name}: expected a number, got {value!r}")
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{name}: expected a number, got {value!r}") from None
    if typ is str:
        if not isinstance(value, str):
            raise ConfigError(f"{name}: expected a string, got {value!r}")
        return value
    return value


@functools.cache
def _type_hints(cls: type) -> dict[str, Any]:
    # resolving the annotations costs ~0.6 ms a class, and every search of a GTP session builds its configs
    return typing.get_type_hints(cls)


def from_dict(cls: type[T], data: dict[str, Any], where: str = "") -> T:
    """Build and validate a config dataclass from a mapping; unknown keys are an error."""
    hints = _type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs = {}
    for key, value in data.items():
        if key not in fields:
            known = ", ".join(sorted(fields))
            raise ConfigError(f"{where}{key}: unknown setting (known: {known})")
        kwargs[key] = _coerce(f"{where}{key}", hints[key], value)
    try:
        obj = cls(**kwargs)
    except TypeError as e:
        raise ConfigError(f"{where}{e}") from None
    validate = getattr(obj, "validate", None)
    if validate:
        validate()
    return obj


def parse_toml(text: str, where: str) -> dict[str, Any]:
    """A TOML document's table; malformed TOML is one ConfigError naming `where` (the file it came from)."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{where}: not valid TOML ({e})") from None


def from_toml(cls: type[T], text: str, where: str, section: str | None = None) -> T:
    """A config dataclass from a TOML document (optionally one [section] of it); `where` names its source."""
    data = parse_toml(text, where)
    if section is not None:
        if section not in data:
            raise ConfigError(f"{where}: missing section [{section}]")
        data = data[section]
    return from_dict(cls, data, where=f"{where}: ")


def parse_overrides(pairs: list[str] | None) -> dict[str, str]:
    """Turn ["key=value", ...] (the --param flag) into a dict, rejecting malformed items."""
    out: dict[str, str] = {}
    for item in pairs or []:
        if "=" not in item:
            raise ConfigError(f"--param {item!r}: expected key=value")
        key, value = item.split("=", 1)
        key = key.strip()
        if not key:
            raise ConfigError(f"--param {item!r}: empty key")
        out[key] = value.strip()
    return out


def with_overrides(obj: T, pairs: dict[str, Any]) -> T:
    """A copy of a config dataclass with some fields replaced (coerced and validated)."""
    data = dataclasses.asdict(obj)
    data.update(pairs)
    return from_dict(type(obj), data)


def check(cond: bool, field: str, msg: str) -> None:
    """Raise ConfigError for `field` unless `cond` holds. Used inside validate() methods."""
    if not cond:
        raise ConfigError(f"{field}: {msg}")
