"""sim/clock.py: plain-callback entries run in the order, and with the event count, that SimPy Timeouts
and processes would give the same schedule."""

import random

import pytest
import simpy

from sim.clock import Clock


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
    ref_env, ref_log = simpy.Environment(), []
    clk_env, clk_log = Clock(), []
    _schedule_tree(ref_env, False, ref_log, seed)
    _schedule_tree(clk_env, True, clk_log, seed)
    for until in (0.5, 1.0, 2.0, 3.5, 7.0):  # stop times on event times too: ties with the stop event
        ref_env.run(until=until)
        clk_env.run_to(until)
        assert clk_env.now == ref_env.now == until
        assert clk_log == ref_log
    assert len(ref_log) > 10
    assert next(clk_env._eid) == next(ref_env._eid)
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
