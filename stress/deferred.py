"""(i) Deferred errors: threads (some on streams of their own) run random sequences of gathers
(`x[i]`, `take`, `take_along_axis`) and scatters (`z[i] = v`), good ones and bad ones, with
synchronising calls (a stream's `synchronize`, reading a result to the host) in between, with
index checks deferred (`HXARRAY_CUDA_SYNC_CHECKS=0`): a CUDA device then raises a bad index at a
later synchronising call. Each bad call holds one index out of range that no other call uses,
so every error names the call it came from. Criterion: every bad index of a call that ran is
raised exactly once (at its call, at a synchronising call, or by the first use of its result),
naming that call's function and no index of another call; a call that raised did nothing (its
target unchanged); the result of a failed call is never read without its error; every good
result is numpy's.

`python -m stress.deferred DEVICE CALLS SEED` prints the figures as JSON."""

from __future__ import annotations

import json
import os
import random
import re
import sys
import threading
import time
from typing import Any

import numpy as np

THREADS = 3
SIZE = 40  # of the gathered vector; the matrix is SIZE // 4 x 4
LISTED = 12  # problems listed per kind in the report
BURST = 0.02  # the share of (bad) calls after a burst of LIMIT - 1 good gathers
# (how it was found: at a synchronising call, by a failed result, or at the call itself),
# the function named (none: an unnamed error), the bad index
_MESSAGE = re.compile(r"^(?:(an earlier call failed|the array is the result of a failed call): "
                      r"(\w+) on [\w:]+: |(\w+): )?index (-?\d+) is out of bounds for axis \d+ "
                      r"with size \d+$")


