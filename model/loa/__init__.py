"""Lines of Action (seed 001): the rules and playouts as numba kernels, knowledge, and the serial agents."""
