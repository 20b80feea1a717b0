"""The backend seam: what a device type must provide to run every hxarray operation.

A backend is two things (after tinygrad's device/runtime split and c10's device hooks):

- **a device runtime**: how many devices there are and what they can do, a caching allocator per
  device, streams and events, copies between host and device memory, DLPack;
- **compute primitives**: a small set of operations with precise contracts (below), each running
  on the *current stream* of its device (`current_stream(device)`: the innermost `with stream:`,
  else the device's default stream): `assign`, `elementwise`, `reduce`, `arg_reduce`, `scan`,
  `matmul`, `sort`, `argsort`, `searchsorted`, `nonzero`, `gather`, `scatter`, `unique`; and
  optionally `linalg`, `fft` and `random_bits`.

The namespace has already checked every argument, promoted dtypes, normalised axes, computed
result shapes and applied the standard's special cases (NaN mean of nothing, var/std with no
degrees of freedom, empty reductions, ...); a primitive only computes. Primitives that write a
result take it as `out`: a fresh C-contiguous array of the result's shape and dtype from `empty`,
or (where stated) any view the caller chose; the inputs are arrays of this backend's device (any
strides, offsets and zero-stride broadcast axes) or plain Python scalars already checked against
the dtypes.

Everything composable from primitives has a default here (built from primitives and views); a
backend overrides a default only to be faster. Optional primitives (`linalg`, `fft`) default to
running the CPU backend on a host copy, counted per operation in `host_fallbacks`.
"""

from __future__ import annotations

import collections
import functools
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .. import _views
from .._array import Array
from .._dtypes import COMPLEX_FLOATING, FROM_NUMPY, int64
from .._forwarding import forwarding
from .._ops import OPS, REDUCTIONS
from ..hal.device import Device, DeviceType
from ..hal.hooks import device_of, observe, observers
from ..hal.scope import current_pool, scope_pool
from ..hal.stream import Stream, current_stream
from . import fusion

if TYPE_CHECKING:
    import numpy as np

    from .._dtypes import DType
    from .._ops import ArgReduction, Op, Reduction, Scan, Signature
    from ..hal.allocator import Allocator
    from ..hal.stream import Event
    from .recording import Call

__all__ = ["FRESH_LAYOUTS", "PRIMITIVES", "TRANSFERS", "Backend", "fresh_layout"]

Shape = tuple[int, ...]
Scalar = bool | int | float | complex

# (bytes, C-contiguous byte strides) of a new array, by (shape, dtype): `fresh_layout` fills it.
FRESH_LAYOUTS: dict[tuple[Shape, DType], tuple[int, Shape]] = {}


def fresh_layout(shape: Shape, dtype: DType) -> tuple[int, Shape]:
    """(bytes, C-contiguous byte strides) of a new array of `shape` and `dtype` (the errors of
    `_views.nbytes_of`); the first 4096 layouts asked for are kept in FRESH_LAYOUTS."""
    layout = FRESH_LAYOUTS.get((shape, dtype))
    if layout is None:
        layout = (_views.nbytes_of(shape, dtype),
                  _views.contiguous_strides(shape, dtype.itemsize))
        if len(FRESH_LAYOUTS) < 4096:
            FRESH_LAYOUTS[shape, dtype] = layout
    return layout


# The methods observed as the hooks' primitive points (`hal.hooks`); those named by an operation
# (their first argument: an operation object from `_ops.py`, or a name) are reported as
# "elementwise:add", "reduce:sum", ...
PRIMITIVES = ("assign", "elementwise", "reduce", "arg_reduce", "scan", "matmul", "sort",
              "argsort", "searchsorted", "nonzero", "gather", "scatter", "unique", "linalg",
              "fft", "random_bits", "full", "copy", "arange", "concat", "compress", "place",
              "isin", "bincount", "squared_deviations")
_NAMED = {"elementwise", "reduce", "arg_reduce", "scan", "linalg", "fft"}
# The methods observed as the transfer points, by the direction they copy.
TRANSFERS = {"from_host": "host to device", "to_host": "device to host",
             "copy_to": "device to device"}


