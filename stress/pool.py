"""A pool of worker processes that survives its workers: a task that crashes its worker (a
signal, an abort, an exit) or runs past its time limit is recorded as a crash or a hang, the
worker is replaced, and the other tasks go on.

Each worker is `python -m stress.worker` with its own environment (the compiled or pure-Python
mode, a memory bound); tasks and results travel as length-prefixed pickles over its stdin and
stdout.
"""

from __future__ import annotations

import os
import pickle
import select
import struct
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
_HEADER = struct.Struct("<Q")


@dataclass
class Outcome:
    """What became of one task: its result, or a crash (with the exit status) or a hang."""

    task: Any
    result: Any = None
    crash: int | None = None  # the worker's exit status (negative: killed by that signal)
    hang: bool = False
    stderr: str = ""


def send(stream: Any, value: Any) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def receive(stream: Any) -> Any:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError("the other side closed the pipe")
    (size,) = _HEADER.unpack(header)
    return pickle.loads(stream.read(size))


@dataclass
class _Worker:
    process: subprocess.Popen
    log: Path
    task: Any = None
    started: float = 0.0
    done: int = field(default=0)


class Pool:
    """`size` workers running `python -m stress.worker <setup...>` with `env` added."""

    def __init__(self, size: int, setup: list[str], env: dict[str, str], logs: Path,
                 timeout: float, recycle: int = 2000) -> None:
        self.size, self.setup, self.env, self.timeout = size, setup, env, timeout
        self.recycle = recycle  # a fresh process after this many tasks (bounds any slow drift)
        self.logs = logs
        self.logs.mkdir(parents=True, exist_ok=True)
        self._count = 0
        self.workers: list[_Worker] = []

    def _start(self) -> _Worker:
        self._count += 1
        log = self.logs / f"worker-{os.getpid()}-{self._count}.log"
        process = subprocess.Popen(
            [sys.executable, "-m", "stress.worker", *self.setup], cwd=ROOT,
            env={**os.environ, **self.env}, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=log.open("wb"))
        ready = receive(process.stdout)  # the worker reports once it has imported hxarray
        if ready != "ready":
            raise RuntimeError(f"stress worker did not start: {ready!r}")
        return _Worker(process, log)

    def _stop(self, worker: _Worker, kill: bool) -> tuple[int, str]:
        if kill:
            worker.process.kill()
        else:
            worker.process.stdin.close()
        status = worker.process.wait()
        worker.process.stdout.close()
        text = worker.log.read_text(errors="replace") if worker.log.exists() else ""
        worker.log.unlink(missing_ok=True)
        return status, text[-4000:]

    def run(self, tasks: Iterable[Any]) -> Iterator[Outcome]:
        """The outcome of every task, in the order they finish."""
        pending = iter(tasks)
        self.workers = [self._start() for _ in range(self.size)]
        busy: dict[int, _Worker] = {}
        try:
            for worker in self.workers:
                self._give(worker, pending, busy)
            while busy:
                now = time.monotonic()
                wait = max(0.0, min(w.started + self.timeout for w in busy.values()) - now)
                ready, _, _ = select.select(list(busy), [], [], wait)
                for fd in ready or ():
                    worker = busy.pop(fd)
                    try:
                        result = receive(worker.process.stdout)
                    except (EOFError, pickle.UnpicklingError, struct.error):
                        status, text = self._stop(worker, kill=False)
                        yield Outcome(worker.task, crash=status, stderr=text)
                        worker = self._replace(worker)
                    else:
                        yield Outcome(worker.task, result)
                        worker.done += 1
                        if worker.done >= self.recycle:
                            self._stop(worker, kill=False)
                            worker = self._replace(worker)
                    self._give(worker, pending, busy)
                now = time.monotonic()
                for fd, worker in list(busy.items()):
                    if now - worker.started > self.timeout:
                        del busy[fd]
                        _, text = self._stop(worker, kill=True)
                        yield Outcome(worker.task, hang=True, stderr=text)
                        worker = self._replace(worker)
                        self._give(worker, pending, busy)
        finally:
            for worker in self.workers:
                if worker.process.poll() is None:
                    self._stop(worker, kill=True)

    def _replace(self, old: _Worker) -> _Worker:
        fresh = self._start()
        self.workers[self.workers.index(old)] = fresh
        return fresh

    def _give(self, worker: _Worker, pending: Iterator[Any], busy: dict[int, _Worker]) -> None:
        task = next(pending, None)
        if task is None:
            return
        worker.task, worker.started = task, time.monotonic()
        send(worker.process.stdin, task)
        busy[worker.process.stdout.fileno()] = worker
