/* hxarray._speedups: the Array's compiled base type, and the CPU fast path.
 *
 * ArrayBase holds the Array's fields (their layout: _speedups.h) and its operator slots;
 * hxarray/_array.py's `_ArrayBase` is its pure-Python twin (hxarray/_compiled.py picks one). The
 * block, buffer and caching allocator types it uses are compiled by Cython from the HAL's own
 * Python source (hal/allocator.pxd), whose generated header gives their C layout.
 * Operation is one element-wise function, or `where` (the reductions' fast path is compiled
 * Python: hxarray/_fastpath.py).
 * Called with operands that the CPU fast path takes (CPU arrays of one dtype and shape, or one
 * such array and a plain Python scalar, below the threading threshold), it runs the CPU backend's
 * kernel (a bare numpy ufunc where one suffices) into a fresh buffer from the caching allocator,
 * as the backend would; anything else goes to its Python fallback, which is the reference.
 *
 * The operator slots also elide temporaries, as numpy does: in `a * b + c`, the product is
 * referenced by nothing but the interpreter's stack, so the sum is written into it instead of a
 * new buffer (the checks that make this safe are at elision_target; docs/reliability.md).
 *
 * Everything relies on the GIL: a method that calls no Python code runs atomically.
 */
#define PY_SSIZE_T_CLEAN
#define _GNU_SOURCE  /* dladdr1, dl_iterate_phdr */
#include <Python.h>
#include <structmember.h>
#include "allocator_api.h"  /* Block, MemoryBuffer, the caching allocator (hal/allocator.pxd) */
#include "_speedups.h"      /* ArrayObject */
typedef struct BlockObject BlockObject;
typedef struct BufferObject BufferObject;

/* -- configuration, set from Python --------------------------------------------------------- */
static PyTypeObject *array_type;      /* hxarray.Array */
static PyObject *cpu_device;          /* the device whose arrays the fast path serves */
static PyObject *cpu_allocator;       /* its caching allocator (a CachingAllocatorBase) */
static PyObject *make_view;           /* make_view(block, dtype, shape): a block's numpy view */
static Py_ssize_t compute_bound_limit, memory_bound_limit;  /* thread thresholds */
static PyObject *errstate_var;        /* numpy's error-state context variable */
static PyObject *errstate_quiet;      /* its value with every floating-point warning ignored */
static PyObject *dtype_bool, *dtype_int64, *floating_dtypes;
static PyObject *py_binary;           /* _binary(name, x1, x2, out): the general path */
static PyObject *operations;          /* list of every Operation, to bind kernels to */
static int binary_op_opcode = -1;

/* -- hooks (hal/hooks.py) and memory scopes (hal/scope.py), read on every call ----------------- */
static PyObject *observers;           /* hooks.observers: hooks while not empty */
static PyObject *observe_operation;   /* observe(name, function, *args): the operation point */
static PyObject *scopes_var;          /* scope.scoped_pools: the memory scopes of the context */
static PyObject *no_scopes;           /* its value outside every scope */

static inline int
observed(void)
{
    return observers != NULL && PyList_GET_SIZE(observers) > 0;
}

/* 1 inside a memory scope of this context, whose pool the general path allocates from (0 if
 * not, -1 on error). */
static int
in_scope(void)
{
    if (scopes_var == NULL)
        return 0;
    PyObject *pools;
    if (PyContextVar_Get(scopes_var, NULL, &pools) < 0)
        return -1;
    Py_XDECREF(pools);  /* the context still holds it: comparing the pointer is enough */
    return pools != no_scopes;
}

/* 1 where the call must take the general path, which the hooks observe and which allocates
 * from the memory scope's pool (0 if not, -1 on error). */
static int
general_only(void)
{
    return observed() ? 1 : in_scope();
}

static PyObject *str_cache, *str_free, *kw_out, *empty_tuple, *zero;

#define ELIDE_MIN_BYTES (256 * 1024)  /* below this a fresh cached buffer costs about as much */

/* -- ArrayBase ------------------------------------------------------------------------------- */
/* The fields are set once, by `_make` or `_view`, which check them: the fast path reads them
 * without checks, so Python code can read them but not replace or delete them (only `_handle`,
 * the backend's cached view or None, may be replaced, and deleting it stores None; the fast path
 * hands it to numpy, which checks it). */

static PyTypeObject ArrayType;

static void
array_dealloc(ArrayObject *self)
{
    if (self->weakreflist != NULL)
        PyObject_ClearWeakRefs((PyObject *)self);
    Py_CLEAR(self->handle);
    Py_CLEAR(self->buffer);
    Py_CLEAR(self->dtype);
    Py_CLEAR(self->shape);
    Py_CLEAR(self->strides);
    Py_CLEAR(self->offset);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef array_members[] = {
    {"_buffer", T_OBJECT_EX, offsetof(ArrayObject, buffer), READONLY, NULL},
    {"_dtype", T_OBJECT_EX, offsetof(ArrayObject, dtype), READONLY, NULL},
    {"_shape", T_OBJECT_EX, offsetof(ArrayObject, shape), READONLY, NULL},
    {"_strides", T_OBJECT_EX, offsetof(ArrayObject, strides), READONLY, NULL},
    {"_offset", T_OBJECT_EX, offsetof(ArrayObject, offset), READONLY, NULL},
    {"_readonly", T_BOOL, offsetof(ArrayObject, readonly), READONLY, NULL},
    {NULL},
};

static PyObject *
array_get_handle(ArrayObject *self, void *closure)
{
    return Py_NewRef(self->handle);
}

static int
array_set_handle(ArrayObject *self, PyObject *value, void *closure)
{
    Py_XSETREF(self->handle, Py_NewRef(value != NULL ? value : Py_None));
    return 0;
}

static PyGetSetDef array_getset[] = {
    {"_handle", (getter)array_get_handle, (setter)array_set_handle, NULL, NULL},
    {NULL},
};

#define MAX_DIMS 64  /* numpy's limit, and so the CPU backend's */
static PyObject *dtype_type;  /* hxarray.DType, once configured */
static PyObject *str_itemsize;

/* The number of dimensions, or -1 with an error unless `shape` is a tuple of at most MAX_DIMS
 * non-negative ints whose non-zero product, times the itemsize, fits in a Py_ssize_t (numpy's
 * rule), and `strides` a tuple of as many ints that fit in a Py_ssize_t. */
static Py_ssize_t
check_layout(PyObject *dtype, PyObject *shape, PyObject *strides, PyObject *offset)
{
    if (!PyTuple_CheckExact(shape) || !PyTuple_CheckExact(strides) || !PyLong_CheckExact(offset)) {
        PyErr_Format(PyExc_TypeError, "an array's shape and strides are tuples of ints and its "
                     "offset an int, got %.50s, %.50s and %.50s", Py_TYPE(shape)->tp_name,
                     Py_TYPE(strides)->tp_name, Py_TYPE(offset)->tp_name);
        return -1;
    }
    Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
    if (ndim > MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "an array would have %zd dimensions; hxarray supports at "
                     "most %d (__array_namespace_info__().capabilities()['max dimensions'])",
                     ndim, MAX_DIMS);
        return -1;
    }
    if (PyTuple_GET_SIZE(strides) != ndim) {
        PyErr_Format(PyExc_ValueError, "%zd strides for %zd dimensions",
                     PyTuple_GET_SIZE(strides), ndim);
        return -1;
    }
    Py_ssize_t count = 1;
    int big = 0;
    for (Py_ssize_t i = 0; i < ndim; i++) {
        PyObject *n = PyTuple_GET_ITEM(shape, i);
        if (!PyLong_CheckExact(n) || !PyLong_CheckExact(PyTuple_GET_ITEM(strides, i))) {
            PyErr_SetString(PyExc_TypeError, "an array's shape and strides are tuples of ints");
            return -1;
        }
        Py_ssize_t size = PyLong_AsSsize_t(n);
        if (size == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            size = -2;
        }
        if (size < 0) {
            PyErr_Format(PyExc_ValueError, size == -2 ?
                         "dimension %zd of shape %R does not fit in an index (at most 2**63 - 1)" :
                         "dimension %zd of shape %R is negative", i, shape);
            return -1;
        }
        if (size > 1 && count > PY_SSIZE_T_MAX / size)
            big = 1;
        else if (size > 0)
            count *= size;
    }
    if (big || count > PY_SSIZE_T_MAX / 16) {
        PyObject *item = PyObject_GetAttr(dtype, str_itemsize);
        Py_ssize_t itemsize = item == NULL ? -1 : PyLong_AsSsize_t(item);
        Py_XDECREF(item);
        if (itemsize < 0)
            return -1;
        if (big || (itemsize > 0 && count > PY_SSIZE_T_MAX / itemsize)) {
            PyErr_Format(PyExc_ValueError, "an array of shape %R and itemsize %zd would span "
                         "more than 2**63 - 1 bytes", shape, itemsize);
            return -1;
        }
    }
    for (Py_ssize_t i = 0; i < ndim; i++) {
        if (PyLong_AsSsize_t(PyTuple_GET_ITEM(strides, i)) == -1 && PyErr_Occurred())
            return -1;
    }
    if (PyLong_AsSsize_t(offset) == -1 && PyErr_Occurred())
        return -1;
    return ndim;
}

