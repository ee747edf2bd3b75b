"""`python -m engine.mpi CONFIG.json`: run one distributed search from a DistributedConfig JSON file and
print rank 0's result as JSON (for scripts and tests; users have `treesplit search`).
Keys given as KEY=VALUE after the file override the file's (e.g. ranks=4 sims=500)."""

from __future__ import annotations

import json
import sys

from engine.mpi.config import DistributedConfig
from engine.mpi.launch import run_distributed
from model.config import from_dict, parse_overrides
from model.errors import UserError


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        data = json.loads(open(argv[0]).read())
        for key, value in parse_overrides(argv[1:]).items():
            data[key] = json.loads(value) if value[:1] in "[{" else value
        result = run_distributed(from_dict(DistributedConfig, data))
    except UserError as e:
        print(f"treesplit: error: {e}", file=sys.stderr, flush=True)
        return 2
    except KeyboardInterrupt:
        print("treesplit: interrupted", file=sys.stderr, flush=True)
        return 130
    if result is not None:
        print(json.dumps(result, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
