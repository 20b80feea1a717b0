"""`hxarray.fuse`: a function of element-wise operations, traced once per signature into one
expression and run as one kernel by the backend (backends/fusion.py).

Tracing runs the function itself on placeholder arrays whose device is a `_Tracer`: a backend
that records the primitive calls the namespace makes (with the dtypes and compute dtypes it
chose) instead of computing. Promotion, scalar rules, special cases and numpy mode are therefore
the namespace's own, by construction. A call the tracer cannot record (anything but element-wise
work, casts and one reduction) raises `TypeError` naming it, or with `fallback=True` the function
runs unfused from then on for that signature.
"""

from __future__ import annotations

import builtins
import dis
import functools
import math
import operator
import sysconfig
import threading
import types
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np

from . import _dtypes as dt
from ._array import Array
from ._dtypes import DType
from ._modes import is_strict
from ._ops import REDUCTIONS, Op, Reduction, Signature
from ._views import broadcast_shapes, contiguous_strides, view
from .backends.base import Backend
from .backends.fusion import ARRAY, ASTYPE, SCALAR, Expression, Step, scalar_key
from .backends.recording import capturing
from .hal.allocator import Allocator, Block, MemoryBuffer
from .hal.device import Device

__all__ = ["fuse"]

REDUCED = "reduced"  # a step standing for the reduction's result (seen with a shape)
_MAX_PLANS = 256  # signatures (and layouts) kept per fused function
_BYTES = frozenset({dt.bool, dt.int8, dt.uint8})


class _Unfusable(TypeError):
    pass


# -- tracing ---------------------------------------------------------------------------------------
class _Nothing(Allocator):
    """The placeholders' allocator: blocks of no memory, which nothing may read."""

    def __init__(self, device: Device) -> None:
        self.device = device

    def malloc(self, nbytes: int) -> Block:
        return Block(0, 0, None)

    def free(self, block: Block) -> None:
        pass

    def copy_to_host(self, block: Block, offset: int, out: Any, stream: Any = None) -> None:
        raise _Unfusable("reading values on the host (bool(), float(), to_device)")

    def copy_from_host(self, block: Block, offset: int, data: Any, stream: Any = None) -> None:
        raise _Unfusable("writing host values into a computed array")


