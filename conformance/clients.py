"""A client library's own tests with hxarray (scikit-learn, SciPy, marray): pytest in a scratch
directory (so no project configuration applies) with a JSON report; the outcome counts, the
failing tests (each with the reason the client's test is at fault, where one is known) and a
markdown table of them."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parents[1]
REPORTS_DIR = PROJECT_ROOT / "conformance" / "reports"
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")


Arguments = tuple[argparse.ArgumentParser, list[str], list[str]]


def client_arguments(prog: str, doc: str, namespaces: list[str],
                     argv: list[str] | None) -> Arguments:
    """A runner's command line: its parser (with --namespace, of `namespaces`, all by default,
    and --workers), its own arguments and the pytest arguments after `--`."""
    argv = sys.argv[1:] if argv is None else argv
    extra: list[str] = []
    if "--" in argv:
        argv, extra = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    parser = argparse.ArgumentParser(prog=prog, description=doc.split("\n\n")[0])
    parser.add_argument("--namespace", nargs="+", default=namespaces, choices=namespaces,
                        help="namespaces to run (default: all of them)")
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers")
    return parser, argv, extra


def pytest_command(args: list[str], report: Path, workers: int) -> list[str]:
    """`python -m pytest` with `args`, quiet, short tracebacks, a JSON report, `workers`
    pytest-xdist processes."""
    cmd = [sys.executable, "-m", "pytest", *args, "-p", "no:cacheprovider", "-q", "--tb=short",
           "--json-report", f"--json-report-file={report}"]
    return cmd + (["-n", str(workers)] if workers > 1 else [])


def run_pytest(label: str, cmd: list[str], report: Path, env: Mapping[str, str],
               cwd: Path | None = None, path: Sequence[Path] = ()) -> dict[str, Any]:
    """Run `cmd` (a pytest_command writing `report`) with `env` added to the environment and
    the project (after `path`) importable, in `cwd` or a scratch directory; its counts (a
    collector that failed counts as an error, one skipped as a skip), the failing node ids with
    their errors' messages, and the duration."""
    REPORTS_DIR.mkdir(parents=True, exist_ok=True)
    report.unlink(missing_ok=True)
    environment = {**os.environ, **env, "PYTHONPATH": os.pathsep.join(
        filter(None, [*map(str, path), str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))}
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="client-check-") as scratch:
        code = subprocess.run(cmd, cwd=cwd or scratch, env=environment, check=False).returncode
    seconds = time.monotonic() - start
    if not report.is_file():
        raise SystemExit(f"{label}: pytest exited with code {code} without a report")
    data = json.loads(report.read_text())
    tests = data.get("tests", [])
    counts: Counter[str] = Counter(t["outcome"] for t in tests)
    failing = {t["nodeid"]: _message(t) for t in tests if t["outcome"] in ("failed", "error")}
    for c in data.get("collectors", []):
        if c["outcome"] == "failed":  # a module that cannot be collected counts as one error
            counts["error"] += 1
            failing[f"{c['nodeid']} (collection)"] = c.get("longrepr", "")[-300:]
        elif c["outcome"] == "skipped":
            counts["skipped"] += 1
    return {"namespace": label, "counts": dict(counts), "failing": failing,
            "seconds": round(seconds), "pytest_exit": code}


def _message(test: dict[str, Any]) -> str:
    """The last line of a failed test's error (its exception and message)."""
    for stage in ("call", "setup", "teardown"):
        crash = test.get(stage, {}).get("crash")
        if crash:
            return str(crash.get("message", ""))[:300]
    return ""


def classify(failing: Mapping[str, str],
             known: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Split failing node ids into (hxarray's, the test's): the test's where a pattern of
    `known` (node ids in which `*` matches anything, each with the reason) matches, with that
    reason."""
    compiled = [(re.compile(".*".join(map(re.escape, pattern.split("*")))), why)
                for pattern, why in known.items()]
    ours: dict[str, str] = {}
    theirs: dict[str, str] = {}
    for nodeid, message in failing.items():
        reason = next((why for pattern, why in compiled if pattern.fullmatch(nodeid)), None)
        if reason is None:
            ours[nodeid] = message
        else:
            theirs[nodeid] = reason
    return ours, theirs


def failures(result: dict[str, Any], title: str) -> str:
    """A result's failures, each with its error: for hxarray, classified (hxarray's, then the
    tests' with the reason); empty where nothing failed."""
    if "hxarrays" not in result:
        failing = result["failing"]
        return "\n".join([f"{title}: failures ({len(failing)}):",
                          *(f"  {nodeid}: {why}" for nodeid, why in failing.items())]) \
            if failing else ""
    lines = []
    for kind, failing in (("hxarray's", result["hxarrays"]), ("the tests'", result["tests"])):
        if failing:
            lines.append(f"{title}: failures {kind} ({len(failing)}):")
            lines += [f"  {nodeid}: {why}" for nodeid, why in failing.items()]
    return "\n".join(lines)


def finish(client: str, results: list[dict[str, Any]]) -> int:
    """Write the results to `<client>-summary.json` in the reports folder; the exit status:
    1 if any failure is hxarray's, else 0."""
    (REPORTS_DIR / f"{client}-summary.json").write_text(json.dumps(results, indent=1))
    return 1 if any(r.get("hxarrays") for r in results) else 0


def versions(names: list[str]) -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in names}


def table(rows: list[dict[str, Any]], first: str = "namespace") -> str:
    """A markdown table: one row per result (its `first` key), outcome counts and time."""
    lines = [f"| {first} | " + " | ".join(OUTCOMES) + " | time |",
             "|---|" + "--:|" * (len(OUTCOMES) + 1)]
    for r in rows:
        cells = [str(r["counts"].get(o, 0)) for o in OUTCOMES]
        lines.append(f"| {r[first]} | " + " | ".join(cells) + f" | {r['seconds']} s |")
    return "\n".join(lines)
