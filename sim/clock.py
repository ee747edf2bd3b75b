"""SimPy's Environment with plain-callback entries: what the functional runtime's hot paths schedule.

A SimPy Timeout or Event and the Process that waits for it cost several Python objects and calls per
event; a simulated cluster spends most of its events on a few kinds (a package ends, a message arrives, an
IO core wakes up). Those go on the same heap as SimPy's events, as (time, priority, id, function, arg):
the clock pops them in the same (time, priority, id) order and calls function(arg). Ids come from one
counter, so the order of events, ties included, and the event count are those SimPy would give the same
schedule; ordinary SimPy processes and events still work beside them.

Clock is an Environment subclass that keeps its own schedule: it overrides the methods through which
SimPy's events and processes reach their environment (`now`, `schedule`, `peek`, `step`; `run` is
SimPy's own, built on them) and reads events only through their public attributes (`callbacks`, `ok`,
`defused`, `value`), so nothing here depends on SimPy's private names. `heap` and `ids` are public for the
runtime's hot paths, which push entries directly.
"""

from __future__ import annotations

from heapq import heappop, heappush
from itertools import count
from typing import Any, Callable

import simpy
from simpy.core import EmptySchedule, Infinity, StopSimulation
from simpy.events import NORMAL, URGENT

__all__ = ["Clock", "NORMAL", "URGENT"]


class Clock(simpy.Environment):
    # A plain attribute, not Environment's property: the hot paths read it on every event.
    now: float = 0.0  # type: ignore[assignment]

    def __init__(self, initial_time: float = 0.0):
        super().__init__(initial_time)
        self.now = initial_time
        self.heap: list[tuple] = []  # (time, priority, id, event) or (time, priority, id, fn, arg)
        self.ids = count()

    def schedule(self, event: simpy.Event, priority: int = NORMAL, delay: float = 0) -> None:
        heappush(self.heap, (self.now + delay, priority, next(self.ids), event))

    def at(self, delay: float, fn: Callable[[Any], None], arg: Any = None, priority: int = NORMAL) -> None:
        """Call fn(arg) `delay` from now (what a Timeout(delay) and a callback on it would do)."""
        heappush(self.heap, (self.now + delay, priority, next(self.ids), fn, arg))

    def peek(self) -> float:
        return self.heap[0][0] if self.heap else Infinity

    def events(self) -> int:
        """How many entries have been scheduled so far (as SimPy counts events; this takes one more id,
        which orders nothing since ids only break ties among entries already scheduled)."""
        return next(self.ids)

    def step(self) -> None:
        try:
            e = heappop(self.heap)
        except IndexError:
            raise EmptySchedule from None
        self.now = e[0]
        if len(e) == 5:
            e[3](e[4])
        else:
            self._simpy_event(e[3])

    def _simpy_event(self, event: simpy.Event) -> None:
        """What Environment.step does with an event: its callbacks, then a failure nobody defused."""
        callbacks, event.callbacks = event.callbacks, None
        try:
            for callback in callbacks:
                callback(event)
        except StopSimulation:
            # run(until=...) stopped here: the remaining callbacks go with the event, which comes back first
            event.callbacks = callbacks[callbacks.index(callback) + 1:]
            self.schedule(event, -1)
            raise
        if not event.ok and not event.defused:
            exc = type(event.value)(*event.value.args)
            exc.__cause__ = event.value
            raise exc

    def run_to(self, at: float) -> None:
        """Process every event before `at`, then stand at `at`: SimPy's run(until=at), without its
        StopSimulation machinery. Its stop event goes before regular ones at `at`; once it has stopped the
        run, SimPy schedules it again (priority -1, one more id) and it is stepped over at the next step,
        which the left-over entry here stands for, so that event counts agree."""
        if at <= self.now:
            raise ValueError(f"until ({at}) must be greater than the current simulation time")
        at = self.now + (at - self.now)  # the time SimPy's schedule() gives the stop event
        stop = next(self.ids)
        q = self.heap
        simpy_event = self._simpy_event
        while q:
            e = q[0]
            if e[0] >= at and (e[0] > at or e[1] > URGENT or e[2] > stop):
                break
            heappop(q)
            self.now = e[0]
            if len(e) == 5:
                e[3](e[4])
            else:
                simpy_event(e[3])
        self.now = at
        heappush(q, (at, -1, next(self.ids), _nothing, None))


def _nothing(_) -> None:
    pass
