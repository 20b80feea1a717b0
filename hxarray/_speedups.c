/* hxarray._speedups: the Array's compiled base type, with its operator slots.
 *
 * ArrayBase holds the Array's fields (their layout and constructor: _speedups.h) and its
 * operator slots; hxarray/_array.py's `_ArrayBase` is its pure-Python twin (hxarray/_compiled.py
 * picks one), and its `Array._make` and `Array._view`, compiled, check the fields and make the
 * arrays. The block and buffer types it reads are compiled by Cython from the HAL's own Python
 * source (hal/allocator.pxd), whose generated header gives their C layout.
 *
 * A slot hands its operands to the CPU backend's compiled executor, compiled Python
 * (hxarray/backends/cpu/fastpath.py, whose generated header gives its functions), and calls the
 * Python operator where that declines.
 * What stays in C is what no generated code can express: the type's layout and slots; temporary
 * elision, numpy's way: in `a * b + c`, the product is referenced by nothing but the
 * interpreter's stack, so the sum may be written into it instead of a new buffer (the checks
 * that make this safe are at `temporary`; docs/reliability.md), which needs the C stack; and the
 * vectorcall entry of the fast path's element-wise functions (`operation_vectorcall`).
 *
 * Everything relies on the GIL: a method that calls no Python code runs atomically.
 */
#define PY_SSIZE_T_CLEAN
#define _GNU_SOURCE  /* dladdr1, dl_iterate_phdr */
#include <string.h>
#include <Python.h>
#include <structmember.h>
#include "allocator_api.h"  /* MemoryBuffer (hal/allocator.pxd) */
#include "fastpath_api.h"  /* Operation and the operators' fast path (backends/cpu/fastpath.pxd) */
#include "_speedups.h"      /* ArrayObject */
typedef struct BufferObject BufferObject;

/* -- configuration, set from Python --------------------------------------------------------- */
static PyTypeObject *array_type;      /* hxarray.Array */

#define ELIDE_MIN_BYTES (256 * 1024)  /* below this a fresh cached buffer costs about as much */

/* -- ArrayBase ------------------------------------------------------------------------------- */
/* The fields are set once, by Array's `_make` or `_view`, which check them: the fast path reads
 * them without checks, so Python code can read them but not replace or delete them (only
 * `_handle`, the backend's cached view or None, may be replaced, and deleting it stores None;
 * the fast path hands it to numpy, which checks it). */

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

static PyObject *array_get_handle(ArrayObject *self, void *closure)
    { return Py_NewRef(self->handle); }

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
    {"eq", "__eq__", NULL, NULL}, {"ne", "__ne__", NULL, NULL}, {"lt", "__lt__", NULL, NULL},
    {"le", "__le__", NULL, NULL}, {"gt", "__gt__", NULL, NULL}, {"ge", "__ge__", NULL, NULL},
};
static const char *unary_names[N_UNARY][2] = {
    {"neg", "__neg__"}, {"pos", "__pos__"}, {"abs", "__abs__"}, {"invert", "__invert__"},
};

static PyObject *binary_ops[N_BINARY];         /* their Operations (fastpath.py), or NULL */
static PyObject *binary_methods[N_BINARY][3];  /* the Python operators: forward, reflected, in-place */
static PyObject *unary_ops[N_UNARY];
static PyObject *unary_methods[N_UNARY];

/* Temporary elision, numpy's way (numpy/_core/src/multiarray/temp_elide.c): an operand may be
 * overwritten only if nothing but the interpreter's evaluation stack holds it. Two checks:
 *   - reference count one (3.14 on: PyUnstable_Object_IsUniqueReferencedTemporary, which also
 *     finds it on the frame's stack);
 *   - the return addresses between this slot and the interpreter's eval loop are exactly those of
 *     the loop's call for an operator (BINARY_OP, COMPARE_OP), as `calibrate` recorded them at
 *     import by running every operator on a probe object: the operands are then the stack's own.
 *     Any other caller (numpy's object-dtype loops calling PyNumber_Add, Cython code, or the
 *     runtime itself: a functools.partial, operator.add or a bound method-wrapper used as another
 *     class's __add__) may hold a borrowed reference: count one, but not a temporary.
 * Where the C stack cannot be read (no backtrace(), no dl_iterate_phdr()), nothing is elided. */
