/* The C layout of hxarray._speedups.ArrayBase, the Array's base type, its unchecked constructor,
 * and what compiled Python cannot reach without a method call: shared by _speedups.c and the
 * modules Cython compiles from Python that read an array's fields or make arrays (their .pxd
 * declares what they use). */
#ifndef HXARRAY_SPEEDUPS_H
#define HXARRAY_SPEEDUPS_H
#include <Python.h>

/* The fields are set once, by `_make` or `_view`, which check them (`handle`, the backend's
 * cached view or None, may be replaced); none is NULL. */
typedef struct {
    PyObject_HEAD
    PyObject *buffer, *dtype, *shape, *strides, *offset, *handle, *weakreflist;
    char readonly;  /* writes raise ValueError: a broadcast view, or a view of one */
} ArrayObject;

/* A new writable array of `type` (ArrayBase or a subclass) with these fields, which the caller
 * has checked (new references). Why C: the fields are read-only to Python and Cython code, and
 * the type has no constructor Python can call (arrays are made by `_make` and `_view`). */
static inline PyObject *
hx_new_array(PyObject *type, PyObject *buffer, PyObject *dtype, PyObject *shape,
             PyObject *strides, PyObject *offset, PyObject *handle)
{
    ArrayObject *x = (ArrayObject *)((PyTypeObject *)type)->tp_alloc((PyTypeObject *)type, 0);
    if (x == NULL)
        return NULL;
    x->buffer = Py_NewRef(buffer);
    x->dtype = Py_NewRef(dtype);
    x->shape = Py_NewRef(shape);
    x->strides = Py_NewRef(strides);
    x->offset = Py_NewRef(offset);
    x->handle = Py_NewRef(handle);
    x->readonly = 0;
    return (PyObject *)x;
}

/* Whether the context variable `var` holds `value` now (-1 with an error). Why C: the
 * ContextVar's `get` from compiled Python is a method call, about 150 instructions on every
 * fast-path call where this is ten. */
static inline int
hx_var_is(PyObject *var, PyObject *value)
{
    PyObject *now;
    if (PyContextVar_Get(var, NULL, &now) < 0)
        return -1;
    Py_XDECREF(now);  /* the context still holds it: comparing the pointer is enough */
    return now == value;
}

/* Zero the `nbytes` bytes at `address` (an int: a CPU block's), without the GIL from 1 MiB on
 * (below, handing it over costs more than the memset). Why C: numpy's fill goes through a view
 * of the span, several times the memset's cost on small arrays. */
static inline int
hx_clear(PyObject *address, Py_ssize_t nbytes)
{
    void *start = PyLong_AsVoidPtr(address);
    if (start == NULL && PyErr_Occurred())
        return -1;
    if (nbytes < ((Py_ssize_t)1 << 20)) {
        memset(start, 0, (size_t)nbytes);
        return 0;
    }
    Py_BEGIN_ALLOW_THREADS
    memset(start, 0, (size_t)nbytes);
    Py_END_ALLOW_THREADS
    return 0;
}

#endif