/* A new array of type `cls` over `buffer`; the references are new. */
static PyObject *
array_build(PyTypeObject *cls, PyObject *buffer, PyObject *dtype, PyObject *shape,
            PyObject *strides, PyObject *offset, PyObject *handle, int readonly)
{
    if (!PyObject_TypeCheck(buffer, &BufferType)) {
        PyErr_Format(PyExc_TypeError, "an array's buffer is a MemoryBuffer, got %.100s",
                     Py_TYPE(buffer)->tp_name);
        return NULL;
    }
    if (dtype_type != NULL && !PyObject_TypeCheck(dtype, (PyTypeObject *)dtype_type)) {
        PyErr_Format(PyExc_TypeError, "an array's dtype is an hxarray dtype, got %.100s",
                     Py_TYPE(dtype)->tp_name);
        return NULL;
    }
    if (check_layout(dtype, shape, strides, offset) < 0)
        return NULL;
    ArrayObject *x = (ArrayObject *)cls->tp_alloc(cls, 0);
    if (x == NULL)
        return NULL;
    x->buffer = Py_NewRef(buffer);
    x->dtype = Py_NewRef(dtype);
    x->shape = Py_NewRef(shape);
    x->strides = Py_NewRef(strides);
    x->offset = Py_NewRef(offset);
    x->handle = Py_NewRef(handle != NULL ? handle : Py_None);
    x->readonly = (char)readonly;
    return (PyObject *)x;
}

/* Array._make(buffer, dtype, shape, strides, offset=0, handle=None, readonly=False) */
static PyObject *
array_make(PyTypeObject *cls, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 4 || nargs > 7) {
        PyErr_Format(PyExc_TypeError, "_make() takes 4 to 7 arguments (%zd given)", nargs);
        return NULL;
    }
    int readonly = nargs > 6 ? PyObject_IsTrue(args[6]) : 0;
    if (readonly < 0)
        return NULL;
    return array_build(cls, args[0], args[1], args[2], args[3], nargs > 4 ? args[4] : zero,
                       nargs > 5 ? args[5] : Py_None, readonly);
}

/* Array._view(base, shape, strides, offset, dtype=None): a view of base's buffer, read-only if
 * base is. */
static PyObject *
array_view(PyObject *unused, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 4 || nargs > 5) {
        PyErr_Format(PyExc_TypeError, "_view() takes 4 or 5 arguments (%zd given)", nargs);
        return NULL;
    }
    if (!PyObject_TypeCheck(args[0], &ArrayType) || ((ArrayObject *)args[0])->shape == NULL) {
        PyErr_SetString(PyExc_TypeError, "_view() needs an array to view");
        return NULL;
    }
    ArrayObject *base = (ArrayObject *)args[0];
    PyObject *dtype = nargs > 4 && args[4] != Py_None ? args[4] : base->dtype;
    return array_build(Py_TYPE(base), base->buffer, dtype, args[1], args[2], args[3], Py_None,
                       base->readonly);
}

static PyMethodDef array_methods[] = {
    {"_make", (PyCFunction)(void (*)(void))array_make, METH_FASTCALL | METH_CLASS,
     "_make(buffer, dtype, shape, strides, offset=0, handle=None, readonly=False): a new array "
     "(checked: shape and strides tuples of ints, at most 64 dimensions, at most 2**63 - 1 "
     "bytes)."},
    {"_view", (PyCFunction)(void (*)(void))array_view, METH_FASTCALL | METH_STATIC,
     "_view(base, shape, strides, offset, dtype=None): another view of base's buffer, "
     "read-only if base is."},
    {NULL},
};

/* -- Operation: an element-wise namespace function (or `where`) with a fast path ------------- */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *name;      /* the spec's name, e.g. "add" */
    PyObject *results;   /* dict: operand dtype -> (result dtype, its itemsize) */
    PyObject *fallback;  /* the general path, called with the same arguments */
    PyObject *kernel;    /* the CPU backend's kernel, or NULL: no fast path */
    PyObject *dict;      /* __name__, __doc__, __signature__, ... */
    PyObject *reference; /* the Python function: takes calls of another arity, or with keywords */
    int arity;
    int condition;       /* the first operand is a boolean condition of the others' shape */
    int compute_bound;   /* which threading threshold applies */
} Operation;

static PyObject *
operation_repr(Operation *op)
{
    return PyUnicode_FromFormat("<hxarray function %U>", op->name);
}

static PyMemberDef operation_members[] = {
    {"kernel", T_OBJECT, offsetof(Operation, kernel), READONLY,
     "the CPU fast path's kernel, or None"},
    {"fallback", T_OBJECT_EX, offsetof(Operation, fallback), READONLY,
     "the general path, which takes every call the fast path does not"},
    {NULL},
};

/* `results` (operand dtype -> result dtype) with each result's itemsize. */
static PyObject *
sized_results(PyObject *results)
{
    PyObject *sized = PyDict_New();
    if (sized == NULL)
        return NULL;
    PyObject *operand, *result;
    Py_ssize_t pos = 0;
    while (PyDict_Next(results, &pos, &operand, &result)) {
        PyObject *itemsize = PyObject_GetAttrString(result, "itemsize");
        PyObject *entry = itemsize == NULL ? NULL : PyTuple_Pack(2, result, itemsize);
        Py_XDECREF(itemsize);
        if (entry == NULL || PyDict_SetItem(sized, operand, entry) < 0) {
            Py_XDECREF(entry);
            Py_DECREF(sized);
            return NULL;
        }
        Py_DECREF(entry);
    }
    return sized;
}

