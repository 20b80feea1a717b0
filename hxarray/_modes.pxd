# Cython's declarations for compiling _modes.py (setup.py, COMPILED): a C entry point for the rule
# that the compiled fast path (backends/cpu/fastpath.pxd) asks on every sum and mean.
cpdef bint positive_zero_sums() except -1
