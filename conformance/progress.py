"""A pytest plugin for the conformance runner: on a terminal, one tqdm bar (tests done, passed,
failed) instead of a line of dots; pytest's summary of failures is unchanged. The runner loads
it (`-p conformance.progress`) only when stderr is a terminal."""

from __future__ import annotations

import sys
from typing import Any

import pytest

_bar: Any = None
_counts = {"passed": 0, "failed": 0, "skipped": 0}


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    global _bar
    from tqdm import tqdm

    _bar = tqdm(total=len(session.items), desc="array-api-tests", unit="test",
                dynamic_ncols=True, file=sys.stderr)


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    """No dot per test (the bar counts them); the outcome's category is kept for the summary."""
    if hasattr(report, "wasxfail"):
        return None
    if report.when == "call" or report.outcome != "passed":
        category = "error" if report.when != "call" and report.failed else report.outcome
        return category, "", ""
    return None


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if _bar is None:
        return
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        _counts[report.outcome] = _counts.get(report.outcome, 0) + 1
        _bar.update()
        _bar.set_postfix(passed=_counts["passed"], failed=_counts["failed"], refresh=False)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _bar is not None:
        _bar.close()