typedef struct {
    ArrayObject *first;  /* the first array operand: its shape is the result's */
    PyObject *dtype;     /* the result dtype (borrowed) */
    Py_ssize_t itemsize, size;
} Plan;

static int
is_floating(PyObject *dtype)
{
    return PySet_Contains(floating_dtypes, dtype) == 1;  /* a set: no DType.__eq__ calls */
}

/* Whether a plain Python scalar meets an array of `dtype` without any check the fast path skips
 * (the general path handles the rest: integer bounds, complex scalars, subclasses). */
static int
scalar_fits(PyObject *x, PyObject *dtype)
{
    if (PyBool_Check(x))
        return dtype == dtype_bool;
    if (PyFloat_CheckExact(x))
        return is_floating(dtype);
    int overflow;
    long long value = PyLong_AsLongLongAndOverflow(x, &overflow);
    if (value == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return overflow == 0 && (dtype == dtype_int64 || is_floating(dtype));
}

static Py_ssize_t
shape_size(PyObject *shape)
{
    Py_ssize_t size = 1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape); i++) {
        Py_ssize_t n = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
        if (n < 0)
            return -1;
        size *= n;
    }
    return size;
}

/* `x` as a CPU array whose numpy view is cached, or NULL. */
static ArrayObject *
cpu_array(PyObject *x)
{
    if (!Py_IS_TYPE(x, array_type))
        return NULL;
    ArrayObject *a = (ArrayObject *)x;
    if (a->handle == Py_None ||
            !PyObject_TypeCheck(a->buffer, &BufferType) ||
            ((BufferObject *)a->buffer)->device != cpu_device)
        return NULL;
    return a;
}

static int
same_shape(ArrayObject *a, ArrayObject *b)
{
    return a->shape == b->shape ? 1 : PyObject_RichCompareBool(a->shape, b->shape, Py_EQ);
}

/* 1 if the fast path takes these operands (filling `plan`), 0 if not, -1 on error. */
static int
make_plan(Operation *op, PyObject *const *args, Py_ssize_t nargs, Plan *plan)
{
    if (op->kernel == NULL || cpu_device == NULL)
        return 0;
    int general = general_only();
    if (general)
        return general < 0 ? -1 : 0;
    Py_ssize_t start = 0;
    ArrayObject *condition = NULL;
    if (op->condition) {
        condition = cpu_array(args[0]);
        if (condition == NULL || condition->dtype != dtype_bool)
            return 0;
        start = 1;
    }
    ArrayObject *first = NULL;
    for (Py_ssize_t i = start; i < nargs; i++) {
        PyObject *x = args[i];
        if (Py_IS_TYPE(x, array_type)) {
            ArrayObject *a = cpu_array(x);
            if (a == NULL)
                return 0;
            if (first == NULL) {
                first = a;
                continue;
            }
            if (a->dtype != first->dtype)
                return 0;
            int same = same_shape(a, first);
            if (same <= 0)
                return same;
        }
        else if (!PyFloat_CheckExact(x) && !PyLong_CheckExact(x) && !PyBool_Check(x)) {
            return 0;
        }
    }
    if (first == NULL)
        return 0;
    if (condition != NULL) {
        int same = same_shape(condition, first);
        if (same <= 0)
            return same;
    }
    for (Py_ssize_t i = start; i < nargs; i++) {
        if (!Py_IS_TYPE(args[i], array_type) && !scalar_fits(args[i], first->dtype))
            return 0;
    }
    PyObject *result = PyDict_GetItemWithError(op->results, first->dtype);
    if (result == NULL)
        return PyErr_Occurred() ? -1 : 0;
    Py_ssize_t size = shape_size(first->shape);
    if (size < 0)
        return PyErr_Occurred() ? -1 : 0;
    plan->first = first;
    plan->dtype = PyTuple_GET_ITEM(result, 0);
    plan->itemsize = PyLong_AsSsize_t(PyTuple_GET_ITEM(result, 1));
    plan->size = size;
    return 1;
}

/* Whether the operation is small enough for one thread. */
static int
below_threshold(Operation *op, Plan *plan)
{
    return plan->size < (op->compute_bound ? compute_bound_limit : memory_bound_limit);
}

static PyObject *
contiguous_strides(PyObject *shape, Py_ssize_t itemsize)
{
    Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
    PyObject *strides = PyTuple_New(ndim);
    if (strides == NULL)
        return NULL;
    Py_ssize_t step = itemsize;
    for (Py_ssize_t i = ndim - 1; i >= 0; i--) {
        PyObject *s = PyLong_FromSsize_t(step);
        if (s == NULL) {
            Py_DECREF(strides);
            return NULL;
        }
        PyTuple_SET_ITEM(strides, i, s);
        Py_ssize_t n = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
        step *= n > 1 ? n : 1;
    }
    return strides;
}

/* The numpy view of a block for (dtype, shape): one of those cached on the block by its last two
 * users (CpuBackend._block_view: (dtype, shape, view) triples, the newest first) if it matches,
 * else a new one from the backend (which caches it). */
static PyObject *
block_view(PyObject *block, PyObject *dtype, PyObject *shape)
{
    PyObject *cache = PyObject_TypeCheck(block, &BlockType) ?
        Py_XNewRef(((BlockObject *)block)->cache) : PyObject_GetAttr(block, str_cache);
    if (cache == NULL)
        return PyErr_Occurred() ? NULL : PyObject_CallFunctionObjArgs(make_view, block, dtype,
                                                                      shape, NULL);
    if (PyTuple_CheckExact(cache)) {
        for (Py_ssize_t at = 0; at + 3 <= PyTuple_GET_SIZE(cache); at += 3) {
            if (PyTuple_GET_ITEM(cache, at) != dtype)
                continue;
            PyObject *cached_shape = PyTuple_GET_ITEM(cache, at + 1);
            int same = cached_shape == shape ? 1 :
                PyObject_RichCompareBool(cached_shape, shape, Py_EQ);
            if (same != 0) {
                PyObject *view = same > 0 ? Py_NewRef(PyTuple_GET_ITEM(cache, at + 2)) : NULL;
                Py_DECREF(cache);
                return view;
            }
        }
    }
    Py_DECREF(cache);
    return PyObject_CallFunctionObjArgs(make_view, block, dtype, shape, NULL);
}

