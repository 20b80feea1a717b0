# Cython's declarations for compiling _array.py (setup.py, COMPILED): C integers for the layout
# checks, and the constructor of the speedups' array type (_speedups.h), which `_new` calls only
# where the speedups are built (a header function: nothing is imported for it).
cimport cython


cdef extern from "_speedups.h":
    object new_array_object "hx_new_array" (object array_type, object buffer, object dtype,
                                            object shape, object strides, object offset,
                                            object handle, bint readonly)

cdef Py_ssize_t _MAX_DIMS, _MAX_INDEX
cdef object _DType
cdef bint _C_BASE

@cython.locals(dims=tuple, steps=tuple, ndim=Py_ssize_t, i=Py_ssize_t, count=Py_ssize_t,
               size=Py_ssize_t, big=bint)
cdef _check_layout(object dtype, object shape, object strides, object offset)
cdef Py_ssize_t _ssize(Py_ssize_t value) except? -1
cdef _new(object cls, object buffer, object dtype, object shape, object strides, object offset,
          object handle, object readonly)
