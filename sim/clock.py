"""SimPy's Environment with plain-callback entries: what the functional runtime's hot paths schedule.

A SimPy Timeout or Event and the Process that waits for it cost several Python objects and calls per
event; a simulated cluster spends most of its events on a few kinds (a package ends, a message arrives, an
IO core wakes up). Those go on the same heap as SimPy's events, as (time, priority, id, function, arg):
the clock pops them in the same (time, priority, id) order and calls function(arg). Ids come from the
environment's counter, so the order of events, ties included, and the event count are those SimPy would
give the same schedule; ordinary SimPy processes and events still work beside them.
"""

from __future__ import annotations

from heapq import heappop, heappush
from typing import Any, Callable

import simpy
from simpy.core import EmptySchedule

NORMAL = 1  # simpy.events.NORMAL: a Timeout's, a succeeded Event's
URGENT = 0  # simpy.events.URGENT: a Process's start


class Clock(simpy.Environment):
    def at(self, delay: float, fn: Callable[[Any], None], arg: Any = None, priority: int = NORMAL) -> None:
        """Call fn(arg) `delay` from now (what a Timeout(delay) and a callback on it would do)."""
        heappush(self._queue, (self._now + delay, priority, next(self._eid), fn, arg))

    def step(self) -> None:
        try:
            e = heappop(self._queue)
        except IndexError:
            raise EmptySchedule from None
        self._now = e[0]
        if len(e) == 5:
            e[3](e[4])
        else:
            self._simpy_event(e[3])

    def _simpy_event(self, event) -> None:
        callbacks, event.callbacks = event.callbacks, None
        for callback in callbacks:
            callback(event)
        if not event._ok and not hasattr(event, "_defused"):
            exc = type(event._value)(*event._value.args)
            exc.__cause__ = event._value
            raise exc

    def run_to(self, at: float) -> None:
        """Process every event before `at`, then stand at `at`: SimPy's run(until=at), without its
        StopSimulation machinery. Its stop event goes before regular ones at `at`; once it has stopped the
        run, SimPy schedules it again (priority -1, one more id) and it is stepped over at the next step,
        which the left-over entry here stands for, so that event counts agree."""
        if at <= self._now:
            raise ValueError(f"until ({at}) must be greater than the current simulation time")
        at = self._now + (at - self._now)  # the time SimPy's schedule() gives the stop event
        stop = next(self._eid)
        q = self._queue
        simpy_event = self._simpy_event
        while q:
            e = q[0]
            if e[0] >= at and (e[0] > at or e[1] > URGENT or e[2] > stop):
                break
            heappop(q)
            self._now = e[0]
            if len(e) == 5:
                e[3](e[4])
            else:
                simpy_event(e[3])
        self._now = at
        heappush(q, (at, -1, next(self._eid), _nothing, None))


def _nothing(_) -> None:
    pass
