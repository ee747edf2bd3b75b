"""Messages between ranks: kinds, payload layouts, exact sizes, and their byte form (never pickle).

A Message names its kind (one of model.trace.MESSAGE_KINDS), src, dst, sim_id and a payload object. In the
loopback runtime and the simulator messages travel as objects; the engine sends `msg.encode()` (the payload
bytes: a little struct header and numpy record arrays) with kind and sim_id in its own wire header, and the
receiver rebuilds it with `decode(kind, src, dst, sim_id, data)`. `msg.nbytes` is the payload's exact
encoded size, so traces and the network model count the bytes the engine would send.

Payloads:
    Steps    MOVE, PLAYOUT_FWD, JOB     a simulation's state-action stack (STEP records); a df-UCT job
                                        adds one FRAME per step and its simulation tickets
    Result   UPDATE, RESULT             a game result (first player's view, as game.playout returns it),
                                        the step records the receiver backs up, optionally the AMAF map;
                                        a df-UCT report adds one FRAME per step (merged increments)
    Stats    DUP, SYNC, BCAST, MERGE    statistics increments of tree nodes (STAT records), with the
                                        broadcast origin and routing dimension (model/topology.py)
"""

from __future__ import annotations

import struct

import numpy as np

MOVE, UPDATE, DUP, SYNC, BCAST = "MOVE", "UPDATE", "DUP", "SYNC", "BCAST"
PLAYOUT_FWD, PLAYOUT_RESULT, CONTROL, MERGE, JOB, RESULT = (
    "PLAYOUT_FWD", "PLAYOUT_RESULT", "CONTROL", "MERGE", "JOB", "RESULT")

# One step of a simulation: the node (its hash), the action chosen there and its child index, the rank
# where the selection took place, and the player to move at the node.
STEP = np.dtype([("hash", "<u8"), ("action", "<i2"), ("rank", "<i2"), ("idx", "<i2"), ("player", "<i1"),
                 ("flags", "<i1")])
# An increment of one node's statistics: idx >= 0 is child idx (action `move`), idx = -1 the node itself.
# On the node row, move >= 0 says the message carries the node's full child list (a DUP: move is the
# number of children, and every child has a row); -1 that it carries increments only (a SYNC).
STAT = np.dtype([("hash", "<u8"), ("idx", "<i2"), ("move", "<i2"), ("n", "<i4"), ("w", "<f4"),
                 ("an", "<i4"), ("aw", "<f4")])
NODE_ROW = -1
# df-UCT (model/roles/dfuct.py): beside each STEP record of a job, what the job saw when it selected there
# (the node's visits; the best child, which is the step's idx, and the second-best child with their visit
# counts including others' virtual loss, and value sums) and the results gathered below the node and not
# yet reported to its owner: dn visits, dw reward for the player to move at the node.
FRAME = np.dtype([("visits", "<i4"), ("second", "<i2"), ("n_best", "<f4"), ("w_best", "<f4"),
                  ("n_second", "<f4"), ("w_second", "<f4"), ("dn", "<i4"), ("dw", "<f4")])

_STEPS_HEAD = struct.Struct("<I")
_RESULT_HEAD = struct.Struct("<dII")
_FRAMES_HEAD = struct.Struct("<Ii")  # frames, tickets (a Result's frames carry no tickets: 0)
_STATS_HEAD = struct.Struct("<iiI")


def _records(data: memoryview, offset: int, dtype: np.dtype, n: int) -> np.ndarray:
    end = offset + n * dtype.itemsize
    if end > len(data):
        raise ValueError(f"message too short: {n} records of {dtype.itemsize} B need {end} B, got {len(data)}")
    return np.frombuffer(data, dtype=dtype, count=n, offset=offset)


def _frames_nbytes(frames: np.ndarray | None) -> int:
    return 0 if frames is None else _FRAMES_HEAD.size + frames.nbytes


def _frames_bytes(frames: np.ndarray | None, tickets: int) -> bytes:
    return b"" if frames is None else _FRAMES_HEAD.pack(len(frames), tickets) + frames.tobytes()


def _frames_tail(data: memoryview, offset: int) -> tuple[np.ndarray | None, int]:
    """The optional FRAME tail after a payload's other records: (frames or None, tickets)."""
    if offset >= len(data):
        return None, 0
    if len(data) - offset < _FRAMES_HEAD.size:
        raise ValueError(f"message has {len(data) - offset} stray bytes after its records")
    n, tickets = _FRAMES_HEAD.unpack_from(data, offset)
    return _records(data, offset + _FRAMES_HEAD.size, FRAME, n), tickets


class Steps:
    """frames/tickets: a df-UCT job's (None for every other algorithm: then nothing more is sent)."""

    __slots__ = ("steps", "frames", "tickets")

    def __init__(self, steps: np.ndarray, frames: np.ndarray | None = None, tickets: int = 0):
        self.steps = steps
        self.frames = frames
        self.tickets = tickets

    @property
    def nbytes(self) -> int:
        return _STEPS_HEAD.size + self.steps.nbytes + _frames_nbytes(self.frames)

    def encode(self) -> bytes:
        return _STEPS_HEAD.pack(len(self.steps)) + self.steps.tobytes() + _frames_bytes(self.frames, self.tickets)

    @classmethod
    def decode(cls, data: memoryview) -> "Steps":
        (n,) = _STEPS_HEAD.unpack_from(data, 0)
        steps = _records(data, _STEPS_HEAD.size, STEP, n)
        frames, tickets = _frames_tail(data, _STEPS_HEAD.size + steps.nbytes)
        return cls(steps, frames, tickets)


