"""The virtual runtime: runs model/ roles as SimPy processes on modelled cores and network, in simulated time."""
