# Cython's declarations for compiling _layout.py (setup.py, COMPILED): C integers for the loops,
# and C entry points that the compiled fast path (backends/cpu/fastpath.pxd) cimports.
cimport cython


@cython.locals(step=Py_ssize_t, i=Py_ssize_t, extent=Py_ssize_t, stride=Py_ssize_t)
cpdef bint c_contiguous(tuple shape, tuple strides, Py_ssize_t itemsize) except -1

@cython.locals(ndim=Py_ssize_t, steps=list, step=Py_ssize_t, i=Py_ssize_t, extent=Py_ssize_t)
cpdef tuple c_strides(tuple shape, Py_ssize_t itemsize)

@cython.locals(lead=Py_ssize_t, i=Py_ssize_t, n=Py_ssize_t, m=Py_ssize_t, out=list)
cpdef tuple broadcast_pair(tuple first, tuple second)

@cython.locals(ellipsis=bint, n_indices=Py_ssize_t, ndim=Py_ssize_t, origin=Py_ssize_t,
               out_shape=list, out_strides=list, axis=Py_ssize_t, n=Py_ssize_t,
               stride=Py_ssize_t, step=Py_ssize_t, start=Py_ssize_t, stop=Py_ssize_t,
               length=Py_ssize_t, rest=Py_ssize_t)
cpdef tuple basic_index(tuple shape, tuple strides, Py_ssize_t offset, tuple key)

cdef Py_ssize_t _SSIZE_MAX

@cython.locals(index=Py_ssize_t)
cdef Py_ssize_t _slice_index(object value) except? -1

@cython.locals(index=Py_ssize_t)
cdef Py_ssize_t _bound(Py_ssize_t default, object value, Py_ssize_t n, Py_ssize_t step) except? -1
