"""Subcommands of `treesplit` owned by viz/: one module each, each with register(subparsers)."""