/* A fresh C-contiguous CPU array from the caching allocator. */
static PyObject *
new_array(PyObject *dtype, Py_ssize_t itemsize, PyObject *shape, Py_ssize_t size)
{
    PyObject *block = (PyObject *)_cached_malloc((struct CacheObject *)cpu_allocator,
                                                 size * itemsize);
    PyObject *nbytes = block == NULL ? NULL : PyLong_FromSsize_t(size * itemsize);
    if (nbytes == NULL) {
        Py_XDECREF(block);
        return NULL;
    }
    PyObject *view = block_view(block, dtype, shape);
    BufferObject *buffer = view == NULL ? NULL :
        (BufferObject *)BufferType.tp_new(&BufferType, empty_tuple, NULL);
    if (buffer == NULL) {
        Py_XDECREF(view);
        Py_DECREF(nbytes);
        PyObject *type, *value, *traceback;  /* give the block back with the error set aside */
        PyErr_Fetch(&type, &value, &traceback);
        PyObject *done = PyObject_CallMethodOneArg(cpu_allocator, str_free, block);
        if (done == NULL)
            PyErr_WriteUnraisable(cpu_allocator);
        Py_XDECREF(done);
        PyErr_Restore(type, value, traceback);
        Py_DECREF(block);
        return NULL;
    }
    Py_SETREF(buffer->device, Py_NewRef(cpu_device));
    Py_SETREF(buffer->nbytes, nbytes);
    Py_SETREF(buffer->block, block);
    Py_SETREF(buffer->allocator, Py_NewRef(cpu_allocator));  /* last: it frees the block */
    ArrayObject *array = (ArrayObject *)array_type->tp_alloc(array_type, 0);
    if (array == NULL) {
        Py_DECREF(view);
        Py_DECREF(buffer);
        return NULL;
    }
    array->buffer = (PyObject *)buffer;
    array->dtype = Py_NewRef(dtype);
    array->shape = Py_NewRef(shape);
    array->offset = Py_NewRef(zero);
    array->handle = view;
    array->strides = contiguous_strides(shape, itemsize);
    if (array->strides == NULL) {
        Py_DECREF(array);
        return NULL;
    }
    return (PyObject *)array;
}

/* numpy's floating-point warnings are silenced by running the kernel in a context where numpy's
 * error-state variable says so. Setting the variable costs a new context mapping and a token per
 * call; instead one thread (the first to get here) keeps a context holding the quiet state and
 * enters it around each kernel, a pointer swap. Other threads, or a re-entrant call, set the
 * variable. The kernel reads nothing else from the context. */
static PyObject *quiet_context;
static PyThreadState *quiet_owner;

/* *token is NULL if the quiet context was entered, else the variable's reset token. */
static int
quiet_enter(PyObject **token)
{
    PyThreadState *thread = PyThreadState_Get();
    if (quiet_context == NULL) {
        PyObject *context = PyContext_New();
        if (context == NULL || PyContext_Enter(context) < 0) {
            Py_XDECREF(context);
            return -1;
        }
        PyObject *set = PyContextVar_Set(errstate_var, errstate_quiet);
        Py_XDECREF(set);
        if (PyContext_Exit(context) < 0 || set == NULL) {
            Py_DECREF(context);
            return -1;
        }
        quiet_context = context;
        quiet_owner = thread;
    }
    if (thread == quiet_owner && PyContext_Enter(quiet_context) == 0) {
        *token = NULL;
        return 0;
    }
    PyErr_Clear();
    *token = PyContextVar_Set(errstate_var, errstate_quiet);
    return *token == NULL ? -1 : 0;
}

static int
quiet_exit(PyObject *token)
{
    if (token == NULL)
        return PyContext_Exit(quiet_context);
    int done = PyContextVar_Reset(errstate_var, token);
    Py_DECREF(token);
    return done;
}

/* kernel(*args), quietly: a new reference, or NULL with the kernel's error. */
static PyObject *
call_quietly(PyObject *kernel, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyObject *token;
    if (quiet_enter(&token) < 0)
        return NULL;
    PyObject *done = PyObject_Vectorcall(kernel, args, nargsf, kwnames);
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    if (quiet_exit(token) < 0) {
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(traceback);
        Py_XDECREF(done);
        return NULL;
    }
    PyErr_Restore(type, value, traceback);
    return done;
}

/* Run the kernel on the operands' numpy views into `out` (a fresh array if NULL), quietly. */
static PyObject *
compute(Operation *op, PyObject *const *args, Py_ssize_t nargs, Plan *plan, ArrayObject *out)
{
    PyObject *result = out != NULL ? Py_NewRef(out) :
        new_array(plan->dtype, plan->itemsize, plan->first->shape, plan->size);
    if (result == NULL)
        return NULL;
    PyObject *call[5] = {NULL};
    for (Py_ssize_t i = 0; i < nargs; i++)
        call[i + 1] = Py_IS_TYPE(args[i], array_type) ? ((ArrayObject *)args[i])->handle : args[i];
    call[nargs + 1] = ((ArrayObject *)result)->handle;  /* out= */
    PyObject *done = call_quietly(op->kernel, call + 1, nargs | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                  kw_out);
    if (done == NULL) {
        Py_DECREF(result);
        return NULL;
    }
    Py_DECREF(done);
    return result;
}

/* The fast path if it applies: a new reference; NULL without an error if it does not. */
static PyObject *
try_fast(Operation *op, PyObject *const *args, Py_ssize_t nargs, ArrayObject *out)
{
    Plan plan;
    int ok = make_plan(op, args, nargs, &plan);
    if (ok > 0 && out != NULL) {
        if (out->dtype != plan.dtype)
            return NULL;
        if (out->shape != plan.first->shape) {
            ok = PyObject_RichCompareBool(out->shape, plan.first->shape, Py_EQ);
            if (ok <= 0)
                return NULL;
        }
    }
    if (ok > 0)
        ok = below_threshold(op, &plan);
    if (ok <= 0)
        return NULL;
    return compute(op, args, nargs, &plan, out);
}

/* `function(*args)` through the operation point, while hooks are installed. */
static PyObject *
call_observed(Operation *op, PyObject *function, PyObject *const *args, size_t nargsf,
              PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t total = nargs + (kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames));
    PyObject **all = PyMem_Malloc((total + 2) * sizeof(PyObject *));
    if (all == NULL)
        return PyErr_NoMemory();
    all[0] = op->name;
    all[1] = function;
    for (Py_ssize_t i = 0; i < total; i++)
        all[i + 2] = args[i];
    PyObject *result = PyObject_Vectorcall(observe_operation, all, nargs + 2, kwnames);
    PyMem_Free(all);
    return result;
}

static PyObject *
operation_vectorcall(Operation *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (observe_operation != NULL && observed())
        return call_observed(op, op->reference, args, nargsf, kwnames);
    if (kwnames != NULL || nargs != op->arity)  /* positional-only: Python's own TypeError */
        return PyObject_Vectorcall(op->reference, args, nargsf, kwnames);
    PyObject *result = try_fast(op, args, nargs, NULL);
    if (result != NULL || PyErr_Occurred())
        return result;
    return PyObject_Vectorcall(op->fallback, args, nargsf, kwnames);
}

static void
operation_dealloc(Operation *op)
{
    Py_CLEAR(op->name);
    Py_CLEAR(op->results);
    Py_CLEAR(op->fallback);
    Py_CLEAR(op->kernel);
    Py_CLEAR(op->dict);
    Py_CLEAR(op->reference);
    Py_TYPE(op)->tp_free((PyObject *)op);
}

