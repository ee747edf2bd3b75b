"""Messages between ranks: kinds, the record layout every message has on the wire, and exact sizes (never pickle).

A message is one record: a fixed MSG header (its kind, size, sim_id and counts) followed by its body, every
part a multiple of 8 bytes, so that records written one after another into a byte buffer can be read in
place as numpy (and numba) record views:

    MSG header   40 B   size, kind, flags, n_steps, sim_id, result, n_rows, n_amaf, aux, dim
    steps        n_steps STEP records        MOVE, PLAYOUT_FWD, JOB (a simulation's step stack); UPDATE,
                                             RESULT (the records the receiver backs up)
    frames       n_steps FRAME records       only with F_FRAMES: a df-UCT job's or report's frames
    rows         n_rows STAT records         DUP, SYNC, BCAST, MERGE: statistics increments of tree nodes
    amaf         n_amaf int8, padded to 8    UPDATE, RESULT with RAVE: the playout's first-player map

aux is a df-UCT job's tickets, a broadcast's origin (model/topology.py), a search rank's sync sequence
number, or on a treesplit MOVE, UPDATE and PLAYOUT_FWD the sender's outstanding packages; dim a broadcast's
routing dimension. The hot path (model/roles/core.py) writes and reads these records with the numba helpers
below, many to a buffer; an MPI message of the engine is such a buffer (engine/mpi/wire.py adds a small batch
header). Python code builds single messages with Message(kind, src,
dst, payload, sim_id) from a Steps, Result or Stats payload, and reads received ones through Record views
(decode). `Message.nbytes` is the record's exact size, so traces and the network model count the bytes
the engine sends.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from model.trace import MESSAGE_KINDS

MOVE, UPDATE, DUP, SYNC, BCAST = "MOVE", "UPDATE", "DUP", "SYNC", "BCAST"
PLAYOUT_FWD, PLAYOUT_RESULT, CONTROL, MERGE, JOB, RESULT = (
    "PLAYOUT_FWD", "PLAYOUT_RESULT", "CONTROL", "MERGE", "JOB", "RESULT")
# a kind's code on the wire is its index in model.trace.MESSAGE_KINDS
CODE = {k: i for i, k in enumerate(MESSAGE_KINDS)}
K_MOVE, K_UPDATE, K_DUP, K_SYNC, K_BCAST, K_FWD = (CODE[k] for k in (MOVE, UPDATE, DUP, SYNC, BCAST, PLAYOUT_FWD))
K_MERGE, K_JOB, K_RESULT = CODE[MERGE], CODE[JOB], CODE[RESULT]
N_KINDS = len(MESSAGE_KINDS)

# One step of a simulation: the node (its hash), the action chosen there and its child index, the rank
# where the selection took place, and the player to move at the node.
STEP = np.dtype([("hash", "<u8"), ("action", "<i2"), ("rank", "<i2"), ("idx", "<i2"), ("player", "<i1"),
                 ("flags", "<i1")])
# An increment of one node's statistics: idx >= 0 is child idx (action `move`), idx = -1 the node itself.
# On the node row, move >= 0 says the message carries the node's full child list (a DUP: move is the
# number of children, and every child has a row); -1 that it carries increments only (a SYNC).
STAT = np.dtype([("hash", "<u8"), ("idx", "<i2"), ("move", "<i2"), ("n", "<i4"), ("w", "<f4"),
                 ("an", "<i4"), ("aw", "<f4"), ("pad", "<i4")])
NODE_ROW = -1
# df-UCT (model/roles/dfuct.py): beside each STEP record of a job, what the job saw when it selected there
# (the node's visits; the best child, which is the step's idx, and the second-best child with their visit
# counts including others' virtual loss, and value sums) and the results gathered below the node and not
# yet reported to its owner: dn visits, dw reward for the player to move at the node.
FRAME = np.dtype([("visits", "<i4"), ("second", "<i2"), ("n_best", "<f4"), ("w_best", "<f4"),
                  ("n_second", "<f4"), ("w_second", "<f4"), ("dn", "<i4"), ("dw", "<f4")], align=True)
MSG = np.dtype([("size", "<u4"), ("kind", "u1"), ("flags", "u1"), ("n_steps", "<u2"), ("sim_id", "<i8"),
                ("result", "<f8"), ("n_rows", "<u4"), ("n_amaf", "<u4"), ("aux", "<i4"), ("dim", "<i4")])
F_FRAMES = 1
HEAD = MSG.itemsize
assert HEAD % 8 == 0 and STEP.itemsize == 16 and STAT.itemsize == 32 and FRAME.itemsize == 32


@njit(cache=True, nogil=True, inline="always")
def _pad8(n):
    return (n + 7) & ~7


@njit(cache=True, nogil=True)
def record_size(n_steps, frames, n_rows, n_amaf):
    """Bytes of a record with these counts (frames: whether each step has a FRAME)."""
    return HEAD + n_steps * 16 + (n_steps * 32 if frames else 0) + n_rows * 32 + _pad8(n_amaf)


@njit(cache=True, nogil=True)
def write_head(buf, off, kind, sim_id, n_steps, frames, result, n_rows, n_amaf, aux, dim):
    """Write a record's header at buf[off:] (buf: uint8); returns the record's size. The body's parts go at
    the offsets body_steps/body_frames/body_rows/body_amaf give."""
    size = record_size(n_steps, frames, n_rows, n_amaf)
    h = buf[off:off + HEAD].view(MSG)[0]
    h.size = size
    h.kind = kind
    h.flags = F_FRAMES if frames else 0
    h.n_steps = n_steps
    h.sim_id = sim_id
    h.result = result
    h.n_rows = n_rows
    h.n_amaf = n_amaf
    h.aux = aux
    h.dim = dim
    pad = off + size - _pad8(n_amaf) + n_amaf
    for i in range(pad, off + size):  # the amaf padding: deterministic bytes on the wire
        buf[i] = 0
    return size


@njit(cache=True, nogil=True, inline="always")
def head(buf, off):
    return buf[off:off + HEAD].view(MSG)[0]


@njit(cache=True, nogil=True, inline="always")
def body_steps(buf, off, n_steps):
    a = off + HEAD
    return buf[a:a + n_steps * 16].view(STEP)


@njit(cache=True, nogil=True, inline="always")
def body_frames(buf, off, n_steps):
    a = off + HEAD + n_steps * 16
    return buf[a:a + n_steps * 32].view(FRAME)


@njit(cache=True, nogil=True, inline="always")
def body_rows(buf, off, n_steps, frames, n_rows):
    a = off + HEAD + n_steps * 16 + (n_steps * 32 if frames else 0)
    return buf[a:a + n_rows * 32].view(STAT)


@njit(cache=True, nogil=True, inline="always")
def body_amaf(buf, off, n_steps, frames, n_rows, n_amaf):
    a = off + HEAD + n_steps * 16 + (n_steps * 32 if frames else 0) + n_rows * 32
    return buf[a:a + n_amaf].view(np.int8)


@njit(cache=True, nogil=True)
def check_records(buf, n):
    """The number of whole records in buf[:n], or -(offset + 1) of the first record whose header or body
    does not fit or whose counts disagree with its size (a corrupt or truncated buffer)."""
    off = 0
    count = 0
    while off < n:
        if n - off < HEAD:
            return -(off + 1)
        h = buf[off:off + HEAD].view(MSG)[0]
        size = np.int64(h.size)
        if (size < HEAD or size % 8 != 0 or off + size > n
                or record_size(np.int64(h.n_steps), h.flags & F_FRAMES != 0, np.int64(h.n_rows),
                               np.int64(h.n_amaf)) != size):
            return -(off + 1)
        off += size
        count += 1
    return count


# --- Python: single messages --------------------------------------------------------------------------------
class Steps:
    """MOVE, PLAYOUT_FWD, JOB: a simulation's step stack; frames/tickets: a df-UCT job's (else None / 0);
    load: the sender's outstanding packages (a treesplit MOVE or PLAYOUT_FWD; the header's aux, as tickets)."""

    __slots__ = ("steps", "frames", "tickets", "load")

    def __init__(self, steps: np.ndarray, frames: np.ndarray | None = None, tickets: int = 0, load: int = 0):
        self.steps = steps
        self.frames = frames
        self.tickets = tickets
        self.load = load

    def fields(self) -> tuple:
        return self.steps, self.frames, None, None, 0.0, self.tickets or self.load, -1


class Result:
    """UPDATE, RESULT, PLAYOUT_RESULT: a game result (first player's view), the step records the receiver
    backs up, optionally the AMAF map; a df-UCT report's merged increments, one FRAME per step."""

    __slots__ = ("result", "steps", "amaf", "frames", "load")

    def __init__(self, result: float, steps: np.ndarray, amaf: np.ndarray | None = None,
                 frames: np.ndarray | None = None, load: int = 0):
        self.result = result
        self.steps = steps
        self.amaf = amaf
        self.frames = frames
        self.load = load  # the sender's outstanding packages (a treesplit UPDATE)

    def fields(self) -> tuple:
        return self.steps, self.frames, None, self.amaf, float(self.result), self.load, -1


class Stats:
    """DUP, SYNC, BCAST, MERGE: statistics rows. origin/dim: a broadcast's origin (a broadcast rank index,
    -1 outside the broadcast network) and the routing dimension the receiver continues with
    (model.topology.Topology.forwards)."""

    __slots__ = ("rows", "origin", "dim")

    def __init__(self, rows: np.ndarray, origin: int = -1, dim: int = -1):
        self.rows = rows
        self.origin = origin
        self.dim = dim

    def fields(self) -> tuple:
        return None, None, self.rows, None, 0.0, self.origin, self.dim


class Record:
    """A received (or core-written) message record, read in place: the fields of whichever payload its kind
    has (steps, frames, tickets; result, amaf; rows, origin, dim)."""

    __slots__ = ("data", "_h")

    def __init__(self, data: np.ndarray):
        self.data = data
        self._h = data[:HEAD].view(MSG)[0]

    @property
    def nbytes(self) -> int:
        return int(self._h["size"])

    @property
    def kind(self) -> str:
        return MESSAGE_KINDS[int(self._h["kind"])]

    @property
    def sim_id(self) -> int:
        return int(self._h["sim_id"])

    def _counts(self):
        h = self._h
        return int(h["n_steps"]), bool(h["flags"] & F_FRAMES), int(h["n_rows"]), int(h["n_amaf"])

    @property
    def steps(self) -> np.ndarray:
        ns = int(self._h["n_steps"])
        return self.data[HEAD:HEAD + 16 * ns].view(STEP)

    @property
    def frames(self) -> np.ndarray | None:
        ns, fr, _, _ = self._counts()
        a = HEAD + 16 * ns
        return self.data[a:a + 32 * ns].view(FRAME) if fr else None

    @property
    def rows(self) -> np.ndarray:
        ns, fr, nr, _ = self._counts()
        a = HEAD + 16 * ns + (32 * ns if fr else 0)
        return self.data[a:a + 32 * nr].view(STAT)

    @property
    def amaf(self) -> np.ndarray | None:
        ns, fr, nr, na = self._counts()
        if not na:
            return None
        a = HEAD + 16 * ns + (32 * ns if fr else 0) + 32 * nr
        return self.data[a:a + na].view(np.int8)

    @property
    def result(self) -> float:
        return float(self._h["result"])

    @property
    def tickets(self) -> int:
        return int(self._h["aux"])

    @property
    def load(self) -> int:
        return int(self._h["aux"])

    @property
    def origin(self) -> int:
        return int(self._h["aux"])

    @property
    def dim(self) -> int:
        return int(self._h["dim"])


def encode_record(kind: str, sim_id: int, payload) -> np.ndarray:
    """The record of one message (uint8 array)."""
    if isinstance(payload, Record):
        return payload.data
    steps, frames, rows, amaf, result, aux, dim = payload.fields()
    ns = 0 if steps is None else len(steps)
    nr = 0 if rows is None else len(rows)
    na = 0 if amaf is None else len(amaf)
    if frames is not None and len(frames) != ns:
        raise ValueError(f"{kind}: {len(frames)} frames for {ns} steps")
    buf = np.zeros(int(record_size(ns, frames is not None, nr, na)), np.uint8)
    write_head(buf, 0, CODE[kind], sim_id, ns, frames is not None, result, nr, na, aux, dim)
    if ns:
        body_steps(buf, 0, ns)[:] = steps
    if frames is not None and ns:
        body_frames(buf, 0, ns)[:] = frames
    if nr:
        body_rows(buf, 0, ns, frames is not None, nr)[:] = rows
    if na:
        body_amaf(buf, 0, ns, frames is not None, nr, na)[:] = amaf
    return buf


class Message:
    __slots__ = ("kind", "src", "dst", "sim_id", "payload", "_data")

    def __init__(self, kind: str, src: int, dst: int, payload, sim_id: int = -1):
        self.kind = kind
        self.src = src
        self.dst = dst
        self.payload = payload
        self.sim_id = sim_id
        self._data = payload.data if isinstance(payload, Record) else None

    def record(self) -> np.ndarray:
        if self._data is None:
            self._data = encode_record(self.kind, self.sim_id, self.payload)
        return self._data

    @property
    def nbytes(self) -> int:
        if self._data is not None:
            return len(self._data)
        fields = getattr(self.payload, "fields", None)
        if fields is None:  # a runtime's own stand-in payload that only has a size
            return int(self.payload.nbytes)
        steps, frames, rows, amaf, _, _, _ = fields()
        return int(record_size(0 if steps is None else len(steps), frames is not None,
                               0 if rows is None else len(rows), 0 if amaf is None else len(amaf)))

    def encode(self) -> bytes:
        return self.record().tobytes()

    def __repr__(self) -> str:
        return f"Message({self.kind} {self.src}->{self.dst}, sim={self.sim_id}, {self.nbytes} B)"


def decode(kind: str, src: int, dst: int, sim_id: int, data: bytes | bytearray | memoryview | np.ndarray) -> Message:
    """Rebuild a message from its record bytes (a read-only view of `data` where it is a numpy array)."""
    buf = data if isinstance(data, np.ndarray) else np.frombuffer(data, np.uint8)
    if len(buf) < HEAD:
        raise ValueError(f"{kind} message of {len(buf)} B is too short")
    if check_records(buf, len(buf)) != 1:
        raise ValueError(f"{kind} message of {len(buf)} B: its header does not match its length")
    rec = Record(buf)
    if rec.kind != kind:
        raise ValueError(f"a {rec.kind} record where a {kind} message was expected")
    return Message(kind, src, dst, rec, sim_id)


def split_records(buf: np.ndarray, n: int | None = None) -> list[Record]:
    """The records in buf[:n] (ValueError on a corrupt buffer)."""
    n = len(buf) if n is None else n
    count = int(check_records(buf, n))
    if count < 0:
        raise ValueError(f"corrupt message buffer at byte {-count - 1} of {n}")
    out = []
    off = 0
    for _ in range(count):
        rec = Record(buf[off:])
        size = rec.nbytes
        out.append(Record(buf[off:off + size]))
        off += size
    return out


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
