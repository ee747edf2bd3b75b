"""The real runtime of the MPI algorithms: launcher, IO/worker threads per rank, CONTROL protocol, trace."""

from engine.mpi.config import DistributedConfig
from engine.mpi.launch import DistributedError, inside_mpi, run_distributed

__all__ = ["DistributedConfig", "DistributedError", "inside_mpi", "run_distributed"]
