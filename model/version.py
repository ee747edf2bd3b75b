"""Versions of installed packages, treesplit's own among them, from package metadata (model/ does not import
the CLI package for its version)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def package_version(package: str = "treesplit") -> str:
    """The package's version as installed; "dev" where it is not installed (a checkout never installed)."""
    try:
        return version(package)
    except PackageNotFoundError:
        return "dev"