static PyObject *
operation_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"name", "results", "fallback", "arity", "condition", "reference",
                            NULL};
    PyObject *name, *results, *fallback, *reference = NULL;
    int arity = 0, condition = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "UO!O|$ipO:Operation", names, &name,
                                     &PyDict_Type, &results, &fallback, &arity, &condition,
                                     &reference))
        return NULL;
    if (arity < 1 + condition || arity > 2 + condition) {
        PyErr_Format(PyExc_ValueError, "arity must be 1 or 2 (plus the condition), got %d", arity);
        return NULL;
    }
    Operation *op = (Operation *)type->tp_alloc(type, 0);
    if (op == NULL)
        return NULL;
    op->arity = arity;
    op->condition = condition;
    op->vectorcall = (vectorcallfunc)operation_vectorcall;
    op->name = Py_NewRef(name);
    op->fallback = Py_NewRef(fallback);
    op->reference = Py_NewRef(reference != NULL ? reference : fallback);
    op->results = sized_results(results);
    if (op->results == NULL || PyList_Append(operations, (PyObject *)op) < 0) {
        Py_DECREF(op);
        return NULL;
    }
    return (PyObject *)op;
}

static PyTypeObject OperationType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hxarray._speedups.Operation",
    .tp_basicsize = sizeof(Operation),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "Operation(name, results, fallback, *, arity, condition=False, reference=None): "
              "an element-wise function with the CPU fast path in front of its general path "
              "`fallback` (called with exactly `arity` positional arguments); `reference`, the "
              "function with the standard's signature, takes any other call; with `condition`, "
              "the first operand is a boolean array of the others' shape (`where`).",
    .tp_new = operation_new,
    .tp_dealloc = (destructor)operation_dealloc,
    .tp_repr = (reprfunc)operation_repr,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Operation, vectorcall),
    .tp_dictoffset = offsetof(Operation, dict),
    .tp_members = operation_members,
};

/* -- fresh arrays ---------------------------------------------------------------------------- */
#define MAX_NBYTES ((Py_ssize_t)1 << 62)

/* `shape` (an int or a tuple of at most MAX_DIMS ints, none negative, whose non-zero product
 * times `itemsize` is at most MAX_NBYTES) as a new tuple with its element count, or NULL without
 * an error where the general path must judge it. */
static PyObject *
plain_shape(PyObject *shape, Py_ssize_t itemsize, Py_ssize_t *size)
{
    if (PyLong_CheckExact(shape))
        shape = PyTuple_Pack(1, shape);
    else if (PyTuple_CheckExact(shape))
        Py_INCREF(shape);
    else
        return NULL;
    if (shape == NULL)
        return NULL;
    Py_ssize_t nonzero = 1;  /* the product of the non-zero dimensions must fit too (numpy's rule) */
    int empty = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape); i++) {
        PyObject *item = PyTuple_GET_ITEM(shape, i);
        Py_ssize_t n = PyLong_CheckExact(item) ? PyLong_AsSsize_t(item) : -1;
        if (n < 0 || (n > 0 && nonzero > MAX_NBYTES / itemsize / n) || i >= MAX_DIMS) {
            PyErr_Clear();
            Py_DECREF(shape);
            return NULL;
        }
        if (n == 0)
            empty = 1;
        else
            nonzero *= n;
    }
    *size = empty ? 0 : nonzero;
    return shape;
}

/* -- operator slots -------------------------------------------------------------------------- */
enum {
    ADD, SUB, MUL, TRUEDIV, FLOORDIV, MOD, POW, MATMUL, AND, OR, XOR, LSHIFT, RSHIFT,
    EQ, NE, LT, LE, GT, GE, N_BINARY
};
enum { NEG, POS, ABS, INVERT, N_UNARY };

/* The slots' operator stems (the keys of `configure`'s `operations`) and Python methods. */
static const char *binary_names[N_BINARY][4] = {
    /* operator, forward, reflected, in-place */
    {"add", "__add__", "__radd__", "__iadd__"},
    {"sub", "__sub__", "__rsub__", "__isub__"},
    {"mul", "__mul__", "__rmul__", "__imul__"},
    {"truediv", "__truediv__", "__rtruediv__", "__itruediv__"},
    {"floordiv", "__floordiv__", "__rfloordiv__", "__ifloordiv__"},
    {"mod", "__mod__", "__rmod__", "__imod__"},
    {"pow", "__pow__", "__rpow__", "__ipow__"},
    {"matmul", "__matmul__", "__rmatmul__", "__imatmul__"},
    {"and", "__and__", "__rand__", "__iand__"},
    {"or", "__or__", "__ror__", "__ior__"},
    {"xor", "__xor__", "__rxor__", "__ixor__"},
    {"lshift", "__lshift__", "__rlshift__", "__ilshift__"},
    {"rshift", "__rshift__", "__rrshift__", "__irshift__"},
    {"eq", "__eq__", NULL, NULL},
    {"ne", "__ne__", NULL, NULL},
    {"lt", "__lt__", NULL, NULL},
    {"le", "__le__", NULL, NULL},
    {"gt", "__gt__", NULL, NULL},
    {"ge", "__ge__", NULL, NULL},
};
static const char *unary_names[N_UNARY][2] = {
    {"neg", "__neg__"}, {"pos", "__pos__"}, {"abs", "__abs__"}, {"invert", "__invert__"},
};


static Operation *binary_ops[N_BINARY];
static PyObject *binary_methods[N_BINARY][3];  /* the Python operators: forward, reflected, in-place */
static Operation *unary_ops[N_UNARY];
static PyObject *unary_methods[N_UNARY];

/* Temporary elision, numpy's way (numpy/_core/src/multiarray/temp_elide.c): an operand may be
 * overwritten only if nothing but the interpreter's evaluation stack holds it. Three checks, all
 * needed:
 *   - reference count one, and the innermost Python frame executing BINARY_OP (3.11 to 3.13), or
 *     PyUnstable_Object_IsUniqueReferencedTemporary (3.14 on: the object is on the frame's stack);
 *   - the C stack between this slot and the nearest run of the interpreter's eval loop holds only
 *     this extension's and the Python runtime's own functions. A C caller in between (numpy's
 *     object-dtype loops calling PyNumber_Add on the elements of an object array, Cython code)
 *     may hold a borrowed reference: its operand has reference count one but is not a temporary.
 * Where the C stack cannot be read (no backtrace(), no dl_iterate_phdr()), nothing is elided. */
#if PY_VERSION_HEX >= 0x030E0000
#define ON_INTERPRETER_STACK(x) PyUnstable_Object_IsUniqueReferencedTemporary(x)
#elif PY_VERSION_HEX >= 0x030B0000
/* Whether the innermost Python frame is executing BINARY_OP. */
static int
frame_at_binary_op(void)
{
    PyFrameObject *frame = PyEval_GetFrame();
    if (frame == NULL || binary_op_opcode < 0)
        return 0;
    PyCodeObject *code = PyFrame_GetCode(frame);
    PyObject *bytecode = PyCode_GetCode(code);
    Py_DECREF(code);
    if (bytecode == NULL) {
        PyErr_Clear();
        return 0;
    }
    int lasti = PyFrame_GetLasti(frame);
    int at = lasti >= 0 && lasti < PyBytes_GET_SIZE(bytecode) &&
        (unsigned char)PyBytes_AS_STRING(bytecode)[lasti] == binary_op_opcode;
    Py_DECREF(bytecode);
    return at;
}
#define ON_INTERPRETER_STACK(x) (Py_REFCNT(x) == 1 && frame_at_binary_op())
#endif

#if defined(ON_INTERPRETER_STACK) && defined(__GLIBC__)
#define HAVE_ELISION 1
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>

#define CALLER_FRAMES 16  /* the interpreter is a handful of frames away; deeper is refused */