class _Tracer(Backend):
    """Records the primitives the namespace calls on placeholder arrays, as steps."""

    def __init__(self, device: Device) -> None:
        super().__init__()
        self.device_type = device.type
        # a private device of the same type and index, run by this tracer (never interned)
        self.device = object.__new__(Device)
        self.device.type, self.device.index = device.type, device.index
        self.device._backend = self
        self._allocator = _Nothing(self.device)
        self.steps: list[Step] = []
        self.sources: dict[int, tuple[str, Any]] = {}  # operand step -> where its value is from
        self.operands: dict[Any, int] = {}  # (step, source, value's identity) -> operand step
        self.values: dict[int, tuple[int, tuple[int, ...]]] = {}  # id(buffer) -> (step, shape)
        self.holders: dict[int, Array] = {}  # id(buffer) -> the array made to hold its value
        # Whether a value was read through another array over its buffer (a view that is the
        # value itself at these shapes: `flip` of one element, `.mT` of 1 x 1): such a plan
        # holds for the shapes it was traced at alone.
        self.viewed = False
        self.buffers: list[MemoryBuffer] = []  # kept alive: their ids stay unique
        self.arguments: set[int] = set()
        # name, axes, input step, result dtype, positive_zero
        self.reduction: tuple[Reduction, tuple[int, ...], int, dt.DType, bool] | None = None

    def placeholder(self, shape: tuple[int, ...], dtype: dt.DType, step: int | None) -> Array:
        buffer = MemoryBuffer(self.device, 0, Block(0, 0, None), self._allocator)
        self.buffers.append(buffer)
        array = Array._make(buffer, dtype, shape, contiguous_strides(shape, dtype.itemsize))
        if step is not None:
            self.values[id(buffer)] = (step, shape)
            self.holders[id(buffer)] = array
        return array

    def argument(self, position: int, x: Array) -> Array:
        step = self._operand(Step(ARRAY, (), x._dtype, x._dtype), ("arg", position))
        placeholder = self.placeholder(x._shape, x._dtype, step)
        self.arguments.add(id(placeholder._buffer))
        return placeholder

    def _operand(self, step: Step, source: tuple[str, Any]) -> int:
        """The step of an operand, recorded once (scalars told apart by `scalar_key`)."""
        kind, value = source
        identity = (step, kind, scalar_key(value) if kind == "scalar" else value)
        index = self.operands.get(identity)
        if index is None:
            self.steps.append(step)
            index = self.operands[identity] = len(self.steps) - 1
            self.sources[index] = source
        return index

    def value_of(self, x: Any, what: str, dtype: dt.DType | None = None) -> int:
        """The step holding `x`: a placeholder's, a scalar operand stored in `dtype`, or the
        reduction's result seen through a view that only adds or drops size-1 axes."""
        if x.__class__ is not Array:
            assert dtype is not None
            return self._operand(Step(SCALAR, (), dtype, dtype), ("scalar", x))
        found = self.values.get(id(x._buffer)) if x._buffer.device is self.device else None
        if found is None:
            raise _Unfusable(f"{what}: an array the function did not take as an argument (pass "
                             "it as one)")
        index, shape = found
        step = self.steps[index]
        whole = _whole(x, shape)
        self.viewed = self.viewed or whole and x is not self.holders.get(id(x._buffer))
        if whole and x._shape == shape and x._dtype is step.dtype:
            return index
        if whole and x._shape == shape and dt.bool in (x._dtype, step.dtype) and \
                {x._dtype, step.dtype} <= _BYTES:  # numpy mode's bool <-> (u)int8 views: 0, 1
            self.steps.append(Step(ASTYPE, (index,), x._dtype, step.dtype))
            return len(self.steps) - 1
        if whole and step.op == REDUCED and x._dtype is step.dtype:
            return self._operand(Step(REDUCED, (), step.dtype, step.dtype),
                                 ("reduction", x._shape))  # keepdims
        of = "an argument (pass the view itself as an argument)" if id(x._buffer) in \
            self.arguments else "a value computed inside the fused function"
        raise _Unfusable(f"{what}: a view (transpose, broadcast, reshape, slice or "
                         f"reinterpretation) of {of}")

    def _result(self, step: Step, shape: tuple[int, ...], out: Array | None) -> Array:
        self.steps.append(step)
        index = len(self.steps) - 1
        if out is None:
            return self.placeholder(shape, step.dtype, index)
        if id(out._buffer) in self.arguments:
            raise _Unfusable("writing into an argument of the fused function (in-place "
                             "operators, out=)")
        self.value_of(out, "writing into a computed value")
        if out._shape != shape or out._dtype is not step.dtype:
            raise _Unfusable("writing into part of a computed value")
        self.values[id(out._buffer)] = (index, shape)
        self.holders[id(out._buffer)] = out
        return out

    # -- the primitives a fused function may use ----------------------------------------------
    def empty(self, shape: tuple[int, ...], dtype: dt.DType, device: Device) -> Array:
        return self.placeholder(shape, dtype, None)

    def elementwise(self, op: Op, args: Sequence[Any], signature: Signature,
                    shape: tuple[int, ...], out: Array | None = None) -> Array:
        what = f"{op.name}()"
        dtype = signature.result
        if op.chain:  # clip: maximum, then minimum, as the kernels compute it
            x, *bounds = args
            value = x
            for step, bound, bound_dtype in zip(op.chain, bounds, signature.operands[1:]):
                if bound is not None:
                    value = self.elementwise(step, (value, bound), Signature(
                        (value._dtype, bound_dtype), signature.compute, dtype), shape)
            index = self.value_of(value, what)
            if value is x or out is not None:
                return self._result(Step(ASTYPE, (index,), dtype, dtype), shape, out)
            return value
        compute = signature.compute
        indices = [self.value_of(a, what, dt.bool if op.selects and i == 0 else compute)
                   for i, a in enumerate(args)]
        return self._result(Step(op, tuple(indices), dtype, compute), shape, out)

    def assign(self, dst: Array, src: Any) -> None:
        if id(dst._buffer) in self.values or dst._buffer.device is not self.device:
            raise _Unfusable("writing into an array (in-place assignment)")
        if src.__class__ is not Array and dst._shape != ():
            raise _Unfusable("full(): filling an array with a value")
        index = self.value_of(src, "astype()", dst._dtype)
        source = self.steps[index].dtype
        self._result(Step(ASTYPE, (index,), dst._dtype, source), dst._shape, None)
        self.values[id(dst._buffer)] = (len(self.steps) - 1, dst._shape)
        self.holders[id(dst._buffer)] = dst

    def reduce(self, op: Reduction, x: Array, axes: tuple[int, ...], out: Array, *,
               positive_zero: bool = False) -> None:
        name = op.name
        if REDUCTIONS.get(name) is not op:
            raise _Unfusable(f"{name}(): only sum, prod, min, max, mean, any and all can end a "
                             "fused function")
        if self.reduction is not None:
            raise _Unfusable(f"{name}(): a second reduction (a fused function may hold one)")
        self.reduction = (op, axes, self.value_of(x, f"{name}()"), out._dtype, positive_zero)
        step = self._operand(Step(REDUCED, (), out._dtype, out._dtype), ("reduction",
                                                                         out._shape))
        self.values[id(out._buffer)] = (step, out._shape)
        self.holders[id(out._buffer)] = out

    def __getattribute__(self, name: str) -> Any:
        if name in _REFUSED:
            raise _Unfusable(_REFUSED[name])
        return super().__getattribute__(name)

    # -- the device runtime: a tracer has none --------------------------------------------------
    def device_count(self) -> int:
        return 1

    def capabilities(self, device: Device) -> dict[str, Any]:
        raise _Unfusable("reading device capabilities")

    def allocator(self, device: Device) -> Allocator:
        return self._allocator

    def default_stream(self, device: Device) -> Any:
        raise _Unfusable("streams")

    def create_stream(self, device: Device, **options: Any) -> Any:
        raise _Unfusable("streams")

    create_event = create_stream

    def _refused(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("unreachable: __getattribute__ refuses it")

    dlpack_device = arg_reduce = scan = matmul = sort = argsort = searchsorted = nonzero = \
        gather = scatter = unique = _refused


_REFUSED = {
    "arg_reduce": "argmax()/argmin()", "scan": "cumulative_sum()/cumulative_prod()",
    "matmul": "matmul()", "sort": "sort()", "argsort": "argsort()",
    "searchsorted": "searchsorted()", "nonzero": "nonzero()", "gather": "indexing (take)",
    "scatter": "indexed assignment", "unique": "unique()", "linalg": "linalg",
    "fft": "fft", "dlpack_device": "DLPack",
    "to_host": "reading values on the host (bool(), float(), to_device)",
    "copy_to": "to_device()", "dlpack": "DLPack export",
    "host_view": "reading values on the host (numpy conversion)",
    "concat": "concat()", "compress": "boolean indexing", "place": "indexed assignment",
    "isin": "isin()",
    "arange": "arange()", "synchronize": "synchronize()",
}


def _whole(x: Array, shape: tuple[int, ...]) -> builtins.bool:
    """Whether `x` reads a value of `shape` (held C-contiguous) element for element in its own
    order, with at most size-1 axes added or dropped: a transpose, broadcast or any other
    restriding of the same memory is another value."""
    kept = [(n, s) for n, s in zip(x._shape, x._strides) if n != 1]
    dims = tuple(n for n in shape if n != 1)
    return x._offset == 0 and tuple(n for n, _ in kept) == dims and \
        tuple(s for _, s in kept) == contiguous_strides(dims, x._dtype.itemsize)


# -- what a trace read -----------------------------------------------------------------------------
# A trace runs the function once: every value it reads besides its arguments (a global constant,
# a closure variable, a module's attribute, a flag that picks a branch) is fixed in its plan. The
# names it reads are watched: before each call their values are compared (by identity) with
# those the trace saw, and any change traces again; a list, dict or set read is watched item by
# item, a plain object's attributes read by name one by one. A value read through an object's
# state otherwise (a bound method's `self`, `rng.random()`, an object used whole) cannot be
# watched cheaply: such a function is refused at its first call (it runs unfused with
# `fallback`).

Watch = tuple[tuple[Callable[[Any, Any], Any], Any, Any], ...]  # (read, key, value seen)

# Values whose identity stands for their value (or whose reads are watched themselves: modules
# and classes by their attributes, functions by what they read, arrays refused by the trace).
_CONSTANT = (type(None), builtins.bool, int, float, complex, str, bytes, type(Ellipsis), range,
             slice, types.ModuleType, type, np.generic, np.dtype, np.ufunc, np.ndarray, Array,
             DType, Device)
_LOAD_NAME = frozenset({"LOAD_GLOBAL", "LOAD_DEREF", "LOAD_CLASSDEREF"})
_LOAD_ATTRIBUTE = frozenset({"LOAD_ATTR", "LOAD_METHOD"})
_LIBRARIES = tuple({sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib",
                                                       "platlib")})


