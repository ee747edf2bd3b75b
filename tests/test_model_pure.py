"""model/ is free of I/O: no module under it imports the CLI package or a runtime, opens a file or a socket,
or reads and writes paths. The runtimes (engine/, sim/) and the views do that."""

import ast
from pathlib import Path

MODEL = Path(__file__).resolve().parent.parent / "model"
FORBIDDEN_MODULES = {"treesplit", "socket", "engine", "sim", "viz", "experiments", "subprocess", "shutil"}
FORBIDDEN_CALLS = {"open", "read_text", "read_bytes", "write_text", "write_bytes", "mkdir", "unlink", "rmdir",
                   "touch", "iterdir", "ParquetWriter", "write_table", "read_table"}
# The one exception: numba's on-disk cache is keyed on model/'s kernel sources, which must be set before the
# first kernel compiles, i.e. when model/ is imported; it configures the compiler, not the model.
EXEMPT = {"_numba_cache.py"}
# Forwards (a module-level __getattr__) for callers not yet moved to engine/; they import on first use only.
FORWARDS = {"__getattr__"}


def _violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    forwards = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name in FORWARDS
                for n in ast.walk(f)}
    found = []
    for node in ast.walk(tree):
        where = f"{path.relative_to(MODEL.parent)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                if name.split(".")[0] in FORBIDDEN_MODULES and id(node) not in forwards:
                    found.append(f"{where}: imports {name}")
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if name in FORBIDDEN_CALLS:
                found.append(f"{where}: calls {name}()")
    return found


def test_model_does_no_io():
    sources = [p for p in MODEL.rglob("*.py") if p.name not in EXEMPT]
    assert len(sources) > 30
    found = [v for p in sources for v in _violations(p)]
    assert not found, "\n".join(found)


def test_the_check_sees_io(tmp_path):
    bad = MODEL / "_io_probe_for_test.py"
    try:
        bad.write_text("import socket\nfrom treesplit import __version__\n"
                       "def f(p):\n    open(p)\n    p.write_text('x')\n")
        assert len(_violations(bad)) == 4
    finally:
        bad.unlink()
