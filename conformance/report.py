"""Summarise a pytest-json-report file: counts per test file and the failing node ids."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

COLUMNS = ("passed", "failed", "skipped", "errors")

# pytest-json-report outcome -> table column. xfail/xpass only occur if the user passes an
# xfails file through to pytest; they are folded into the nearest column so nothing is dropped.
_COLUMN_OF = {
    "passed": "passed",
    "xpassed": "passed",
    "failed": "failed",
    "skipped": "skipped",
    "xfailed": "skipped",
    "error": "errors",
}


@dataclass
class Summary:
    """Per-file outcome counts and the node ids that failed or errored."""

    counts: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    failing: list[str] = field(default_factory=list)

    @property
    def totals(self) -> Counter[str]:
        """Counts summed over all files."""
        return sum(self.counts.values(), Counter())

    @property
    def ok(self) -> bool:
        """True when nothing failed or errored (collection errors included)."""
        return not self.failing


def _file_of(nodeid: str) -> str:
    """The test file of a node id, without the ``array_api_tests/`` prefix."""
    path = nodeid.split("::", 1)[0]
    return path.removeprefix("array_api_tests/") or "<session>"


def summarise(report: dict[str, Any]) -> Summary:
    """Count test outcomes per file; a collector that did not pass counts as an error."""
    summary = Summary()
    for test in report.get("tests", []):
        column = _COLUMN_OF.get(test["outcome"], "errors")
        summary.counts[_file_of(test["nodeid"])][column] += 1
        if column in ("failed", "errors"):
            summary.failing.append(test["nodeid"])
    for collector in report.get("collectors", []):
        if collector["outcome"] != "passed":
            nodeid = collector["nodeid"] or "<session>"
            summary.counts[_file_of(nodeid)]["errors"] += 1
            summary.failing.append(f"{nodeid} (collection error)")
    return summary


def format_summary(summary: Summary) -> str:
    """The per-file table with a total row, then the failing node ids."""
    width = max([len("total"), *map(len, summary.counts)])
    header = f"{'file':<{width}}  " + "  ".join(f"{c:>7}" for c in COLUMNS)
    rule = "-" * len(header)

    def row(name: str, counts: Counter[str]) -> str:
        return f"{name:<{width}}  " + "  ".join(f"{counts[c]:>7}" for c in COLUMNS)

    lines = [header, rule]
    lines += [row(name, summary.counts[name]) for name in sorted(summary.counts)]
    lines += [rule, row("total", summary.totals)]
    if summary.failing:
        lines += ["", f"failing ({len(summary.failing)}):"]
        lines += [f"  {nodeid}" for nodeid in summary.failing]
    return "\n".join(lines)


def format_counters(counters: dict[str, Any]) -> str:
    """The device's counters after the run and the test files that made host fallbacks."""
    stats = counters["stats"]
    totals = ", ".join(f"{k} {v}" for k, v in stats.items() if not isinstance(v, dict))
    lines = ["", f"{counters['device']}: {totals}"]
    by_file = counters["host_fallbacks_by_file"]
    if not by_file:
        return "\n".join([*lines, "host fallbacks: none"])
    lines.append("host fallbacks by test file:")
    for name, made in by_file.items():
        lines.append(f"  {name}: " + ", ".join(f"{op} {n}" for op, n in sorted(made.items())))
    return "\n".join(lines)
