"""Benchmarks of sim/: `treesplit bench sim`."""
