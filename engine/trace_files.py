"""Trace directories on disk: the writer, the merge of parts, the reader (the format is model/trace.py's;
docs/TRACE_FORMAT.md describes it).

A run writes one directory:
    meta.json           the run: schema_version, runtime, algo, game, board, params, ranks, ...
    packages.parquet    one row per work package   (TABLES["packages"] gives the columns)
    messages.parquet    one row per message
    samples.parquet     one row per rank x sampling tick
    tree.parquet        one row per node of a tree snapshot

Several writers (one per MPI rank, say) may write parts into the same directory; `finalize()` merges them
into the files above. A part is a series of segments `packages.<part>.<n>.parquet`, each a complete file
written at once (through a temporary name) whenever SEGMENT_EVERY seconds of rows or `flush_rows` rows have
gathered: a writer killed without warning (SIGKILL, a lost node) leaves every segment it finished. Readers
accept unmerged parts, so a run that was interrupted or failed before the merge still leaves a readable
trace.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from engine.machine import machine_description, versions
from model.errors import TraceError
from model.trace import COLUMN_DEFAULTS, META_REQUIRED, READABLE_VERSIONS, SCHEMA_VERSION, TABLES, Meta, schema

if TYPE_CHECKING:  # pandas only for the readers' results, which pyarrow makes: a rank that writes never loads it
    import pandas as pd

SEGMENT_EVERY = 1.0  # s: a part's rows reach the disk at least this often (what a killed writer loses)


_FEW_VALUES = ("rank", "worker", "src", "dst", "owner")


def write_options(table: str) -> dict[str, Any]:
    """Parquet writer settings: dictionary encoding only for columns of few values (parquet tries it on every
    column by default, and hashing 200,000 distinct floats before giving up made a flush 4x slower)."""
    return {"use_dictionary": [n for n, t in TABLES[table] if pa.types.is_dictionary(t) or n in _FEW_VALUES]}


class _Table:
    """Column buffers for one table, flushed to a ParquetWriter in row groups, or (a part) to segments.

    Rows appended one at a time wait in Python lists; every `extend` (an engine rank's records of the last
    0.1 s) becomes an Arrow chunk at once. Converting 200,000 rows in one flush held the GIL for ~0.1 s, which
    a worker thread of the same rank waited for between its kernel calls (a traced 1x2 run at 9x9 lost ~8% of
    its simulations to it); small chunks keep each hold short, and the write itself releases the GIL."""

    def __init__(self, path: Path, name: str, flush_rows: int, segments: bool = False):
        self.path, self.name, self.flush_rows = path, name, flush_rows
        self.segments = segments  # path is then the segments' prefix: <path>.<n>.parquet
        self.cols: dict[str, list] = {n: [] for n, _ in TABLES[name]}
        self.chunks: list[pa.Table] = []  # converted rows, in order, not yet written
        self.chunked = 0                  # rows in them
        self.writer: pq.ParquetWriter | None = None
        self.rows = 0
        self.written = 0  # segments written
        self.next_flush = time.monotonic() + SEGMENT_EVERY

    def _due(self, pending: int) -> bool:
        return pending >= self.flush_rows or (self.segments and pending > 0 and time.monotonic() >= self.next_flush)

    def append(self, row: tuple) -> None:
        for buf, v in zip(self.cols.values(), row):
            buf.append(v)
        if self._due(len(next(iter(self.cols.values()))) + self.chunked):
            self.flush()

    def extend(self, columns: dict[str, Any]) -> None:
        self._chunk_rows()  # rows appended before these stay before them
        t = self._table(columns)
        if t.num_rows:
            self.chunks.append(t)
            self.chunked += t.num_rows
        if self._due(self.chunked):
            self.flush()

    def _table(self, columns: dict[str, Any]) -> pa.Table:
        arrays = []
        n = len(next(iter(columns.values())))
        for (cname, typ) in TABLES[self.name]:
            vals = columns.get(cname)
            if vals is None and (self.name, cname) in COLUMN_DEFAULTS:
                vals = np.full(n, COLUMN_DEFAULTS[self.name, cname])
            elif vals is None:
                raise KeyError(f"{self.name}: no column {cname!r}")
            if pa.types.is_dictionary(typ):
                vals = vals if isinstance(vals, (list, np.ndarray)) else list(vals)
                arrays.append(pa.array(vals, pa.string()).dictionary_encode().cast(typ))
            else:  # through numpy: pyarrow converts a list of Python floats ~40x slower
                arrays.append(pa.array(np.asarray(vals, dtype=typ.to_pandas_dtype()), typ))
        return pa.Table.from_arrays(arrays, schema=schema(self.name))

    def _chunk_rows(self) -> None:
        n = len(next(iter(self.cols.values())))
        if n:
            self.chunks.append(self._table(self.cols))
            self.chunked += n
            for buf in self.cols.values():
                buf.clear()

    def flush(self) -> None:
        self._chunk_rows()
        self.next_flush = time.monotonic() + SEGMENT_EVERY
        if not self.chunks:
            return
        batch = pa.concat_tables(self.chunks).unify_dictionaries()
        if self.segments:
            self._segment(batch)
        else:
            if self.writer is None:
                self.writer = pq.ParquetWriter(self.path, schema(self.name), **write_options(self.name))
            self.writer.write_table(batch)
        self.rows += self.chunked
        self.chunks, self.chunked = [], 0

    def _segment(self, batch: pa.Table) -> None:
        """One complete file: readers see it whole or not at all (a killed writer leaves only a .tmp)."""
        path = self.path.with_name(f"{self.path.name}.{self.written:05d}.parquet")
        tmp = path.with_name(path.name + ".tmp")
        pq.write_table(batch, tmp, **write_options(self.name))
        tmp.replace(path)
        self.written += 1

    def close(self) -> None:
        self.flush()
        if self.segments:
            if not self.written:  # an empty table still gets a file, so readers find every table
                self._segment(schema(self.name).empty_table())
        elif self.writer is None:
            pq.write_table(schema(self.name).empty_table(), self.path)
        else:
            self.writer.close()
            self.writer = None


class TraceWriter:
    """Writes one part of a trace directory. Use as a context manager, or call close().

    part=None writes the final file names directly (one writer for the whole run, e.g. the simulator);
    part="rank3" writes the segments `packages.rank3.00000.parquet`, ... to be merged by `finalize()`.
    """

    def __init__(self, directory: str | Path, meta: Meta | None = None, part: str | None = None,
                 flush_rows: int = 65536):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        suffix = f".{part}" if part else ".parquet"
        self.tables = {n: _Table(self.dir / f"{n}{suffix}", n, flush_rows, segments=part is not None)
                       for n in TABLES}
        self.meta = meta
        if meta is not None:
            write_meta(self.dir, meta)
        self.closed = False
        # pyarrow imports pandas at its first array conversion (~0.4 s): here, before a rank's search starts,
        # not at its first rows (a traced rank stood still for that long early in its run)
        pa.array([0], pa.int64())

    def package(self, t_start: float, t_end: float, rank: int, worker: int, kind: str, sim_id: int = -1,
                steps: int = -1) -> None:
        self.tables["packages"].append((t_start, t_end, rank, worker, kind, sim_id, steps))

    def message(self, t_send: float, t_recv: float, src: int, dst: int, kind: str, nbytes: int,
                sim_id: int = -1) -> None:
        self.tables["messages"].append((t_send, t_recv, src, dst, kind, nbytes, sim_id))

    def sample(self, t: float, rank: int, queue_len: int, busy_frac: float, sims_done: int, playouts_done: int,
               nodes_stored: int, nodes_duplicated: int) -> None:
        self.tables["samples"].append((t, rank, queue_len, busy_frac, sims_done, playouts_done, nodes_stored,
                                       nodes_duplicated))

    def tree(self, columns: dict[str, Any]) -> None:
        """Append a tree snapshot: a dict of equal-length arrays with the columns of TABLES['tree']."""
        self.tables["tree"].extend(columns)

    def extend(self, table: str, columns: dict[str, Any]) -> None:
        self.tables[table].extend(columns)

    def close(self, t_end: float | None = None) -> None:
        if self.closed:
            return
        for t in self.tables.values():
            t.close()
        self.closed = True
        if self.meta is not None and t_end is not None:
            self.meta.t_end = t_end
            write_meta(self.dir, self.meta)

    def __enter__(self) -> "TraceWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def write_meta(directory: str | Path, meta: Meta | dict[str, Any]) -> None:
    """Write meta.json (a Meta, or a dict as read_meta gives it) through a temporary name."""
    if isinstance(meta, Meta):  # what the runtime left empty, kept for the rewrites at the end of the run
        meta.started_at = meta.started_at or datetime.now(timezone.utc).isoformat(timespec="seconds")
        meta.versions = meta.versions or versions()
        meta.machine = meta.machine or machine_description()
    d = Path(directory)
    tmp = d / "meta.json.tmp"
    tmp.write_text(json.dumps(meta.to_json() if isinstance(meta, Meta) else meta, indent=2, default=str))
    tmp.replace(d / "meta.json")


def _parts(d: Path, table: str) -> list[Path]:
    return sorted(p for p in d.glob(f"{table}.*.parquet"))


def finalize(directory: str | Path) -> None:
    """Merge the parts' segments (`packages.rank0.00000.parquet`, ...) into one file per table, sorted by
    time; a segment a killed writer left unfinished (`.parquet.tmp`) is dropped."""
    d = Path(directory)
    for table, cols in TABLES.items():
        for p in d.glob(f"{table}.*.parquet.tmp"):
            p.unlink()
        parts = _parts(d, table)
        if not parts:
            continue
        final = d / f"{table}.parquet"
        sources = parts + ([final] if final.exists() else [])
        merged = pa.concat_tables([_read_table(p, table) for p in sources])
        tcol = cols[0][0]
        if merged.num_rows:
            merged = merged.sort_by(tcol)
        pq.write_table(merged, final.with_suffix(".parquet.tmp"), **write_options(table))
        final.with_suffix(".parquet.tmp").replace(final)
        for p in parts:
            p.unlink()


def _read_table(path: Path, table: str) -> pa.Table:
    try:
        t = pq.read_table(path)
    except Exception as e:  # a truncated part (killed writer) is reported, not a traceback
        raise TraceError(f"{path}: unreadable parquet file ({e})") from None
    missing = [n for n, _ in TABLES[table] if n not in t.column_names and (table, n) not in COLUMN_DEFAULTS]
    if missing:
        raise TraceError(f"{path}: missing columns {missing}")
    # unify dictionary columns so tables from different parts concatenate
    arrays = []
    for n, typ in TABLES[table]:
        if n not in t.column_names:  # a column newer than the file
            arrays.append(pa.array(np.full(t.num_rows, COLUMN_DEFAULTS[table, n]), typ))
            continue
        col = t.column(n)
        if pa.types.is_dictionary(typ):
            col = col.cast(pa.string()).dictionary_encode().cast(typ)
        else:
            col = col.cast(typ)
        arrays.append(col)
    return pa.Table.from_arrays(arrays, schema=schema(table))


def read_meta(directory: str | Path) -> dict[str, Any]:
    d = Path(directory)
    if not d.exists():
        raise TraceError(f"{d}: no such directory")
    if not d.is_dir():
        raise TraceError(f"{d}: not a directory (a trace is a directory with meta.json and parquet files)")
    mp = d / "meta.json"
    if not mp.exists():
        raise TraceError(f"{d}: not a trace directory (no meta.json)")
    try:
        meta = json.loads(mp.read_text())
    except json.JSONDecodeError as e:
        raise TraceError(f"{mp}: not valid JSON ({e})") from None
    if not isinstance(meta, dict):
        raise TraceError(f"{mp}: expected a JSON object")
    v = meta.get("schema_version")
    if v not in READABLE_VERSIONS:
        raise TraceError(f"{mp}: schema_version {v!r} is not supported (this treesplit reads "
                         f"{', '.join(map(str, READABLE_VERSIONS))})")
    missing = [k for k in META_REQUIRED if k not in meta]
    if missing:
        raise TraceError(f"{mp}: missing fields {missing}")
    return meta


@dataclass
class Trace:
    """A trace directory loaded as pandas DataFrames (category columns as pandas categoricals)."""

    path: Path
    meta: dict[str, Any]
    packages: pd.DataFrame
    messages: pd.DataFrame
    samples: pd.DataFrame
    tree: pd.DataFrame


def read_table(directory: str | Path, table: str) -> pd.DataFrame:
    d = Path(directory)
    sources = ([d / f"{table}.parquet"] if (d / f"{table}.parquet").exists() else []) + _parts(d, table)
    if not sources:
        return schema(table).empty_table().to_pandas()
    t = pa.concat_tables([_read_table(p, table) for p in sources])
    if t.num_rows and len(sources) > 1:
        t = t.sort_by(TABLES[table][0][0])
    return t.to_pandas()


def read_trace(directory: str | Path) -> Trace:
    """Load a trace; raises TraceError with one clear message if `directory` is not a trace."""
    meta = read_meta(directory)
    tables = {n: read_table(directory, n) for n in TABLES}
    return Trace(Path(directory), meta, **tables)