#if PY_VERSION_HEX >= 0x030E0000
#define ON_INTERPRETER_STACK(x) PyUnstable_Object_IsUniqueReferencedTemporary(x)
#else
#define ON_INTERPRETER_STACK(x) (Py_REFCNT(x) == 1)
#endif

#ifdef __GLIBC__
#define HAVE_ELISION 1
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>

#define CALLER_FRAMES 16  /* the interpreter is a handful of frames away; deeper is refused */
#define CHAIN 4           /* return addresses from this module's frames to the eval loop's */
#define CHAINS 64         /* the operators' calls (forward and reflected), as `calibrate` saw */

typedef struct { uintptr_t start, end; } Span;
static Span own_text, eval_loop;  /* code of this module, of the eval loop */
static uintptr_t chains[CHAINS][CHAIN];
static int chain_count;

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

#define IN(span, pc) ((pc) >= (span).start && (pc) < (span).end)

/* The return addresses from the first frame outside this module to the eval loop's, in
 * `chain` (zero-filled); 0 where the loop is not within reach. */
static int
caller_chain(uintptr_t chain[CHAIN])
{
    void *frames[CALLER_FRAMES];
    int count = backtrace(frames, CALLER_FRAMES), own = 0, n = 0;
    memset(chain, 0, CHAIN * sizeof(uintptr_t));
    for (int i = 0; i < count && n < CHAIN; i++) {
        uintptr_t pc = (uintptr_t)frames[i];
        if (n == 0 && IN(own_text, pc))
            own = 1;
        else if (own) {  /* (before this module's frames: backtrace() itself) */
            chain[n++] = pc;
            if (IN(eval_loop, pc))
                return 1;
        }
    }
    return 0;
}

/* Whether `chain` is among the first `count` calibrated ones. */
static int
known(const uintptr_t chain[CHAIN], int count)
{
    for (int i = 0; i < count; i++)
        if (memcmp(chains[i], chain, CHAIN * sizeof(uintptr_t)) == 0)
            return 1;
    return 0;
}

/* Whether this slot was called by the eval loop for an operator, as a calibrated call is. */
static int
called_by_interpreter(void)
{
    uintptr_t chain[CHAIN];
    return chain_count > 0 && caller_chain(chain) && known(chain, chain_count);
}

/* The probe's slots: each records the chain of the operator's call that reached it, once. */
static PyObject *
probe(PyObject *a, PyObject *b)
{
    chain_count += chain_count < CHAINS && caller_chain(chains[chain_count]) &&
                   !known(chains[chain_count], chain_count);
    Py_RETURN_NONE;
}
static PyObject *probe_power(PyObject *a, PyObject *b, PyObject *c) { return probe(a, b); }
static PyObject *probe_compare(PyObject *a, PyObject *b, int op) { return probe(a, b); }

static PyNumberMethods probe_as_number = {
    .nb_add = probe, .nb_subtract = probe, .nb_multiply = probe, .nb_remainder = probe,
    .nb_power = probe_power, .nb_lshift = probe, .nb_rshift = probe, .nb_and = probe,
    .nb_xor = probe, .nb_or = probe, .nb_floor_divide = probe, .nb_true_divide = probe,
    .nb_matrix_multiply = probe,
};
static PyTypeObject ProbeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hxarray._speedups.Probe", .tp_basicsize = sizeof(PyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT, .tp_as_number = &probe_as_number,
    .tp_richcompare = probe_compare,
};

/* Record the chains of every operator's call, with the array on either side, against an array or
 * another type (the interpreter may call the slot from a different place for each); 0 or -1. */
