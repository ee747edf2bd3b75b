"""The CONTROL protocol: when to stop, how to know that nothing is left in flight, and the final reports.

Phases, driven by rank 0 (the coordinator); the others follow its CONTROL messages:

    RUN     ranks search; every PROGRESS_EVERY s (SIMS_PROGRESS_EVERY s under a simulation budget) each rank
            tells rank 0 how many simulations it completed. Rank 0 ends the phase when the sims budget is
            reached or the time is up: STOP to all.
    DRAIN   roles start no new simulations; in-flight ones finish. Rank 0 sends PROBE waves; each rank
            answers (idle, application messages sent, received). Two consecutive waves in which every rank
            is idle and the totals sent == received and unchanged prove that no message is in flight and
            no work is left (the "four counter" termination test). Then FINAL_SYNC to all.
    SYNC    roles push their last synchronisation (duplicated nodes' deltas); drained the same way.
    FINISH  every rank sends its REPORT to rank 0 and leaves its loop; rank 0 leaves once it has them all.

CONTROL messages are JSON objects (never pickle) and are not counted by the termination test.
This class does no I/O: it is told what arrived and what time it is, and calls `send(dst, obj)`.
"""

from __future__ import annotations

import json
from typing import Any, Callable

RUN, DRAIN, SYNC, FINISH, DONE = "run", "drain", "sync", "finish", "done"
PROGRESS_EVERY = 0.02
# A simulation budget is only seen reached at a progress count: at 20 ms a 5,000-simulation move on 9x9 ran on for
# up to ~500 simulations more, and a 100-simulation move took 36 ms where the sequential search takes 6
SIMS_PROGRESS_EVERY = 0.002
PROBE_EVERY = 0.0005  # a wave is two tiny messages per rank; each end-of-search phase needs two


