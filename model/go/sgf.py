"""SGF read/write of GoGame through sgfmill (main line only; AB/AW setup, HA, KM, RE)."""

from __future__ import annotations

from sgfmill import sgf, sgf_moves

from model.errors import ConfigError, UserError
from model.go.game import GoGame, IllegalMove
from model.version import package_version

_COLOUR = {0: "b", 1: "w"}


def game_to_sgf(game: GoGame) -> bytes:
    """The game as SGF (FF[4]), with RE once both players have passed (Tromp-Taylor, all stones alive)."""
    out = sgf.Sgf_game(size=game.size)
    root = out.get_root()
    root.set("KM", game.komi)
    root.set("AP", ("treesplit", package_version()))
    n = game.size

    def rc(a: int) -> tuple[int, int]:
        return divmod(int(a), n)

    if game.setup_black or game.setup_white:
        root.set_setup_stones([rc(a) for a in game.setup_black], [rc(a) for a in game.setup_white])
        if game.setup_black and not game.setup_white:
            root.set("HA", len(game.setup_black))
    for player, a in game.moves:
        node = out.extend_main_sequence()
        node.set_move(_COLOUR[player], None if a == game.pass_action else rc(a))
    if game.is_over:
        root.set("RE", game.result_string(game.score()))
    return out.serialise()


def game_from_sgf(data: bytes, policy: str = "random") -> GoGame:
    """A GoGame replaying the main line of an SGF game; UserError naming the problem if it cannot."""

    if isinstance(data, str):
        data = data.encode()
    try:
        src = sgf.Sgf_game.from_bytes(data)
    except ValueError as e:
        raise UserError(f"not a readable SGF game: {e}") from None
    try:
        size = src.get_size()
    except ValueError as e:
        raise UserError(f"SGF SZ (board size): {e}") from None
    try:
        komi = src.get_komi()
    except ValueError as e:
        raise UserError(f"SGF KM (komi): {e}") from None
    try:
        game = GoGame(size, komi, policy)
    except ConfigError as e:
        raise UserError(f"SGF game: {e}") from None
    try:
        setup_board, plays = sgf_moves.get_setup_and_moves(src)
    except ValueError as e:
        raise UserError(f"SGF game: {str(e) or 'a move or setup point is malformed or off the board'}") from None
    black, white = [], []
    for colour, (row, col) in setup_board.list_occupied_points():
        (black if colour == "b" else white).append(row * size + col)
    if black or white:
        first = None
        if plays:
            first = 0 if plays[0][0] == "b" else 1
        else:
            pl = src.get_root().get("PL") if src.get_root().has_property("PL") else None
            if pl in ("b", "w"):
                first = 0 if pl == "b" else 1
        try:
            game.set_setup(black, white, first)
        except ConfigError as e:
            raise UserError(f"SGF setup stones: {e}") from None
    for i, (colour, move) in enumerate(plays, start=1):
        a = game.pass_action if move is None else move[0] * size + move[1]
        try:
            game.play(a, colour)
        except IllegalMove as e:
            raise UserError(f"SGF move {i} ({colour.upper()} {game.action_to_vertex(a)}): illegal: {e}") from None
    return game