def reruns_after_memory_error(method: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a primitive that may run twice (it writes fresh outputs, or the same values again):
    where it raises MemoryError, its point calls the backend's `release_memory` and runs it once
    more (numpy's own allocations inside a CPU primitive compete with the allocator's cache)."""
    method.reruns_after_memory_error = True  # type: ignore[attr-defined]
    return method


def _observed(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    """`method` with the hook point of a primitive or transfer: the hooks are called while
    `hooks.observers` is not empty (a method reached through `super()` from an override of
    the same name is not observed twice); one call, with `method`'s own parameters, and the
    rerun after a MemoryError of a method marked `reruns_after_memory_error` (each run its own
    span)."""
    reruns = getattr(method, "reruns_after_memory_error", False)
    return forwarding(method, """
        if _hx_observers and getattr(type(ARGS[0]), _hx_name) is _hx_point:
            return _hx_spans(_hx_name, _hx_method, ARGS, KWARGS, _hx_reruns)
        try:
            return _hx_method(CALL)
        except MemoryError:
            if not _hx_reruns:
                raise
            ARGS[0].release_memory()  # (its own MemoryError keeps the first as its context)
        return _hx_method(CALL)
    """, reruns=reruns, observers=observers, name=name, method=method, spans=_spans)


def _spans(name: str, method: Callable[..., Any], args: tuple[Any, ...],
           kwargs: dict[str, Any], reruns: bool) -> Any:
    """`_span`, once more after a MemoryError where the method `reruns` (each run its own span,
    the backend's `release_memory` between them)."""
    try:
        return _span(name, method, args, kwargs)
    except MemoryError:
        if not reruns:
            raise
        args[0].release_memory()
    return _span(name, method, args, kwargs)


def _span(name: str, method: Callable[..., Any], args: tuple[Any, ...],
          kwargs: dict[str, Any]) -> Any:
    """`method(*args, **kwargs)` (args[0]: the backend) observed by the hooks as the primitive or
    transfer `name`."""
    backend, *rest = args
    if name in TRANSFERS:  # recorded on the device that sends (to_host) or receives
        data = rest[0] if rest else next(iter(kwargs.values()))
        target = rest[1] if len(rest) > 1 else kwargs.get("device")
        device = data._buffer.device if name == "to_host" else \
            target or Device(backend.device_type)
        nbytes = int(getattr(data, "nbytes", 0) or data.size * data.dtype.itemsize)
        return observe("transfer", TRANSFERS[name], device, {"nbytes": nbytes}, method, *args,
                       **kwargs)
    label = name
    if name in _NAMED and rest:
        what = getattr(rest[0], "name", rest[0])
        label = f"{name}:{what}" if isinstance(what, str) else name
    device = device_of((*rest, *kwargs.values())) or Device(backend.device_type)
    return observe("primitive", label, device, {}, method, *args, **kwargs)


def _observe_points(cls: type) -> None:
    """Give the primitives and transfers `cls` defines itself their hook points."""
    for name in (*PRIMITIVES, *TRANSFERS):
        method = vars(cls).get(name)
        if method is not None and not getattr(method, "__isabstractmethod__", False):
            setattr(cls, name, _observed(name, method))


class Backend(ABC):
    """Runs the operations of one device type. Subclasses set `device_type` and implement the
    abstract methods; see the module docstring for the conventions every primitive follows."""

    device_type: DeviceType
    #: Higher wins when hxarray picks a device by itself (`best_device`, `select_device`):
    #: the CPU is 0, CUDA 10; a plug-in declares its own (the reference backend: -10).
    priority: int = 0

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _observe_points(cls)

    def __init__(self) -> None:
        self._fallback_lock = threading.Lock()
        self.host_fallbacks: collections.Counter[str] = collections.Counter()

    # == device runtime ============================================================================
    def release_memory(self) -> None:
        """Free what can be freed after a primitive marked `reruns_after_memory_error` ran out
        of memory, before it runs once more; MemoryError where nothing can be. Default: nothing
        can."""
        raise MemoryError(f"out of memory on {self.device_type}: nothing to free")

    def unavailable_reason(self) -> str | None:
        """Why this backend cannot run here, or None when it can."""
        return None

    @abstractmethod
    def device_count(self) -> int:
        """How many devices of this type exist (indices 0 .. count - 1)."""

    @abstractmethod
    def capabilities(self, device: Device) -> dict[str, Any]:
        """At least: name, vendor, total_memory, free_memory, compute_units."""

    def performance(self, device: Device) -> dict[str, Any] | None:
        """`{"peak_flops": {dtype name: FLOP/s}, "memory_bandwidth": bytes/s}` read from the
        device's properties, or None where they cannot be read: then hxarray measures them once
        through the primitives and caches them (`hxarray.backends.performance`)."""
        return None

    @abstractmethod
    def allocator(self, device: Device) -> Allocator:
        """The device's caching allocator (stream-aware where work runs asynchronously)."""

    @abstractmethod
    def default_stream(self, device: Device) -> Stream: ...

    @abstractmethod
    def create_stream(self, device: Device, **options: Any) -> Stream: ...

    @abstractmethod
    def create_event(self, device: Device, **options: Any) -> Event: ...

    def synchronize(self, device: Device) -> None:
        """Wait for all work on `device` (its default stream and the current one)."""
        self.default_stream(device).synchronize()
        current_stream(device).synchronize()

    @staticmethod
    def stream(device: Device) -> Stream:
        """The stream a primitive on `device` runs on now."""
        return current_stream(device)

    # -- memory and interchange -------------------------------------------------------------------
    def empty(self, shape: Shape, dtype: DType, device: Device) -> Array:
        """A new C-contiguous array with uninitialised memory, allocated on the current stream.
        Every array a backend creates comes from here: from the pool of the memory scope of
        `device` open in this thread or task (`hal.scope.current_pool`), else from the device's
        allocator."""
        pool = current_pool(device)
        return self.empty_in(pool or self.allocator(device), shape, dtype, device)

    def empty_in(self, allocator: Allocator, shape: Shape, dtype: DType,
                 device: Device) -> Array:
        """`empty` with the memory from `allocator`: the device's, or a memory scope's pool."""
        nbytes, strides = FRESH_LAYOUTS.get((shape, dtype)) or fresh_layout(shape, dtype)
        return Array._make(allocator.allocate(nbytes), dtype, shape, strides)

    def scope_allocator(self, device: Device, managed: bool = False) -> Allocator:
        """A fresh pool for a memory scope on `device`: by default a caching allocator of the
        device allocator's kind over the same raw allocator (`hal.scope.scope_pool`). With
        `managed`, a pool of managed memory, which the host addresses in place; by default
        there is none (ValueError)."""
        if managed:
            raise ValueError(f"{device} has no managed memory (its capabilities()"
                             "['managed_memory'] is False): memory_scope(..., managed=True) "
                             "needs a device that has it, such as a CUDA GPU")
        return scope_pool(self.allocator(device))

    def prefetch(self, x: Array, device: Device) -> None:
        """Move the managed memory of `x` to `device` (the CPU: the host) ahead of its use
        there, queued on the current stream. Default: x is in no managed memory (ValueError)."""
        raise ValueError(f"prefetch(): the array on {x.device} is not in managed memory (arrays "
                         "made inside memory_scope(device, managed=True) are); to_device() "
                         "copies an array to another device")

    def host_view(self, x: Array) -> np.ndarray | None:
        """A numpy view of `x` that keeps its buffer alive, or None if the memory is not
        host-accessible (then callers copy with `to_host`)."""
        return None

    def adopt(self, data: np.ndarray) -> Array | None:
        """An array sharing the host array `data`'s memory, or None if this device cannot use
        host memory in place."""
        return None

    def from_host(self, data: np.ndarray, device: Device) -> Array:
        """A new array holding a copy of the host array `data` (same dtype and shape; any
        layout): through the allocator's `copy_from_host` on the current stream."""
        import numpy as np

        contiguous = data if data.flags.c_contiguous else np.array(data, order="C")
        out = self.empty(contiguous.shape, FROM_NUMPY[contiguous.dtype], device)
        if out._buffer.nbytes:
            out._buffer.allocator.copy_from_host(out._buffer.block, out._offset, contiguous,
                                                 self.stream(device))
        return out

    def to_host(self, x: Array) -> np.ndarray:
        """A numpy copy of `x`: a contiguous copy on the device where needed, then the
        allocator's `copy_to_host` on the current stream, waited for."""
        import numpy as np

        device = x._buffer.device
        if not _views.is_contiguous(x):
            x = self.copy(x)
        out = np.empty(x._shape, x._dtype.numpy)
        if out.nbytes:
            stream = self.stream(device)
            x._buffer.allocator.copy_to_host(x._buffer.block, x._offset, out, stream)
            stream.synchronize()
        return out

    def copy_to(self, x: Array, device: Device) -> Array:
        """A copy of `x` on another device of this backend's type; by default staged through
        host memory (a backend with peer copies overrides it)."""
        return self.from_host(self.to_host(x), device)

    @abstractmethod
    def dlpack_device(self, device: Device) -> tuple[int, int]:
        """The DLPack (device type, index) pair of `device`."""

    def dlpack(self, x: Array, *, stream: Any, max_version: tuple[int, int] | None,
               dl_device: tuple[int, int] | None, copy: bool | None) -> Any:
        """A DLPack capsule of `x` (spec: array.__dlpack__). By default: host-accessible memory
        is exported in place (after the device's work is done); other memory raises
        BufferError unless a host copy is allowed and asked for with dl_device=(kDLCPU, 0)."""
        host = self.host_view(x)
        if host is None:
            if dl_device is None or tuple(dl_device) != (1, 0) or copy is False:
                raise BufferError(f"an array on {x.device} can only be exported to DLPack as a "
                                  "host copy: pass dl_device=(1, 0) and copy=None or True")
            host, copy = self.to_host(x), False
        elif dl_device is not None and tuple(dl_device) != self.dlpack_device(x.device):
            raise BufferError(f"cannot export an array on {x.device} to DLPack device "
                              f"{tuple(dl_device)}")
        else:
            self.synchronize(x._buffer.device)
        if max_version is None:  # a legacy consumer: no versioned capsule, no copy flag
            return (host.copy() if copy else host).__dlpack__()
        return host.__dlpack__(max_version=max_version, copy=copy)

    # == compute primitives ========================================================================
    @abstractmethod
    def assign(self, dst: Array, src: Array | Scalar) -> None:
        """dst[...] = src: `src` (an array broadcastable to dst's shape, of any dtype, or a
        scalar) cast to dst's dtype as numpy's unsafe casting does, written into the view
        `dst`. `src` and `dst` may overlap only if they are the same view."""

    @abstractmethod
    def elementwise(self, op: Op, args: Sequence[Array | Scalar | None], signature: Signature,
                    shape: Shape, out: Array | None = None) -> Array:
        """The operation `op` (an `hxarray._ops.Op`) on `args` broadcast to `shape`, as the
        namespace resolved it: `signature.operands` are the args' dtypes (a scalar's: the dtype
        it stands for), each converted to `signature.compute` on load (an `op.selects`
        condition stays bool), the result of dtype `signature.result` written into `out` (a
        view of that shape and dtype that may alias an operand element for element) or a new
        array. Scalars are Python numbers; an `op.chain` operand may be None (skipped). A
        backend takes the operation's data (its numpy kernel, CUDA expression, `selects`,
        `chain`) from `op` and never looks an operation up by name or promotes dtypes again."""

    @abstractmethod
    def reduce(self, op: Reduction, x: Array, axes: tuple[int, ...], out: Array, *,
               positive_zero: bool = False) -> None:
        """The reduction `op` (an `hxarray._ops.Reduction`: sum, prod, max, min, all, any) over
        the (sorted, distinct) `axes` of `x` into `out`, whose shape is x's without those axes
        and whose dtype the namespace chose (`op.accumulates`: the operation computes in it, an
        explicit `dtype=` too; else max/min keep x's dtype and all/any are bool). Each result
        starts from `op.identity`, so over no elements it is the identity (an operation whose
        identity is None never gets an empty input), and over no axes each element is combined
        with the identity alone. Where `op.signed_zero`, a floating-point result starts from
        -0, so a sum of zeros that are all -0 is -0 (complex: part by part), or from +0 where
        `positive_zero` (numpy's sums: such a sum is +0); NaN propagates through max and min.
        A backend takes the operation's data (`op.ufunc`, `op.cuda`, ...) from `op` and never
        looks a reduction up by name."""

    @abstractmethod
    def arg_reduce(self, op: ArgReduction, x: Array, axis: int | None, out: Array) -> None:
        """The arg-reduction `op` (an `hxarray._ops.ArgReduction`: argmax, argmin) along `axis`
        (None: over the flattened array) into the int64 `out`: the first index of the extremum;
        a NaN counts as the extremum (its first index). The reduced extent is never empty."""

    @abstractmethod
    def scan(self, op: Scan, x: Array, axis: int, out: Array) -> None:
        """The scan `op` (an `hxarray._ops.Scan`: cumulative_sum, cumulative_prod, folding with
        `op.folds`) of `x` along `axis` into `out` (a view of x's shape, accumulating in out's
        dtype)."""

    @abstractmethod
    def matmul(self, a: Array, b: Array, out: Array) -> None:
        """out = a @ b for a (..., M, K) and b (..., K, N) of out's dtype with the same batch
        shape (axes may be broadcast views); out is (..., M, N)."""

    @abstractmethod
    def sort(self, x: Array, axis: int, stable: bool, out: Array) -> None:
        """out = x sorted ascending along `axis`, NaNs last (-0 and +0 in either order)."""

    @abstractmethod
    def argsort(self, x: Array, axis: int, stable: bool, out: Array) -> None:
        """out (int64) = the permutation along `axis` that sorts x ascending, NaNs last; equal
        elements keep their order when `stable`."""

    @abstractmethod
    def searchsorted(self, x1: Array, x2: Array, side: str, out: Array) -> None:
        """out (int64, x2's shape) = insertion points of x2 into the ascending 1-D x1 (of x2's
        dtype), numpy's rule for `side` ('left' or 'right'); NaNs sort last."""

    @abstractmethod
    def nonzero(self, x: Array) -> tuple[Array, ...]:
        """The int64 indices of the non-zero elements of `x` (ndim >= 1), one array per axis,
        in C order."""

    @abstractmethod
    def gather(self, x: Array, axis: int, indices: Sequence[Array], out: Array) -> None:
        """out = x[(:,) * axis + indices]: the integer index arrays `indices` (any integer
        dtype, one shape B, values in [-n, n) of the axis they index, negative ones counted from
        the end) select along axes axis .. axis + len(indices) - 1; out has shape
        x.shape[:axis] + B + x.shape[axis + len(indices):]. IndexError for an index out of
        range."""

    @abstractmethod
    def scatter(self, x: Array, axis: int, indices: Sequence[Array], values: Array) -> None:
        """x[(:,) * axis + indices] = values, in place: the inverse of `gather`, with `values`
        of x's dtype broadcast to the gathered shape. Where an element is selected more than
        once, one of its values is stored."""

    @abstractmethod
    def unique(self, x: Array) -> tuple[Array, Array, Array, Array]:
        """Of the flattened `x`: the sorted distinct values (every NaN distinct), the int64
        index of each value's first occurrence, the int64 inverse indices shaped like x, and
        the int64 counts."""

    # -- replaying recorded calls (`hxarray.graph`, backends/recording.py) ------------------------
    def prepare(self, call: Call) -> Callable[[], Any]:
        """The recorded primitive call `call` as an executor of no arguments that runs it again
        on the same arrays, with everything the call decided kept (a graph's replay runs these in
        order). Default: the primitive called again; an array a primitive made is made again
        and assigned into the recorded one. A backend overrides it to decide once what it would
        decide per call."""
        primitive, args, kwargs = call
        if primitive == "call":  # a prepared call of a fused expression
            function, arrays, out = args
            return functools.partial(function, arrays, out)
        if primitive == "make":
            method, made_args, made = args
            assign = self.assign

            def again() -> None:
                fresh = method(*made_args, **kwargs)
                if made.__class__ is Array:
                    assign(made, fresh)
                else:  # (linalg's tuples)
                    for into, value in zip(made, fresh, strict=True):
                        assign(into, value)

            return again
        return functools.partial(getattr(self, primitive), *args, **kwargs)

    def prepare_all(self, calls: Sequence[Call], inputs: Sequence[Array]
                    ) -> Callable[[Sequence[Array]], None]:
        """The recorded calls `calls`, which read the arrays `inputs`, as one executor of a
        graph's replay: it writes its arguments (arrays of the inputs' dtypes and shapes, any
        layout) into `inputs`, then runs the calls again in order. Default: `assign`, then
        each call's `prepare`, one after the other."""
        steps = [self.prepare(call) for call in calls]
        assign = self.assign

        def replay(arguments: Sequence[Array]) -> None:
            for into, value in zip(inputs, arguments, strict=True):
                assign(into, value)
            for step in steps:
                step()

        return replay

    # -- fused expressions (`hxarray.fuse`, backends/fusion.py) -----------------------------------
    def fused(self, expression: fusion.Expression, operands: Sequence[Array | Scalar],
              out: Array) -> None:
        """out = `expression` of `operands`, broadcast to out's shape (out is fresh and
        C-contiguous). Default: one primitive call per step; a backend that compiles the
        expression into one kernel overrides it."""
        fusion.run_unfused(self, expression, operands, out)

    def fused_call(self, expression: fusion.Expression, scalars: Sequence[Scalar | None]
                   ) -> Callable[[Sequence[Array], Array], None]:
        """`fused` of `expression` prepared for calls whose scalar operands are `scalars` (None
        at the arrays' places): a function of the array operands, in order, and out (a fused
        function's warm call). Default: `fused` with the operands put together."""
        def call(arrays: Sequence[Array], out: Array) -> None:
            self.fused(expression, fusion.operands_of(scalars, arrays), out)

        return call

    def fused_layout(self, call: Callable[[Sequence[Array], Array], None],
                     arrays: Sequence[Array], shape: Shape
                     ) -> Callable[[Sequence[Array], Array], None]:
        """`call` (from `fused_call`) for array operands laid out as `arrays` (their dtypes,
        shapes and strides; the memory may be other) and a fresh out of `shape`: a cheaper call
        where the layout decides how it runs, which checks nothing. Default: `call`."""
        return call

    def fused_reduce(self, op: Reduction, expression: fusion.Expression,
                     operands: Sequence[Array | Scalar], shape: Shape, axes: tuple[int, ...],
                     out: Array, after: fusion.Expression | None = None,
                     after_operands: Sequence[Scalar | None] = (), *,
                     positive_zero: bool = False) -> None:
        """out = the reduction `op` (as `reduce`, `positive_zero` too) over `axes` of
        `expression` broadcast to `shape`; with `after`, each result goes through that
        element-wise expression on its way to out (its array operand: the result, in
        `fusion.reduced_dtype(after)`; the others: the scalars of `after_operands`, None at the
        array's position). Default: the expression into a temporary and `reduce` (into another,
        then `fused` with `after`)."""
        device = out._buffer.device
        if after is not None:
            reduced = self.empty(out._shape, fusion.reduced_dtype(after), device)
            self.fused_reduce(op, expression, operands, shape, axes, reduced,
                              positive_zero=positive_zero)
            self.fused(after, [reduced if v is None else v for v in after_operands], out)
            return
        value = self.empty(shape, expression.dtype, device)
        self.fused(expression, operands, value)
        self.reduce(op, value, axes, out, positive_zero=positive_zero)

    def fused_reduce_call(self, op: Reduction, expression: fusion.Expression,
                          scalars: Sequence[Scalar | None], arrays: Sequence[Array],
                          shape: Shape, axes: tuple[int, ...], dtype: DType,
                          after: fusion.Expression | None = None,
                          after_operands: Sequence[Scalar | None] = (), *,
                          positive_zero: bool = False
                          ) -> Callable[[Sequence[Array], Array], None]:
        """`fused_reduce` prepared for calls whose scalar operands are `scalars` (None at the
        arrays' places) and whose array operands are laid out as `arrays` (broadcast to
        `shape`), reducing into `dtype` (out's, or with `after` its array operand's): a
        function of the array operands, in order, and out (a fused function's warm call).
        Default: `fused_reduce` with the operands put together."""
        def call(arrays: Sequence[Array], out: Array) -> None:
            self.fused_reduce(op, expression, fusion.operands_of(scalars, arrays), shape, axes,
                              out, after, after_operands, positive_zero=positive_zero)

        return call

    # -- optional primitives: a host copy through the CPU backend by default -----------------------
    def linalg(self, name: str, *args: Array, **params: Any) -> Any:
        """A `linalg` factorisation or solver by name (cholesky, det, eig, eigh, eigvals,
        eigvalsh, inv, qr, slogdet, solve, svd, svdvals; parameters as `hxarray.linalg`
        resolves them); an array or a tuple of arrays. ValueError for singular or indefinite
        input."""
        return self._on_host("linalg." + name, lambda cpu, *a: cpu.linalg(name, *a, **params),
                             *args)

    def fft(self, name: str, x: Array, **params: Any) -> Array:
        """An `fft` transform by name (fft, ifft, fftn, ifftn, rfft, irfft, rfftn, irfftn, hfft,
        ihfft) with `n`/`s`, `axis`/`axes` and `norm` resolved by `hxarray.fft`."""
        return self._on_host("fft." + name, lambda cpu, a: cpu.fft(name, a, **params), x)

    def random_bits(self, kind: str, key: tuple[int, int], position: int, out: Array,
                    params: tuple[int, int]) -> None:
        """out (fresh, C-contiguous) = the random transform `kind` (`backends/philox.py`'s
        KINDS) of the Philox4x64-10 stream of `key` from word `position` (4 x counter + lane),
        element i reading the words at its fixed place; `params`: the transform's two 64-bit
        words (low and range, loc and scale as doubles' bits). Default: the numpy
        implementation of the same source on the host (the same bits), copied in."""
        from . import philox as rng

        values = rng.evaluate(rng.KINDS[kind], out._dtype.numpy, key, position, 0, out.size,
                              params)
        self.assign(out, self.from_host(values.reshape(out._shape), out._buffer.device))

    def _on_host(self, label: str, run: Any, *args: Array) -> Any:
        """`run(cpu_backend, *host_arrays)` on CPU copies of `args`, results copied back to the
        device of the first argument; counted in `host_fallbacks[label]`."""
        device = args[0]._buffer.device
        cpu = Device(DeviceType.CPU)
        backend = cpu.backend
        with self._fallback_lock:
            self.host_fallbacks[label] += 1
        result = run(backend, *(backend.from_host(self.to_host(a), cpu) for a in args))
        if isinstance(result, tuple):
            return tuple(self.from_host(backend.to_host(r), device) for r in result)
        return self.from_host(backend.to_host(result), device)

    # == compositions: defaults built from the primitives, overridden only to be faster ============
    def full(self, shape: Shape, value: Scalar, dtype: DType, device: Device) -> Array:
        out = self.empty(shape, dtype, device)
        self.assign(out, value)
        return out

    def copy(self, x: Array, dtype: DType | None = None) -> Array:
        """A C-contiguous copy of `x`, cast to `dtype` if given."""
        out = self.empty(x._shape, x._dtype if dtype is None else dtype, x._buffer.device)
        self.assign(out, x)
        return out

    def arange(self, start: float, stop: float, step: float, dtype: DType,
               device: Device) -> Array:
        """numpy's arange(start, stop, step) in `dtype` (the namespace has checked the
        arguments): computed on the host and copied in, by default."""
        import numpy as np

        return self.from_host(np.arange(start, stop, step, dtype=dtype.numpy), device)

    def concat(self, arrays: Sequence[Array], axis: int, out: Array) -> None:
        """out = the arrays (same shape off `axis`) joined along `axis`: one `assign` per
        array into its slice of `out`."""
        start = 0
        for a in arrays:
            n = a._shape[axis]
            if a.size:
                self.assign(_views.slice_axis(out, axis, start, start + n), a)
            start += n

    def compress(self, x: Array, mask: Array) -> Array:
        """x[mask] for a boolean `mask` of x's leading dimensions: `gather` at the mask's
        non-zero positions, over the masked axes merged into one (one index array, where numpy
        takes at most 63)."""
        if mask.ndim > 1:
            x, mask = (a if _views.is_contiguous(a) else self.copy(a) for a in (x, mask))
            lead = 1
            for n in mask._shape:
                lead *= n
            rest = x._shape[mask.ndim:]
            x = _views.view(x, (lead, *rest), (x._dtype.itemsize * (lead and x.size // lead),
                                               *x._strides[mask.ndim:]), x._offset)
            mask = _views.flatten(mask)
        indices = self.nonzero(mask)
        count = indices[0]._shape[0]
        out = self.empty((count, *x._shape[mask.ndim:]), x._dtype, x._buffer.device)
        if count:
            self.gather(x, 0, indices, out)
        return out

    def place(self, x: Array, mask: Array, value: Array | Scalar) -> None:
        """x[mask] = value, in place, for a boolean `mask` of x's leading dimensions and a
        `value` that is a 0-D array of x's dtype or a Python scalar the namespace has checked
        for it (neither shares memory with x other than as the same view): `scatter` at the
        mask's non-zero positions."""
        indices = self.nonzero(mask)
        count = indices[0]._shape[0]
        if not count or 0 in x._shape:
            return
        if not isinstance(value, Array):
            value = self.full((), value, x._dtype, x._buffer.device)
        rest = x._shape[mask.ndim:]
        self.scatter(x, 0, indices, _views.broadcast_to(value, (count, *rest)))

    def bincount(self, x: Array, out: Array) -> None:
        """out (int64, 1-D) = how many elements of the 1-D int64 `x` equal each index of out
        (the namespace has checked that every element of x is one). Default: x sorted, then the
        run of each index found with `searchsorted` (a backend with a scatter-add counts in one
        pass)."""
        device = x._buffer.device
        n = out._shape[0]
        if not x._shape[0]:
            self.assign(out, 0)
            return
        ordered = self.empty(x._shape, int64, device)
        self.sort(x, 0, False, ordered)
        bins = self.arange(0, n, 1, int64, device)
        starts, ends = (self.empty((n,), int64, device) for _ in range(2))
        self.searchsorted(ordered, bins, "left", starts)
        self.searchsorted(ordered, bins, "right", ends)
        subtract = OPS["subtract"]
        self.elementwise(subtract, (ends, starts), subtract.signature(int64, int64), (n,), out)

    def squared_deviations(self, x: Array, axes: tuple[int, ...], out: Array) -> None:
        """out = the sum over the (sorted, distinct) `axes` of the squared deviations of the
        real floating-point x from its mean over them: var's numerator, in x's dtype; out's
        shape is x's without `axes`, none of which is empty; NaN where x holds a NaN or an
        infinity. Default: two passes (the mean, then the sum of the squared deviations); a
        backend may fold them into one (Welford's update) that is as accurate on data far from
        zero (1e8 plus noise)."""
        count = 1
        for a in axes:
            count *= x._shape[a]
        divide, subtract, multiply = OPS["divide"], OPS["subtract"], OPS["multiply"]
        mean = self.empty(out._shape, x._dtype, x._buffer.device)
        self.reduce(REDUCTIONS["sum"], x, axes, mean)
        self.elementwise(divide, (mean, count), divide.signature(x._dtype, x._dtype),
                         mean._shape, out=mean)
        deviation = self.elementwise(subtract, (x, _views.expand(mean, axes)),
                                     subtract.signature(x._dtype, x._dtype), x._shape)
        self.elementwise(multiply, (deviation, deviation), multiply.signature(x._dtype, x._dtype),
                         x._shape, out=deviation)
        self.reduce(REDUCTIONS["sum"], deviation, axes, out)

    def isin(self, x1: Array, x2: Array, invert: bool, out: Array) -> None:
        """out (bool, x1's shape) = whether each element of x1 (of x2's dtype) equals one of
        x2 (NaN equals nothing): x2 sorted, then each x1 looked up with `searchsorted`; complex
        values, which do not sort, are compared with every element of x2."""
        device = x1._buffer.device
        flat = x2 if _views.is_contiguous(x2) else self.copy(x2)
        flat = _views.flatten(flat)
        n = flat._shape[0]
        if n == 0 or x1._dtype in COMPLEX_FLOATING:  # every pair, over x1 flattened
            first = _views.flatten(x1 if _views.is_contiguous(x1) else self.copy(x1))
            pairs = (first._shape[0], n)
            equal = self.elementwise(OPS["equal"], (_views.expand(first, (1,)), flat),
                                     OPS["equal"].signature(x1._dtype, x1._dtype), pairs)
            found = self.empty(first._shape, equal._dtype, device)
            self.reduce(REDUCTIONS["any"], equal, (1,), found)
            self.assign(out, _views.view(found, x1._shape,
                                         _views.contiguous_strides(x1._shape, 1), 0))
        else:
            ordered = self.empty(flat._shape, flat._dtype, device)
            self.sort(flat, 0, False, ordered)
            where = self.empty(x1._shape, int64, device)
            self.searchsorted(ordered, x1, "left", where)
            minimum = OPS["minimum"]
            self.elementwise(minimum, (where, n - 1), minimum.signature(int64, int64), x1._shape,
                             out=where)
            found = self.empty(x1._shape, x1._dtype, device)
            self.gather(ordered, 0, (where,), found)
            self.elementwise(OPS["equal"], (found, x1),
                             OPS["equal"].signature(x1._dtype, x1._dtype), x1._shape, out=out)
        if invert:
            logical_not = OPS["logical_not"]
            self.elementwise(logical_not, (out,), logical_not.signature(out._dtype), out._shape,
                             out=out)


_observe_points(Backend)
