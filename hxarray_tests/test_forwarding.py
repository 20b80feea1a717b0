"""`hxarray._forwarding.forwarding`: wrappers with the parameters of the function they wrap, which
pass every argument on exactly as given."""

from __future__ import annotations

import inspect

import pytest

from hxarray._forwarding import forwarding

SEEN = """
    _hx_seen.append((ARGS, KWARGS))
    return _hx_target(CALL)
"""


def _record(target):
    seen: list[tuple[tuple, dict]] = []
    return forwarding(target, SEEN, seen=seen, target=target), seen


def test_parameters_defaults_and_kinds_are_kept():
    marker = object()

    def target(a, b=2, /, c=3, *, d, e=marker, **rest):
        """the target's own"""
        return a, b, c, d, e, rest

    wrapper, seen = _record(target)
    assert wrapper.__name__ == "target" and wrapper.__doc__ == "the target's own"
    assert inspect.signature(wrapper) == inspect.signature(target)
    assert wrapper(1, d=4) == (1, 2, 3, 4, marker, {})
    assert wrapper(1, 5, c=6, d=7, e=8, f=9) == (1, 5, 6, 7, 8, {"f": 9})
    assert seen[0] == ((1, 2, 3), {"d": 4, "e": marker})
    assert seen[1] == ((1, 5, 6), {"d": 7, "e": 8, "f": 9})
    with pytest.raises(TypeError, match="target"):  # Python's own check, under the target's name
        wrapper(1, 2, 3, 4, d=5)
    assert wrapper(1, b=5, d=3) == (1, 2, 3, 3, marker, {"b": 5})  # b is positional-only


def test_var_positional_and_unreadable_signatures_take_the_generic_form():
    def target(x, /, *args, key=None):
        return x, args, key

    wrapper, seen = _record(target)
    assert wrapper(1, 2, 3, key=4) == (1, (2, 3), 4)
    assert seen == [((1, 2, 3), {"key": 4})]
    wrapper, seen = _record(len)  # a builtin
    assert wrapper([1, 2]) == 2 and seen == [(([1, 2],), {})]


def test_surplus_positional_arguments_reach_the_body_only_when_asked_for():
    def target(a, b=2, /, *, c=3):
        return a, b, c

    body = "return _hx_extra, _hx_target(CALL)"
    wrapper = forwarding(target, body, surplus=True, target=target)
    assert inspect.signature(wrapper) == inspect.signature(target)  # (through __wrapped__)
    assert wrapper(1) == ((), (1, 2, 3))
    assert wrapper(1, 5, 6, 7, c=8) == ((6, 7), (1, 5, 8))  # not passed on to the target
    strict = forwarding(target, body, target=target)
    assert strict(1, 5) == ((), (1, 5, 3))
    with pytest.raises(TypeError, match="positional"):
        strict(1, 5, 6)

    def variadic(a, *rest):
        return a, rest

    generic = forwarding(variadic, "return _hx_extra, _hx_target(CALL)", surplus=True,
                         target=variadic)
    assert generic(1, 2, 3) == ((), (1, (2, 3)))  # the target's own *args take them


def test_the_wrapper_refers_to_itself_and_refuses_clashing_names():
    def target(value):
        return value

    counted = forwarding(target, "return _hx_point, _hx_target(CALL)", target=target)
    assert counted(5) == (counted, 5)

    def clashing(_hx_target):
        return _hx_target

    with pytest.raises(ValueError, match="clashes"):
        forwarding(clashing, "return None")
