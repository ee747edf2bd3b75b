"""The real runtime: runs model/ roles on MPI processes and threads with the wall clock; sequential search; GTP."""
