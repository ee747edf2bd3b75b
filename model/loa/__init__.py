"""Lines of Action (Christoph 2020): the rules and playouts as numba kernels, knowledge, and the serial agents."""
