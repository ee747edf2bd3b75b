"""The game interface: the one place where search, roles, simulator and viz learn about a game.

A game is a set of numba kernels over two flat arrays, so that every search kernel can be compiled once,
cached, and run without the GIL:

    g  int64[:]   the game's parameters; g[0] is the game id (GO, PGAME, ...), the rest is game-specific
                  (for Go: size, komi, playout policy, ...). Made by the game's make_params().
    s  int64[:]   one position, the whole of it (board, chains, hash, side to move, ko, move count...),
                  so copying a position is `s.copy()`. Made by the game's new_state(g).

Kernels (all @njit(cache=True, nogil=True)), dispatched on g[0] below:

    n_actions(g) -> int               size of the action space (Go: size*size + 1, the last is pass)
    legal_actions(g, s, out) -> int   writes the legal actions to out[:n] and returns n
    play(g, s, a) -> bool             plays action a in place; False (and s unchanged) if illegal
    hash(g, s) -> uint64              Zobrist hash of position + side to move (the TT key, decides owner rank)
    to_move(g, s) -> int              0 = first player (Black), 1 = second player
    is_terminal(g, s) -> bool
    playout(g, s, rng, amaf) -> float plays s to the end in place; returns the result from the first
                                      player's view: > 0 first player wins, < 0 loses, 0 draw (Go: the
                                      area score minus komi). amaf: int8[n_actions], on return holds for
                                      each action the player who played it first in the playout (-1: none);
                                      the caller initialises it (with the moves of the tree part, for RAVE).
    reward(g, result) -> float        1.0 / 0.0 / 0.5 for a first-player win / loss / draw

Game-level rules that need history (positional superko in Go) are the search's and the game record's
business, through each game's position hash; the kernels above are history-free.
"""
