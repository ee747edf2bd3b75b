"""Benchmark kinds of the engine (`treesplit bench KIND`), one module each."""
