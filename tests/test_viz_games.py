"""The views learn about a game only through model/game.py: LOA (8x8 board, "b1-b3" moves) and the P-game (no board)."""

import numpy as np

from model.loa.game import parse_square
from model.loa.rules import PASS
from engine.trace_files import TraceWriter, read_trace
from model.trace import Meta
from viz.rundata import RunData
from viz.views import Overview, TreeShape


def loa_move(frm: str, to: str) -> int:
    return parse_square(frm) * 64 + parse_square(to)


# root -> b1-b3 (5), d1-b3 (3), g1-a1 (8), pass (1); g1-a1 -> c8-c6 (6), b1-b3 -> h3-f5 (2)
MOVES = [-1, loa_move("b1", "b3"), loa_move("d1", "b3"), loa_move("g1", "a1"), PASS, loa_move("c8", "c6"),
         loa_move("h3", "f5")]
TREE = dict(t=[1.0] * 7, hash=np.array([1, 2, 3, 4, 5, 6, 7], np.uint64),
            parent=np.array([0, 1, 1, 1, 1, 4, 2], np.uint64), move=MOVES, depth=[0, 1, 1, 1, 1, 2, 2],
            visits=[17, 5, 3, 8, 1, 6, 2], wins=[9.0, 4.0, 1.0, 5.0, 0.0, 2.0, 1.0], owner=[0, 1, 0, 1, 0, 0, 1],
            duplicated=[True, False, False, False, False, False, False])


def trace(tmp_path, game: str, board: int, moves=MOVES) -> RunData:
    meta = Meta(runtime="engine", algo="treesplit", game=game, board=board, machine="m", versions={"x": "y"},
                ranks={"search": 2, "broadcast": 0}, t_end=1.0)
    with TraceWriter(tmp_path, meta) as w:
        w.tree(dict(TREE, move=moves))
    return RunData.from_trace(read_trace(tmp_path))


def test_loa_overview_draws_root_children_at_their_destination_squares(tmp_path):
    d = trace(tmp_path, "loa", 19)  # the engine records its Go board size for every game: LOA must ignore it
    assert d.game == "loa" and d.board_shape() == (8, 8)
    v = Overview(d)
    assert v.board_fig is not None and v.board == (8, 8)
    assert v.board_fig.x_range.end == v.board_fig.y_range.end == 8 - 0.2
    assert v.board_fig.xaxis.major_label_overrides == dict(enumerate("abcdefgh"))
    st = v.stones.data
    cells = {(int(x), int(y)): (m, float(vi), c) for x, y, m, vi, c in zip(st["x"], st["y"], st["move"],
                                                                           st["visits"], st["color"])}
    assert all(0 <= x < 8 and 0 <= y < 8 for x, y in cells)
    # two moves land on b3: one circle, visits summed, named most visited first; the pass is not drawn
    assert set(cells) == {(1, 2), (0, 0)}
    assert cells[(1, 2)][:2] == ("b1-b3, d1-b3", 8.0) and cells[(0, 0)][:2] == ("g1-a1", 8.0)
    assert cells[(0, 0)][2] != cells[(1, 2)][2]  # the best move's square stands out
    i = list(st["move"]).index("b1-b3, d1-b3")
    np.testing.assert_allclose(st["value"][i], 5.0 / 8.0)
    np.testing.assert_allclose(st["share"][i], 8.0 / 17.0)
    assert "Best move: <b>g1-a1</b>" in v.summary.text


def test_loa_tree_labels_and_principal_variation(tmp_path):
    v = TreeShape(trace(tmp_path, "loa", 19))
    assert list(v.nodes.data["move"]) == ["root", "b1-b3", "d1-b3", "g1-a1", "pass", "c8-c6", "h3-f5"]
    assert list(v.pv.data["move"]) == ["root", "g1-a1", "c8-c6"]


def test_pgame_has_no_board_and_numbered_moves(tmp_path):
    d = trace(tmp_path, "pgame", 19, moves=[-1, 0, 1, 2, 3, 0, 1])
    assert d.board_shape() is None
    v = Overview(d)
    assert v.board_fig is None and "Best move: <b>2</b>" in v.summary.text
    assert list(TreeShape(d).pv.data["move"]) == ["root", "2", "0"]


def test_live_board_appears_when_the_meta_names_the_game():
    from model.telemetry import Window, encode
    from viz.live import LiveAggregator

    agg = LiveAggregator()
    agg.feed(encode(Window(0, 0.0).flush(0.2, sims_done=1, playouts_done=1, busy_frac=0.5, queue_len=0)))
    v = Overview(agg.snapshot())
    assert v.board_fig is not None and v.board == (19, 19) and not len(v.stones.data["x"])  # no game known yet
    meta = {"algo": "treesplit", "game": "loa", "board": 19, "ranks": {"search": 1, "broadcast": 0}, "threads": 1}
    tree = {k: [int(x) if k in ("hash", "parent") else x for x in vals] for k, vals in TREE.items() if k != "t"}
    agg.feed(encode(Window(0, 0.2).flush(0.4, sims_done=2, playouts_done=2, busy_frac=0.5, queue_len=0,
                                         meta=meta, tree=tree)))
    v.update(agg.snapshot())
    assert v.board == (8, 8) and v.board_fig.xaxis.major_label_overrides[7] == "h"
    assert "g1-a1" in list(v.stones.data["move"])