def _contents(cell: Any, default: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # (an empty cell: deleted since)
        return default


def _library(function: types.FunctionType) -> builtins.bool:
    """Whether `function` is hxarray's or an installed package's (whose reads are not watched)."""
    return (function.__module__ or "").partition(".")[0] == "hxarray" or \
        function.__code__.co_filename.startswith(_LIBRARIES)


def _plain(value: Any) -> builtins.bool:
    """Whether `value` is an object whose attributes are its `__dict__`'s items (no Python
    `__getattribute__` or `__getattr__`): they can be watched one by one."""
    kind = type(value)
    return isinstance(kind.__getattribute__, types.WrapperDescriptorType) and \
        getattr(kind, "__getattr__", None) is None and isinstance(
            getattr(value, "__dict__", None), dict)


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    """`code` and the code of the functions, lambdas and comprehensions defined in it."""
    yield code
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from _codes(constant)


def _names(code: types.CodeType) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    """(the load's opcode, the name loaded, the attributes read from it at once: `cfg.K`)."""
    for each in _codes(code):
        load: list[Any] | None = None
        for instruction in dis.get_instructions(each):
            if instruction.opname in _LOAD_ATTRIBUTE and load is not None:
                load[2].append(instruction.argval)
                continue
            if load is not None:
                yield load[0], load[1], tuple(load[2])
            load = [instruction.opname, instruction.argval, []] \
                if instruction.opname in _LOAD_NAME else None
        if load is not None:
            yield load[0], load[1], tuple(load[2])


def watch(function: Any) -> Watch:
    """What a trace of `function` reads besides its arguments, each with the value it has now;
    `_Unfusable` naming a value that cannot be watched."""
    found: dict[tuple[int, Any], tuple[Callable[[Any, Any], Any], Any, Any]] = {}
    _watch_function(function, found, set(), "the fused function")
    return tuple(found.values())


def _watch_function(function: Any, found: dict[Any, Any], seen: set[int], what: str) -> None:
    if isinstance(function, types.MethodType):
        _watch_value(function.__self__, f"{what}'s object", found, seen)
        function = function.__func__
    elif isinstance(function, functools.partial):
        _watch_value((function.args, tuple(function.keywords.values())),
                     f"{what}'s bound arguments", found, seen)
        function = function.func
    elif not isinstance(function, types.FunctionType):  # a callable object: as any value read
        _watch_value(function, what, found, seen)
        return
    if not isinstance(function, types.FunctionType) or _library(function) or \
            id(function.__code__) in seen:
        return
    seen.add(id(function.__code__))
    code, spaces = function.__code__, function.__globals__
    cells = dict(zip(code.co_freevars, function.__closure__ or ()))
    base = vars(builtins)
    for opcode, name, attributes in _names(code):
        if opcode == "LOAD_GLOBAL":
            value = _read(found, spaces, spaces.get, name)
            if value is _MISSING:  # a builtin, until a global of that name shadows it
                value = _read(found, base, base.get, name)
        elif name in cells:
            value = _read(found, cells[name], _contents, cells[name])
        else:  # a local variable of this function, read by a function it defines
            continue
        for attribute in attributes:  # a module's, class's, function's or plain object's, watched
            if not isinstance(value, (types.ModuleType, type, types.FunctionType)) and not (
                    _plain(value) and attribute in vars(value)):
                break  # (the object itself is the value read: refused below)
            space = vars(value)
            value = _read(found, value, space.get, attribute) if attribute in space else \
                _read(found, value, functools.partial(getattr, value), attribute)
            name = f"{name}.{attribute}"
        _watch_value(value, f"`{name}`", found, seen)


def _read(found: dict[Any, Any], owner: Any, read: Callable[[Any, Any], Any], key: Any) -> Any:
    """`read(key)` (a global, a cell's contents, an attribute of `owner`), watched from now."""
    value = read(key, _MISSING)
    found.setdefault((id(owner), key if isinstance(key, str) else None), (read, key, value))
    return value


def _items(container: Any) -> tuple[Any, ...]:
    return tuple(container) if not isinstance(container, dict) else \
        tuple(item for pair in container.items() for item in pair)


def _same_items(seen: tuple[Any, ...], container: Any, default: Any) -> builtins.bool:
    """Whether `container` holds the very items (and keys) it held when `seen` was taken."""
    now = _items(container)
    return len(now) == len(seen) and all(map(operator.is_, now, seen))


def _watch_value(value: Any, what: str, found: dict[Any, Any], seen: set[int]) -> None:
    if isinstance(value, (tuple, frozenset)):
        for item in value:
            _watch_value(item, what, found, seen)
    elif type(value) in (list, dict, set):
        if (id(value), None) not in found:
            items = _items(value)
            found[id(value), None] = (functools.partial(_same_items, items), value, True)
            _watch_value(items, f"an item of {what}", found, seen)
    elif isinstance(value, (types.FunctionType, types.MethodType, functools.partial)):
        _watch_function(value, found, seen, what)
    elif isinstance(value, Fused):  # (its trace is a part of this one's)
        _watch_function(value.function, found, seen, what)
    elif isinstance(value, types.BuiltinFunctionType) and not isinstance(
            value.__self__, (types.NoneType, types.ModuleType)):
        raise _Unfusable(f"reading {what} (a method of a {type(value.__self__).__name__}, whose "
                         "state a trace would fix)")
    elif not (value is _MISSING or isinstance(value, (_CONSTANT, types.BuiltinFunctionType))
              or type(value).__module__.partition(".")[0] in ("hxarray", "numpy") and
              callable(value) and isinstance(getattr(value, "__self__", None),
                                             (types.NoneType, types.ModuleType))):
        raise _Unfusable(f"reading {what} (a {type(value).__name__}: its attributes or items "
                         "could change between calls, which a trace would not see; pass the "
                         "value as an argument)")


def unchanged(watched: Watch) -> Callable[[], builtins.bool]:
    """A function telling whether every value a trace read is still the one it saw: one
    generated expression over its reads, since a loop over them would run on every call."""
    if not watched:
        return lambda: True
    names = {"_MISSING": _MISSING}
    for i, (read, key, value) in enumerate(watched):
        names.update({f"r{i}": read, f"k{i}": key, f"v{i}": value})
    test = " and ".join(f"r{i}(k{i}, _MISSING) is v{i}" for i in range(len(watched)))
    source = (f"def unchanged({', '.join(f'{n}={n}' for n in names)}):\n"
              f"    try:\n        return {test}\n"
              "    except Exception:  # a read that fails now (a property, a deleted cell)\n"
              "        return False\n")
    exec(source, names)  # noqa: S102 - hxarray's own source, over the reads' objects
    return names["unchanged"]


# -- plans -----------------------------------------------------------------------------------------
_OPERANDS = (ARRAY, SCALAR, REDUCED)


class _Plan(NamedTuple):
    """A traced signature: the expression up to the reduction (or the whole function) and where
    its operands come from; the reduction (op, axes, dtype, positive_zero) and the expression
    after it."""

    before: Expression | None  # None: the result is an operand itself (`before_sources[0]`)
    before_sources: tuple[tuple[str, Any], ...]
    reduction: tuple[Reduction, tuple[int, ...], dt.DType, bool] | None = None
    after: Expression | None = None  # None: the result is the reduction's (`after_sources[0]`)
    after_sources: tuple[tuple[str, Any], ...] = ()
    shapes: tuple[tuple[int, ...], ...] | None = None  # the argument shapes it holds for
    epilogue: bool = False  # `after` is of the reduction's result (in one shape) and scalars


def _expression(tracer: _Tracer, output: int
                ) -> tuple[Expression | None, tuple[tuple[str, Any], ...]]:
    """The steps `output` depends on, operands first, renumbered, with each operand's source;
    (None, (source,)) where `output` is an operand itself."""
    steps = tracer.steps
    if steps[output].op in _OPERANDS:
        return None, (tracer.sources[output],)
    needed = {output}
    for index in range(output, -1, -1):
        if index in needed:
            needed.update(steps[index].args)
    order = sorted(needed)
    operands = [i for i in order if steps[i].op in _OPERANDS]
    rest = [i for i in order if steps[i].op not in _OPERANDS]
    number = {old: new for new, old in enumerate([*operands, *rest])}
    renumbered = [steps[i]._replace(args=tuple(number[a] for a in steps[i].args),
                                    op=ARRAY if steps[i].op == REDUCED else steps[i].op)
                  for i in [*operands, *rest]]
    return Expression(tuple(renumbered), len(operands)), \
        tuple(tracer.sources[i] for i in operands)


def _trace(function: Callable[..., Any], args: Sequence[Any], device: Device) -> _Plan:
    tracer = _Tracer(device)
    traced = [tracer.argument(i, a) if a.__class__ is Array else a for i, a in enumerate(args)]
    result = function(*traced)
    if result.__class__ is not Array or result._buffer.device is not tracer.device:
        raise _Unfusable(f"returning {type(result).__name__} (a fused function returns one array "
                         "computed from its arguments)")
    output = tracer.value_of(result, "the result")
    shapes = tuple(a._shape for a in args if a.__class__ is Array)
    if tracer.reduction is None:
        return _Plan(*_expression(tracer, output), shapes=shapes if tracer.viewed else None)
    op, axes, reduced, dtype, positive_zero = tracer.reduction
    before, before_sources = _expression(tracer, reduced)
    after, after_sources = _expression(tracer, output)
    kinds = {kind for kind, _ in after_sources}
    seen = {value for kind, value in after_sources if kind == "reduction"}
    return _Plan(before, before_sources, (op, axes, dtype, positive_zero), after, after_sources,
                 shapes,  # counts follow shapes
                 before is not None and after is not None and kinds <= {"reduction", "scalar"}
                 and len(seen) == 1)


# -- running ---------------------------------------------------------------------------------------
Runner = Callable[[Sequence[Any]], Any]  # a signature's compiled call: the arguments -> the result


def _values(sources: Sequence[tuple[str, Any]], args: Sequence[Any], reduced: Array | None
            ) -> list[Any]:
    values = []
    for kind, value in sources:
        if kind == "arg":
            values.append(args[value])
        elif kind == "scalar":
            values.append(value)
        else:
            assert reduced is not None
            values.append(reduced if reduced._shape == value else
                          view(reduced, value, contiguous_strides(value, reduced._dtype.itemsize),
                               reduced._offset))
    return values


def _evaluate(backend: Backend, expression: Expression | None, operands: list[Any],
              device: Device) -> Array:
    if expression is None:  # the result is an operand: a new array all the same
        return backend.copy(operands[0])
    shape = broadcast_shapes(*(a._shape for a in operands if a.__class__ is Array))
    out = backend.empty(shape, expression.dtype, device)
    backend.fused(expression, operands, out)
    return out


def _run(plan: _Plan, args: Sequence[Any], device: Device) -> Array:
    """A plan `_runner` does not prepare: the result an operand itself (a copy), a reduction
    of an argument itself, or work after the reduction that reads the arguments."""
    backend = device._backend or device.backend
    operands = _values(plan.before_sources, args, None)
    if plan.reduction is None:
        return _evaluate(backend, plan.before, operands, device)
    op, axes, dtype, positive_zero = plan.reduction
    shape = broadcast_shapes(*(a._shape for a in operands if a.__class__ is Array))
    reduced = backend.empty(tuple(n for i, n in enumerate(shape) if i not in axes), dtype, device)
    if plan.before is None:  # a reduction of an argument itself
        backend.reduce(op, operands[0], axes, reduced, positive_zero=positive_zero)
    else:
        backend.fused_reduce(op, plan.before, operands, shape, axes, reduced,
                             positive_zero=positive_zero)
    values = _values(plan.after_sources, args, reduced)
    if plan.after is None:
        return values[0]
    return _evaluate(backend, plan.after, values, device)


def _scalars(sources: Sequence[tuple[str, Any]]) -> list[Any]:
    """The scalar operands of an expression whose operands come from `sources`, None at the
    others' places."""
    return [value if kind == "scalar" else None for kind, value in sources]


class _Traced(NamedTuple):
    """A traced signature: its plan, what takes the arrays its expression reads from the
    arguments (a tuple), and for an expression without a reduction the backend's call of it
    prepared for its scalars (`Backend.fused_call`), which each layout's runner specialises
    (`Backend.fused_layout`)."""

    plan: _Plan
    take: Callable[[Sequence[Any]], tuple[Array, ...]]
    call: Callable[[Sequence[Array], Array], None] | None

    @classmethod
    def of(cls, plan: _Plan, device: Device) -> _Traced:
        positions = [value for kind, value in plan.before_sources if kind == "arg"]
        first = positions[0] if positions else 0
        take = operator.itemgetter(slice(first, first + len(positions))) \
            if positions == list(range(first, first + len(positions))) else \
            operator.itemgetter(*positions)  # (a tuple either way)
        if plan.reduction is not None or plan.before is None:
            return cls(plan, take, None)
        backend = device._backend or device.backend
        return cls(plan, take, backend.fused_call(plan.before, _scalars(plan.before_sources)))


def _runner(traced: _Traced, args: Sequence[Any], device: Device) -> Runner:
    """The call of a traced signature for arguments laid out as `args` (their arrays' dtypes,
    shapes and strides). An expression, or one that a reduction ends (followed by element-wise
    work on its result and scalars only), runs from what the trace and the layout fixed: the
    arguments it reads, its scalars, the result's shape and dtype, the backend's prepared call
    (`Backend.fused_layout`, or `fused_reduce_call`); nothing is checked again. Other plans
    run through `_run`."""
    plan = traced.plan
    expression = plan.before
    if expression is None or plan.reduction is not None and not plan.epilogue and (
            plan.after is not None or plan.after_sources[0][0] != "reduction"):
        return lambda args: _run(plan, args, device)
    backend = device._backend or device.backend
    take = traced.take
    arrays = take(args)
    shape = arrays[0]._shape if arrays else ()
    if any(a._shape != shape for a in arrays):  # (a new shape: cheaper than its broadcast)
        shape = broadcast_shapes(*(a._shape for a in arrays))
    if traced.call is not None:
        call = backend.fused_layout(traced.call, arrays, shape)
        kept = seen = shape
        dtype = expression.dtype
    else:
        assert plan.reduction is not None
        op, axes, dtype, positive_zero = plan.reduction
        after = plan.after if plan.epilogue else None
        call = backend.fused_reduce_call(
            op, expression, _scalars(plan.before_sources), arrays, shape, axes, dtype, after,
            () if after is None else _scalars(plan.after_sources), positive_zero=positive_zero)
        kept = tuple(n for i, n in enumerate(shape) if i not in axes)
        seen = next(value for kind, value in plan.after_sources if kind == "reduction")
        dtype = dtype if after is None else after.dtype
    empty = backend.empty

    def run(args: Sequence[Any]) -> Array:
        out = empty(kept, dtype, device)
        call(take(args), out)
        return out

    if seen == kept:
        return run
    strides = contiguous_strides(seen, dtype.itemsize)
    return lambda args: view(run(args), seen, strides, 0)  # keepdims


class Fused:
    """A fused function: call it as the function. `fallback` runs signatures that cannot be
    fused unfused instead of raising."""

    def __init__(self, function: Callable[..., Any], fallback: builtins.bool) -> None:
        if not callable(function):
            raise TypeError(f"fuse() takes a function, got {type(function).__name__}")
        self.function = function
        self.fallback = fallback
        self._runs: dict[Any, Runner] = {}  # per layout (the key built in __call__)
        self._plans: dict[Any, _Traced | None] = {}  # per signature (None: it runs unfused)
        self._unchanged: Callable[[], builtins.bool] | None = None  # (`watch`, `unchanged`)
        self._lock = threading.Lock()
        functools.update_wrapper(self, function)

    def __repr__(self) -> str:
        return f"<hxarray.fuse of {getattr(self.function, '__qualname__', self.function)!r}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError(f"a fused function takes positional arguments only, got "
                            f"{', '.join(kwargs)}")
        if self._unchanged is not None and not self._unchanged():
            self._forget()
        if capturing:  # a graph captures: through the backend it records, cached nowhere
            return self._first(None, args)
        # The layout's key, built inline: the mode, and per argument its dtype, shape, strides
        # and device, or a scalar's `scalar_key`.
        key: Any = (is_strict(),)
        try:
            for a in args:
                if a.__class__ is Array:
                    key += a._dtype, a._shape, a._strides, a._buffer.device
                else:
                    key += (scalar_key(a),)
            run = self._runs.get(key)
        except TypeError:  # an unhashable argument: _first names it
            key = run = None
        if run is None:
            return self._first(key, args)
        return run(args)

    def _unfused(self, args: Sequence[Any]) -> Any:
        return self.function(*args)

    def _first(self, key: Any, args: Sequence[Any]) -> Any:
        """The first call of a layout: its arguments checked, its signature (the mode, and per
        argument its dtype, number of dimensions and device, or a scalar's `scalar_key`) traced
        where it is new (a reduction's per shape: its counts follow them), its runner made."""
        device, empty = self._check(args)
        if device is not None and isinstance(device._backend, _Tracer):
            return self.function(*args)  # called while another is traced: a part of its trace
        if empty or device is None:  # nothing to compute, or no array: as unfused
            self._keep(self._runs, key, self._unfused)
            return self.function(*args)
        signature = None if key is None else (key[0], *(
            (a._dtype, len(a._shape), a._buffer.device) if a.__class__ is Array else
            scalar_key(a) for a in args))
        traced = self._plans.get(signature, _MISSING)
        result = _MISSING
        if traced is _MISSING or traced is not None and traced.plan.shapes not in (
                None, tuple(a._shape for a in args if a.__class__ is Array)):
            plan, result = self._trace(args, device)
            traced = None if plan is None else _Traced.of(plan, device)
            self._keep(self._plans, signature, traced)
        run = self._unfused if traced is None else _runner(traced, args, device)
        self._keep(self._runs, key, run)
        return run(args) if result is _MISSING else result

    def _trace(self, args: Sequence[Any], device: Device) -> tuple[_Plan | None, Any]:
        """The plan of the arguments' signature (None where it cannot be fused: it runs
        unfused), and the result where finding that out computed it."""
        try:
            watched = watch(self.function)
            plan = _trace(self.function, args, device)
            with self._lock:
                self._unchanged = unchanged(watched) if watched else None
            return plan, _MISSING
        except _Unfusable as exc:
            self._refuse(str(exc))
            return None, _MISSING
        except Exception as exc:
            result = self.function(*args)  # its own errors are raised as they are
            self._refuse(f"an array the function uses without taking it as an argument "
                         f"(tracing raised: {exc})")
            return None, result

    def _forget(self) -> None:
        """Drop every plan: a value their traces read has changed."""
        with self._lock:
            self._runs.clear()
            self._plans.clear()
            self._unchanged = None

    def _keep(self, table: dict[Any, Any], key: Any, value: Any) -> None:
        if key is None:  # (an unhashable argument, or a call while a graph captures)
            return
        with self._lock:
            if len(table) >= _MAX_PLANS:
                table.clear()
            table[key] = value

    def _refuse(self, what: str) -> None:
        """None (run unfused) with `fallback`, else the TypeError naming `what`."""
        if self.fallback:
            return None
        name = getattr(self.function, "__name__", "the function")
        raise TypeError(f"hxarray.fuse({name}): {what} cannot be fused (fuse takes element-wise "
                        "functions, operators, where, clip, astype and one reduction, on arrays "
                        "passed as arguments); fuse(..., fallback=True) runs such a function "
                        "unfused")

    @staticmethod
    def _check(args: Sequence[Any]) -> tuple[Device | None, builtins.bool]:
        """The arguments' device (None without arrays) and whether one has no elements;
        TypeError or ValueError for arguments a fused function does not take."""
        device = None
        empty = False
        for a in args:
            if a.__class__ is Array:
                d = a._buffer.device
                if device is None:
                    device = d
                elif d is not device:
                    raise ValueError(f"fused function: arguments on different devices "
                                     f"({device} and {d}); move one with to_device()")
                empty = empty or 0 in a._shape
            elif not isinstance(a, (builtins.bool, int, float, complex)):
                raise TypeError(f"a fused function takes hxarray arrays and Python scalars, got "
                                f"{type(a).__name__}")
        return device, empty


