"""Wrappers that take the parameters of the function they stand in front of.

A wrapper written `def wrapper(*args, **kwargs): ... function(*args, **kwargs)` packs every call's
arguments into a tuple and a dict and unpacks them again, about a microsecond's fraction per layer
on the path of every operation. `forwarding` writes the wrapper with the function's own parameter
list instead (as `dataclasses` writes `__init__`), so that a call forwards its arguments as they
are."""

from __future__ import annotations

import functools
import inspect
import re
import textwrap
from collections.abc import Callable
from typing import Any

_PREFIX = "_hx_"  # the wrapper's own names: no parameter of a wrapped function starts so


def forwarding(target: Callable[..., Any], body: str, /, *, surplus: bool = False,
               **names: Any) -> Callable[..., Any]:
    """A function with `target`'s parameters (their defaults included) that runs `body` (a
    function body, dedented here), dressed as `target` (`functools.update_wrapper`). In `body`,
    `ARGS` stands for the tuple of the positional arguments, `KWARGS` for the dict of the keyword
    ones, and `CALL` for the argument list that passes all of them on as given; with `surplus`,
    the wrapper also takes positional arguments beyond the target's own, as the tuple `_hx_extra`
    (always empty where the target takes `*args`). The free names are `names`, each prefixed
    `_hx_` (as `_hx_point`, the wrapper itself, is). Some targets get `(*args, **kwargs)`
    (`_parameters`)."""
    signature: list[str] = []
    positional: list[str] = []
    keywords: list[str] = []
    free = {_PREFIX + key: value for key, value in names.items()}
    free[f"{_PREFIX}extra"] = ()
    title = getattr(target, "__qualname__", None) or getattr(target, "__name__", "a function")
    parameters = _parameters(target)
    for p in parameters:
        if p.name.startswith(_PREFIX):
            raise ValueError(f"{title}: parameter {p.name} clashes with the wrapper's own names")
    if surplus and not any(p.kind is p.VAR_POSITIONAL for p in parameters):
        at = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)
        parameters.insert(at, inspect.Parameter(f"{_PREFIX}extra",
                                                inspect.Parameter.VAR_POSITIONAL))
    for p in parameters:
        if p.kind is p.VAR_POSITIONAL:
            signature.append(f"*{p.name}")
            if not p.name.startswith(_PREFIX):  # (the surplus is not passed on)
                positional.append(f"*{p.name}")
            continue
        if p.kind is p.VAR_KEYWORD:
            signature.append(f"**{p.name}")
            keywords.append(f"**{p.name}")
            continue
        if p.kind is p.KEYWORD_ONLY and not any(s.startswith("*") for s in signature):
            signature.append("*")
        if p.default is p.empty:
            signature.append(p.name)
        else:
            free[f"{_PREFIX}default_{p.name}"] = p.default
            signature.append(f"{p.name}={_PREFIX}default_{p.name}")
        if p.kind is p.POSITIONAL_ONLY:
            signature.append("/")  # only the last of these stays (below)
        (keywords if p.kind is p.KEYWORD_ONLY else positional).append(p.name)
    last_slash = max((i for i, s in enumerate(signature) if s == "/"), default=-1)
    signature = [s for i, s in enumerate(signature) if s != "/" or i == last_slash]
    args = f"({''.join(f'{n}, ' for n in positional)})"
    kwargs = "{" + ", ".join(n if n.startswith("**") else f"{n!r}: {n}" for n in keywords) + "}"
    call = ", ".join([*positional, *(n if n.startswith("**") else f"{n}={n}" for n in keywords)])
    body = re.sub(r"\b(KWARGS|ARGS|CALL)\b", lambda m: {"ARGS": args, "KWARGS": kwargs,
                                                           "CALL": call}[m.group(1)],
                  textwrap.dedent(body).strip("\n"))
    source = f"def {_PREFIX}point({', '.join(signature)}):\n" + textwrap.indent(body, "    ")
    exec(compile(source, f"<wrapper of {title}>", "exec"), free)
    return functools.update_wrapper(free[f"{_PREFIX}point"], target)


def _parameters(target: Callable[..., Any]) -> list[inspect.Parameter]:
    """`target`'s parameters; `(*args, **kwargs)` for a target whose signature cannot be read
    (a builtin without a text signature) or has `*args` (whose call packs a tuple and a dict of
    every keyword anyway: the generic form costs less)."""
    try:
        parameters = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    if not parameters or any(p.kind is p.VAR_POSITIONAL for p in parameters):
        return [inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL),
                inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)]
    return parameters
