"""Subcommands of `treesplit` owned by sim/: one module each, each with register(subparsers)."""
