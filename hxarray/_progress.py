"""Progress bars for long command-line work (tqdm), shown only when stderr is a terminal: logs
and pipes stay quiet."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


def interactive() -> bool:
    """Whether progress is shown: stderr is a terminal."""
    return sys.stderr.isatty()


def progress(items: Iterable[T], desc: str, *, total: int | None = None,
             unit: str = "it", leave: bool = False, **options: Any) -> Iterator[T]:
    """`items`, with a tqdm bar on stderr while they are consumed when stderr is a terminal;
    `items` unchanged otherwise."""
    if not interactive():
        yield from items
        return
    from tqdm import tqdm

    bar = tqdm(items, desc=desc, total=total, unit=unit, leave=leave, dynamic_ncols=True,
               file=sys.stderr, **options)
    try:
        yield from bar
    finally:
        bar.close()


def bar(total: int, desc: str, *, unit: str = "it", leave: bool = False) -> Any:
    """A tqdm bar to `update()` by hand when stderr is a terminal, else one that does nothing."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, leave=leave, dynamic_ncols=True,
                file=sys.stderr, disable=not interactive())
