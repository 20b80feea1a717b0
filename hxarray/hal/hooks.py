"""Observers of what hxarray does: `with MyHook():` (or `install(hook)`) calls the hook at fixed
points, from every thread, until it is removed (after CuPy's `MemoryHook`).

The points:

- **operation**: a namespace function (`xp.add`, `xp.linalg.solve`) or array operator (`a + b`,
  `a[i]`, `x.to_device(d)`) called by the user;
- **primitive**: a backend primitive (`elementwise`, `matmul`, `reduce`, ...): where the CPU and
  host backends run their work;
- **kernel**: a kernel launch on a CUDA device; **compile**: a kernel compiled or loaded from the
  kernel cache;
- **transfer**: a copy host to device, device to host or device to device (`from_host`,
  `to_host`, `copy_to`), with its bytes;
- **allocation** and **free**: a block handed out or taken back by a caching allocator (a
  device's, or a memory scope's pool).

The first five are spans: `enter(kind, name, device, detail)` before the work (its result is the
token handed back), `exit(token, error)` after it (`error` the exception raised, or None). The
memory points are instants: `allocated(allocator, block)`, `freed(allocator, block)`; their
errors become a RuntimeWarning (the memory stays allocated or freed).

With no hook installed a point costs one read of the list `observers` (a global of this module,
also read by the compiled fast path, which takes the general path while a hook is installed).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .device import Device

__all__ = ["Hook", "device_of", "install", "observe", "observers", "remove"]


class Hook:
    """An observer: subclass it and override the points you need (module docstring); the
    defaults do nothing. `with hook:` installs it for the block."""

    def enter(self, kind: str, name: str, device: Any, detail: Mapping[str, Any]) -> Any:
        """Before an operation, primitive, kernel, compilation or transfer; the result is
        handed to `exit`. `detail`: `inputs` (operations), `nbytes` (transfers)."""
        return None

    def exit(self, token: Any, error: BaseException | None) -> None:
        """After the span `enter` began (in the same thread), with the exception it raised."""

    def allocated(self, allocator: Any, block: Any) -> None:
        """After `allocator` handed out `block` (`block.nbytes`: its size class)."""

    def freed(self, allocator: Any, block: Any) -> None:
        """After `allocator` took `block` back."""

    def __enter__(self) -> Hook:
        install(self)
        return self

    def __exit__(self, *exc: object) -> None:
        remove(self)


# The installed hooks, changed in place (the compiled fast path holds this list).
observers: list[Hook] = []
_lock = threading.Lock()


def install(hook: Hook) -> None:
    """Call `hook` at every point from now on, in every thread."""
    with _lock:
        if any(h is hook for h in observers):
            raise ValueError(f"{hook!r} is installed already")
        observers.append(hook)


def remove(hook: Hook) -> None:
    """Stop calling `hook` (ValueError if it is not installed)."""
    with _lock:
        for index, installed in enumerate(observers):
            if installed is hook:
                del observers[index]
                return
    raise ValueError(f"{hook!r} is not installed")


def observe(kind: str, name: str, device: Any, detail: Mapping[str, Any],
            function: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """`function(*args, **kwargs)` as a span of every installed hook (outermost first)."""
    hooks = tuple(observers)
    tokens = [hook.enter(kind, name, device, detail) for hook in hooks]
    try:
        result = function(*args, **kwargs)
    except BaseException as error:
        for hook, token in zip(reversed(hooks), reversed(tokens)):
            hook.exit(token, error)
        raise
    for hook, token in zip(reversed(hooks), reversed(tokens)):
        hook.exit(token, None)
    return result


def device_of(values: Iterable[Any]) -> Device | None:
    """The device a call runs on, from its arguments: the first array's (or the first array's of
    a leading list or tuple of arrays), else the first Device given, else None."""
    values = tuple(values)
    for value in values:
        if value.__class__ in (list, tuple) and value:
            value = value[0]
        buffer = getattr(value, "_buffer", None)
        if buffer is not None:
            return buffer.device
    return next((value for value in values if value.__class__ is Device), None)


def allocated(allocator: Any, block: Any) -> None:
    """Tell every installed hook that `allocator` handed out `block`."""
    for hook in tuple(observers):
        try:
            hook.allocated(allocator, block)
        except Exception as error:  # the allocation stands
            _warn(error, hook.allocated)


def freed(allocator: Any, block: Any) -> None:
    """Tell every installed hook that `allocator` took `block` back (also from finalizers, so
    a hook's error is reported, not raised)."""
    for hook in tuple(observers):
        try:
            hook.freed(allocator, block)
        except Exception as error:
            _warn(error, hook.freed)


def _warn(error: BaseException, where: Any) -> None:
    warnings.warn(f"{where!r} raised {type(error).__name__}: {error} (ignored: the memory "
                  "point cannot fail)", RuntimeWarning, stacklevel=3)

