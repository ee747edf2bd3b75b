"""treesplit: a study platform for distributed Monte-Carlo Tree Search."""

from model.version import package_version

__version__ = package_version()  # said once, in pyproject.toml
