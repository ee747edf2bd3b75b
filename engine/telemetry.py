"""The telemetry sender: pushes model/telemetry.py's records to the dashboard over UDP and never blocks."""

from __future__ import annotations

import socket
from typing import Any

from model.telemetry import MAX_DATAGRAM, encode


class TelemetrySender:
    """Pushes records to HOST:PORT over UDP. send() never blocks and never raises: with no listener, or a
    full socket buffer, or an unresolvable host, the record is dropped and counted in `dropped`."""

    def __init__(self, host: str, port: int, fmt: str = "msgpack"):
        self.fmt = fmt
        self.sent = 0
        self.dropped = 0
        self.addr: tuple | None = None
        self.sock: socket.socket | None = None
        try:
            info = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0]
            self.addr = info[4]
            self.sock = socket.socket(info[0], socket.SOCK_DGRAM)
            self.sock.setblocking(False)
        except OSError:
            self.sock = None

    def send(self, record: dict[str, Any]) -> bool:
        """True if the datagram left; False if it was dropped."""
        try:
            data = encode(record, self.fmt)
            if self.sock is None or len(data) > MAX_DATAGRAM:
                self.dropped += 1
                return False
            self.sock.sendto(data, self.addr)
        except (OSError, ValueError, TypeError, OverflowError):
            self.dropped += 1
            return False
        self.sent += 1
        return True

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def __enter__(self) -> "TelemetrySender":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
