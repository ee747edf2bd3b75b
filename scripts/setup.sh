#!/usr/bin/env bash
# Creates (or refreshes) the virtual environment .venv in the repository and installs treesplit into it,
# editable, with the test extras. Idempotent: a second run only checks that everything is there.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-}
if [ -z "$PY" ]; then
  for cand in python3.11 python3.12 python3.13 python3; do
    if command -v "$cand" >/dev/null 2>&1; then PY=$cand; break; fi
  done
fi
[ -n "$PY" ] || { echo "setup: no python3 found (need Python >= 3.11)" >&2; exit 1; }
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.treesplit-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip 2>/dev/null || true
  # (pip's notes about unreachable local mirrors are noise here; real errors still stop the script)
  .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]' 2>&1 \
    | { grep -v -e "^WARNING: Location" -e "BuildBackendWarning" || true; }
  touch "$stamp"
fi
