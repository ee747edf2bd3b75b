"""Subcommands of `treesplit` owned by experiments/: one module each, each with register(subparsers)."""