static int
calibrate(void)
{
    own_text.start = (uintptr_t)&calibrate;
    void *eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    Dl_info info;
    const ElfW(Sym) *symbol = NULL;
    if (eval == NULL || !dladdr1(eval, &info, (void **)&symbol, RTLD_DL_SYMENT) ||
            symbol == NULL || symbol->st_size == 0 || !dl_iterate_phdr(find_text, &own_text))
        return 0;  /* nothing recorded: nothing elided */
    eval_loop.start = (uintptr_t)eval;
    eval_loop.end = eval_loop.start + symbol->st_size;
    PyObject *globals = PyType_Ready(&ProbeType) < 0 ? NULL : Py_BuildValue(
        "{sNsO}", "probe", PyType_GenericAlloc(&ProbeType, 0), "__builtins__", PyEval_GetBuiltins());
    PyObject *done = globals == NULL ? NULL : PyRun_String(
        "for p, q in ((probe, probe), (1, probe), (probe, 1)):\n"
        "    p + q; p - q; p * q; p / q; p // q; p % q; p ** q; p @ q; p & q; p | q; p ^ q\n"
        "    p << q; p >> q; p == q; p != q; p < q; p <= q; p > q; p >= q\n",
        Py_file_input, globals, globals);
    Py_XDECREF(globals);
    Py_XDECREF(done);
    return done == NULL ? -1 : 0;
}
#endif

/* An operand that nothing but the interpreter's stack holds, whose memory the fast path may write
 * the result into (it checks the dtype and the layout): an array with a buffer of its own of at
 * least ELIDE_MIN_BYTES, writable. NULL if none. */
static PyObject *
temporary(PyObject *a, PyObject *b)
{
#ifdef HAVE_ELISION
    PyObject *operands[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        ArrayObject *x = (ArrayObject *)operands[i];
        if (!Py_IS_TYPE(x, array_type) || x->readonly || Py_REFCNT(x->buffer) != 1 ||
                !PyObject_TypeCheck(x->buffer, &BufferType))
            continue;
        Py_ssize_t nbytes = PyLong_AsSsize_t(((BufferObject *)x->buffer)->nbytes);
        if (nbytes < ELIDE_MIN_BYTES) {
            if (nbytes == -1)  /* (an error, which the buffer's check of nbytes rules out) */
                PyErr_Clear();
            continue;
        }
        if (ON_INTERPRETER_STACK((PyObject *)x) && called_by_interpreter())
            return (PyObject *)x;
    }
#endif
    return NULL;
}

