"""Subcommands of `treesplit` owned by engine/: one module each, each with register(subparsers)."""
