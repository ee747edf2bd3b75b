"""The view contract: a class that builds its Bokeh models once and refreshes their data in update()."""

from __future__ import annotations

from typing import Any, Callable

from bokeh.models import Range1d

from viz.rundata import RunData


class View:
    """A dashboard view. Construct it with a RunData (it draws the whole run); call update(data, t, window)
    to show time t (the window's end) and the last `window` seconds (None: since the start).

    `ranges` shares axis ranges between views of two runs (compare mode): pass the first view's `ranges`
    to the second. `static` leaves out widgets that need a server (for standalone HTML reports).
    """

    name = "view"
    title = "View"

    def __init__(self, data: RunData, *, ranges: dict[str, Any] | None = None, static: bool = False):
        self.data = data
        self.ranges: dict[str, Any] = {} if ranges is None else ranges
        self.static = static
        self.t: float | None = None
        self.window: float | None = None

    def shared(self, key: str, factory: Callable[[], Any]) -> Any:
        if key not in self.ranges:
            self.ranges[key] = factory()
        return self.ranges[key]

    def time_range(self) -> Range1d:
        r = self.shared("time", lambda: Range1d(0.0, max(self.data.t_end, self.data.bin_s)))
        r.end = max(r.end, self.data.t_end)
        return r

    def update(self, data: RunData | None = None, t: float | None = None, window: float | None = None) -> None:
        raise NotImplementedError

    @property
    def layout(self):
        raise NotImplementedError
