"""Strict mode and numpy mode: switching (per thread, as a context manager, from the
environment), and that strict mode keeps the standard's refusals with their messages."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import hxarray as xp
from hxarray._modes import is_strict

from .oracle import ON_EACH_DEVICE, assert_matches


def test_default_is_numpy_mode():
    assert not is_strict()
    assert xp.asarray([1, 2]) / 2 is not None


def test_set_strict_as_a_function_and_a_context_manager():
    x = xp.asarray([1, 2])
    with xp.set_strict(True):
        assert is_strict()
        with pytest.raises(TypeError, match=r"divide\(\) requires floating-point input, got "
                                            "int64"):
            x / 2
        with xp.set_strict(False):
            assert not is_strict()
            assert float(xp.sum(x / 2)) == 1.5
        assert is_strict()
    assert not is_strict()
    token = xp.set_strict(True)
    try:
        assert is_strict()
    finally:
        token.__exit__(None, None, None)
    assert not is_strict()


def test_set_strict_takes_only_bools():
    for bad in (1, "yes", None):
        with pytest.raises(TypeError, match="True or False"):
            xp.set_strict(bad)


def test_mode_is_per_thread():
    """A thread in strict mode and one in numpy mode, at the same time, each see their own."""
    barrier = threading.Barrier(2)
    seen: dict[str, object] = {}

    def run(strict: bool) -> None:
        with xp.set_strict(strict):
            barrier.wait()
            for _ in range(200):
                try:
                    result = xp.asarray([1, 2]) * 0.5
                except TypeError:
                    result = "refused"
            seen[strict] = result if result == "refused" else result.dtype

    threads = [threading.Thread(target=run, args=(flag,)) for flag in (True, False)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {True: "refused", False: xp.float64}


@pytest.mark.parametrize(("value", "strict"), [("1", True), ("true", True), ("0", False),
                                               ("", False), ("off", False)])
def test_environment_variable_sets_the_default(value, strict):
    code = "import hxarray._modes as m; print(m.is_strict())"
    env = {**os.environ, "HXARRAY_STRICT": value}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == str(strict)


@pytest.mark.strict
@pytest.mark.parametrize(("expression", "error", "message"), [
    ("xp.arange(3) / 2", TypeError, r"divide\(\) requires floating-point input, got int64"),
    ("xp.arange(3) + 1.5", TypeError, "a Python float cannot be combined with an array of "
                                      "dtype int64"),
    ("xp.arange(3) + xp.ones(3)", TypeError, "no type promotion between int64 and float64"),
    ("xp.sin(xp.arange(3))", TypeError, r"sin\(\) requires floating-point input, got int64"),
    ("xp.mean(xp.arange(3))", TypeError, r"mean\(\) requires an array of floating-point dtype"),
    ("xp.sum(xp.asarray([True]))", TypeError, r"sum\(\) requires an array of numeric dtype"),
    # (CPython's wording, or Cython's where the module runs compiled)
    ("xp.diff(xp.arange(3), 2)", TypeError, r"diff\(\) takes (exactly )?1 positional argument"),
    ("xp.sum(xp.arange(3), 0)", TypeError, r"sum\(\) takes (exactly )?1 positional argument"),
    ("xp.zeros(3, dtype='float32')", TypeError, "dtype must be an hxarray dtype"),
    ("xp.asarray([1], xp.int8)", TypeError, r"asarray\(\) takes 1 positional argument but 2 "
                                            "were given"),
    ("xp.where(xp.asarray([True]))", TypeError, r"where\(\) missing 2 required positional "
                                                "arguments"),
    ("xp.concat([xp.arange(2), xp.ones(2)])", TypeError, "no type promotion"),
    ("xp.asarray([1, 2], dtype=xp.uint8) < 300", OverflowError, "out of bounds for uint8"),
])
def test_strict_mode_keeps_the_standard_refusals(expression, error, message):
    with pytest.raises(error, match=message):
        eval(expression)


@ON_EACH_DEVICE
def test_numpy_mode_runs_on_every_device(device):
    """numpy mode's conversions only hand standard-defined cases to a backend, so every device
    (the simulated CUDA device included) gives numpy's answers."""
    a, f, b = np.arange(6), np.linspace(0.5, 3.0, 6).astype(np.float32), np.arange(6) % 2 == 0
    x, y, z = (xp.asarray(v, device=device) for v in (a, f, b))
    assert_matches(x / 2, a / 2)
    assert_matches(x + y, a + f)
    assert_matches(x * 0.5, a * 0.5)
    assert_matches(xp.sum(z), np.sum(b))
    assert_matches(xp.mean(x), np.mean(a))
    assert_matches(xp.where(x, 1, 0.5), np.where(a, 1, 0.5))
    assert_matches(xp.concat([x, y]), np.concatenate([a, f]))
    result = xp.reshape(z, (2, 3)) @ xp.reshape(z, (3, 2))
    assert result.device is device
    assert_matches(result, b.reshape(2, 3) @ b.reshape(3, 2))


