/* The C layout of hxarray._speedups.ArrayBase, the Array's base type, and its unchecked
 * constructor: shared by _speedups.c and the modules Cython compiles from Python that read an
 * array's fields or make arrays (their .pxd declares what they use). */
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

/* A new array of `type` (ArrayBase or a subclass) with these fields, which the caller has
 * checked (new references). Why C: the fields are read-only to Python and Cython code, and the
 * type has no constructor Python can call (arrays are made by `_make` and `_view`). */
static inline PyObject *
hx_new_array(PyObject *type, PyObject *buffer, PyObject *dtype, PyObject *shape,
             PyObject *strides, PyObject *offset, PyObject *handle, int readonly)
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
    x->readonly = (char)readonly;
    return (PyObject *)x;
}

#endif
