"""Your own CUDA kernels on hxarray arrays: `RawModule` and `RawKernel`, as in CuPy.

The same call runs on a GPU (through CuPy and NVRTC) or on the CPU simulator
(`HXARRAY_CUDA_DRIVER=sim`, docs/cuda.md), so a kernel can be unit-tested on a laptop::

    import hxarray as xp
    from hxarray import cuda

    scale = cuda.RawKernel(r'''
    extern "C" __global__ void scale(float* x, float a, long long n) {
        for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
             i += (long long)gridDim.x * blockDim.x)
            x[i] *= a;
    }''', "scale")
    x = xp.ones(1000, dtype=xp.float32, device="cuda:0")
    scale((8,), (128,), (x, 2.5, x.size))

Arguments: hxarray arrays on the kernel's device pass the address of their first element
(read-only arrays, such as broadcast views, only to parameters declared `const T*`);
Python and numpy scalars are typed by the kernel's parameters (from the simulator, or from an
`extern "C"` declaration; a value that does not fit is an error, never garbage bytes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._array import Array
from .hal.device import Device, DeviceType, default_device

if TYPE_CHECKING:
    from .backends.cuda.backend import CudaBackend
    from .backends.cuda.driver import DeviceProperties, Driver

__all__ = ["RawKernel", "RawModule", "device_count", "is_simulated", "properties"]


def _cuda_device(device: Any) -> Device:
    """`device` (default: the default device if it is a CUDA device, else cuda:0), checked to be
    a usable CUDA device."""
    if device is None:
        device = default_device()
        if device.type is not DeviceType.CUDA:
            device = Device("cuda", 0)
    device = Device(device)
    if device.type is not DeviceType.CUDA:
        raise ValueError(f"{device} is not a CUDA device; CUDA kernels run on cuda:N devices")
    device.backend  # noqa: B018 - DeviceUnavailableError saying why, if it cannot be used
    return device


def _backend(device: Device) -> CudaBackend:
    from .backends.cuda.backend import CudaBackend

    backend = device.backend
    assert isinstance(backend, CudaBackend)  # the backend of the cuda device type
    return backend


def _driver(device: Device) -> Driver:
    driver = _backend(device).driver
    assert driver is not None  # the device is usable (`_cuda_device` checked)
    return driver


def device_count() -> int:
    """How many CUDA devices there are (simulated ones included); 0 where CUDA cannot run."""
    from .backends.registry import registry

    backend = registry.get(DeviceType.CUDA)
    return 0 if backend.unavailable_reason() else backend.device_count()


def is_simulated(device: Device | str | None = None) -> bool:
    """Whether `device` runs on the CPU simulator rather than a GPU."""
    return _backend(_cuda_device(device)).simulated


def properties(device: Device | str | None = None) -> DeviceProperties:
    """The device's properties (name, compute capability, SM count, limits, memory, ...)."""
    device = _cuda_device(device)
    return _driver(device).properties(device.index)


class RawModule:
    """A CUDA C source compiled for `device` (NVRTC options; `name_expressions` name template
    instantiations to export); `get_function(name)` gives a `RawKernel`."""

    def __init__(self, code: str, *, options: Sequence[str] = (),
                 name_expressions: Sequence[str] = (), device: Any = None) -> None:
        if not isinstance(code, str):
            raise TypeError(f"RawModule: code must be a str of CUDA C, got {type(code).__name__}")
        from .backends.cuda.raw import RawModule as DriverModule

        self.device = _cuda_device(device)
        self.code = code
        self._module = DriverModule(_driver(self.device), code, tuple(options),
                                    tuple(name_expressions), self.device.index)

    def get_function(self, name: str) -> RawKernel:
        kernel = RawKernel.__new__(RawKernel)
        kernel._bind(self.device, self._module.get_function(name))
        return kernel


class RawKernel:
    """Kernel `name` of a CUDA C source, called as `kernel(grid, block, args, shared_mem=0,
    stream=None)`; it runs on `stream` (an hxarray Stream of the device), by default the
    device's current stream, asynchronously, like every hxarray operation."""

    def __init__(self, code: str, name: str, *, options: Sequence[str] = (),
                 device: Any = None) -> None:
        module = RawModule(code, options=options, device=device)
        self._bind(module.device, module._module.get_function(name))

    def _bind(self, device: Device, kernel: Any) -> None:
        self.device = device
        self.name = kernel.name
        self._kernel = kernel

    @property
    def attributes(self) -> Any:
        """max_threads_per_block, num_regs, shared_size_bytes, ..."""
        return self._kernel.attributes

    def __call__(self, grid: Any, block: Any, args: Sequence[Any], shared_mem: int = 0,
                 stream: Any = None) -> None:
        from .backends.cuda.raw import refuse_read_only, to_kernel_args
        from .hal.stream import Stream, current_stream

        if not isinstance(args, (tuple, list)):
            raise TypeError(f"kernel arguments are a tuple or list, got {type(args).__name__}")
        if stream is None:
            stream = current_stream(self.device)
        elif not isinstance(stream, Stream) or stream.device is not self.device:
            raise ValueError(f"stream must be an hxarray Stream of {self.device}, got {stream!r}")
        values = []
        for i, a in enumerate(args):
            if a.__class__ is Array:
                if a._buffer.device is not self.device:
                    raise ValueError(f"argument {i} is an array on {a.device}; this kernel runs "
                                     f"on {self.device} (move it with to_device())")
                if a._readonly and i not in self._kernel.const:
                    refuse_read_only(i, self.name)
                a._buffer.allocator.record_stream(a._buffer.block, stream)  # (scope pools too)
                a = a._buffer.address + a._offset
            values.append(a)
        typed = to_kernel_args(self._kernel.params, values, self.name)
        driver = _driver(self.device)
        driver.launch(self._kernel.function, grid, block, typed, shared_mem, stream.handle)
