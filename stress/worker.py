"""`python -m stress.worker DEVICE MEMORY_MB`: a fuzzing worker. Builds each task's arguments
on DEVICE, calls the target, and reports what happened: the result's kind, or the exception
(class, message, whether hxarray raised it), inputs the call changed, a result that cannot be
used, errors that surface only when the device's queued work is waited for, warnings that
escaped. Its memory is bounded (RLIMIT_AS), so a huge request fails instead of swapping."""

from __future__ import annotations

import contextvars
import dis
import gc
import linecache
import os
import re
import resource
import sys
import warnings
from pathlib import Path
from typing import Any

from .pool import receive, send

ACCEPTED = (TypeError, ValueError, IndexError, OverflowError, MemoryError, BufferError)
_PACKAGE = None  # hxarray's directory
_THREADS = 1  # hxarray's thread count when the worker started
_PYTHON_MESSAGE = re.compile(
    r"^([\w.]+\(\) (takes|got|missing|argument)|unsupported operand type|'[<>=!]+' not supported"
    r"|unhashable type|bad operand type|can only concatenate|can't multiply sequence"
    r"|__\w+__ returned|slice step cannot be zero)")


def origin(exc: BaseException, name: str) -> str:
    """Who wrote the message: "hxarray" (a `raise` in hxarray, or a message naming hxarray or
    the function), "python" (the interpreter's own for an hxarray callable: argument binding,
    operator protocols) or "foreign" (numpy, the standard library, ...)."""
    tb, last = exc.__traceback__, None
    while tb is not None:
        last, tb = tb, tb.tb_next
    if last is not None and _raised_in_hxarray(last):
        return "hxarray"
    message = str(exc)
    bare = name.strip("_")
    if "hxarray" in message or message.startswith((f"{name}()", f"{bare}()", f"{name}:")):
        return "hxarray"
    if _PYTHON_MESSAGE.match(message):
        return "python"
    return "foreign"


def _raised_in_hxarray(tb: Any) -> bool:
    """Whether traceback entry `tb` is a `raise` in hxarray: its instruction where the code runs
    interpreted; its source line where Cython compiled it (a compiled frame's code has no real
    bytecode, and its file name is relative to the package's parent)."""
    code = tb.tb_frame.f_code
    filename = code.co_filename
    if not os.path.isabs(filename):  # compiled
        filename = os.path.join(os.path.dirname(_PACKAGE), filename)
        return filename.startswith(_PACKAGE) and \
            linecache.getline(filename, tb.tb_lineno).lstrip().startswith("raise")
    return filename.startswith(_PACKAGE) and 0 <= tb.tb_lasti < len(code.co_code) and \
        dis.opname[code.co_code[tb.tb_lasti]] in ("RAISE_VARARGS", "RERAISE")


def _arrays(value: Any, found: list[Any]) -> list[Any]:
    """The hxarray arrays, numpy arrays and lists inside nested arguments."""
    import numpy as np

    import hxarray as xp

    if isinstance(value, (xp.Array, np.ndarray)):
        found.append(value)
    elif isinstance(value, (list, tuple)):
        if isinstance(value, list):
            found.append(value)
        for v in value:
            _arrays(v, found)
    return found


def _state(value: Any) -> Any:
    """What must not change: an array's layout and bytes, a list's items."""
    import numpy as np

    import hxarray as xp

    if isinstance(value, xp.Array):
        host = np.asarray(value.to_device("cpu"))
        return (value.shape, value.dtype, value.strides, value.offset, value._readonly,
                host.tobytes())
    if isinstance(value, np.ndarray):
        return (value.shape, value.dtype, value.tobytes() if value.dtype != object else None)
    return [id(v) for v in value]


def _use(result: Any) -> None:
    """Read every array in the result back (an array that no operation can read is a bug)."""
    import numpy as np

    import hxarray as xp

    items = result if isinstance(result, (tuple, list)) else (result,)
    for item in items:
        if isinstance(item, xp.Array):
            np.asarray(item.to_device("cpu"))


def _on_device(device: Any, target: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    import hxarray as xp

    from . import targets

    with xp.device_scope(device):
        return targets.call(target, args, kwargs)


def run(task: dict[str, Any], target: Any, device: Any) -> dict[str, Any]:
    import hxarray as xp

    from .values import build

    report: dict[str, Any] = {"outcome": "ok", "changed": [], "warnings": []}
    try:
        args = [build(r, device) for r in task["args"]]
        kwargs = {k: build(r, device) for k, r in task["kwargs"].items()}
        watched = _arrays(args, [])
        for value in kwargs.values():
            _arrays(value, watched)
        before = [_state(v) for v in watched]
    except Exception as exc:  # noqa: BLE001 - the arguments themselves failed: not counted
        return {"outcome": "setup", "error": f"{type(exc).__name__}: {exc}"[:300]}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = contextvars.copy_context().run(_on_device, device, target, args, kwargs)
            report["result"] = type(result).__name__
            try:
                _use(result)
            except Exception as exc:  # noqa: BLE001
                report["outcome"] = "unusable"
                report["error"] = f"{type(exc).__name__}: {exc}"[:300]
            del result
        except BaseException as exc:  # noqa: BLE001 - every exception is the finding
            report["outcome"] = "raised"
            report["class"] = type(exc).__name__
            report["accepted"] = isinstance(exc, ACCEPTED)
            report["message"] = str(exc)[:300]
            report["origin"] = origin(exc, target.name)
        try:
            device.backend.synchronize(device)
        except BaseException as exc:  # noqa: BLE001 - queued work failed after the call
            report["deferred"] = f"{type(exc).__name__}: {exc}"[:300]
        report["warnings"] = sorted({f"{w.category.__name__}: {w.message}"[:200] for w in caught})
    succeeded = report["outcome"] == "ok"
    for i, (value, old) in enumerate(zip(watched, before)):
        if target.mutates_self and succeeded and value is args[0]:
            continue  # a successful in-place operation writes its first argument
        try:
            if _state(value) != old:
                report["changed"].append(i)
        except Exception as exc:  # noqa: BLE001
            report["changed"].append(i)
            report["error"] = f"reading an input afterwards: {type(exc).__name__}: {exc}"[:300]
    for d in xp.__array_namespace_info__().devices():
        try:
            d.backend.allocator(d).set_memory_limit(None)
        except Exception:  # noqa: BLE001, S110 - an allocator without limits
            pass
    xp.set_strict(False)  # the settings a call may have changed, back for the next one
    xp.set_num_threads(_THREADS)
    return report


def main() -> None:
    global _PACKAGE, _THREADS
    device_name, memory_mb = sys.argv[1], int(sys.argv[2])
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray prints go to the log, not into the result pipe
    stdin = os.fdopen(os.dup(0), "rb")
    limit = memory_mb << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    import hxarray as xp

    from .targets import targets

    _PACKAGE = str(Path(xp.__file__).parent)
    _THREADS = xp.get_num_threads()
    device = xp.Device(device_name)
    by_label = {t.label: t for t in targets()}
    send(out, "ready")
    count = 0
    while True:
        try:
            task = receive(stdin)
        except EOFError:
            return
        send(out, run(task, by_label[task["target"]], device))
        count += 1
        if count % 200 == 0:
            gc.collect()


if __name__ == "__main__":
    main()
