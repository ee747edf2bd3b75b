"""The controller side of GTP: talk to an engine, in a subprocess or in this process, one command at a time.

Both endpoints answer `send(command) -> GtpReply`, so the match referee does not care which side is ours.
A subprocess engine is always cleaned up: `close()` asks it to quit, waits briefly, then kills it; a command
that gets no answer within its timeout raises GtpTimeout (and the caller closes the engine).
"""

from __future__ import annotations

import os
import queue
import shlex
import shutil
import signal
import subprocess
import threading
from dataclasses import dataclass
from typing import IO, Protocol

from model.errors import UserError

# Debian installs game engines (gnugo) outside the usual PATH of non-login shells.
EXTRA_PATHS = ("/usr/games", "/usr/local/games")


class GtpTimeout(Exception):
    """The engine did not answer a command in time."""


class GtpDied(Exception):
    """The engine closed its output (exited or crashed) before answering."""


@dataclass(frozen=True)
class GtpReply:
    ok: bool
    text: str  # the response without the leading '=' / '?' and id, stripped


class GtpEndpoint(Protocol):
    name: str

    def send(self, command: str, timeout: float | None = None) -> GtpReply: ...

    def close(self) -> None: ...


def parse_reply(raw: str) -> GtpReply:
    """Split a raw response ('=12 D4', '? illegal move') into success flag and text."""
    raw = raw.strip("\n")
    if not raw or raw[0] not in "=?":
        raise GtpDied(f"not a GTP response: {raw[:80]!r}")
    body = raw[1:]
    i = 0
    while i < len(body) and body[i].isdigit():
        i += 1
    return GtpReply(ok=raw[0] == "=", text=body[i:].strip())


def resolve_command(command: str) -> list[str]:
    """Split an engine command line and find its executable (also in /usr/games); UserError if absent."""
    try:
        argv = shlex.split(command)
    except ValueError as e:
        raise UserError(f"engine command {command!r}: {e}") from None
    if not argv:
        raise UserError("engine command is empty")
    exe = argv[0]
    found = shutil.which(exe)
    if found is None and os.sep not in exe:
        path = os.pathsep.join(EXTRA_PATHS)
        found = shutil.which(exe, path=path)
    if found is None:
        raise UserError(f"engine command {command!r}: {exe!r} not found (is it installed and on PATH?)")
    return [found] + argv[1:]


class GtpProcess:
    """A GTP engine in a subprocess. Use as a context manager, or call close()."""

    def __init__(self, command: str, name: str | None = None, stderr: IO | None = None,
                 timeout: float = 60.0, cwd: str | None = None):
        self.argv = resolve_command(command)
        self.name = name or os.path.basename(self.argv[0])
        self.timeout = timeout
        try:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=stderr if stderr is not None else subprocess.DEVNULL,
                                         text=True, bufsize=1, cwd=cwd, start_new_session=True)
        except OSError as e:
            raise UserError(f"cannot start engine {command!r}: {e}") from None
        # A reader thread turns the blocking pipe into a queue we can wait on with a timeout.
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            for line in self.proc.stdout:
                self._lines.put(line)
        except (OSError, ValueError):
            pass
        self._lines.put(None)

    def send(self, command: str, timeout: float | None = None) -> GtpReply:
        if self.proc.poll() is not None:
            raise GtpDied(f"{self.name} has exited (code {self.proc.returncode})")
        try:
            self.proc.stdin.write(command.rstrip("\n") + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise GtpDied(f"{self.name} closed its input") from None
        limit = self.timeout if timeout is None else timeout
        lines: list[str] = []
        while True:
            try:
                line = self._lines.get(timeout=limit)
            except queue.Empty:
                raise GtpTimeout(f"{self.name}: no answer to {command!r} within {limit:g} s") from None
            if line is None:
                raise GtpDied(f"{self.name} exited while answering {command!r}")
            if line.strip() == "":
                if lines:  # a blank line ends the response; blank lines before it are noise
                    return parse_reply("".join(lines))
                continue
            lines.append(line)

    def close(self, grace: float = 2.0) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self._kill()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except (OSError, ValueError):
                pass

    def _kill(self) -> None:
        # The engine runs in its own session, so this also ends its children (e.g. mpiexec ranks).
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            self.proc.kill()
        self.proc.wait()

    def __enter__(self) -> GtpProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class GtpLocal:
    """An in-process engine (anything with `handle(line) -> str | None`, e.g. engine.gtp.GtpEngine)."""

    def __init__(self, engine, name: str = "treesplit"):
        self.engine = engine
        self.name = name

    def send(self, command: str, timeout: float | None = None) -> GtpReply:  # timeout: a local call is not cut
        raw = self.engine.handle(command)
        if raw is None:
            raise GtpDied(f"{self.name}: {command!r} is not a command")
        return parse_reply(raw)

    def close(self) -> None:
        self.engine.close()

    def __enter__(self) -> GtpLocal:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