class Ledger:
    """The bad calls (by their unique index) and every error raised, shared by the threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: dict[int, dict[str, Any]] = {}  # bad index -> function, ran, reports
        self.next = SIZE + 7
        self.tally = {"calls": 0, "bad_calls": 0, "calls_that_raised": 0, "raised_at_the_call": 0,
                      "raised_later": 0, "raised_by_a_failed_result": 0, "syncs": 0,
                      "reads": 0, "failed_results_refused": 0, "bursts": 0}
        self.problems: dict[str, list[str]] = {
            "unreported": [], "reported_twice": [], "misattributed": [], "other_errors": [],
            "failed_result_read": [], "wrong_values": []}

    def bad_index(self, function: str, rng: random.Random) -> int:
        """A new index out of range of SIZE (or of the matrix's axes), used by one call."""
        with self.lock:
            self.next += 1
            index = self.next if rng.random() < 0.5 else -self.next
            self.calls[index] = {"function": function, "ran": None, "reports": 0}
            self.tally["bad_calls"] += 1
            return index

    def count(self, key: str) -> None:
        with self.lock:
            self.tally[key] += 1

    def problem(self, kind: str, text: str) -> None:
        with self.lock:
            self.problems[kind].append(text)

    def raised(self, exc: BaseException, where: str) -> int | None:
        """Book an exception; the bad index it names, or None."""
        match = _MESSAGE.match(str(exc)) if isinstance(exc, IndexError) else None
        if match is None:
            self.problem("other_errors", f"{where}: {type(exc).__name__}: {exc}"[:300])
            return None
        how, function = match.group(1), match.group(2) or match.group(3)
        index = int(match.group(4))
        with self.lock:
            call = self.calls.get(index)
            if call is None or call["function"] != function:
                self.problems["misattributed"].append(f"{where}: {exc}")
            if call is None:
                return index
            first = call["reports"] == 0
            if how == "the array is the result of a failed call":
                self.tally["raised_by_a_failed_result"] += 1
                if first:  # its first raise: the device does not raise it again
                    call["reports"] += 1
                return index
            self.tally["raised_later" if how else "raised_at_the_call"] += 1
            call["reports"] += 1
            if not first:
                self.problems["reported_twice"].append(f"{where}: {exc}")
        return index


def _to_host(ledger: Ledger, a: Any, bad: int | None, where: str) -> np.ndarray | None:
    """`a`'s values on the host, booking the errors of other calls raised on the way; None once
    `a` raises its own (`bad`: the index of the failed call that made it) or another error."""
    while True:
        try:
            return np.asarray(a.to_device("cpu"))
        except Exception as exc:  # noqa: BLE001 - booked
            index = ledger.raised(exc, where)
            if index is None or index == bad:
                return None


def _read(ledger: Ledger, result: Any, bad: int | None, expected: np.ndarray | None,
          where: str) -> None:
    """Read a kept result: a failed call's must raise its error, a good one give numpy's."""
    ledger.count("reads")
    got = _to_host(ledger, result, bad, where)
    if got is None:  # its own error (or another, booked as such)
        if bad is not None:
            ledger.count("failed_results_refused")
    elif bad is not None:
        ledger.problem("failed_result_read", f"{where}: gave {got}")
    elif not np.array_equal(got, expected):
        ledger.problem("wrong_values", f"{where}: {got} != {expected}")


def _sync(ledger: Ledger, device: Any, where: str) -> None:
    ledger.count("syncs")
    from hxarray.hal.stream import current_stream

    try:
        current_stream(device).synchronize()
    except Exception as exc:  # noqa: BLE001 - booked
        ledger.raised(exc, where)


def worker(ledger: Ledger, xp: Any, device: Any, x: Any, data: np.ndarray, calls: int,
           seed: int) -> None:
    """`calls` random steps on x (read only) and a target z of this thread's own, whose numpy
    twin takes the scatters that ran. Now and then a bad call comes after LIMIT - 1 good
    gathers and before a good scatter, which then finds the queue of checks full (the bad
    call's check last in it)."""
    from hxarray.backends.cuda.runtime import DeferredErrors

    rng = random.Random(seed)
    z, model = xp.zeros(SIZE, device=device), np.zeros(SIZE)
    matrix, matrix_data = xp.reshape(x, (SIZE // 4, 4)), data.reshape(SIZE // 4, 4)
    first = xp.asarray([0], device=device)
    kept: list[tuple[Any, int | None, np.ndarray | None, str]] = []

    def call(kind: str, picks: np.ndarray, index: int | None, where: str) -> None:
        """Gather or scatter with `picks` (holding the bad `index`, if any): a result kept, the
        twin written, or the error booked (the call did nothing)."""
        ledger.count("calls")
        bad = index is not None
        try:
            if kind == "getitem":
                result = x[xp.asarray(picks, device=device)]
            elif kind == "take":
                result = xp.take(x, xp.asarray(picks, device=device))
            elif kind == "take_along_axis":
                rows = np.broadcast_to(picks, (SIZE // 4, len(picks)))
                result = xp.take_along_axis(matrix, xp.asarray(rows, device=device), axis=1)
            else:
                values = np.array([rng.uniform(-9, 9) for _ in picks])
                z[xp.asarray(picks, device=device)] = xp.asarray(values, device=device)
                if not bad:
                    model[picks] = values
                result = None
        except Exception as exc:  # noqa: BLE001 - booked; the call did nothing
            ledger.count("calls_that_raised")
            own = ledger.raised(exc, where)
            if index is not None:  # its own error, or it did nothing and has none to raise
                ledger.calls[index]["ran"] = "raised" if own == index else False
            return
        if index is not None:
            ledger.calls[index]["ran"] = True
        if result is not None:
            if bad:
                expected = None
            elif kind == "take_along_axis":
                expected = np.take_along_axis(matrix_data, rows, 1)
            else:
                expected = data[picks]
            kept.append((result, index, expected, where))

    for step in range(calls):
        where = f"thread seed {seed}, step {step}"
        kind = rng.choice(["getitem", "take", "take_along_axis", "setitem", "setitem",
                           "sync", "read"])
        if kind == "sync":
            _sync(ledger, device, where)
            continue
        if kind == "read":
            if kept and rng.random() < 0.8:
                _read(ledger, *kept.pop(rng.randrange(len(kept))))
            else:
                _read(ledger, z, None, model.copy(), f"{where}: the target")
            continue
        burst = rng.random() < BURST
        if burst:
            ledger.count("bursts")
            for _ in range(DeferredErrors.LIMIT - 1):
                try:
                    xp.take(x, first)
                except Exception as exc:  # noqa: BLE001 - booked (an earlier call's)
                    ledger.raised(exc, where)
        function = {"getitem": "__getitem__", "setitem": "__setitem__"}.get(kind, kind)
        n = rng.randint(1, 6)
        extent = 4 if kind == "take_along_axis" else SIZE
        # distinct elements (a scatter stores one of the values given for an element)
        picks = np.array([p - extent * rng.randrange(2) for p in rng.sample(range(extent), n)
                          ] if n <= extent else [rng.randrange(extent) for _ in range(n)],
                         np.int64)
        index = None
        if burst or rng.random() < 0.3:
            index = ledger.bad_index(function, rng)
            picks[rng.randrange(n)] = index
        call(kind, picks, index, where)
        if burst:
            call("setitem", np.array([rng.randrange(SIZE)]), None, f"{where}, after a burst")
    for entry in kept:
        _read(ledger, *entry)
    _read(ledger, z, None, model, f"thread seed {seed}: its target at the end")


def main(device_name: str, calls: int, seed: int) -> dict[str, Any]:
    os.environ["HXARRAY_CUDA_SYNC_CHECKS"] = "0"  # (the suite checks at once by default)
    import hxarray as xp

    device = xp.Device(device_name)
    ledger = Ledger()
    data = np.arange(SIZE, dtype=np.float64) * 1.5
    x = xp.asarray(data, device=device)
    start = time.perf_counter()

    def run(t: int) -> None:
        per_thread = calls // THREADS
        try:
            if t % 2:  # on a stream of its own
                with xp.Stream(device):
                    worker(ledger, xp, device, x, data, per_thread, seed * 100 + t)
            else:
                worker(ledger, xp, device, x, data, per_thread, seed * 100 + t)
        except Exception as exc:  # noqa: BLE001 - the finding
            ledger.problem("other_errors", f"thread {t} stopped: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=run, args=(t,)) for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    while True:  # what is still waiting
        before = ledger.tally["raised_later"]
        _sync(ledger, device, "the end")
        if ledger.tally["raised_later"] == before:
            break
    for index, call in ledger.calls.items():
        if call["ran"] is not False and call["reports"] == 0:
            ledger.problem("unreported", f"{call['function']} with index {index}")
        if call["ran"] is False and call["reports"]:
            ledger.problem("misattributed", f"{call['function']} with index {index} raised "
                                            "for a call that did nothing")
    report: dict[str, Any] = {"device": device_name, "threads": THREADS, **ledger.tally,
                              "seconds": round(time.perf_counter() - start, 1)}
    for kind, found in ledger.problems.items():
        report[kind] = len(found)
    report["examples"] = {k: v[:LISTED] for k, v in ledger.problems.items() if v}
    report["clean"] = not any(ledger.problems.values())
    return report


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))))