class Result:
    """frames: a df-UCT report's merged increments, one per step record (None for every other algorithm)."""

    __slots__ = ("result", "steps", "amaf", "frames")

    def __init__(self, result: float, steps: np.ndarray, amaf: np.ndarray | None = None,
                 frames: np.ndarray | None = None):
        self.result = result
        self.steps = steps
        self.amaf = amaf
        self.frames = frames

    @property
    def nbytes(self) -> int:
        return (_RESULT_HEAD.size + self.steps.nbytes + (0 if self.amaf is None else self.amaf.nbytes)
                + _frames_nbytes(self.frames))

    def encode(self) -> bytes:
        na = 0 if self.amaf is None else len(self.amaf)
        parts = [_RESULT_HEAD.pack(self.result, len(self.steps), na), self.steps.tobytes()]
        if na:
            parts.append(self.amaf.astype(np.int8, copy=False).tobytes())
        parts.append(_frames_bytes(self.frames, 0))
        return b"".join(parts)

    @classmethod
    def decode(cls, data: memoryview) -> "Result":
        result, n, na = _RESULT_HEAD.unpack_from(data, 0)
        steps = _records(data, _RESULT_HEAD.size, STEP, n)
        amaf = _records(data, _RESULT_HEAD.size + steps.nbytes, np.dtype(np.int8), na) if na else None
        frames, _ = _frames_tail(data, _RESULT_HEAD.size + steps.nbytes + na)
        return cls(result, steps, amaf, frames)


class Stats:
    """origin/dim: the broadcast's origin (a broadcast rank index, -1 outside the broadcast network) and the
    routing dimension the receiver continues with (model.topology.Topology.forwards)."""

    __slots__ = ("rows", "origin", "dim")

    def __init__(self, rows: np.ndarray, origin: int = -1, dim: int = -1):
        self.rows = rows
        self.origin = origin
        self.dim = dim

    @property
    def nbytes(self) -> int:
        return _STATS_HEAD.size + self.rows.nbytes

    def encode(self) -> bytes:
        return _STATS_HEAD.pack(self.origin, self.dim, len(self.rows)) + self.rows.tobytes()

    @classmethod
    def decode(cls, data: memoryview) -> "Stats":
        origin, dim, n = _STATS_HEAD.unpack_from(data, 0)
        return cls(_records(data, _STATS_HEAD.size, STAT, n), origin, dim)


PAYLOADS: dict[str, type] = {
    MOVE: Steps, PLAYOUT_FWD: Steps, JOB: Steps,
    UPDATE: Result, RESULT: Result, PLAYOUT_RESULT: Result,
    DUP: Stats, SYNC: Stats, BCAST: Stats, MERGE: Stats,
}


class Message:
    __slots__ = ("kind", "src", "dst", "sim_id", "payload")

    def __init__(self, kind: str, src: int, dst: int, payload, sim_id: int = -1):
        self.kind = kind
        self.src = src
        self.dst = dst
        self.payload = payload
        self.sim_id = sim_id

    @property
    def nbytes(self) -> int:
        return self.payload.nbytes

    def encode(self) -> bytes:
        return self.payload.encode()

    def __repr__(self) -> str:
        return f"Message({self.kind} {self.src}->{self.dst}, sim={self.sim_id}, {self.nbytes} B)"


def decode(kind: str, src: int, dst: int, sim_id: int, data: bytes | memoryview) -> Message:
    """Rebuild a message from the bytes `encode()` gave (record arrays are read-only views of `data`)."""
    cls = PAYLOADS.get(kind)
    if cls is None:
        raise ValueError(f"no payload layout for message kind {kind!r}")
    mv = memoryview(data)
    if len(mv) < 4:
        raise ValueError(f"{kind} message of {len(mv)} B is too short")
    return Message(kind, src, dst, cls.decode(mv), sim_id)


def merge_stats(rows: np.ndarray) -> np.ndarray:
    """Sum the rows that touch the same (node, idx): the delay-and-merge of broadcast ranks."""
    if len(rows) <= 1:
        return rows
    order = np.lexsort((rows["idx"], rows["hash"]))
    r = rows[order]
    new = np.empty(len(r), dtype=bool)
    new[0] = True
    new[1:] = (r["hash"][1:] != r["hash"][:-1]) | (r["idx"][1:] != r["idx"][:-1])
    if new.all():
        return r
    starts = np.flatnonzero(new)
    out = r[starts].copy()
    for col in ("n", "w", "an", "aw"):
        out[col] = np.add.reduceat(r[col], starts)
    out["move"] = np.maximum.reduceat(r["move"], starts)  # a full child list survives merging
    return out
