/* The C layout of hxarray._speedups.ArrayBase, the Array's base type: shared by _speedups.c and
 * the modules Cython compiles that read an array's fields (their .pxd declares the type). */
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

#endif
