"""Typed kernel launches over any `Driver`: the layer the public `hxarray.cuda.RawKernel` will wrap.

`RawKernel(driver, code, name)(grid, block, args)` converts each argument to the numpy scalar the
kernel's parameter needs and launches. The parameter list comes from the driver where it knows it
(the simulator compiles it into the module) and otherwise from the source's declaration of an
`extern "C"` kernel; a wrong argument count, a value that does not fit, or a numpy scalar of the
wrong size or kind is a TypeError (or ValueError/OverflowError for a value out of range), never
garbage bytes.

Accepted per parameter kind: pointers take `numpy.uintp`/`numpy.uint64` scalars, Python ints
(device addresses) or objects with `__cuda_array_interface__`; integer, floating and bool
parameters take Python scalars (typed by the parameter) or numpy scalars of the same size and kind;
struct parameters take a numpy scalar of the same size. Read-only memory (an interface whose data
is marked read-only) goes only to parameters declared as pointers to const (`const T*`): anything
else is a ValueError naming the argument.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NoReturn

import numpy as np

from .driver import Driver, Function, Module, ParamInfo

__all__ = ["RawKernel", "RawModule", "const_pointers", "parse_params", "refuse_read_only",
           "to_kernel_args"]

_C_TYPES: dict[str, tuple[int, str]] = {
    "bool": (1, "bool"), "char": (1, "signed"), "signed char": (1, "signed"),
    "unsigned char": (1, "unsigned"), "int8_t": (1, "signed"), "uint8_t": (1, "unsigned"),
    "short": (2, "signed"), "short int": (2, "signed"), "unsigned short": (2, "unsigned"),
    "int16_t": (2, "signed"), "uint16_t": (2, "unsigned"),
    "int": (4, "signed"), "signed": (4, "signed"), "signed int": (4, "signed"),
    "unsigned": (4, "unsigned"), "unsigned int": (4, "unsigned"), "int32_t": (4, "signed"),
    "uint32_t": (4, "unsigned"),
    "long": (8, "signed"), "long int": (8, "signed"), "long long": (8, "signed"),
    "long long int": (8, "signed"), "int64_t": (8, "signed"), "ptrdiff_t": (8, "signed"),
    "ssize_t": (8, "signed"), "unsigned long": (8, "unsigned"),
    "unsigned long long": (8, "unsigned"), "size_t": (8, "unsigned"),
    "uint64_t": (8, "unsigned"), "float": (4, "float"), "double": (8, "float"),
    "complex<float>": (8, "other"), "complex<double>": (16, "other"),
    "thrust::complex<float>": (8, "other"), "thrust::complex<double>": (16, "other"),
}
_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict|__grid_constant__)\b")


def _declarations(source: str, name: str) -> list[str] | None:
    """The parameter declarations of `extern "C"` kernel `name` as written, or None when its
    declaration cannot be found."""
    from ..codegen.compiler import strip_comments_and_strings

    code = strip_comments_and_strings(source)
    m = re.search(r"\b__global__\b[^;{(]*?\b" + re.escape(name) + r"\s*\(([^)]*)\)", code)
    if m is None:
        return None
    text = m.group(1).strip()
    return [] if text in ("", "void") else text.split(",")


def parse_params(source: str, name: str) -> tuple[ParamInfo, ...] | None:
    """The parameters of `extern "C"` kernel `name` from its declaration, or None when they
    cannot be told from the text (a template, a macro, an unknown type)."""
    declarations = _declarations(source, name)
    if declarations is None:
        return None
    params = []
    for raw in declarations:
        decl = re.sub(r"\s+", " ", _QUALIFIERS.sub(" ", raw)).strip()
        if "*" in decl:
            params.append(ParamInfo(8, 8, "pointer"))
            continue
        decl = re.sub(r"\s*=.*$", "", decl)  # default value
        parts = decl.replace(" <", "<").replace("< ", "<").replace(" >", ">").split(" ")
        type_name = " ".join(parts[:-1]) if len(parts) > 1 else decl
        if type_name not in _C_TYPES:
            return None
        size, kind = _C_TYPES[type_name]
        params.append(ParamInfo(size, min(size, 8), kind))
    return tuple(params)


def const_pointers(source: str, name: str) -> frozenset[int]:
    """The positions of kernel `name`'s parameters declared as pointers to const (`const T*`,
    `T const*`), through which it cannot write; none where the declaration cannot be read (a
    template instantiated by name expression, a type the parser does not know)."""
    declarations = _declarations(source, name)
    if declarations is None or parse_params(source, name) is None:
        return frozenset()
    return frozenset(i for i, decl in enumerate(declarations)
                     if decl.count("*") == 1 and re.search(r"\bconst\b", decl.split("*")[0]))


_INT: dict[tuple[int, str], type[np.integer[Any]]] = {
        (1, "signed"): np.int8, (2, "signed"): np.int16, (4, "signed"): np.int32,
        (8, "signed"): np.int64, (1, "unsigned"): np.uint8, (2, "unsigned"): np.uint16,
        (4, "unsigned"): np.uint32, (8, "unsigned"): np.uint64}
_FLOAT = {4: np.float32, 8: np.float64}
_NUMPY_KIND = {"signed": "i", "unsigned": "u", "float": "f", "bool": "b"}


def refuse_read_only(i: int, name: str) -> NoReturn:
    """The ValueError for read-only memory passed as argument `i` of kernel `name` where the
    parameter is not a pointer to const."""
    raise ValueError(f"argument {i} of kernel '{name}' is read-only memory (a broadcast view "
                     f"or a view of one, whose elements share memory), but parameter {i} is not "
                     "declared as a pointer to const (`const T*`), so the kernel could write "
                     "through it; pass a copy (hxarray.asarray(x, copy=True)) or declare the "
                     "parameter const")


def _interface_address(value: Any, i: int, name: str, const: frozenset[int]) -> np.generic:
    """The device address of an object with `__cuda_array_interface__`, refused where its
    memory is read-only and parameter `i` is not a pointer to const."""
    address, read_only = value.__cuda_array_interface__["data"]
    if read_only and i not in const:
        refuse_read_only(i, name)
    return np.uintp(address)


def _pointer(value: Any, i: int, name: str, const: frozenset[int]) -> np.generic:
    if isinstance(value, (np.uintp, np.uint64)):
        return np.uintp(value)
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        if not 0 <= int(value) < 2**64:
            raise ValueError(f"argument {i}: {value} is not a device address")
        return np.uintp(int(value))
    interface = getattr(value, "__cuda_array_interface__", None)
    if isinstance(interface, dict) and "data" in interface:
        return _interface_address(value, i, name, const)
    raise TypeError(f"argument {i} is a pointer parameter; pass a device address (int or "
                    f"numpy.uintp) or an object with __cuda_array_interface__, not "
                    f"{type(value).__name__}")


def _convert(value: Any, p: ParamInfo, i: int, name: str, const: frozenset[int]) -> np.generic:
    if p.kind == "pointer":
        return _pointer(value, i, name, const)
    if isinstance(value, np.generic):
        if value.nbytes != p.size or (p.kind in _NUMPY_KIND and value.dtype.kind !=
                                      _NUMPY_KIND[p.kind]):
            raise TypeError(f"argument {i} is a {p.size}-byte {p.kind} parameter, got "
                            f"numpy.{value.dtype} ({value.nbytes} bytes)")
        return value
    if p.kind == "bool" and isinstance(value, bool):
        return np.bool_(value)
    if p.kind in ("signed", "unsigned") and isinstance(value, int) and not isinstance(value, bool):
        dtype = _INT[(p.size, p.kind)]
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise OverflowError(f"argument {i}: {value} does not fit the parameter's "
                                f"{np.dtype(dtype)} range {info.min}..{info.max}")
        return dtype(value)
    if p.kind == "float" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return _FLOAT[p.size](value)
    raise TypeError(f"argument {i} is a {p.size}-byte {p.kind} parameter; "
                    f"{type(value).__name__} {value!r} cannot be passed to it")


def _untyped(value: Any, i: int, name: str) -> np.generic:
    """Without a known signature: numpy scalars as they are, like CuPy; nothing else."""
    if isinstance(value, np.generic):
        return value
    interface = getattr(value, "__cuda_array_interface__", None)
    if isinstance(interface, dict):
        return _interface_address(value, i, name, frozenset())
    raise TypeError(f"argument {i}: the kernel's parameter types are unknown (a template or "
                    f"an unparsed declaration), so pass numpy scalars, not {type(value).__name__}")


def to_kernel_args(params: Sequence[ParamInfo] | None, args: Sequence[Any],
                   name: str = "kernel", const: frozenset[int] = frozenset()
                   ) -> list[np.generic]:
    """`args` typed for `params` (see the module docstring); read-only memory (a
    `__cuda_array_interface__` whose data is marked read-only) only at the positions `const`
    (the parameters declared as pointers to const)."""
    if not isinstance(args, (tuple, list)):
        raise TypeError(f"kernel arguments are a tuple or list, got {type(args).__name__}")
    if params is None:
        return [_untyped(a, i, name) for i, a in enumerate(args)]
    if len(args) != len(params):
        raise TypeError(f"kernel '{name}' takes {len(params)} arguments, {len(args)} given")
    return [_convert(a, p, i, name, const) for i, (a, p) in enumerate(zip(args, params))]


class RawKernel:
    """One kernel of a compiled module, callable as `kernel(grid, block, args, shared_mem=0,
    stream=None)` (the device's default stream when None)."""

    def __init__(self, driver: Driver, code: str, name: str, options: Sequence[str] = (),
                 device: int = 0, *, _module: Module | None = None) -> None:
        self.driver = driver
        self.device = device
        self.name = name
        module = _module if _module is not None else driver.compile(device, code, options)
        self.function: Function = module.get_function(name)
        self.params = self.function.params
        if self.params is None:
            self.params = parse_params(code, name)
        self.const = const_pointers(code, name)  # where read-only memory may be passed

    @property
    def attributes(self) -> Any:
        return self.function.attributes

    def __call__(self, grid: Any, block: Any, args: Sequence[Any], shared_mem: int = 0,
                 stream: Any = None) -> None:
        typed = to_kernel_args(self.params, args, self.name, self.const)
        if stream is None:
            stream = self.driver.default_stream(self.device)
        self.driver.launch(self.function, grid, block, typed, shared_mem, stream)


class RawModule:
    """A compiled source; `get_function(name)` gives a RawKernel (names or name expressions)."""

    def __init__(self, driver: Driver, code: str, options: Sequence[str] = (),
                 name_expressions: Sequence[str] = (), device: int = 0) -> None:
        self.driver = driver
        self.code = code
        self.device = device
        self.module = driver.compile(device, code, options, name_expressions)

    def get_function(self, name: str) -> RawKernel:
        return RawKernel(self.driver, self.code, name, device=self.device, _module=self.module)
