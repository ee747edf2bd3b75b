"""sim/clock.py: plain-callback entries run in the order, and with the event count, that SimPy Timeouts
and processes would give the same schedule."""

import random

import pytest
import simpy

from sim.clock import Clock


class CountingEnvironment(simpy.Environment):
    """Plain SimPy that counts what it schedules (the ids it gives out)."""

    def __init__(self):
        super().__init__()
        self.scheduled = 0

    def schedule(self, event, priority=simpy.events.NORMAL, delay=0):
        self.scheduled += 1
        super().schedule(event, priority, delay)


def _schedule_tree(env, use_clock: bool, log: list, seed: int) -> None:
    """Callbacks that schedule more callbacks, with ties (delay 0, repeated delays) on purpose."""
    rng = random.Random(seed)
    delays = [0.0, 0.5, 1.0, 1.0, 2.5]

    def fire(tag):
        log.append((env.now, tag))
        if len(tag) < 4:
            for i in range(rng.randrange(3)):
                later(rng.choice(delays), tag + (i,))

    def later(delay, tag):
        if use_clock:
            env.at(delay, fire, tag)
        else:
            ev = env.timeout(delay, tag)
            ev.callbacks.append(lambda e: fire(e.value))

    for i in range(6):
        later(rng.choice(delays), (i,))

    def proc(name):  # an ordinary SimPy process beside them
        for _ in range(4):
            yield env.timeout(1.0)
            log.append((env.now, name))

    env.process(proc("p"))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_clock_entries_keep_simpy_order_and_event_count(seed):
    ref_env, ref_log = CountingEnvironment(), []
    clk_env, clk_log = Clock(), []
    _schedule_tree(ref_env, False, ref_log, seed)
    _schedule_tree(clk_env, True, clk_log, seed)
    for until in (0.5, 1.0, 2.0, 3.5, 7.0):  # stop times on event times too: ties with the stop event
        ref_env.run(until=until)
        clk_env.run_to(until)
        assert clk_env.now == ref_env.now == until
        assert clk_log == ref_log
    assert len(ref_log) > 10
    assert clk_env.events() == ref_env.scheduled
    # what is left steps the same way (the drain's quiescence loop)
    while ref_env.peek() < float("inf"):
        ref_env.step()
    while clk_env.peek() < float("inf"):
        clk_env.step()
    assert clk_log == ref_log


def test_run_to_refuses_the_past():
    env = Clock()
    env.run_to(1.0)
    with pytest.raises(ValueError):
        env.run_to(1.0)


def test_simpy_events_and_failures_through_the_clock():
    """Ordinary SimPy use on the Clock: succeed/fail, a process waiting on both, run(until=event)."""
    env = Clock()
    ok, bad = env.event(), env.event()
    seen = []

    def waiter():
        v = yield ok
        seen.append((env.now, v))
        try:
            yield bad
        except KeyError as e:
            seen.append((env.now, e.args))
        return "done"

    p = env.process(waiter())
    env.at(1.0, lambda _: ok.succeed(7))
    env.at(2.0, lambda _: bad.fail(KeyError("x")))
    assert env.run(until=p) == "done"
    assert seen == [(1.0, 7), (2.0, ("x",))]
    assert ok.processed and ok.ok and ok.value == 7 and p.triggered

    lost = env.event()
    env.at(0.5, lambda _: lost.fail(ValueError("nobody waits")))
    with pytest.raises(ValueError, match="nobody waits"):
        env.run()


def _simpy_private_names() -> set[str]:
    """The private attribute names SimPy's environment and events carry (read off live objects, so a
    SimPy release that renames them is covered too)."""
    env = simpy.Environment()
    ev = env.event()
    ev.fail(ValueError())
    ev.defused = True

    def proc():
        yield env.timeout(1)

    objs = [env, ev, env.timeout(1), env.process(proc()), env.all_of([env.timeout(1)])]
    names = {k for o in objs for k in vars(o) if k.startswith("_") and not k.startswith("__")}
    assert {"_queue", "_eid", "_now", "_ok", "_value"} <= names
    return names


def test_sim_uses_simpy_through_its_public_api():
    """No module under sim/ reads or writes a private attribute of another object (only self's), and
    none touches one of SimPy's private names even on self (a Clock is a SimPy Environment)."""
    import ast
    from pathlib import Path

    simpy_private = _simpy_private_names()
    root = Path(__file__).resolve().parents[1]
    bad = []
    files = sorted((root / "sim").rglob("*.py"))
    assert files
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Attribute):
                continue
            name = node.attr
            if not name.startswith("_") or name.startswith("__"):
                continue
            own = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
            if not own or name in simpy_private:
                bad.append(f"{path.relative_to(root)}:{node.lineno}: .{name}")
    assert bad == []
