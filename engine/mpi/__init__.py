"""The real runtime of the MPI algorithms (engine/ hosts model/roles on MPI ranks and threads: docs/ARCHITECTURE.md).

    launch.py      run_distributed(config): start `mpiexec -n M+B python -m engine.mpi.main` (the venv's MPICH),
                   or, inside an MPI job someone started (PMI/PMIx/Open MPI variables), run this process's rank
    session.py     several searches in one MPI job (the GTP player): commands from rank 0, tables kept
    algorithms.py  the MPI algorithms in engine/algorithms.py's registry (`treesplit search`, Player)
    config.py      DistributedConfig: algorithm, position, ranks x threads, budget, trace, telemetry (JSON)
    rank.py        one rank: the IO thread's loop (the only MPI caller), worker threads, failures, signals
    workers.py     worker threads: per-worker queues with stealing, packages completed under the role lock
    comm.py        the IO thread's MPI endpoint: batched Isend / Iprobe+Recv of byte buffers, tag = kind
    wire.py        the bytes of one MPI message (several logical messages of one kind)
    control.py     the CONTROL protocol: stop, drain (counting waves), final sync, reports
    clock.py       one clock for all ranks (barrier + ping-pong offsets to rank 0)
    recorder.py    the rank's trace part and telemetry windows
    host.py        what the runtime asks of a role (the Host protocol); roles_host.py adapts model/roles
    summary.py     sims/s, PPS, NPS, messages/bytes/hops per simulation, busy fraction, CPU per simulation
"""

from engine.mpi.config import DistributedConfig
from engine.mpi.launch import DistributedError, inside_mpi, run_distributed

__all__ = ["DistributedConfig", "DistributedError", "inside_mpi", "run_distributed"]
