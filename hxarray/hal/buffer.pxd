# Cython's declarations for compiling buffer.py (setup.py, COMPILED): the buffer becomes an
# extension type, whose C layout hxarray/_speedups.c reads (buffer_api.h). Its fields reference
# no buffer, so it can be in no reference cycle: the collector need not track it.
cimport cython


@cython.no_gc
cdef api class MemoryBuffer [object BufferObject, type BufferType]:
    cdef readonly object device, nbytes, block, allocator
    cdef object __weakref__