def test_the_docs_table_is_the_registry_of_differences():
    """docs/modes.md's table of every place the modes differ is rendered from the registry, and
    every function the registry names exists (a rule for a function no row names is dead)."""
    from pathlib import Path

    from hxarray import _numpy_mode

    docs = (Path(__file__).parent.parent / "docs" / "modes.md").read_text()
    assert _numpy_mode.markdown() in docs
    named = {f for d in _numpy_mode.DIFFERENCES for f in d.functions}
    for name in named:
        owner, _, attribute = name.rpartition(".")
        scope = xp.Array if owner == "Array" else getattr(xp, owner) if owner else xp
        assert hasattr(scope, attribute), name
    assert set(_numpy_mode.RULES) <= named
    assert set(_numpy_mode.POSITIONAL) <= named


@pytest.mark.parametrize("name", ["add", "clip", "concat", "where", "linalg.outer",
                                  "Array.__iadd__", "max", "argmin", "sort", "diff", "arange"])
def test_a_rule_runs_only_where_the_standard_check_failed(name, monkeypatch):
    """The adapter consults numpy mode's rule only for the calls the standard leaves open: with
    every rule replaced by one that fails, calls the standard defines still work."""
    from hxarray import _numpy_mode

    def refuse(*args, **kwargs):
        raise AssertionError(f"numpy mode's rule for {name} ran on a call the standard defines")

    monkeypatch.setitem(_numpy_mode.RULES, name, refuse)
    x = xp.asarray([[1.0, 2.0], [3.0, 4.0]])
    calls = {"add": lambda: xp.add(x, 1.0), "clip": lambda: xp.clip(x, 1.5, 3.0),
             "concat": lambda: xp.concat((x, x)), "where": lambda: xp.where(x > 2, x, 0.0),
             "linalg.outer": lambda: xp.linalg.outer(x[0], x[1]),
             "Array.__iadd__": lambda: x.__iadd__(1.0), "max": lambda: xp.max(x, axis=0),
             "argmin": lambda: xp.argmin(x), "sort": lambda: xp.sort(x, descending=True),
             "diff": lambda: xp.diff(x, prepend=x), "arange": lambda: xp.arange(0.5, 3)}
    calls[name]()
    with pytest.raises(AssertionError, match="ran on a call"):
        {"add": lambda: xp.add(x, xp.asarray([1, 2])), "clip": lambda: xp.clip(x, 1, True),
         "concat": lambda: xp.concat((x, xp.asarray([[1, 2]]))),
         "where": lambda: xp.where(x, x, 0),
         "linalg.outer": lambda: xp.linalg.outer(x[0], xp.asarray([1, 2])),
         "Array.__iadd__": lambda: x.__iadd__(xp.asarray(1, dtype=xp.complex128)),
         "max": lambda: xp.max(xp.asarray([1j])), "argmin": lambda: xp.argmin(xp.asarray([1j])),
         "sort": lambda: xp.sort(xp.asarray([1j])), "diff": lambda: xp.diff(x > 2),
         "arange": lambda: xp.arange(xp.asarray(3))}[name]()
