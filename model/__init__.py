"""What is studied, free of I/O and clocks: games, transposition table, UCT, parallel roles, trace schema."""

from model._numba_cache import configure as _configure_numba_cache

_configure_numba_cache()
