"""Entry point of each rank when treesplit starts the MPI job itself:

    mpiexec -n M+B python -m engine.mpi.main CONFIG.json RESULT.json

Rank 0 writes the result dict to RESULT.json. Exit codes: 0 done, 2 bad configuration, 130 interrupted;
a failure aborts the whole job (engine.mpi.rank).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from engine.mpi.config import DistributedConfig
from engine.mpi.failure import note_rank
from engine.mpi.launch import inherit_priority, mpi_world, run_in_mpi
from engine.mpi.rank import EXIT_INTERRUPTED, Interrupted
from model.errors import UserError


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m engine.mpi.main CONFIG.json RESULT.json", file=sys.stderr)
        return 2
    inherit_priority()
    note_rank(Path(argv[1]).parent, mpi_world().Get_rank())  # for the launcher's report if this rank dies
    try:
        config = DistributedConfig.load(argv[0])
        result = run_in_mpi(config)
    except UserError as e:
        print(f"treesplit: error: {e}", file=sys.stderr, flush=True)
        return 2
    except (Interrupted, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if result is not None:
        out = Path(argv[1])
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(result, default=float))
        os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