_MISSING: Any = object()


# -- hxarray's own compositions -------------------------------------------------------------------
FUSE_FROM = 1 << 17  # elements from which hxarray's own compositions run fused
_internal: dict[Any, Fused] = {}


def pays(arrays: Sequence[Any]) -> builtins.bool:
    """Whether one of hxarray's own element-wise compositions over `arrays` (and scalars) runs
    fused: large enough, on a backend that compiles fused expressions (never inside a trace)."""
    devices = {x._buffer.device for x in arrays if x.__class__ is Array}
    if len(devices) != 1 or not any(x.__class__ is Array and math.prod(x._shape) >= FUSE_FROM
                                    for x in arrays):
        return False  # (arrays on two devices: the unfused call says so)
    device = devices.pop()
    return type(device._backend or device.backend).fused is not Backend.fused


def internal(key: Any, function: Callable[..., Any]) -> Fused:
    """The fused form of one of hxarray's compositions (made once per `key`; unfused where a
    signature cannot be fused)."""
    found = _internal.get(key)
    if found is None:
        found = _internal.setdefault(key, Fused(function, fallback=True))
    return found


def fuse(function: Callable[..., Any] | None = None, *, fallback: builtins.bool = False) -> Any:
    """Compile a function of element-wise operations into one kernel per device (a decorator,
    `@fuse` or `@fuse(fallback=True)`, or a function, `fuse(f)`). See docs/fuse.md."""
    if not isinstance(fallback, builtins.bool):
        raise TypeError(f"fuse(): fallback must be a bool, got {type(fallback).__name__}")
    if function is None:
        return functools.partial(fuse, fallback=fallback)
    return Fused(function, fallback)
