"""The byte layout of one MPI message: several logical messages of one kind to one destination, batched.

The IO thread sends at most one MPI message per (destination, kind) per loop turn; the MPI tag is the kind
(its index in model.trace.MESSAGE_KINDS, plus TAG_BASE), so receivers know the kind without parsing. Each
logical message inside is a fixed header and the payload the role serialised:

    u32 payload length | i64 sim_id | f64 t_send (run clock, seconds) | payload bytes

Batching matters because a Python MPI call costs microseconds, and a simulation sends several small messages.
"""

from __future__ import annotations

import struct

from model.trace import MESSAGE_KINDS

HEADER = struct.Struct("<Iqd")
TAG_BASE = 16  # tags below are the runtime's own (clock synchronisation)
KIND_TAG = {k: TAG_BASE + i for i, k in enumerate(MESSAGE_KINDS)}
TAG_KIND = {t: k for k, t in KIND_TAG.items()}


class Batch:
    """Logical messages waiting for one (destination, kind) MPI message."""

    __slots__ = ("parts", "count", "size")

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.count = 0
        self.size = 0

    def add(self, payload: bytes, sim_id: int, t_send: float) -> None:
        self.parts.append(HEADER.pack(len(payload), sim_id, t_send))
        self.parts.append(payload)
        self.count += 1
        self.size += HEADER.size + len(payload)

    def encode(self) -> bytes:
        return b"".join(self.parts)


def decode(buf: bytes | bytearray | memoryview) -> list[tuple[int, float, bytes]]:
    """Split one MPI message into [(sim_id, t_send, payload), ...]."""
    out = []
    mv = memoryview(buf)
    pos, end = 0, len(mv)
    hs = HEADER.size
    while pos < end:
        if end - pos < hs:
            raise ValueError(f"truncated message header at byte {pos} of {end}")
        n, sim_id, t_send = HEADER.unpack_from(mv, pos)
        pos += hs
        if pos + n > end:
            raise ValueError(f"payload of {n} bytes overruns the message at byte {pos} of {end}")
        out.append((sim_id, t_send, bytes(mv[pos:pos + n])))
        pos += n
    return out
