"""treesplit: a study platform for distributed Monte-Carlo Tree Search."""

__version__ = "0.1.0"