def encode(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def decode(payload: bytes) -> dict[str, Any]:
    obj = json.loads(payload)
    if not isinstance(obj, dict) or "op" not in obj:
        raise ValueError(f"malformed CONTROL message {payload[:80]!r}")
    return obj


class Control:
    """One rank's side of the protocol. `sims_done()` returns the simulations this rank completed (read at
    every progress count: it must be cheap), `rank_state()` (idle, app_sent, app_received) for a termination
    probe; `stop_role()`, `final_sync()` act on the local role; `report()` builds this rank's final REPORT."""

    def __init__(self, rank: int, size: int, sims: int | None, seconds: float | None,
                 send: Callable[[int, dict], None], sims_done: Callable[[], int],
                 rank_state: Callable[[], tuple[bool, int, int]], stop_role: Callable[[], None],
                 final_sync: Callable[[], None], report: Callable[[], dict]):
        self.rank, self.size = rank, size
        self.sims, self.seconds = sims, seconds
        self.send, self.sims_done, self.rank_state = send, sims_done, rank_state
        self.stop_role, self.final_sync, self.report = stop_role, final_sync, report
        self.phase = RUN
        self.phase_since = 0.0
        self.times: dict[str, float] = {RUN: 0.0}
        self.progress = [0] * size  # rank 0: latest sims_done of each rank
        self._last_progress_sent = -1
        self._next_progress = 0.0
        self._progress_every = PROGRESS_EVERY if sims is None else SIMS_PROGRESS_EVERY
        # rank 0's termination detection
        self.wave = 0
        self._replies: dict[int, tuple[bool, int, int]] = {}
        self._prev: tuple[int, int] | None = None
        self._next_probe = 0.0
        self.reports: dict[int, dict] = {}
        self.stop_reason = ""

    @property
    def coordinator(self) -> bool:
        return self.rank == 0

    @property
    def done(self) -> bool:
        return self.phase == DONE

    def _enter(self, phase: str, now: float) -> None:
        self.phase, self.phase_since = phase, now
        self.times[phase] = now

    def _broadcast(self, obj: dict) -> None:
        for r in range(1, self.size):
            self.send(r, obj)

    # --- driven by the IO loop -------------------------------------------------------------------------------
    def tick(self, now: float) -> None:
        if self.phase == RUN:
            if now >= self._next_progress:  # a count and, off rank 0, a message: not at every tick
                self._next_progress = now + self._progress_every
                sims_done = self.sims_done()
                if not self.coordinator:
                    if sims_done != self._last_progress_sent:
                        self.send(0, {"op": "PROGRESS", "sims": sims_done})
                        self._last_progress_sent = sims_done
                    return
                self.progress[0] = sims_done
            if not self.coordinator:
                return
            total = sum(self.progress)
            if self.sims is not None and total >= self.sims:
                self.stop_reason = f"{total} simulations reached"
            elif self.seconds is not None and now >= self.seconds:
                self.stop_reason = f"{self.seconds:g} s elapsed"
            else:
                return
            self._broadcast({"op": "STOP"})
            self.stop_role()
            self._enter(DRAIN, now)
            self._next_probe = now
        elif self.coordinator and self.phase in (DRAIN, SYNC) and not self._replies and now >= self._next_probe:
            self.wave += 1
            self._broadcast({"op": "PROBE", "wave": self.wave})
            idle, sent, received = self.rank_state()
            self._on_reply(0, self.wave, idle, sent, received, now)

    def on_message(self, src: int, payload: bytes, now: float) -> None:
        msg = decode(payload)
        op = msg["op"]
        if op == "PROGRESS":
            self.progress[src] = max(self.progress[src], int(msg["sims"]))
        elif op == "STOP":
            self.stop_role()
            self._enter(DRAIN, now)
        elif op == "PROBE":
            idle, sent, received = self.rank_state()
            self.send(0, {"op": "REPLY", "wave": msg["wave"], "idle": idle, "sent": sent, "received": received})
        elif op == "REPLY":
            self._on_reply(src, int(msg["wave"]), bool(msg["idle"]), int(msg["sent"]), int(msg["received"]), now)
        elif op == "FINAL_SYNC":
            self._enter(SYNC, now)
            self.final_sync()
        elif op == "FINISH":
            self._enter(FINISH, now)
            self.send(0, {"op": "REPORT", "report": self.report()})
            self._enter(DONE, now)
        elif op == "REPORT":
            report = msg["report"]
            # a report cannot count the message that carries it: the receiver adds it, exactly as received
            report["sent"].append([0, "CONTROL", 1, len(payload)])
            self.reports[src] = report
            if len(self.reports) == self.size:
                self._enter(DONE, now)
        else:
            raise ValueError(f"unknown CONTROL op {op!r} from rank {src}")

    # --- rank 0: termination detection ------------------------------------------------------------------------
    def _on_reply(self, src: int, wave: int, idle: bool, sent: int, received: int, now: float) -> None:
        if wave != self.wave:
            return  # a late answer to an earlier wave
        self._replies[src] = (idle, sent, received)
        if len(self._replies) < self.size:
            return
        all_idle = all(r[0] for r in self._replies.values())
        totals = (sum(r[1] for r in self._replies.values()), sum(r[2] for r in self._replies.values()))
        self._replies = {}
        self._next_probe = now + PROBE_EVERY
        quiet = all_idle and totals[0] == totals[1]
        if quiet and self._prev == totals:
            self._prev = None
            self._quiescent(now)
        else:
            self._prev = totals if quiet else None

    def _quiescent(self, now: float) -> None:
        if self.phase == DRAIN:
            self._enter(SYNC, now)
            self._broadcast({"op": "FINAL_SYNC"})
            self.final_sync()
            self._next_probe = now
        elif self.phase == SYNC:
            self._enter(FINISH, now)
            self._broadcast({"op": "FINISH"})
            self.reports[0] = self.report()
            if self.size == 1:
                self._enter(DONE, now)

    def waiting_for(self) -> list[int]:
        """Rank 0: ranks whose answer the current step still needs (for the stall message)."""
        if self.phase == FINISH:
            return [r for r in range(self.size) if r not in self.reports]
        if self.phase in (DRAIN, SYNC) and self._replies:
            return [r for r in range(self.size) if r not in self._replies]
        return []
