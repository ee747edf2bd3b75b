"""The trace format: the contract between the engine, the simulator and the dashboards.

The format itself lives here (tables and their columns, package and message kinds, meta.json's fields, the
schema version); engine/trace_files.py writes, merges and reads trace directories; docs/TRACE_FORMAT.md
describes both. A run's directory holds meta.json and one parquet file per table (packages, messages,
samples, tree), or, while ranks still write, their parts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa


SCHEMA_VERSION = 2
# versions a reader still takes: 1 lacks packages.steps (read as -1, unknown)
READABLE_VERSIONS = (1, 2)

PACKAGE_KINDS = ("select", "expand", "playout", "update", "sync", "bcast", "io")
MESSAGE_KINDS = ("MOVE", "UPDATE", "DUP", "SYNC", "BCAST", "PLAYOUT_FWD", "PLAYOUT_RESULT", "CONTROL", "MERGE", "JOB", "RESULT")

# table name -> ordered (column, arrow type). Category columns are stored as dictionary<int8, string>.
_CAT = pa.dictionary(pa.int8(), pa.string())
TABLES: dict[str, list[tuple[str, pa.DataType]]] = {
    "packages": [
        ("t_start", pa.float64()), ("t_end", pa.float64()), ("rank", pa.int32()), ("worker", pa.int32()),
        ("kind", _CAT), ("sim_id", pa.int64()), ("steps", pa.int32()),
    ],
    "messages": [
        ("t_send", pa.float64()), ("t_recv", pa.float64()), ("src", pa.int32()), ("dst", pa.int32()),
        ("kind", _CAT), ("bytes", pa.int32()), ("sim_id", pa.int64()),
    ],
    "samples": [
        ("t", pa.float64()), ("rank", pa.int32()), ("queue_len", pa.int32()), ("busy_frac", pa.float64()),
        ("sims_done", pa.int64()), ("playouts_done", pa.int64()), ("nodes_stored", pa.int64()),
        ("nodes_duplicated", pa.int64()),
    ],
    "tree": [
        ("t", pa.float64()), ("hash", pa.uint64()), ("parent", pa.uint64()), ("move", pa.int32()),
        ("depth", pa.int32()), ("visits", pa.int64()), ("wins", pa.float64()), ("owner", pa.int32()),
        ("duplicated", pa.bool_()),
    ],
}
# columns a writer may leave out and a file of an older version lacks, with the value they then hold
COLUMN_DEFAULTS = {("packages", "steps"): -1}
CATEGORY_VALUES = {("packages", "kind"): PACKAGE_KINDS, ("messages", "kind"): MESSAGE_KINDS}
META_REQUIRED = ("schema_version", "runtime", "algo", "game", "board", "params", "ranks", "threads",
                 "machine", "seed", "versions", "started_at", "t_end")


def schema(table: str) -> pa.Schema:
    return pa.schema([pa.field(n, t) for n, t in TABLES[table]])


@dataclass
class Meta:
    """meta.json. `ranks` is {"search": M, "broadcast": B}; `params` the algorithm's parameters. `extra` holds
    what a runtime adds: an engine run's komi, moves and budget, `idle_spin` (seconds a rank without workers
    polls after its last work), `trace_probe` (P of a probing trace, which records packages and messages only
    in the windows [kP, (k+1)P) of even k, so that calibration can compare them with the others; 0 or absent:
    everything recorded) and, once it finished, `complete` and its summary; a run stopped early has `complete`
    false and `interrupted` (SIGINT/SIGTERM), or `failure` (an MPI job that lost a rank: which one, how, and
    its last record's time; engine/mpi/failure.py)."""

    runtime: str  # "engine" or "sim"
    algo: str
    game: str = "go"
    board: int = 9
    params: dict[str, Any] = field(default_factory=dict)
    ranks: dict[str, int] = field(default_factory=lambda: {"search": 1, "broadcast": 0})
    threads: int = 1
    machine: str = ""
    seed: int = 0
    versions: dict[str, str] = field(default_factory=dict)
    started_at: str = ""
    t_end: float | None = None
    sample_rate: float = 1.0  # fraction of packages/messages recorded (samples are always exact)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """meta.json's object. The writer fills `started_at`, `versions` and `machine` where a runtime left
        them empty (engine/trace_files.py: they take a clock and the machine's files)."""
        return {"schema_version": SCHEMA_VERSION, **self.__dict__}


