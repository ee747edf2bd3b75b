"""GTP vertices ("D4", "pass") <-> actions (row-major points, row 0 at the bottom; size*size is pass)."""

from __future__ import annotations

from model.errors import UserError

COLUMNS = "ABCDEFGHJKLMNOPQRST"  # GTP skips I


def vertex_to_action(vertex: str, size: int) -> int:
    """'D4' -> action, 'pass' -> size*size; UserError for anything else or off the board."""
    v = vertex.strip().upper()
    if v == "PASS":
        return size * size
    if len(v) < 2 or v[0] not in COLUMNS or not v[1:].isdigit():
        raise UserError(f"invalid vertex {vertex!r} (expected e.g. D4 or pass)")
    col = COLUMNS.index(v[0])
    row = int(v[1:]) - 1
    if col >= size or not 0 <= row < size:
        raise UserError(f"vertex {vertex!r} is off the {size}x{size} board")
    return row * size + col


def action_to_vertex(action: int, size: int) -> str:
    """Action -> 'D4'; size*size -> 'pass'."""
    if action == size * size:
        return "pass"
    if not 0 <= action < size * size:
        raise UserError(f"action {action} is not on the {size}x{size} board")
    row, col = divmod(int(action), size)
    return f"{COLUMNS[col]}{row + 1}"


def parse_color(color: int | str) -> int:
    """0/1 or 'b'/'w'/'black'/'white' (any case) -> 0 Black, 1 White."""
    if isinstance(color, str):
        c = color.strip().lower()
        if c in ("b", "black"):
            return 0
        if c in ("w", "white"):
            return 1
    elif color in (0, 1) and not isinstance(color, bool):
        return int(color)
    raise UserError(f"invalid color {color!r} (expected black or white)")
