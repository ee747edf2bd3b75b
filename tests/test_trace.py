import dataclasses
import json
import re
from pathlib import Path

import pytest

import engine.trace_files as trace_files
from engine.trace_files import TraceWriter, finalize, read_trace
from model.errors import TraceError
from model.trace import MESSAGE_KINDS, META_REQUIRED, PACKAGE_KINDS, SCHEMA_VERSION, TABLES, Meta

TRACE_FORMAT = Path(__file__).resolve().parent.parent / "docs" / "TRACE_FORMAT.md"


def _write_parts(d, ranks=2, n=5):
    for r in range(ranks):
        w = TraceWriter(d, Meta(runtime="engine", algo="treesplit") if r == 0 else None, part=f"rank{r}",
                        flush_rows=3)
        for i in range(n):
            w.package(i * 0.1 + r, i * 0.1 + 0.05 + r, r, 0, "select" if r else "playout", i)
            w.message(i * 0.1, i * 0.1 + 0.01, r, 1 - r, "MOVE", 64, i)
        w.sample(0.5, r, 3, 0.75, 10, 9, 100, 2)
        w.close(t_end=2.0)


def test_parts_are_readable_before_and_after_merge(tmp_path):
    _write_parts(tmp_path)
    before = read_trace(tmp_path)
    assert len(before.packages) == 10 and len(before.messages) == 10 and len(before.samples) == 2
    finalize(tmp_path)
    after = read_trace(tmp_path)
    assert not list(tmp_path.glob("*.rank*.parquet"))
    assert after.packages["t_start"].is_monotonic_increasing
    assert set(after.packages["kind"]) == {"select", "playout"}
    assert after.meta["t_end"] == 2.0 and after.meta["runtime"] == "engine"
    assert after.tree.empty and list(after.tree.columns)[:2] == ["t", "hash"]


def test_not_a_trace_is_refused_clearly(tmp_path):
    with pytest.raises(TraceError, match="no meta.json"):
        read_trace(tmp_path)
    with pytest.raises(TraceError, match="no such directory"):
        read_trace(tmp_path / "nope")
    (tmp_path / "meta.json").write_text(json.dumps({"schema_version": 99}))
    with pytest.raises(TraceError, match="schema_version 99"):
        read_trace(tmp_path)
    (tmp_path / "meta.json").write_text("{not json")
    with pytest.raises(TraceError, match="not valid JSON"):
        read_trace(tmp_path)


def test_truncated_parquet_is_a_trace_error(tmp_path):
    _write_parts(tmp_path, ranks=1)
    (tmp_path / "packages.rank0.parquet").write_bytes(b"PAR1garbage")
    with pytest.raises(TraceError, match="unreadable"):
        read_trace(tmp_path)


