"""The bytes of one MPI message: a batch of message records for one destination, sent once per loop turn.

    batch header (16 B)   u32 records | u32 reserved | f64 t_send (run clock, seconds)
    records               model/roles/messages.py records, one after another, each a multiple of 8 bytes

All application messages of a loop turn to one rank travel in one batch (tag TAG_RECORDS): a Python MPI
call costs microseconds, and a simulation sends several small messages. A host that is not built on the
record layout (a role_factory host's plain bytes) has each payload wrapped in a record of its own with the
F_OPAQUE flag, its bytes in the record's body. CONTROL messages (JSON, the termination protocol) go one by
one under TAG_CONTROL.
"""

from __future__ import annotations

import struct

import numpy as np

from model.roles.messages import CODE, HEAD, MESSAGE_KINDS, Record, body_amaf, check_records, write_head

BATCH = struct.Struct("<IId")
TAG_BASE = 16  # tags below are the runtime's own (clock synchronisation)
TAG_RECORDS, TAG_CONTROL = TAG_BASE, TAG_BASE + 1
F_OPAQUE = 2


def opaque(kind: str, sim_id: int, payload: bytes) -> np.ndarray:
    """A record that carries `payload` as it is (a host that speaks its own bytes)."""
    n = len(payload)
    rec = np.zeros(HEAD + ((n + 7) & ~7), np.uint8)
    write_head(rec, 0, CODE[kind], sim_id, 0, False, 0.0, 0, n, 0, -1)
    rec[5] |= F_OPAQUE  # the flags byte of the MSG header
    body_amaf(rec, 0, 0, False, 0, n)[:] = np.frombuffer(payload, np.uint8)
    return rec


CONTROL_HEAD = struct.Struct("<d")  # a CONTROL message: its send time, then its JSON


def control(payload: bytes, t_send: float) -> np.ndarray:
    return np.frombuffer(CONTROL_HEAD.pack(t_send) + payload, np.uint8)


def control_parts(buf: np.ndarray) -> tuple[float, bytes]:
    """(t_send, JSON payload) of a received CONTROL message."""
    if len(buf) < CONTROL_HEAD.size:
        raise ValueError(f"a CONTROL message of {len(buf)} B is shorter than its header")
    return CONTROL_HEAD.unpack_from(buf, 0)[0], buf[CONTROL_HEAD.size:].tobytes()


def batch(records: list[np.ndarray], count: int, t_send: float) -> np.ndarray:
    """One MPI message: the header and the records, contiguous."""
    size = sum(len(r) for r in records)
    out = np.empty(BATCH.size + size, np.uint8)
    BATCH.pack_into(out, 0, count, 0, t_send)
    pos = BATCH.size
    for r in records:
        out[pos:pos + len(r)] = r
        pos += len(r)
    return out


def header(buf: np.ndarray) -> tuple[int, float]:
    """(records, t_send) of a received batch; ValueError if it is not one."""
    if len(buf) < BATCH.size:
        raise ValueError(f"a batch of {len(buf)} B is shorter than its header")
    count, _, t_send = BATCH.unpack_from(buf, 0)
    return count, t_send


def records(buf: np.ndarray) -> np.ndarray:
    """The records part of a batch, checked: ValueError if its records do not add up to its header's count."""
    count, _ = header(buf)
    body = buf[BATCH.size:]
    found = int(check_records(body, len(body)))
    if found != count:
        raise ValueError(f"corrupt batch: header says {count} records, found {found if found >= 0 else 'garbage'}")
    return body


def split(buf: np.ndarray) -> list[tuple[str, int, bytes | np.ndarray]]:
    """[(kind, sim_id, payload)] of a batch: the payload bytes of an opaque record, else the record itself."""
    body = records(buf)
    out = []
    off = 0
    while off < len(body):
        rec = Record(body[off:])
        size = rec.nbytes
        data = body[off:off + size]
        h = rec._h
        kind = MESSAGE_KINDS[int(h["kind"])]
        if int(h["flags"]) & F_OPAQUE:
            n = int(h["n_amaf"])
            out.append((kind, int(h["sim_id"]), bytes(data[HEAD:HEAD + n])))
        else:
            out.append((kind, int(h["sim_id"]), data))
        off += size
    return out
