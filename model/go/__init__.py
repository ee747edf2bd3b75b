"""Go: rules and playouts as numba kernels over flat arrays (board.py), and the game record (game.py)."""