typedef struct { uintptr_t start, end; } Span;

static Span python_text, own_text, eval_loop;  /* code of libpython, of this module, of the loop */
static int callers_known;                      /* 1 found, -1 cannot be found, 0 not looked yet */

/* dl_iterate_phdr callback: the executable segment of the object holding data->start. */
static int
find_text(struct dl_phdr_info *info, size_t size, void *data)
{
    Span *span = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && span->start >= start &&
                span->start < start + ph->p_memsz) {
            span->start = start;
            span->end = start + ph->p_memsz;
            return 1;
        }
    }
    return 0;
}

static int
find_callers(void)
{
    python_text.start = (uintptr_t)&PyNumber_Add;
    own_text.start = (uintptr_t)&find_callers;
    void *eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    Dl_info info;
    const ElfW(Sym) *symbol = NULL;
    if (eval == NULL || !dladdr1(eval, &info, (void **)&symbol, RTLD_DL_SYMENT) ||
            symbol == NULL || symbol->st_size == 0 ||
            !dl_iterate_phdr(find_text, &python_text) || !dl_iterate_phdr(find_text, &own_text))
        return -1;
    eval_loop.start = (uintptr_t)eval;
    eval_loop.end = eval_loop.start + symbol->st_size;
    return 1;
}

#define IN(span, pc) ((pc) >= (span).start && (pc) < (span).end)

/* Whether this slot was called by the interpreter's eval loop through the Python runtime alone. */
static int
called_by_interpreter(void)
{
    if (callers_known == 0)
        callers_known = find_callers();
    if (callers_known < 0)
        return 0;
    void *frames[CALLER_FRAMES];
    int count = backtrace(frames, CALLER_FRAMES);
    int own = 0;
    for (int i = 0; i < count; i++) {
        uintptr_t pc = (uintptr_t)frames[i];
        if (IN(own_text, pc)) {
            own = 1;
            continue;
        }
        if (!own)  /* backtrace() itself, before this module's frames */
            continue;
        if (IN(eval_loop, pc))
            return 1;
        if (!IN(python_text, pc))
            return 0;  /* another library's code: it may hold a borrowed reference */
    }
    return 0;
}
#endif

/* Whether x's layout is C-contiguous (a broadcast view, whose elements alias, never is). */
static int
is_c_contiguous(ArrayObject *x, Py_ssize_t itemsize)
{
    Py_ssize_t step = itemsize;
    for (Py_ssize_t i = PyTuple_GET_SIZE(x->shape) - 1; i >= 0; i--) {
        Py_ssize_t n = PyLong_AsSsize_t(PyTuple_GET_ITEM(x->shape, i));
        if (n == 0)
            return 1;
        if (n != 1 && PyLong_AsSsize_t(PyTuple_GET_ITEM(x->strides, i)) != step)
            return 0;
        step *= n;
    }
    return 1;
}

/* An operand the result may be written into: a writable, C-contiguous temporary array of the
 * result's dtype (the plan guarantees its shape) whose memory nothing else can see. */
static ArrayObject *
elision_target(PyObject *a, PyObject *b, Plan *plan)
{
#ifdef HAVE_ELISION
    if (plan->size * plan->itemsize < ELIDE_MIN_BYTES)
        return NULL;
    PyObject *operands[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        ArrayObject *x = (ArrayObject *)operands[i];
        if (Py_IS_TYPE(x, array_type) && x->dtype == plan->dtype && !x->readonly &&
                Py_REFCNT(x->buffer) == 1 &&
                ((BufferObject *)x->buffer)->allocator == cpu_allocator &&
                is_c_contiguous(x, plan->itemsize) && ON_INTERPRETER_STACK((PyObject *)x) &&
                called_by_interpreter())
            return x;
    }
#endif
    return NULL;
}

static PyObject *
binary_slot(int k, PyObject *a, PyObject *b)
{
    int forward = PyObject_TypeCheck(a, &ArrayType);
    Operation *op = binary_ops[k];
    if (op != NULL) {
        PyObject *args[2] = {a, b};
        Plan plan;
        int ok = make_plan(op, args, 2, &plan);
        if (ok < 0)
            return NULL;
        if (ok > 0) {
            ArrayObject *out = elision_target(a, b, &plan);
            ok = below_threshold(op, &plan);
            if (ok < 0)
                return NULL;
            if (ok > 0)
                return compute(op, args, 2, &plan, out);
            if (out != NULL)  /* large: the general path threads it, into the temporary */
                return PyObject_CallFunctionObjArgs(py_binary, op->name, a, b, out, NULL);
        }
    }
    PyObject *method = binary_methods[k][forward ? 0 : 1];
    if (method == NULL)
        Py_RETURN_NOTIMPLEMENTED;
    return forward ? PyObject_CallFunctionObjArgs(method, a, b, NULL)
                   : PyObject_CallFunctionObjArgs(method, b, a, NULL);
}

/* Where each binary operator sits in PyNumberMethods, and its symbol, for the in-place
 * operators' fallback. */
static const size_t number_slots[N_BINARY] = {
    offsetof(PyNumberMethods, nb_add), offsetof(PyNumberMethods, nb_subtract),
    offsetof(PyNumberMethods, nb_multiply), offsetof(PyNumberMethods, nb_true_divide),
    offsetof(PyNumberMethods, nb_floor_divide), offsetof(PyNumberMethods, nb_remainder),
    offsetof(PyNumberMethods, nb_power), offsetof(PyNumberMethods, nb_matrix_multiply),
    offsetof(PyNumberMethods, nb_and), offsetof(PyNumberMethods, nb_or),
    offsetof(PyNumberMethods, nb_xor), offsetof(PyNumberMethods, nb_lshift),
    offsetof(PyNumberMethods, nb_rshift),
};
static const char *symbols[N_BINARY] = {
    "+", "-", "*", "/", "//", "%", "**", "@", "&", "|", "^", "<<", ">>",
};

static PyObject *
inplace_slot(int k, PyObject *a, PyObject *b)
{
    if (binary_ops[k] != NULL && Py_IS_TYPE(a, array_type) && !((ArrayObject *)a)->readonly) {
        PyObject *args[2] = {a, b};
        PyObject *result = try_fast(binary_ops[k], args, 2, (ArrayObject *)a);
        if (result != NULL || PyErr_Occurred())
            return result;
    }
    if (binary_methods[k][2] == NULL)
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *result = PyObject_CallFunctionObjArgs(binary_methods[k][2], a, b, NULL);
    if (result != Py_NotImplemented)
        return result;
    /* Python would now try a.__op__(b), then b.__rop__(a), then raise; do it here, because for
     * `+=` a NotImplemented from this slot also reaches sq_inplace_concat, which CPython fills with
     * this same function for a Python subclass, and that path hands NotImplemented back as the
     * result. */
    Py_DECREF(result);
    result = binary_slot(k, a, b);
    if (result != Py_NotImplemented)
        return result;
    Py_DECREF(result);
    PyNumberMethods *numbers = Py_TYPE(b)->tp_as_number;
    if (numbers != NULL && !PyObject_TypeCheck(b, &ArrayType)) {
        void *slot = *(void **)((char *)numbers + number_slots[k]);
        if (slot != NULL) {
            result = k == POW ? ((ternaryfunc)slot)(a, b, Py_None) : ((binaryfunc)slot)(a, b);
            if (result != Py_NotImplemented)
                return result;
            Py_DECREF(result);
        }
    }
    return PyErr_Format(PyExc_TypeError, "unsupported operand type(s) for %s=: '%.100s' and "
                        "'%.100s'", symbols[k], Py_TYPE(a)->tp_name, Py_TYPE(b)->tp_name);
}

