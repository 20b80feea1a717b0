# Cython's declarations for compiling fastpath.py (setup.py, COMPILED): C fields for the
# Operation and the Reduction, the array's fields read in place (the layout of
# hxarray._speedups.ArrayBase, _speedups.h, with its unchecked constructor), the block and buffer
# types and the allocation of the HAL's compiled allocator, the C API's context-variable read,
# memset, memcpy and the GIL's hand-over, typed locals for the loops.
cimport cython
from cpython.contextvars cimport get_value
from cpython.exc cimport PyErr_Occurred
from libc.string cimport memcpy, memset

from hxarray._layout cimport broadcast_pair, c_contiguous, c_strides
from hxarray._modes cimport positive_zero_sums
from hxarray.hal.allocator cimport Block, MemoryBuffer, _CachingAllocatorBase, _cached_malloc


# numpy's loop and the capsule that gives it, "numpy_1.24_ufunc_call_info" (as documented by
# numpy.ufunc._get_strided_loop; npy_intp is Py_ssize_t)
ctypedef int (*StridedLoop)(void *context, char **data, Py_ssize_t *dimensions,
                            Py_ssize_t *strides, void *auxdata) noexcept
ctypedef struct CallInfo:
    StridedLoop strided_loop
    void *context
    void *auxdata
    char requires_pyapi
    char no_floatingpoint_errors


cdef extern from "_speedups.h":
    ctypedef class hxarray._speedups.ArrayBase [object ArrayObject, check_size ignore]:
        cdef readonly object _buffer "buffer"
        cdef readonly object _dtype "dtype"
        cdef readonly object _shape "shape"
        cdef readonly object _strides "strides"
        cdef readonly object _offset "offset"
        cdef readonly object _handle "handle"
        cdef readonly char _readonly "readonly"

    object new_array_object "hx_new_array" (object array_type, object buffer, object dtype,
                                            object shape, object strides, object offset,
                                            object handle, bint readonly)

cdef extern from "Python.h":
    void *PyEval_SaveThread()
    void PyEval_RestoreThread(void *state)
    long long *int64_at "(long long *)" (Py_ssize_t address)
    double *float64_at "(double *)" (Py_ssize_t address)
    float *float32_at "(float *)" (Py_ssize_t address)
    CallInfo *call_info_of "PyCapsule_GetPointer" (object capsule, const char *name) except NULL
    char *address_bytes "(char *)" (Py_ssize_t address)
    char *pointer_bytes "(char *)" (void *pointer)
    long long *as_int64 "(long long *)" (void *pointer)
    float *as_float32 "(float *)" (void *pointer)
    char *as_bool "(char *)" (void *pointer)


cdef api class Operation [object OperationObject, type OperationType]:
    cdef readonly object name, fallback, reference, kernel
    cdef readonly dict results
    cdef object _observe
    cdef int _arity
    cdef bint _condition
    cdef Py_ssize_t _limit
    cdef dict __dict__
    cdef void *_vectorcall  # its vectorcall function, set by _speedups.configure


cdef api object call_operation(Operation op, object x0, object x1, object x2, Py_ssize_t count)
cdef api object binary_operator(Operation op, object a, object b, object temporary)
@cython.locals(array=ArrayBase)
cdef api object inplace_operator(Operation op, object a, object b)
cdef api object unary_operator(Operation op, object a)

@cython.locals(count=Py_ssize_t, start=Py_ssize_t, i=Py_ssize_t, size=Py_ssize_t,
               extent=Py_ssize_t, itemsize=Py_ssize_t, array=ArrayBase, first=ArrayBase,
               condition=ArrayBase, target=ArrayBase, entry=tuple, shape=tuple, ran=int,
               broadcast=bint)
cdef object _fast(Operation op, object x0, object x1, object x2, Py_ssize_t count, object out,
                  object temporary)
cdef class Loop:
    cdef StridedLoop function
    cdef void *context
    cdef void *auxdata
    cdef object _capsule, operand
    cdef Py_ssize_t operand_size, result_size

    @cython.locals(info="CallInfo *")
    cdef _take(self, object capsule)

cdef object _loop(object kernel, Py_ssize_t arity, object operand, object result)
cdef dict _loops
@cython.locals(pointers="char *[4]", strides="Py_ssize_t[4]", length="Py_ssize_t[1]",
               scalars="double[3]", status=int, state="void *")
cdef int _looped(Loop loop, Py_ssize_t count, object x0, object x1, object x2, object out,
                 Py_ssize_t size) except -1
@cython.locals(output=Py_ssize_t, end=Py_ssize_t, i=Py_ssize_t, address=Py_ssize_t)
cdef bint _pointed(Loop loop, Py_ssize_t count, object x0, object x1, object x2, object out,
                   Py_ssize_t size, char **pointers, Py_ssize_t *strides,
                   double *scalars) except -1
cdef Py_ssize_t _HOLD_GIL_UP_TO
cdef class Step:
    cdef readonly Loop loop
    cdef readonly tuple arrays
    cdef char *pointers[4]
    cdef Py_ssize_t strides[4]
    cdef Py_ssize_t length[1]
    cdef double scalars[3]

    @cython.locals(loop=Loop, status=int, state="void *")
    cdef _run(self)

