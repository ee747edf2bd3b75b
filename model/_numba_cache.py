"""Point numba's on-disk cache at a directory keyed by a hash of model/'s sources.

numba's cache=True checks only the source file of the function it caches, not the kernels that function
calls in other modules: after editing model/uct.py, a cached kernel in model/roles/steps.py would silently
keep the old code. Keying the cache directory on every model/ source file that uses numba makes any kernel edit start a
fresh cache.
Set NUMBA_CACHE_DIR yourself to opt out.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

_MODEL = Path(__file__).resolve().parent
_ROOT = Path(os.environ.get("TREESPLIT_CACHE_ROOT", _MODEL.parent / ".numba_cache"))
_KEEP = 3  # older cache generations kept, so switching branches back and forth stays cheap


def _sources_digest() -> str:
    h = hashlib.sha1()
    for p in sorted(_MODEL.rglob("*.py")):
        src = p.read_bytes()
        if b"numba" in src:  # only kernel modules matter; editing plain Python keeps the cache
            h.update(str(p.relative_to(_MODEL)).encode())
            h.update(src)
    return h.hexdigest()[:16]


def configure() -> None:
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    try:
        target = _ROOT / _sources_digest()
        target.mkdir(parents=True, exist_ok=True)
    except OSError:  # read-only checkout: numba falls back to its own default (__pycache__ or user dir)
        return
    os.environ["NUMBA_CACHE_DIR"] = str(target)
    import sys

    if "numba" in sys.modules:  # imported before us: make numba re-read its configuration
        from numba.core import config

        config.reload_config()
    try:
        gens = sorted((p for p in _ROOT.iterdir() if p.is_dir() and p != target), key=lambda p: p.stat().st_mtime)
        for old in gens[:-_KEEP] if len(gens) > _KEEP else []:
            shutil.rmtree(old, ignore_errors=True)
    except OSError:
        pass
