# Cython's declarations for compiling allocator.py (setup.py, COMPILED): the block, the buffer and
# the caching allocator's bookkeeping become extension types, whose C layout hxarray/_speedups.c
# reads (allocator_api.h, which Cython writes).
cimport cython


cdef api class Block [object BlockObject, type BlockType]:
    cdef readonly object _address
    cdef readonly Py_ssize_t _nbytes
    cdef public object handle, cache, _owner

    @cython.locals(cached=tuple)
    cpdef view(self, dtype, shape, make)
    @cython.locals(cached=tuple, at=Py_ssize_t, shape=tuple, extent=Py_ssize_t)
    cpdef tuple vector_shape(self, dtype, Py_ssize_t size)


# Its fields reference no buffer, so it is in no reference cycle: the collector need not track it.
@cython.no_gc
cdef api class MemoryBuffer [object BufferObject, type BufferType]:
    cdef readonly object device, nbytes, block, allocator
    cdef object __weakref__


cdef api class _CachingAllocatorBase [object CacheObject, type CacheType]:
    cdef readonly object raw, device
    cdef public object _memory_limit, _lock
    cdef Py_ssize_t _cache_bound
    cdef public dict _free_lists
    cdef Block _newest
    cdef Py_ssize_t _newest_size
    cdef public Py_ssize_t _pending, _allocated, _cached, _peak_allocated, _peak_reserved
    cdef public Py_ssize_t _num_allocs, _num_frees, _cache_hits, _num_raw_allocs, _num_raw_frees
    cdef public Py_ssize_t _num_ooms

    cpdef malloc(self, nbytes)
    cdef _malloc(self, Py_ssize_t size)
    cpdef free(self, block)
    @cython.locals(free_list=list, block=Block)
    cdef _take(self, Py_ssize_t size)
    @cython.locals(free_list=list, size=Py_ssize_t, older=Block, older_size=Py_ssize_t)
    cdef bint _give(self, Block block) except -1
    cdef inline bint _keeps(self, Py_ssize_t size) except -1


@cython.locals(caching=_CachingAllocatorBase)
cdef _hand_back(object allocator, object block)
cdef Py_ssize_t MAX_BLOCK, _LARGEST
cpdef _note_allocated(_CachingAllocatorBase allocator, Py_ssize_t size)
@cython.locals(step=Py_ssize_t)
cpdef Py_ssize_t size_class(Py_ssize_t nbytes) except -1

cdef Block _cached_malloc(_CachingAllocatorBase allocator, Py_ssize_t nbytes)