def test_a_killed_writer_leaves_its_finished_segments(tmp_path, monkeypatch):
    monkeypatch.setattr(trace_files, "SEGMENT_EVERY", 0.0)  # every extend reaches the disk
    w = TraceWriter(tmp_path, Meta(runtime="engine", algo="treesplit"), part="rank0", flush_rows=1 << 20)
    for i in range(3):
        w.extend("packages", {"t_start": [i + 0.0], "t_end": [i + 0.5], "rank": [0], "worker": [0],
                              "kind": ["playout"], "sim_id": [i]})
    (tmp_path / "packages.rank0.00003.parquet.tmp").write_bytes(b"PAR1half")  # the segment it was writing
    # never closed: the process died here
    t = read_trace(tmp_path)
    assert list(t.packages["sim_id"]) == [0, 1, 2] and t.samples.empty
    finalize(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["meta.json", "packages.parquet"]
    assert list(read_trace(tmp_path).packages["sim_id"]) == [0, 1, 2]


def test_the_format_document_names_every_table_column_kind_and_field():
    """docs/TRACE_FORMAT.md describes model/trace.py's schema: a column, kind or meta field added there and not
    described here fails."""
    doc = TRACE_FORMAT.read_text()
    assert f"SCHEMA_VERSION = {SCHEMA_VERSION}" in doc
    sections = dict(re.findall(r"^## ([\w.]+)\n(.*?)(?=^## |\Z)", doc, re.S | re.M))
    for table, columns in TABLES.items():
        assert table in sections, table
        documented = re.findall(r"^\| `(\w+)` \|", sections[table], re.M)
        assert documented == [name for name, _ in columns], table
    for kind in PACKAGE_KINDS + MESSAGE_KINDS:
        assert f"`{kind}`" in doc, kind
    fields = set(re.findall(r"^\| \*{0,2}`(\w+)`", sections["meta.json"], re.M))
    assert set(META_REQUIRED) | {f.name for f in dataclasses.fields(Meta)} <= fields


def test_meta_keeps_its_start_time_machine_and_versions_across_rewrites(tmp_path):
    meta = Meta(runtime="engine", algo="treesplit")
    w = TraceWriter(tmp_path, meta)
    first = json.loads((tmp_path / "meta.json").read_text())
    assert first["started_at"] and first["machine"] and first["versions"]["treesplit"]
    assert meta.started_at == first["started_at"]  # kept on the object: the final rewrite says when it started
    w.close(t_end=2.5)
    last = json.loads((tmp_path / "meta.json").read_text())
    assert (last["started_at"], last["machine"], last["t_end"]) == (first["started_at"], first["machine"], 2.5)


def test_a_trace_writers_first_rows_import_nothing(tmp_path):
    """Whatever converting rows first loads (pyarrow imports pandas at its first array, ~0.4 s) is loaded when
    the writer is made, before a rank's search starts, not when the rank hands it its first rows mid-run."""
    import subprocess
    import sys

    code = ("import sys, numpy as np\n"
            "from engine.trace_files import TraceWriter\n"
            f"w = TraceWriter({str(tmp_path)!r}, part='rank0')\n"
            "before = set(sys.modules)\n"
            "w.tables['packages'].extend({'t_start': np.zeros(3), 't_end': np.ones(3), 'rank': np.zeros(3, np.int32),"
            " 'worker': np.zeros(3, np.int32), 'kind': np.array(['select'] * 3, dtype=object),"
            " 'sim_id': np.arange(3)})\n"
            "w.tables['messages'].extend({'t_send': [0.0], 't_recv': [1.0], 'src': [0], 'dst': [1], 'kind': ['MOVE'],"
            " 'bytes': [64], 'sim_id': [0]})\n"
            "print(sorted(set(sys.modules) - before))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).resolve().parent.parent)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_version_1_trace_reads_with_unknown_steps(tmp_path):
    """Version 1 packages have no steps column: they read as -1 (not known), and a writer that leaves the
    column out (the statistical fidelity) writes -1."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from model.trace import READABLE_VERSIONS

    w = TraceWriter(tmp_path, Meta(runtime="sim", algo="treesplit"))
    w.extend("packages", {"t_start": [0.0, 0.1], "t_end": [0.1, 0.2], "rank": [0, 0], "worker": [0, 0],
                          "kind": ["select", "update"], "sim_id": [1, 1]})
    w.package(0.2, 0.3, 0, 0, "select", 2, steps=3)
    w.close(t_end=1.0)
    assert read_trace(tmp_path).packages["steps"].tolist() == [-1, -1, 3]
    old = pq.read_table(tmp_path / "packages.parquet").drop_columns(["steps"])
    pq.write_table(old, tmp_path / "packages.parquet")
    meta = json.loads((tmp_path / "meta.json").read_text())
    (tmp_path / "meta.json").write_text(json.dumps({**meta, "schema_version": 1}))
    assert 1 in READABLE_VERSIONS and SCHEMA_VERSION == max(READABLE_VERSIONS)
    t = read_trace(tmp_path)
    assert t.packages["steps"].tolist() == [-1, -1, -1] and t.packages["steps"].dtype == "int32"
    assert pa.types.is_int32(dict(trace_files.TABLES["packages"])["steps"])