static PyObject *
unary_slot(int k, PyObject *a)
{
    if (unary_ops[k] != NULL) {
        PyObject *result = try_fast(unary_ops[k], &a, 1, NULL);
        if (result != NULL || PyErr_Occurred())
            return result;
    }
    if (unary_methods[k] == NULL)
        Py_RETURN_NOTIMPLEMENTED;
    return PyObject_CallOneArg(unary_methods[k], a);
}

#define BINARY_SLOTS(fn, inplace_fn, k) \
    static PyObject *fn(PyObject *a, PyObject *b) { return binary_slot(k, a, b); } \
    static PyObject *inplace_fn(PyObject *a, PyObject *b) { return inplace_slot(k, a, b); }
BINARY_SLOTS(nb_add, nb_iadd, ADD)
BINARY_SLOTS(nb_sub, nb_isub, SUB)
BINARY_SLOTS(nb_mul, nb_imul, MUL)
BINARY_SLOTS(nb_truediv, nb_itruediv, TRUEDIV)
BINARY_SLOTS(nb_floordiv, nb_ifloordiv, FLOORDIV)
BINARY_SLOTS(nb_mod, nb_imod, MOD)
BINARY_SLOTS(nb_matmul, nb_imatmul, MATMUL)
BINARY_SLOTS(nb_and, nb_iand, AND)
BINARY_SLOTS(nb_or, nb_ior, OR)
BINARY_SLOTS(nb_xor, nb_ixor, XOR)
BINARY_SLOTS(nb_lshift, nb_ilshift, LSHIFT)
BINARY_SLOTS(nb_rshift, nb_irshift, RSHIFT)

static PyObject *
nb_pow(PyObject *a, PyObject *b, PyObject *modulo)
{
    if (modulo != Py_None)
        Py_RETURN_NOTIMPLEMENTED;
    return binary_slot(POW, a, b);
}

static PyObject *
nb_ipow(PyObject *a, PyObject *b, PyObject *modulo)
{
    if (modulo != Py_None)
        Py_RETURN_NOTIMPLEMENTED;
    return inplace_slot(POW, a, b);
}

static PyObject *nb_neg(PyObject *a) { return unary_slot(NEG, a); }
static PyObject *nb_pos(PyObject *a) { return unary_slot(POS, a); }
static PyObject *nb_abs(PyObject *a) { return unary_slot(ABS, a); }
static PyObject *nb_invert(PyObject *a) { return unary_slot(INVERT, a); }

static PyObject *
array_richcompare(PyObject *a, PyObject *b, int cmp)
{
    static const int slots[] = {[Py_LT] = LT, [Py_LE] = LE, [Py_EQ] = EQ, [Py_NE] = NE,
                                [Py_GT] = GT, [Py_GE] = GE};
    return binary_slot(slots[cmp], a, b);
}

static PyNumberMethods array_as_number = {
    .nb_add = nb_add, .nb_subtract = nb_sub, .nb_multiply = nb_mul,
    .nb_true_divide = nb_truediv, .nb_floor_divide = nb_floordiv, .nb_remainder = nb_mod,
    .nb_power = nb_pow, .nb_matrix_multiply = nb_matmul, .nb_and = nb_and, .nb_or = nb_or,
    .nb_xor = nb_xor, .nb_lshift = nb_lshift, .nb_rshift = nb_rshift,
    .nb_inplace_add = nb_iadd, .nb_inplace_subtract = nb_isub, .nb_inplace_multiply = nb_imul,
    .nb_inplace_true_divide = nb_itruediv, .nb_inplace_floor_divide = nb_ifloordiv,
    .nb_inplace_remainder = nb_imod, .nb_inplace_power = nb_ipow,
    .nb_inplace_matrix_multiply = nb_imatmul, .nb_inplace_and = nb_iand,
    .nb_inplace_or = nb_ior, .nb_inplace_xor = nb_ixor, .nb_inplace_lshift = nb_ilshift,
    .nb_inplace_rshift = nb_irshift,
    .nb_negative = nb_neg, .nb_positive = nb_pos, .nb_absolute = nb_abs, .nb_invert = nb_invert,
};

static PyTypeObject ArrayType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hxarray._speedups.ArrayBase",
    .tp_basicsize = sizeof(ArrayObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The Array's fields and operator slots (compiled); arrays are made by _make and "
              "_view only.",
    .tp_dealloc = (destructor)array_dealloc,
    .tp_weaklistoffset = offsetof(ArrayObject, weakreflist),
    .tp_members = array_members,
    .tp_getset = array_getset,
    .tp_methods = array_methods,
    .tp_as_number = &array_as_number,
    .tp_richcompare = array_richcompare,
};

/* -- configuration functions ----------------------------------------------------------------- */
static PyObject *
lookup_operation(PyObject *ops, const char *name)
{
    PyObject *op = PyDict_GetItemString(ops, name);
    if (op != NULL && !Py_IS_TYPE(op, &OperationType)) {
        PyErr_Format(PyExc_TypeError, "operations[%s] is not an Operation", name);
        return NULL;
    }
    return Py_XNewRef(op);
}

static PyObject *
configure(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"array_type", "general", "operations", "operators", "bool_dtype",
                            "int64_dtype", "floating_dtypes", "binary_op_opcode", "observe",
                            NULL};
    PyObject *atype, *general, *ops, *methods, *dbool, *dint64, *floating, *observe;
    int opcode;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!OO!O!OOO!iO:configure", names,
                                     &PyType_Type, &atype, &general, &PyDict_Type, &ops,
                                     &PyDict_Type, &methods, &dbool, &dint64, &PyFrozenSet_Type,
                                     &floating, &opcode, &observe))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)atype, &ArrayType)) {
        PyErr_SetString(PyExc_TypeError, "array_type must derive from ArrayBase");
        return NULL;
    }
    for (int k = 0; k < N_BINARY; k++) {
        Operation *op = (Operation *)lookup_operation(ops, binary_names[k][0]);
        if (op == NULL && PyErr_Occurred())
            return NULL;
        Py_XSETREF(binary_ops[k], op);
        for (int j = 0; j < 3; j++) {
            PyObject *method = binary_names[k][j + 1] == NULL ? NULL :
                PyDict_GetItemString(methods, binary_names[k][j + 1]);
            Py_XSETREF(binary_methods[k][j], Py_XNewRef(method));
        }
    }
    for (int k = 0; k < N_UNARY; k++) {
        Operation *op = (Operation *)lookup_operation(ops, unary_names[k][0]);
        if (op == NULL && PyErr_Occurred())
            return NULL;
        Py_XSETREF(unary_ops[k], op);
        Py_XSETREF(unary_methods[k], Py_XNewRef(PyDict_GetItemString(methods, unary_names[k][1])));
    }
    Py_XSETREF(array_type, (PyTypeObject *)Py_NewRef(atype));
    Py_XSETREF(py_binary, Py_NewRef(general));
    Py_XSETREF(dtype_bool, Py_NewRef(dbool));
    Py_XSETREF(dtype_type, Py_NewRef((PyObject *)Py_TYPE(dbool)));
    Py_XSETREF(dtype_int64, Py_NewRef(dint64));
    Py_XSETREF(floating_dtypes, Py_NewRef(floating));
    binary_op_opcode = opcode;
    Py_XSETREF(observe_operation, Py_NewRef(observe));
    Py_RETURN_NONE;
}

