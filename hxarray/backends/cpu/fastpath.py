"""The CPU backend's compiled executor: the element-wise functions and operators (`Operation`),
the reductions (`Reduction`), fresh arrays (`fresh`), copies (`copied`) and small aranges
(`arange`), compiled by Cython from this source (setup.py's `COMPILED`; `fastpath.pxd` gives the
C types and the C helpers of `_speedups.h`) where the speedups are built, and not imported
without them (`backend.fastpath` is then None). The namespace puts an Operation or a Reduction in
front of each hot function (`hxarray._observed.fast`), with the plans it resolved for the dtypes
the executor may take; the array's operator slots (`_speedups.c`) call `binary_operator`,
`inplace_operator` and `unary_operator`.

Each runs the common call (CPU arrays below the threading threshold, outside hooks and memory
scopes) on the CPU backend's kernel into a fresh array from the caching allocator, as the
backend would, and decides no rule of its own: result dtypes come from the namespace's plans, the
scalar rule from `_dtypes`, layouts from `_layout`, thresholds and kernels from the backend
(`bind_cpu`). Any other call goes to the namespace function (`.fallback`), which is the
reference and raises the errors.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any

import numpy as np

from ... import _dtypes as dt
from ..._array import Array
from ..._numpy_kernels import quiet, quiet_context
from ...hal.allocator import Block, MemoryBuffer
from ...hal.device import _env_default, _scoped_device
from ...hal.hooks import observers
from ...hal.scope import NO_SCOPES, scoped_pools
from ...hal.sources import compiled

__all__ = ["Loop", "Operation", "Reduction", "arange", "bind_cpu", "binary_operator",
           "call_operation", "copied", "fresh", "inplace_operator", "operations",
           "unary_operator"]

# every Operation and Reduction, to bind the kernels to
_OPERATIONS: list[Operation] = []
_REDUCTIONS: list[Reduction] = []

# The arrays it serves (exactly this type); the dtypes of the scalar conversions and of `arange`:
_array_type: Any = Array
_bool, _int64, _float32, _float64 = dt.bool, dt.int64, dt.float32, dt.float64

# What `bind_cpu` binds: the CPU's device, its caching allocator, the numpy view of a block
# (`make_view(block, dtype, shape)`) and of any CPU array (`numpy_view(array)`, which caches it
# as the array's `_handle`), the backend's general element-wise executor (a large result
# written into a temporary), the sizes from which the general path runs: reductions (threaded),
# aranges. (Each Operation holds its own: `Operation._limit`.)
_cpu_device: Any = None
_allocator: Any = None
_make_view: Any = None
_numpy_view: Any = None
_elementwise: Any = None
_reduction_limit = 0
_arange_limit = 0

# C functions where compiled (fastpath.pxd), which is the only way this module runs
# (`_compiled`): the caching allocator's allocation (hal/allocator.py); from _speedups.h, the
# array's constructor for checked fields; from the C API, a context variable's value (without the
# method call of `ContextVar.get`, which every fast-path call would pay), memset, memcpy, the
# GIL's hand-over, and an address as a pointer to int64, float64 or
# float32 elements; numpy's documented capsule of a ufunc's loop (`Loop`), addresses and pointers as
# the loop takes them, and whether an exception is set.
_cached_malloc: Callable[[Any, int], Any]
new_array_object: Callable[..., Any]
get_value: Callable[[contextvars.ContextVar[Any]], Any]
memset: Callable[[Any, int, int], Any]
memcpy: Callable[[Any, Any, int], Any]
int64_at: Callable[[int], Any]
float64_at: Callable[[int], Any]
float32_at: Callable[[int], Any]
PyEval_SaveThread: Callable[[], Any]
PyEval_RestoreThread: Callable[[Any], None]
call_info_of: Callable[[Any, bytes], Any]
address_bytes: Callable[[int], Any]
pointer_bytes: Callable[[Any], Any]
as_int64: Callable[[Any], Any]
as_float32: Callable[[Any], Any]
as_bool: Callable[[Any], Any]
PyErr_Occurred: Callable[[], Any]
# from _modes (_modes.pxd), a C function: whether sums start from +0 here
positive_zero_sums: Callable[[], bool]
# from _layout (_layout.pxd), C functions: whether a layout is C-contiguous, C-order strides,
# the broadcast of two shapes
c_contiguous: Callable[[tuple[int, ...], tuple[int, ...], int], bool]
c_strides: Callable[[tuple[int, ...], int], tuple[int, ...]]
broadcast_pair: Callable[[tuple[int, ...], tuple[int, ...]], tuple[int, ...] | None]
# `_looped`'s C arrays (its locals where compiled): the operands' and the output's addresses, their
# strides, the length, and Python scalars converted to the operands' dtype
pointers: Any
strides: Any
length: Any
scalars: Any


class Operation:
    """An element-wise namespace function (or `where`) with the CPU fast path in front of its
    general path `fallback`: a call with exactly `arity` positional arguments that the fast path
    takes (CPU arrays of one dtype whose shapes broadcast together, with plain Python scalars
    that need none of the general path's checks) runs the CPU backend's `kernel`; other calls of
    that arity go to `fallback`, any other call to `reference`, the function with the standard's
    signature (so it fails as that signature says). With `condition`, the first operand is a
    boolean array that broadcasts with the others (`where`). `plans` maps each operand dtype
    the fast path takes to the namespace's resolved plan for it, `(operation, signature)`
    (`_ops.Op`, `_ops.Signature`: the result's dtype is the signature's); while a hook is
    installed every call goes to `observe(name, reference, *args, **kwargs)`, the operation
    point."""

    def __init__(self, name: str, plans: dict[Any, tuple[Any, Any]], fallback: Callable[..., Any],
                 observe: Callable[..., Any], *, arity: int, condition: bool = False,
                 reference: Callable[..., Any] | None = None) -> None:
        if not 1 + condition <= arity <= 2 + condition:
            raise ValueError(f"arity must be 1 or 2 (plus the condition), got {arity}")
        self.name = name
        # per operand dtype: the result's dtype and itemsize, numpy's Loop (`bind_cpu`), the plan
        self.results: dict[Any, tuple[Any, int, Loop | None, tuple[Any, Any]]] = {
            operand: (plan[1].result, plan[1].result.itemsize, None, plan)
            for operand, plan in plans.items()}
        self.fallback = fallback
        self.reference = fallback if reference is None else reference
        self._observe = observe
        self.kernel: Any = None  # bound by `bind_cpu` where the CPU backend's kernel serves
        self._arity = arity
        self._condition = condition
        self._limit = 0  # the elements from which the general path runs (threaded): `bind_cpu`
        _OPERATIONS.append(self)

    def __repr__(self) -> str:
        return f"<hxarray function {self.name}>"

    def __get__(self, instance: Any, owner: Any) -> Any:
        """Itself, as a class's attribute too (never bound): a descriptor, so that `help()` and
        `inspect` take it for a routine and show its signature and docstring."""
        return self

    def __reduce__(self) -> str:
        """Pickled by reference, as a function is: its module's attribute of its name."""
        return str(getattr(self, "__qualname__", self.name))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        count = len(args)
        if kwargs or not 1 <= count <= 3:
            if observers:
                return self._observe(self.name, self.reference, *args, **kwargs)
            return self.reference(*args, **kwargs)
        return call_operation(self, args[0], args[1] if count > 1 else None,
                              args[2] if count > 2 else None, count)


def call_operation(op: Operation, x0: Any, x1: Any, x2: Any, count: int) -> Any:
    """`op` called with `count` positional arguments (1 to 3, x0 first; the rest None): its
    `__call__`, and its vectorcall (_speedups.c), which takes them without an argument tuple."""
    if not observers and count == op._arity:
        result = _fast(op, x0, x1, x2, count, None, None)
        if result is not None:
            return result
        if count == 1:
            return op.fallback(x0)
        return op.fallback(x0, x1) if count == 2 else op.fallback(x0, x1, x2)
    args = (x0,) if count == 1 else (x0, x1) if count == 2 else (x0, x1, x2)
    if observers:  # hooks observe the general path
        return op._observe(op.name, op.reference, *args)
    return op.reference(*args)


def binary_operator(op: Operation, a: Any, b: Any, temporary: Any) -> Any:
    """`a <op> b` for the array's operator slot: the fast path's result, written into
    `temporary` where it may take it (an operand that nothing but the interpreter's stack holds,
    which the slot found), or None where the Python operator must run."""
    return _fast(op, a, b, None, 2, None, temporary)


def inplace_operator(op: Operation, a: Any, b: Any) -> Any:
    """`a <op>= b` for the array's operator slot: `a`, computed into by the fast path, or None
    where the Python operator must run."""
    if type(a) is not _array_type:
        return None
    array = a  # (compiled: a's C fields, fastpath.pxd)
    if array._readonly:
        return None
    return _fast(op, a, b, None, 2, a, None)


def unary_operator(op: Operation, a: Any) -> Any:
    """`<op>a` for the array's operator slot: the fast path's result, or None."""
    return _fast(op, a, None, None, 1, None, None)


def _fast(op: Operation, x0: Any, x1: Any, x2: Any, count: int, out: Any, temporary: Any) -> Any:
    """`op` of the `count` operands x0, x1, x2 by the fast path (into `out`, an in-place
    operator's left operand, if given), or None where the general path must run. A result too
    large for one thread goes into `temporary`, if it takes it, through the general path."""
    if op.kernel is None or observers or get_value(scoped_pools) is not NO_SCOPES:  # noqa: F821
        return None
    # the array operands: CPU arrays of one dtype, the first's, of shapes that broadcast
    # (`_layout.broadcast_pair`) to `shape`; the others scalars
    start = 1 if op._condition else 0
    first = None
    shape: Any = None  # (a tuple once the first array is found)
    broadcast = False  # whether the arrays' shapes differ
    for i in range(start, count):
        x = x0 if i == 0 else x1 if i == 1 else x2
        if type(x) is _array_type:
            array = x  # (compiled: x's C fields, fastpath.pxd)
            if not _on_cpu(array):
                return None
            if first is None:
                first = array
                shape = array._shape
            elif array._dtype is not first._dtype:
                return None
            elif array._shape != shape:
                shape = broadcast_pair(shape, array._shape)  # noqa: F821
                if shape is None:
                    return None
                broadcast = True
        elif type(x) is not float and type(x) is not int and type(x) is not bool:
            return None
    if first is None:
        return None
    dtype = first._dtype
    for i in range(start, count):
        x = x0 if i == 0 else x1 if i == 1 else x2
        if type(x) is not _array_type and not _scalar_fits(x, dtype):
            return None
    if start:  # a boolean CPU array
        if type(x0) is not _array_type:
            return None
        condition = x0
        if not _on_cpu(condition) or condition._dtype is not _bool:
            return None
        if condition._shape != shape:
            shape = broadcast_pair(shape, condition._shape)  # noqa: F821
            if shape is None:
                return None
            broadcast = True
    entry = op.results.get(dtype)
    if entry is None:
        return None
    result, itemsize, loop, plan = entry
    size = 1
    for extent in shape:
        size *= extent
    if out is not None:
        target = out  # (compiled: out's C fields)
        if target._dtype is not result or target._shape != shape:
            return None
    if temporary is not None:  # (an operand: it takes the result only at the result's shape)
        array = temporary
        if array._shape != shape or not _takes(temporary, result, itemsize):
            temporary = None
    if size >= op._limit:
        if temporary is not None:  # the backend threads it
            return _elementwise(plan[0], (x0, x1), plan[1], shape, temporary)
        return None
    if out is None:
        out = temporary if temporary is not None else _new_array(result, itemsize, shape, size)
    if loop is not None and not broadcast:  # (numpy's loop runs over operands of one shape)
        ran = _looped(loop, count, x0, x1, x2, out, size)
        if ran:
            return out
    target = out
    kernel, h0, h1, h2, handle = op.kernel, _native(x0), _native(x1), _native(x2), target._handle
    global _quiet_entered
    if _quiet_entered:  # (see _quiet_context)
        with quiet():
            _launch(kernel, count, h0, h1, h2, handle)
        return out
    _quiet_entered = True
    try:
        if count == 1:
            _run_quietly(kernel, h0, out=handle)
        elif count == 2:
            _run_quietly(kernel, h0, h1, out=handle)
        else:
            _run_quietly(kernel, h0, h1, h2, out=handle)
    finally:
        _quiet_entered = False
    return out


class Loop:
    """numpy's loop for one signature of a ufunc (`ufunc` of `arity` operands of `operand` into
    `result`, hxarray dtypes), which the fast path calls directly (`_looped`): the ufunc's own
    call (its arguments, the dispatch, the error state) costs several times the loop itself on
    small arrays. The loop is the one numpy runs for those dtypes, from its
    documented low-level access (`ufunc._resolve_dtypes_and_context`, `ufunc._get_strided_loop`:
    the capsule's function, context and data, which the capsule keeps alive); making a Loop
    raises LookupError where numpy would resolve other dtypes (a cast) or the loop needs Python
    objects, and AttributeError or ValueError where this numpy offers no such access."""

    def __init__(self, ufunc: np.ufunc, operand: Any, result: Any, arity: int) -> None:
        dtypes = (operand.numpy,) * arity
        resolved, capsule = \
            ufunc._resolve_dtypes_and_context((*dtypes, None))  # type: ignore[attr-defined]
        if resolved != (*dtypes, result.numpy):
            raise LookupError(f"{ufunc.__name__} resolves {dtypes} to {resolved}")
        ufunc._get_strided_loop(capsule)  # type: ignore[attr-defined]
        self._take(capsule)
        self.operand, self.operand_size, self.result_size = operand, operand.itemsize, \
            result.itemsize

    def _take(self, capsule: Any) -> None:
        """The loop's function, context and data from numpy's filled capsule."""
        info = call_info_of(capsule, b"numpy_1.24_ufunc_call_info")  # noqa: F821
        if info.requires_pyapi:
            raise LookupError("the loop needs Python objects")
        self.function = info.strided_loop
        self.context = info.context
        self.auxdata = info.auxdata
        self._capsule = capsule


def _loop(kernel: Any, arity: int, operand: Any, result: Any) -> Loop | None:
    """The Loop of the CPU kernel `kernel` for `arity` operands of `operand` into `result`
    (made once, kept in `_loops`), or None where the kernel is no ufunc of `arity` operands
    (the CPU's own kernels) or numpy offers no loop."""
    key = (kernel, arity, operand, result)
    found = _loops.get(key, _MISSING)
    if found is _MISSING:
        found = None
        if type(kernel) is np.ufunc and kernel.nin == arity and kernel.nout == 1:
            try:
                found = Loop(kernel, operand, result, arity)
            except (LookupError, TypeError, AttributeError, ValueError):  # (no loop: TypeError)
                pass
        _loops[key] = found
    return found


_loops: dict[Any, Any] = {}  # (kernel, arity, operand dtype, result dtype) -> Loop or None


def _looped(loop: Loop, count: int, x0: Any, x1: Any, x2: Any, out: Any, size: int) -> int:
    """1 where numpy's `loop` ran the `size` elements of the operands x0, x1, x2 (the first
    `count`) into the array `out`; 0, having written nothing, where `_pointed` refuses them; -1
    where the loop failed (compiled: numpy's exception is set, which the caller raises). The GIL
    is handed over from 500 elements, as numpy's own call does."""
    if not _pointed(loop, count, x0, x1, x2, out, size, pointers, strides,  # noqa: F821
                    scalars):  # noqa: F821
        return 0
    length[0] = size  # noqa: F821
    if size <= _HOLD_GIL_UP_TO:
        status = loop.function(loop.context, pointers, length, strides, loop.auxdata)  # noqa: F821
    else:
        state = PyEval_SaveThread()  # noqa: F821
        status = loop.function(loop.context, pointers, length, strides, loop.auxdata)  # noqa: F821
        PyEval_RestoreThread(state)  # noqa: F821
    if status < 0 or PyErr_Occurred():  # noqa: F821
        return -1
    return 1


def _pointed(loop: Loop, count: int, x0: Any, x1: Any, x2: Any, out: Any, size: int,
             pointers: Any, strides: Any, scalars: Any) -> bool:
    """Whether numpy's `loop` can run the `size` elements of the operands x0, x1, x2 (the first
    `count`) into the array `out`, with its data pointers and strides filled in `pointers` and
    `strides` (a Python scalar converted into its slot of `scalars`): not where an array is not
    aligned and C-contiguous in the CPU's memory, `out` overlaps an operand other than exactly,
    or a Python scalar is not one `_scalar_into` converts."""
    output = _data_address(out, loop.result_size)
    if output < 0:
        return False
    end = output + size * loop.result_size
    for i in range(count):
        x = x0 if i == 0 else x1 if i == 1 else x2
        if type(x) is _array_type:
            address = _data_address(x, loop.operand_size)
            if address < 0 or address != output and address < end and \
                    output < address + size * loop.operand_size or \
                    address == output and loop.operand_size != loop.result_size:
                return False
            pointers[i] = address_bytes(address)  # noqa: F821
            strides[i] = loop.operand_size
        else:
            if not _scalar_into(x, loop.operand, scalars + i):
                return False
            pointers[i] = pointer_bytes(scalars + i)  # noqa: F821
            strides[i] = 0
    pointers[count] = address_bytes(output)  # noqa: F821
    strides[count] = loop.result_size
    return True


_HOLD_GIL_UP_TO = 500  # elements (numpy's threshold)


class Step:
    """An element-wise call of a graph (`CpuBackend.prepare_all`) as numpy's loop on the
    addresses of its arrays, which it keeps alive: a replay calls the loop alone, as the fast
    path does (`_looped`), without the ufunc's argument handling. `step()` runs it."""

    # the loop's arguments: C arrays (fastpath.pxd), filled by `loop_step`
    pointers: Any
    strides: Any
    length: Any
    scalars: Any

    def __init__(self, loop: Loop, arrays: tuple[Any, ...]) -> None:
        self.loop = loop
        self.arrays = arrays  # (the operands and out: their memory stays valid)

    def __call__(self) -> None:
        self._run()

    def _run(self) -> None:
        loop = self.loop
        if self.length[0] <= _HOLD_GIL_UP_TO:  # noqa: F821
            status = loop.function(loop.context, self.pointers, self.length,  # noqa: F821
                                   self.strides, loop.auxdata)  # noqa: F821
        else:
            state = PyEval_SaveThread()  # noqa: F821
            status = loop.function(loop.context, self.pointers, self.length,  # noqa: F821
                                   self.strides, loop.auxdata)  # noqa: F821
            PyEval_RestoreThread(state)  # noqa: F821
        if status < 0 or PyErr_Occurred():  # noqa: F821
            raise RuntimeError("numpy's loop failed")  # (numpy's own exception, where set)


def loop_step(kernel: Any, signature: Any, args: tuple[Any, ...], out: Any) -> Step | None:
    """`kernel` (the CPU's element-wise kernel) of `args` into `out`, as the backend's
    `elementwise` computes it for `signature`, prepared as a `Step`; None where no loop serves:
    the kernel is no ufunc of the operands, the operands take a conversion, an array is not of
    out's shape, or `_pointed` refuses the operands."""
    arity = len(args)
    operand = signature.compute
    if arity > 3:
        return None
    for dtype in signature.operands:
        if dtype is not operand:  # (a conversion on load)
            return None
    found = _loop(kernel, arity, operand, signature.result)
    if found is None:
        return None
    target = out  # (compiled: out's C fields)
    for x in args:
        if type(x) is _array_type:
            array = x  # (compiled: x's C fields)
            if not _same_shape(array, target):
                return None
    size = 1
    for extent in target._shape:
        size *= extent
    step = Step(found, (*args, out))
    if not _pointed(found, arity, args[0], args[1] if arity > 1 else None,
                    args[2] if arity > 2 else None, out, size, step.pointers, step.strides,
                    step.scalars):
        return None
    step.length[0] = size
    return step


def replay(steps: list[Any], inputs: list[Any], assign: Any, arguments: Any) -> None:
    """A graph's replay: `arguments` copied into the graph's `inputs` (memcpy where an
    argument is C-contiguous in the CPU's memory, else `assign`), then its prepared calls run in
    order, a `Step` as its loop, any other as a call."""
    for i in range(len(inputs)):
        into, value = inputs[i], arguments[i]
        if not _copied_into(into, value):
            assign(into, value)
    for step in steps:
        if type(step) is Step:
            prepared = step  # (compiled: the Step's C fields)
            prepared._run()
        else:
            step()


def _copied_into(into: Any, value: Any) -> bool:
    """Whether the array `value` was copied into the C-contiguous CPU array `into` of its dtype
    and shape with memcpy: it is a C-contiguous CPU array too."""
    if type(value) is not _array_type:
        return False
    source = value  # (compiled: the arrays' C fields)
    target = into
    if not _in_cpu_memory(source) or source._dtype is not target._dtype or \
            not _same_shape(source, target):
        return False
    itemsize = source._dtype.itemsize
    if not c_contiguous(source._shape, source._strides, itemsize):  # noqa: F821
        return False
    size = 1
    for extent in source._shape:
        size *= extent
    if size:
        _move(address_bytes(_first_address(target)),  # noqa: F821
              address_bytes(_first_address(source)), size * itemsize)  # noqa: F821
    return True


_MISSING: Any = object()


def _data_address(x: Any, itemsize: int) -> int:
    """The address of the first element of the CPU array `x`, or -1 where its elements of
    `itemsize` bytes are not C-contiguous or not aligned to their size."""
    if not c_contiguous(x._shape, x._strides, itemsize):  # noqa: F821
        return -1
    address = _first_address(x)
    return -1 if address % itemsize else address


def _first_address(x: Any) -> int:
    """The address of the first element of the CPU array `x`."""
    array = x  # (compiled: x's C fields, its buffer and its block)
    buffer = array._buffer
    source = buffer.block
    if type(source) is Block:
        block = source
        start = block._address  # (compiled: C integers, added without a Python int)
    else:
        start = source.address  # another library's memory (`CpuBackend.adopt`)
    offset = array._offset
    return start + offset


def _scalar_into(x: Any, dtype: Any, slot: Any) -> bool:
    """Whether the Python scalar `x` (which `_scalar_fits` an array of `dtype`) went into `slot`
    as numpy converts it for an operand of `dtype`: a bool, an int into int64, a float into
    float64 or float32 (the C conversion, as numpy's), an int into a float that holds it exactly;
    other dtypes take no scalars here."""
    if dtype is _float64:
        if not _exact(x, 1 << 53):
            return False
        slot[0] = x
    elif dtype is _float32:
        if not _exact(x, 1 << 24):
            return False
        single = as_float32(slot)  # noqa: F821
        single[0] = x
    elif dtype is _int64:
        integer = as_int64(slot)  # noqa: F821
        integer[0] = x
    elif dtype is _bool:
        truth = as_bool(slot)  # noqa: F821
        truth[0] = x
    else:
        return False
    return True


def _launch(kernel: Any, count: int, h0: Any, h1: Any, h2: Any, out: Any) -> None:
    """`kernel` of the first `count` of h0, h1, h2, into `out`."""
    if count == 1:
        kernel(h0, out=out)
    elif count == 2:
        kernel(h0, h1, out=out)
    else:
        kernel(h0, h1, h2, out=out)


def _on_cpu(array: Any) -> bool:
    """Whether the array lives on the CPU; if so, it has its numpy view (`_handle`) afterwards
    (a view of another array gets it on its first use: made here, as the general path would)."""
    if not _in_cpu_memory(array):
        return False
    if array._handle is None:
        _numpy_view(array)
    return True


def _in_cpu_memory(array: Any) -> bool:
    """Whether the array's buffer is on the CPU."""
    if type(array._buffer) is not MemoryBuffer:
        return False
    buffer = array._buffer  # (compiled: its C fields)
    return buffer.device is _cpu_device


def _same_shape(a: Any, b: Any) -> bool:
    return a._shape is b._shape or a._shape == b._shape


def _native(x: Any) -> Any:
    """An operand as the kernel takes it: an array's numpy view, a scalar itself."""
    if type(x) is _array_type:
        array = x  # (compiled: x's C fields)
        return array._handle
    return x


def _scalar_fits(x: Any, dtype: Any) -> bool:
    """Whether a plain Python scalar (a bool, int or float) meets an array of `dtype` as it is
    (`_dtypes.SCALARS_AS_IS`: an int within int64, which its C conversion checks); the general
    path handles the rest (integer bounds, large ints, complex scalars, subclasses)."""
    kinds = _AS_IS.get(dtype)
    if kinds is None:
        return False
    mask = kinds  # (compiled: a C int)
    if type(x) is bool:
        return mask & _BOOL_KIND != 0
    if type(x) is float:
        return mask & _FLOAT_KIND != 0
    if not mask & _INT_KIND:
        return False
    try:
        value = x  # (compiled: a 64-bit C integer, whose conversion raises OverflowError)
    except OverflowError:
        return False
    return _INT64_MIN <= value <= _INT64_MAX


# `_dtypes.SCALARS_AS_IS` as bit masks of the scalar kinds, read once
_BOOL_KIND, _INT_KIND, _FLOAT_KIND = 1, 2, 4
_AS_IS = {dtype: (_BOOL_KIND if bool in kinds else 0) | (_INT_KIND if int in kinds else 0) |
          (_FLOAT_KIND if float in kinds else 0) for dtype, kinds in dt.SCALARS_AS_IS.items()}
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _takes(temporary: Any, dtype: Any, itemsize: int) -> bool:
    """Whether the result (of `dtype`, the temporary's shape) may be written into `temporary`:
    its dtype, memory from the CPU's caching allocator, a C-contiguous layout."""
    array = temporary  # (compiled: its C fields)
    if array._dtype is not dtype or array._buffer.allocator is not _allocator:
        return False
    return c_contiguous(array._shape, array._strides, itemsize)  # noqa: F821


# the strides of a 1-D array of each itemsize, made once (not a tuple made and freed with every
# small array)
_STRIDES_1D = tuple((itemsize,) for itemsize in range(17))


def _new_array(dtype: Any, itemsize: int, shape: tuple[int, ...] | None, size: int) -> Any:
    """A fresh C-contiguous CPU array from the caching allocator: of `shape`, or a vector of
    `size` elements where `shape` is None (its shape tuple from the block: `Block.vector_shape`)."""
    nbytes = size * itemsize
    block = _cached_malloc(_allocator, nbytes)  # noqa: F821 (declared above)
    buffer = MemoryBuffer.__new__(MemoryBuffer)
    buffer.device = _cpu_device
    buffer.nbytes = nbytes
    buffer.block = block
    buffer.allocator = _allocator  # last: it hands the block back
    if shape is None:
        shape = block.vector_shape(dtype, size)
    view = block.view(dtype, shape, _make_view)
    ndim = len(shape)
    if ndim == 1 and itemsize <= 16:
        strides: Any = _STRIDES_1D[itemsize]
    else:
        strides = c_strides(shape, itemsize)  # noqa: F821
    return new_array_object(_array_type, buffer, dtype, shape, strides, 0, view,  # noqa: F821
                            False)


def _on_the_cpu(device: Any) -> bool:
    """Whether `device` is the CPU; None stands for the default device, read as
    `default_device` reads it (without the call itself, which small `empty` calls would feel),
    once that has read the environment's."""
    if device is None:
        device = get_value(_scoped_device)  # noqa: F821
        if device is None and _env_default:
            device = _env_default[0]
    return device is _cpu_device


_MAX_DIMS = 64  # numpy's limit, and so the CPU backend's
_MAX_NBYTES = 2**62


def fresh(shape: Any, dtype: Any, device: Any, clear: bool = False) -> Any:
    """CpuBackend.empty's common case: a fresh C-contiguous CPU array from the caching allocator
    (`device` the CPU, or None for a default device that is; its memory cleared if `clear`), or
    None where Python must run: before `bind_cpu`, inside a memory scope, on another device, or
    for a shape that is not an int or a tuple of at most 64 ints whose non-zero product (numpy's
    rule) spans at most 2**62 bytes."""
    if _allocator is None or not _on_the_cpu(device) or \
            get_value(scoped_pools) is not NO_SCOPES:  # noqa: F821
        return None
    itemsize = dtype.itemsize
    if itemsize <= 0:
        return None
    if type(shape) is int:
        try:
            n = shape  # (compiled: a C Py_ssize_t, whose conversion raises OverflowError)
        except OverflowError:
            return None
        if n < 0 or n > _MAX_NBYTES // itemsize:
            return None
        out = _new_array(dtype, itemsize, None, n)
        size = n
    else:
        if type(shape) is not tuple or len(shape) > _MAX_DIMS:
            return None
        size = 1
        empty = False
        for extent in shape:
            if type(extent) is not int:
                return None
            try:
                n = extent
            except OverflowError:
                return None
            if n < 0 or n > 0 and size > _MAX_NBYTES // itemsize // n:
                return None
            if n == 0:
                empty = True
            else:
                size *= n
        if empty:
            size = 0
        out = _new_array(dtype, itemsize, shape, size)
    if clear and size:
        _clear(_first_address(out), size * itemsize)
    return out


def copied(x: Any) -> Any:
    """CpuBackend.copy's common case: a fresh C-contiguous copy of the CPU array `x` from the
    caching allocator (its bytes copied with memcpy where `x` is C-contiguous too: numpy's
    assignment costs several times that on small arrays), or None where Python must run: before
    `bind_cpu`, inside a memory scope, or for an array of another device."""
    if _allocator is None or type(x) is not _array_type or \
            get_value(scoped_pools) is not NO_SCOPES:  # noqa: F821
        return None
    array = x  # (compiled: x's C fields)
    if not _in_cpu_memory(array):
        return None
    dtype, shape = array._dtype, array._shape
    itemsize = dtype.itemsize
    contiguous = c_contiguous(array._shape, array._strides, itemsize)  # noqa: F821
    if not contiguous and array._handle is None:
        _numpy_view(array)
    size = 1
    for extent in shape:
        size *= extent
    out = _new_array(dtype, itemsize, shape, size)
    if not contiguous:
        target = out
        target._handle[...] = array._handle
    elif size:
        _move(address_bytes(_first_address(out)),  # noqa: F821
              address_bytes(_first_address(array)), size * itemsize)  # noqa: F821
    return out


def arange(start: Any, step: Any, length: int, dtype: Any, device: Any) -> Any:
    """CpuBackend.arange's small case: the `length` values (below `bind_cpu`'s limit) from
    `start` by `step` in a fresh CPU array from the caching allocator: int64 (the caller has
    checked that the values fit), float64 or float32 bit for bit as numpy makes them (its first
    two values, start and start + step, in the dtype, then first + i * delta, delta their
    difference), `device` the CPU or None for a default device that is; or None where Python
    must run: before `bind_cpu`, inside a memory scope, on another device than the CPU, another
    dtype, or an int beyond a C integer or one that a float would round (numpy's conversion may
    differ)."""
    if _allocator is None or length < 0 or length >= _arange_limit or \
            not _on_the_cpu(device) or get_value(scoped_pools) is not NO_SCOPES:  # noqa: F821
        return None
    if dtype is _int64:
        if type(start) is not int or type(step) is not int or \
                not (_exact(start, _INT64_MAX) and _exact(step, _INT64_MAX)):
            return None
        out = _new_array(dtype, 8, None, length)
        value, delta = start, step
        values = int64_at(_first_address(out))  # noqa: F821
        for i in range(length - 1):  # (each sum is a value of the result: none overflows)
            values[i] = value
            value += delta
        if length:
            values[length - 1] = value
        return out
    second = start + step  # (in Python, as numpy computes it)
    if dtype is _float64 and _exact(start, 1 << 53) and _exact(second, 1 << 53):
        out = _new_array(dtype, 8, None, length)
        first64, second64 = start, second
        _fill(float64_at(_first_address(out)), first64, second64, length)  # noqa: F821
    elif dtype is _float32 and _exact(start, 1 << 24) and _exact(second, 1 << 24):
        out = _new_array(dtype, 4, None, length)
        first32, second32 = start, second
        _fill(float32_at(_first_address(out)), first32, second32, length)  # noqa: F821
    else:
        return None
    return out


def _fill(values: Any, first: float, second: float, length: int) -> None:
    """numpy's float arange fill, in the values' C type: first, second, then first + i * delta."""
    delta = second - first
    for i in range(2, length):
        values[i] = first + i * delta
    if length > 0:
        values[0] = first
    if length > 1:
        values[1] = second


def _exact(value: Any, bound: int) -> bool:
    """Whether `value` is a float, or an int within `bound` of zero (a power of two: a float with
    as many significant bits holds it exactly)."""
    if type(value) is float:
        return True
    if type(value) is not int:
        return False
    try:
        n = value  # (compiled: a C long long, whose conversion raises OverflowError)
    except OverflowError:
        return False
    return -bound <= n <= bound


def _clear(address: int, nbytes: int) -> None:
    """Zero the `nbytes` bytes at `address` (a CPU block's), without the GIL from 1 MiB on (below,
    handing it over costs more than the memset): numpy's fill goes through a view of the span,
    several times the memset's cost on small arrays."""
    start = address_bytes(address)  # noqa: F821
    if nbytes < 1 << 20:
        memset(start, 0, nbytes)  # noqa: F821
        return
    state = PyEval_SaveThread()  # noqa: F821
    memset(start, 0, nbytes)  # noqa: F821
    PyEval_RestoreThread(state)  # noqa: F821


def _move(target: Any, source: Any, nbytes: int) -> None:
    """memcpy of `nbytes` bytes between two CPU blocks' memory, without the GIL from 1 MiB on."""
    if nbytes < 1 << 20:
        memcpy(target, source, nbytes)  # noqa: F821
        return
    state = PyEval_SaveThread()  # noqa: F821
    memcpy(target, source, nbytes)  # noqa: F821
    PyEval_RestoreThread(state)  # noqa: F821


class Reduction:
    """sum, prod, mean, max or min with the CPU fast path in front of the namespace function
    `fallback`: its kernel runs `reduction` (an `_ops.Reduction`), then, with `then`, that
    element-wise operation with the count (mean: the sum divided by it); `nonempty`: an empty
    selection goes to `fallback` (max, min: an error; mean: NaN); with `positive_zero`, the
    kernel's positive_zero is what the namespace's rule, `_modes.positive_zero_sums` (a C call),
    answers, asked per call. `results` maps each operand dtype the fast path takes to the
    result's dtype; while a hook is installed every call goes to
    `observe(name, fallback, *args, **kwargs)`, the operation point."""

    def __init__(self, name: str, results: dict[Any, Any], fallback: Callable[..., Any],
                 observe: Callable[..., Any], *, reduction: Any, then: Any = None,
                 nonempty: bool = False,
                 positive_zero: bool = False) -> None:
        self.name = name
        self.results = dict(results)
        self.fallback = fallback
        self._observe = observe
        self.kernel: Any = None  # bound by `bind_cpu` where the CPU backend's kernel serves
        self._reduction = reduction
        self._then = then
        self._nonempty = nonempty
        self._positive_zero = positive_zero
        _REDUCTIONS.append(self)

    def __repr__(self) -> str:
        return f"<hxarray function {self.name}>"

    def __get__(self, instance: Any, owner: Any) -> Any:
        """Itself, as a class's attribute too (never bound): a descriptor, so that `help()` and
        `inspect` take it for a routine and show its signature and docstring."""
        return self

    def __reduce__(self) -> str:
        """Pickled by reference, as a function is: its module's attribute of its name."""
        return str(getattr(self, "__qualname__", self.name))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if observers:  # hooks observe the general path
            return self._observe(self.name, self.fallback, *args, **kwargs)
        if len(args) == 1 and self.kernel is not None:
            result = self._fast(args[0], kwargs)
            if result is not None:
                return result
        return self.fallback(*args, **kwargs)

    def _fast(self, x: Any, options: dict[str, Any]) -> Any:
        """The result, or None where the general path must run."""
        if type(x) is not _array_type:
            return None
        array = x  # (compiled: x's C fields, fastpath.pxd)
        if not _on_cpu(array):
            return None
        axis, keepdims = None, False
        for key, value in options.items():
            if key == "axis":
                axis = value
            elif key == "keepdims" and (value is True or value is False):
                keepdims = value
            elif key != "dtype" or value is not None:
                return None
        dtype = self.results.get(array._dtype)
        if dtype is None:
            return None
        shape = array._shape
        ndim = len(shape)
        reduced = _reduced(axis, ndim)
        if reduced < 0:
            return None
        size = 1
        result_shape = []
        axes = []
        for i in range(ndim):
            n = shape[i]
            size *= n
            if not reduced >> i & 1:
                result_shape.append(n)
                continue
            if n == 0 and self._nonempty:
                return None
            if keepdims:
                result_shape.append(1)
            axes.append(i)
        if size >= _reduction_limit:
            return None
        out = fresh(tuple(result_shape), dtype, _cpu_device)  # (None inside a memory scope)
        if out is None:
            return None
        positive_zero = self._positive_zero and positive_zero_sums()  # noqa: F821
        if axis is not None:
            axis = tuple(axes)
        global _quiet_entered
        if _quiet_entered:  # (the arguments spelled out: a call with *args costs a tuple more)
            with quiet():
                self.kernel(self._reduction, array._handle, axis, keepdims, out._handle,
                            positive_zero, self._then)
            return out
        _quiet_entered = True
        try:
            _run_quietly(self.kernel, self._reduction, array._handle, axis, keepdims,
                         out._handle, positive_zero, self._then)
        finally:
            _quiet_entered = False
        return out


def _reduced(axis: Any, ndim: int) -> int:
    """The axes `axis` (None, an int or a tuple of ints) selects of `ndim`, as a bit mask; -1
    where the general path must judge it (out of range, repeated, not ints, or more than 62
    dimensions, which the mask does not hold)."""
    if ndim > 62:
        return -1
    if axis is None:
        every = 1  # (shifts of typed variables: compiled, a literal 1 is a 32-bit C int)
        return (every << ndim) - 1
    items = axis if type(axis) is tuple else (axis,)
    reduced = 0
    for item in items:
        if type(item) is not int:
            return -1
        try:
            index = item
        except OverflowError:  # (compiled: an int beyond a C integer)
            return -1
        if not -ndim <= index < ndim:
            return -1
        bit = 1
        bit <<= index + ndim if index < 0 else index
        if reduced & bit:
            return -1
        reduced |= bit
    return reduced


# numpy's floating-point warnings are silenced by running the kernel in a context that holds
# numpy's quiet error state (entering it is a pointer swap, where setting the variable allocates
# a mapping and a token). A context is entered by one call at a time: a call that finds it
# entered (by another thread, while the kernel let go of the GIL, or re-entered) sets the
# variable instead (`quiet`). Compiled, reading and setting `_quiet_entered` run no Python code
# between them, so the GIL makes the pair atomic; interpreted they do not, and every call sets
# the variable.
_quiet_context = quiet_context()
_run_quietly = _quiet_context.run  # (bound once, not looked up on every call)
_quiet_entered = not compiled(__file__)


def operations() -> list[Operation]:
    """Every Operation made so far (the element-wise namespace functions and `where`)."""
    return list(_OPERATIONS)


def bind_cpu(device: Any, allocator: Any, make_view: Callable[..., Any],
             numpy_view: Callable[[Any], Any], elementwise: Callable[..., Any],
             kernels: dict[str, Callable[..., Any]],
             elementwise_limits: dict[str, int], reduce: Callable[..., None],
             reducible: frozenset[Any], limits: tuple[int, int]) -> None:
    """Enable the fast path on the CPU `device` (the CPU backend calls this): results come from
    its caching `allocator`, with the numpy view `make_view(block, dtype, shape)`; an array
    without its numpy view gets it from `numpy_view(array)`;
    `elementwise(op, args, signature, shape, out)` is the backend's general executor; `kernels`
    are the element-wise kernels by name, `reduce` the kernel of the reductions in `reducible`;
    element-wise operations from `elementwise_limits` elements on (by name: the CPU backend's
    thresholds, `parallel.Thresholds.elementwise_limits`), and reductions and aranges from
    `limits` elements on take the general path (which threads the first two; numpy's vectorised
    fills win for the last)."""
    global _cpu_device, _allocator, _make_view, _numpy_view, _elementwise
    global _reduction_limit, _arange_limit
    for op in _OPERATIONS:
        op.kernel = kernels.get(op.name)
        op._limit = elementwise_limits.get(op.name, 0)
        op.results = {operand: (result, size, None if op._condition else
                                _loop(op.kernel, op._arity, operand, result), plan)
                      for operand, (result, size, _, plan) in op.results.items()}
    for reduction in _REDUCTIONS:
        reduction.kernel = reduce if reduction._reduction in reducible else None
    _cpu_device, _allocator, _make_view, _elementwise = device, allocator, make_view, elementwise
    _numpy_view = numpy_view
    _reduction_limit, _arange_limit = limits
