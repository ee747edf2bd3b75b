"""Test helpers for the dashboard: run `treesplit dashboard` in a subprocess and find its URLs."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

from conftest import ROOT, treesplit_cmd


class Dashboard:
    """`treesplit dashboard ARGS --port 0 --no-browser`, stopped by stop() (or as a context manager)."""

    def __init__(self, *args: str, log: Path, timeout: float = 60):
        self.log_path = log
        self._log = open(log, "w")
        self.proc = subprocess.Popen(treesplit_cmd() + ["dashboard", *args, "--port", "0", "--no-browser"],
                                     stdout=subprocess.PIPE, stderr=self._log, text=True, cwd=ROOT)
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [lines.put(x) for x in self.proc.stdout], daemon=True).start()
        self.url = self.udp_port = None
        live = "--live" in args
        deadline = time.time() + timeout
        seen = []
        while time.time() < deadline:
            try:
                line = lines.get(timeout=0.5)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            seen.append(line)
            if line.startswith("treesplit dashboard:"):
                self.url = line.split()[-1].rstrip("/")
            if line.startswith("telemetry: listening on udp://"):
                self.udp_port = int(line.rsplit(":", 1)[1])
            if self.url and (self.udp_port or not live) and len(seen) >= 6:
                return
        self.stop()
        raise RuntimeError(f"dashboard did not start: {seen} {log.read_text()[-2000:]}")

    def get(self, path: str, timeout: float = 30) -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def status(self) -> dict:
        return json.loads(self.get("/status")[1])

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()

    def __enter__(self) -> "Dashboard":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
