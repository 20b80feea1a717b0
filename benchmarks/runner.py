"""How it is measured: check once against numpy, then time the libraries in interleaved rounds.

For one case and size every library gets a loop count (calibrated like `timeit.Timer.autorange`,
but to a configurable round length), then the rounds alternate numpy, hxarray, array-api-strict,
numpy, hxarray, ... so that noise from the rest of the machine falls on all of them alike. Each
round is one `timeit.Timer.timeit(loops)` call (garbage collection off, `time.perf_counter`);
the reported time per call is the median over rounds. A case with variants (`Case.variants`) adds
one column per library and variant to the same rounds.
"""

from __future__ import annotations

import statistics
import time
import timeit
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .cases import ANCHORS, Case, Library, Thunk


@dataclass(frozen=True)
class Settings:
    """How long to measure: at most `rounds` rounds, but stop after `min_rounds` once a case and
    size has used `max_seconds`; one library's round lasts about `round_seconds` (or one call)."""

    rounds: int
    min_rounds: int
    round_seconds: float
    max_seconds: float


# Short rounds: on a busy machine a round is then more often not preempted, and the median over
# many rounds is the unpreempted time.
FULL = Settings(rounds=41, min_rounds=7, round_seconds=0.005, max_seconds=5.0)
QUICK = Settings(rounds=15, min_rounds=3, round_seconds=0.001, max_seconds=0.3)


@dataclass(frozen=True)
class Timing:
    """Seconds per call of one library: median and quartiles over rounds, and every round."""

    median: float
    q1: float
    q3: float
    loops: int
    per_call: list[float]


@dataclass(frozen=True)
class Measurement:
    """One case at one size. `checks` holds, per column (a library, or "<library>:<variant>"),
    "reference" (numpy), "ok", "mismatch: ..." or "error: ..."; a column that raised has no
    timing."""

    case: str
    group: str
    size: int
    checks: dict[str, str]
    timings: dict[str, Timing]

    def ratio(self, numerator: str, denominator: str) -> float | None:
        """median(numerator) / median(denominator), or None if either was not timed."""
        if numerator not in self.timings or denominator not in self.timings:
            return None
        return self.timings[numerator].median / self.timings[denominator].median


def compare(got: np.ndarray, expected: np.ndarray, values: bool) -> str:
    """'ok' if shape, dtype and (when `values`) values agree with numpy's result."""
    if got.shape != expected.shape:
        return f"mismatch: shape {got.shape}, numpy {expected.shape}"
    if got.dtype != expected.dtype:
        return f"mismatch: dtype {got.dtype}, numpy {expected.dtype}"
    if values and not np.allclose(got, expected, equal_nan=True):
        return "mismatch: values differ from numpy's (np.allclose)"
    return "ok"


def loops_per_round(timer: timeit.Timer, seconds: float) -> int:
    """The smallest of 1, 2, 5, 10, 20, 50, ... calls that take at least `seconds`: the algorithm
    of `timeit.Timer.autorange`, whose fixed 0.2 s target would dominate the quick run."""
    scale = 1
    while True:
        for step in (1, 2, 5):
            if timer.timeit(step * scale) >= seconds:
                return step * scale
        scale *= 10


def column(library: str, case: Case, variant: str | None = None) -> str:
    """The name a library's timing is reported under: the library's name for a case's main
    variant, "<library>:<variant>" for its other variants."""
    if variant is None or not case.variants or variant == case.variants[0]:
        return library
    return f"{library}:{variant}"


def _prepare(case: Case, size: int, libs: list[Library]) -> tuple[dict[str, Thunk], dict[str, str]]:
    """Each column's timed callable (see `column`), after one call whose result is checked against
    numpy's (libs[0], the main variant); that call is also the warm-up. Libraries the case does not
    run on are left out."""
    thunks: dict[str, Thunk] = {}
    checks: dict[str, str] = {}
    reference: np.ndarray | None = None
    for lib in libs:
        if lib.name not in (case.libraries or
                            [x.name for x in libs if x.name not in ANCHORS]):
            continue
        try:
            made = case.setup(lib, size)
        except Exception as exc:  # reported in the results; the run goes on
            if reference is None:
                raise
            checks[lib.name] = f"error: {type(exc).__name__}: {exc}"
            continue
        variants = made if isinstance(made, dict) else {None: made}
        if case.variants and list(variants) != list(case.variants):
            raise ValueError(f"case {case.name}: setup returned variants {list(variants)}, "
                             f"expected {list(case.variants)}")
        for variant, thunk in variants.items():
            name = column(lib.name, case, variant)
            try:
                result = lib.to_numpy(thunk())
            except Exception as exc:
                if reference is None:
                    raise
                checks[name] = f"error: {type(exc).__name__}: {exc}"
                continue
            if reference is None:
                reference, checks[name] = result, "reference"
            else:
                checks[name] = compare(result, reference, case.compare_values)
            thunks[name] = thunk
    return thunks, checks


def measure(case: Case, size: int, libs: list[Library], settings: Settings) -> Measurement:
    """Check, calibrate and time `case` at `size` for every library, in interleaved rounds."""
    thunks, checks = _prepare(case, size, libs)
    return Measurement(case.name, case.group, size, checks, time_rounds(thunks, settings))


def time_rounds(thunks: dict[str, Thunk], settings: Settings,
                clock: Callable[[], float] = time.perf_counter) -> dict[str, Timing]:
    """Calibrate a loop count for every column's callable, then time them in interleaved rounds;
    the median, quartiles and every round's time per call of each column. `clock` is what the
    rounds are timed by (wall time; `time.process_time` for the process's CPU time)."""
    timers = {name: timeit.Timer(thunk, timer=clock) for name, thunk in thunks.items()}
    loops = {name: loops_per_round(timer, settings.round_seconds)
             for name, timer in timers.items()}
    per_call: dict[str, list[float]] = {name: [] for name in timers}
    start = time.perf_counter()
    for done in range(1, settings.rounds + 1):
        for name, timer in timers.items():
            per_call[name].append(timer.timeit(loops[name]) / loops[name])
        if done >= settings.min_rounds and time.perf_counter() - start > settings.max_seconds:
            break
    timings = {}
    for name, samples in per_call.items():
        q1, median, q3 = statistics.quantiles(samples, n=4, method="inclusive")
        timings[name] = Timing(median, q1, q3, loops[name], samples)
    return timings
