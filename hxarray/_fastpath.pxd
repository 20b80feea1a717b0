# Cython's declarations for compiling _fastpath.py (setup.py, COMPILED): C fields for the
# Reduction, the array's fields read in place (the layout of hxarray._speedups.ArrayBase), typed
# locals for the axis and shape arithmetic.
cimport cython
from hxarray.hal.allocator cimport MemoryBuffer


cdef extern from "_speedups.h":
    ctypedef class hxarray._speedups.ArrayBase [object ArrayObject, check_size ignore]:
        cdef readonly object _buffer "buffer"
        cdef readonly object _dtype "dtype"
        cdef readonly object _shape "shape"
        cdef readonly object _handle "handle"


cdef class Reduction:
    cdef readonly object name, fallback, kernel
    cdef readonly dict results
    cdef object _observe, _reduction, _then, _strict
    cdef bint _nonempty
    cdef dict __dict__

    @cython.locals(array=ArrayBase, buffer=MemoryBuffer, out=ArrayBase, ndim=Py_ssize_t,
                   reduced="long long", size=Py_ssize_t, i=Py_ssize_t, n=Py_ssize_t,
                   result_shape=list, axes=list)
    cdef _fast(self, x, dict options)


@cython.locals(every="long long", reduced="long long", bit="long long", index=Py_ssize_t)
cdef long long _reduced(object axis, Py_ssize_t ndim) except? -2

cdef list _REDUCTIONS
cdef object _array_type, _cpu_device, _fresh, _quiet_context, _run_quietly
cdef Py_ssize_t _limit
cdef bint _quiet_entered

@cython.locals(reduction=Reduction)
cpdef bind_cpu(object array_type, object device, object fresh, object reduce, object reducible,
               Py_ssize_t limit)