static PyObject *
binary_slot(int k, PyObject *a, PyObject *b)
{
    if (binary_ops[k] != NULL) {
        PyObject *out = temporary(a, b);
        PyObject *result = binary_operator((struct OperationObject *)binary_ops[k], a, b,
                                           out != NULL ? out : Py_None);
        if (result != Py_None)  /* the result, or NULL with an error */
            return result;
        Py_DECREF(result);
    }
    int forward = PyObject_TypeCheck(a, &ArrayType);
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
    if (binary_ops[k] != NULL) {
        PyObject *result = inplace_operator((struct OperationObject *)binary_ops[k], a, b);
        if (result != Py_None)
            return result;
        Py_DECREF(result);
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
        PyObject *result = unary_operator((struct OperationObject *)unary_ops[k], a);
        if (result != Py_None)
            return result;
        Py_DECREF(result);
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

/* pow() with a modulo: not an array operation */
static PyObject *nb_pow(PyObject *a, PyObject *b, PyObject *modulo)
    { return modulo != Py_None ? Py_NewRef(Py_NotImplemented) : binary_slot(POW, a, b); }
static PyObject *nb_ipow(PyObject *a, PyObject *b, PyObject *modulo)
    { return modulo != Py_None ? Py_NewRef(Py_NotImplemented) : inplace_slot(POW, a, b); }

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
    .tp_doc = "The Array's fields and operator slots (compiled); arrays are made by Array._make "
              "and Array._view only.",
    .tp_dealloc = (destructor)array_dealloc,
    .tp_weaklistoffset = offsetof(ArrayObject, weakreflist),
    .tp_members = array_members,
    .tp_getset = array_getset,
    .tp_as_number = &array_as_number,
    .tp_richcompare = array_richcompare,
};

/* -- the element-wise functions' calls ----------------------------------------------------- */
/* The vectorcall of hxarray.backends.cpu.fastpath.Operation (the element-wise functions): one to three
 * positional arguments go to its compiled call (`call_operation`) as they are, any other call to
 * its `__call__`. In C because Cython gives a class's instances no vectorcall, and through
 * tp_call every call would pay for an argument tuple and a keyword dict. */
static PyObject *
operation_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames == NULL && nargs >= 1 && nargs <= 3)
        return call_operation((struct OperationObject *)op, args[0],
                              nargs > 1 ? args[1] : Py_None, nargs > 2 ? args[2] : Py_None, nargs);
    PyObject *tuple = PyTuple_New(nargs);
    PyObject *kwargs = tuple == NULL || kwnames == NULL ? NULL : PyDict_New();
    if (tuple == NULL || (kwnames != NULL && kwargs == NULL)) {
        Py_XDECREF(tuple);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nargs; i++)
        PyTuple_SET_ITEM(tuple, i, Py_NewRef(args[i]));
    for (Py_ssize_t i = 0; kwnames != NULL && i < PyTuple_GET_SIZE(kwnames); i++) {
        if (PyDict_SetItem(kwargs, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0) {
            Py_DECREF(tuple);
            Py_DECREF(kwargs);
            return NULL;
        }
    }
    PyObject *result = Py_TYPE(op)->tp_call(op, tuple, kwargs);
    Py_DECREF(tuple);
    Py_XDECREF(kwargs);
    return result;
}

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
    static char *names[] = {"array_type", "functions", "operations", "operators", NULL};
    PyObject *atype, *functions, *ops, *methods;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O!O!O!:configure", names, &PyType_Type,
                                     &atype, &PyList_Type, &functions, &PyDict_Type, &ops,
                                     &PyDict_Type, &methods))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)atype, &ArrayType)) {
        PyErr_SetString(PyExc_TypeError, "array_type must derive from ArrayBase");
        return NULL;
    }
    /* the fast path, imported here: its module imports this one for the array's type */
    if (import_hxarray__backends__cpu__fastpath() < 0)
        return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(functions); i++) {
        PyObject *op = PyList_GET_ITEM(functions, i);
        if (!Py_IS_TYPE(op, &OperationType)) {
            PyErr_SetString(PyExc_TypeError, "functions must be Operations");
            return NULL;
        }
        ((struct OperationObject *)op)->_vectorcall = (void *)operation_vectorcall;
    }
    if (!(OperationType.tp_flags & Py_TPFLAGS_HAVE_VECTORCALL)) {  /* (an instance without it: tp_call) */
        OperationType.tp_vectorcall_offset = offsetof(struct OperationObject, _vectorcall);
        OperationType.tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL;
        PyType_Modified(&OperationType);
    }
    for (int k = 0; k < N_BINARY; k++) {
        PyObject *op = lookup_operation(ops, binary_names[k][0]);
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
        PyObject *op = lookup_operation(ops, unary_names[k][0]);
        if (op == NULL && PyErr_Occurred())
            return NULL;
        Py_XSETREF(unary_ops[k], op);
        Py_XSETREF(unary_methods[k], Py_XNewRef(PyDict_GetItemString(methods, unary_names[k][1])));
    }
    Py_XSETREF(array_type, (PyTypeObject *)Py_NewRef(atype));
#ifdef HAVE_ELISION
    if (chain_count == 0 && calibrate() < 0)
        return NULL;
#endif
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"configure", (PyCFunction)(void (*)(void))configure, METH_VARARGS | METH_KEYWORDS,
     "Register the Array class, the Operations (hxarray.backends.cpu.fastpath: every one, "
     "to give it the vectorcall, and those behind the slots by operator stem: 'add', "
     "'truediv', 'neg', ...) and the Python operators."},
    {NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "hxarray._speedups",
    "The Array's compiled base type, with its operator slots.", -1, module_methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    /* the buffer type, compiled from the HAL's Python source */
    if (import_hxarray__hal__allocator() < 0)
        return NULL;
    if (PyType_Ready(&ArrayType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL)
        return NULL;
    if (PyModule_AddObjectRef(module, "ArrayBase", (PyObject *)&ArrayType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