static PyObject *
bind_hooks(PyObject *module, PyObject *list)
{
    if (!PyList_Check(list)) {
        PyErr_SetString(PyExc_TypeError, "bind_hooks() takes the list of installed hooks");
        return NULL;
    }
    Py_XSETREF(observers, Py_NewRef(list));
    Py_RETURN_NONE;
}

static PyObject *
bind_cpu(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"device", "allocator", "make_view", "kernels", "compute_bound",
                            "thresholds", "errstate_var", "errstate_quiet", "scopes",
                            "no_scopes", NULL};
    PyObject *device, *allocator, *view, *kernels, *compute_bound, *var, *quiet, *scopes,
        *none_open;
    Py_ssize_t limits[2];
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!OO!O(nn)OOOO:bind_cpu", names,
                                     &device, &CacheType, &allocator, &view, &PyDict_Type,
                                     &kernels, &compute_bound, &limits[0], &limits[1], &var,
                                     &quiet, &scopes, &none_open))
        return NULL;
    if (!PyContextVar_CheckExact(var) || !PyContextVar_CheckExact(scopes)) {
        PyErr_SetString(PyExc_TypeError, "errstate_var and scopes must be ContextVars");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(operations); i++) {
        Operation *op = (Operation *)PyList_GET_ITEM(operations, i);
        PyObject *kernel = PyDict_GetItemWithError(kernels, op->name);
        if (kernel == NULL && PyErr_Occurred())
            return NULL;
        int heavy = PySequence_Contains(compute_bound, op->name);
        if (heavy < 0)
            return NULL;
        Py_XSETREF(op->kernel, Py_XNewRef(kernel));
        op->compute_bound = heavy;
    }
    Py_XSETREF(cpu_device, Py_NewRef(device));
    Py_XSETREF(cpu_allocator, Py_NewRef(allocator));
    Py_XSETREF(make_view, Py_NewRef(view));
    compute_bound_limit = limits[0];
    memory_bound_limit = limits[1];
    Py_XSETREF(errstate_var, Py_NewRef(var));
    Py_XSETREF(errstate_quiet, Py_NewRef(quiet));
    Py_XSETREF(scopes_var, Py_NewRef(scopes));
    Py_XSETREF(no_scopes, Py_NewRef(none_open));
    Py_RETURN_NONE;
}

/* fresh_cpu_array(shape, dtype[, device, clear]): CpuBackend.empty, compiled (the allocation
 * every CPU primitive makes for its result, and `empty`/`zeros` in their common case, which pass
 * the device they were asked for and whether to clear the memory); None where the Python code
 * must run: before bind_cpu, inside a memory scope, on another device, or for a shape that is not
 * a tuple of at most MAX_DIMS ints within the byte limit. Why C: the allocation in front of every
 * CPU result reads the block's address and the buffer's fields, which compiled Python reaches
 * only through attribute calls. */
static PyObject *
fresh_cpu_array(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 && nargs != 4) {
        PyErr_SetString(PyExc_TypeError,
                        "fresh_cpu_array(shape, dtype[, device, clear]) takes 2 or 4 arguments");
        return NULL;
    }
    if (cpu_allocator == NULL || (nargs == 4 && args[2] != cpu_device))
        Py_RETURN_NONE;
    int scoped = in_scope();
    if (scoped != 0)
        return scoped < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *item = PyObject_GetAttr(args[1], str_itemsize);
    if (item == NULL)
        return NULL;
    Py_ssize_t size, itemsize = PyLong_AsSsize_t(item);
    Py_DECREF(item);
    if (itemsize <= 0)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    PyObject *shape = PyTuple_CheckExact(args[0]) ? plain_shape(args[0], itemsize, &size) : NULL;
    if (shape == NULL)
        Py_RETURN_NONE;
    PyObject *out = new_array(args[1], itemsize, shape, size);
    Py_DECREF(shape);
    if (out == NULL || nargs == 2 || args[3] != Py_True)
        return out;
    PyObject *block = ((BufferObject *)((ArrayObject *)out)->buffer)->block;
    void *start = PyLong_AsVoidPtr(((BlockObject *)block)->_address);
    if (start == NULL && PyErr_Occurred()) {
        Py_DECREF(out);
        return NULL;
    }
    size_t nbytes = (size_t)(size * itemsize);
    if (nbytes < ((size_t)1 << 20)) {  /* handing the GIL over costs more than this memset */
        memset(start, 0, nbytes);
    }
    else {
        Py_BEGIN_ALLOW_THREADS
        memset(start, 0, nbytes);
        Py_END_ALLOW_THREADS
    }
    return out;
}

static PyMethodDef module_methods[] = {
    {"configure", (PyCFunction)(void (*)(void))configure, METH_VARARGS | METH_KEYWORDS,
     "Register the Array class, the general element-wise path, the "
     "operations behind the slots by operator stem ('add', 'truediv', 'neg', ...) and the "
     "Python operators."},
    {"bind_hooks", bind_hooks, METH_O,
     "The hook registry (hal/hooks.py): the list of installed hooks, which sends every call to "
     "the general path while not empty."},
    {"bind_cpu", (PyCFunction)(void (*)(void))bind_cpu, METH_VARARGS | METH_KEYWORDS,
     "Enable the CPU fast path: the device, its caching allocator, the element-wise kernels by "
     "name and the thread thresholds (compute-bound, memory-bound: sizes from which the "
     "general path runs)."},
    {"fresh_cpu_array", (PyCFunction)(void (*)(void))fresh_cpu_array, METH_FASTCALL,
     "CpuBackend.empty's common case: a fresh C-contiguous CPU array from the caching "
     "allocator (on `device`, cleared if `clear` is True), or None where Python must run."},
    {NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "hxarray._speedups",
    "Compiled twins of hxarray's hot core types, and the CPU fast path.", -1, module_methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    /* the block, buffer and caching allocator types, compiled from the HAL's Python source */
    if (import_hxarray__hal__allocator() < 0)
        return NULL;
    if (PyType_Ready(&ArrayType) < 0 || PyType_Ready(&OperationType) < 0)
        return NULL;
    str_cache = PyUnicode_InternFromString("cache");
    str_free = PyUnicode_InternFromString("free");
    str_itemsize = PyUnicode_InternFromString("itemsize");
    kw_out = Py_BuildValue("(s)", "out");
    empty_tuple = PyTuple_New(0);
    zero = PyLong_FromLong(0);
    operations = PyList_New(0);
    if (!str_cache || !str_free || !str_itemsize || !kw_out ||
            !empty_tuple || !zero || !operations)
        return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL)
        return NULL;
    if (PyModule_AddObjectRef(module, "ArrayBase", (PyObject *)&ArrayType) < 0 ||
            PyModule_AddObjectRef(module, "Operation", (PyObject *)&OperationType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