@cython.locals(arity=Py_ssize_t, size=Py_ssize_t, extent=Py_ssize_t, step=Step, found=Loop,
               target=ArrayBase, array=ArrayBase)
cpdef loop_step(object kernel, object signature, tuple args, object out)
@cython.locals(prepared=Step, i=Py_ssize_t)
cpdef replay(list steps, list inputs, object assign, object arguments)
@cython.locals(source=ArrayBase, target=ArrayBase, itemsize=Py_ssize_t, size=Py_ssize_t,
               extent=Py_ssize_t)
cdef bint _copied_into(object into, object value) except -1
cdef object _MISSING
@cython.locals(address=Py_ssize_t)
cdef Py_ssize_t _data_address(ArrayBase x, Py_ssize_t itemsize) except? -2
@cython.locals(array=ArrayBase, buffer=MemoryBuffer, block=Block, start=Py_ssize_t,
               offset=Py_ssize_t)
cdef Py_ssize_t _first_address(object x) except? -1
@cython.locals(single="float *", integer="long long *", truth="char *")
cdef bint _scalar_into(object x, object dtype, double *slot) except -1
cdef object _launch(object kernel, Py_ssize_t count, object h0, object h1, object h2,
                    object out)
cdef bint _on_cpu(ArrayBase array)
@cython.locals(buffer=MemoryBuffer)
cdef bint _in_cpu_memory(ArrayBase array)
cdef bint _same_shape(ArrayBase a, ArrayBase b) except -1
@cython.locals(array=ArrayBase)
cdef object _native(object x)
@cython.locals(value="long long", mask=long)
cdef bint _scalar_fits(object x, object dtype) except -1
cdef long _BOOL_KIND, _INT_KIND, _FLOAT_KIND
cdef dict _AS_IS
cdef long long _INT64_MIN, _INT64_MAX
@cython.locals(array=ArrayBase)
cdef bint _takes(object temporary, object dtype, Py_ssize_t itemsize) except -1
@cython.locals(nbytes=Py_ssize_t, block=Block, buffer=MemoryBuffer, ndim=Py_ssize_t)
cdef object _new_array(object dtype, Py_ssize_t itemsize, tuple shape, Py_ssize_t size)
cdef bint _on_the_cpu(object device) except -1
cdef list _env_default
cdef object _scoped_device

cdef tuple _STRIDES_1D
cdef Py_ssize_t _MAX_DIMS, _MAX_NBYTES
@cython.locals(itemsize=Py_ssize_t, size=Py_ssize_t, n=Py_ssize_t, empty=bint)
cpdef fresh(object shape, object dtype, object device, bint clear=*)
@cython.locals(itemsize=Py_ssize_t, size=Py_ssize_t, extent=Py_ssize_t, contiguous=bint,
               shape=tuple, array=ArrayBase, target=ArrayBase)
cpdef copied(object x)
@cython.locals(i=Py_ssize_t, value="long long", delta="long long", values="long long *",
               first64=double, second64=double, first32=float, second32=float)
cpdef arange(object start, object step, Py_ssize_t length, object dtype, object device)
ctypedef fused real:
    float
    double
@cython.locals(i=Py_ssize_t, delta=real)
cdef _fill(real *values, real first, real second, Py_ssize_t length)
@cython.locals(n="long long")
cdef bint _exact(object value, long long bound) except -1
@cython.locals(start="void *", state="void *")
cdef _clear(Py_ssize_t address, Py_ssize_t nbytes)
@cython.locals(state="void *")
cdef _move(void *target, void *source, Py_ssize_t nbytes)


cdef class Reduction:
    cdef readonly object name, fallback, kernel
    cdef readonly dict results
    cdef object _observe, _reduction, _then
    cdef bint _nonempty, _positive_zero
    cdef dict __dict__

    @cython.locals(array=ArrayBase, out=ArrayBase, ndim=Py_ssize_t,
                   reduced="long long", size=Py_ssize_t, i=Py_ssize_t, n=Py_ssize_t,
                   result_shape=list, axes=list)
    cdef _fast(self, x, dict options)


@cython.locals(every="long long", reduced="long long", bit="long long", index=Py_ssize_t)
cdef long long _reduced(object axis, Py_ssize_t ndim) except? -2

cdef list _OPERATIONS, _REDUCTIONS
cdef object _array_type, _bool, _int64, _float32, _float64
cdef object _cpu_device, _make_view, _numpy_view, _elementwise, _quiet_context, _run_quietly
cdef _CachingAllocatorBase _allocator
cdef Py_ssize_t _reduction_limit, _arange_limit
cdef bint _quiet_entered

@cython.locals(op=Operation, reduction=Reduction)
cpdef bind_cpu(object device, object allocator, object make_view, object numpy_view,
               object elementwise, dict kernels, dict elementwise_limits, object reduce,
               object reducible, tuple limits)
