"""`python -m conformance.sklearn`: scikit-learn's own array-API tests for hxarray and, run the
same way, for array-api-strict; a table of outcomes per namespace and the failing tests.

hxarray runs with the plug-in (conformance/sklearn/plugin.py) that adds it to the namespaces
scikit-learn's tests are parametrized with, selected with `-k hxarray`; array-api-strict runs
scikit-learn's tests as they ship, selected with `-k array_api_strict`. Both in a scratch
directory (so no project configuration applies), with SCIPY_ARRAY_API=1 and pytest-xdist.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parents[2]
REPORTS_DIR = PROJECT_ROOT / "conformance" / "reports"
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")


def command(namespace: str, workers: int, report: Path, extra: list[str]) -> list[str]:
    cmd = [sys.executable, "-m", "pytest", "--pyargs", "sklearn", "-k", namespace,
           "-p", "no:cacheprovider", "-q", "--tb=short", "--json-report",
           f"--json-report-file={report}"]
    if namespace == "hxarray":
        cmd[5:5] = ["-p", "conformance.sklearn.plugin"]
    if workers > 1:
        cmd += ["-n", str(workers)]
    return cmd + extra


def run(namespace: str, workers: int, extra: list[str],
        devices: list[str] | None = None) -> dict[str, Any]:
    """Run one namespace's selection; its counts, failures, duration and versions."""
    REPORTS_DIR.mkdir(parents=True, exist_ok=True)
    label = namespace if not devices or namespace != "hxarray" else \
        f"{namespace} ({', '.join(devices)})"
    report = REPORTS_DIR / f"sklearn-{label.replace(' ', '').replace(',', '-')}.json"
    report.unlink(missing_ok=True)
    env = {**os.environ, "SCIPY_ARRAY_API": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT_ROOT),
                                                       os.environ.get("PYTHONPATH")]))}
    if devices:
        env["HXARRAY_SKLEARN_DEVICES"] = ",".join(devices)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="sklearn-check-") as scratch:
        code = subprocess.run(command(namespace, workers, report, extra), cwd=scratch,
                              env=env, check=False).returncode
    seconds = time.monotonic() - start
    if not report.is_file():
        raise SystemExit(f"sklearn-check: pytest exited with code {code} without a report")
    data = json.loads(report.read_text())
    counts: Counter[str] = Counter(t["outcome"] for t in data.get("tests", []))
    failing = [t["nodeid"] for t in data.get("tests", []) if t["outcome"] in ("failed", "error")]
    collectors = data.get("collectors", [])
    broken = [f"{c['nodeid']} (collection)" for c in collectors if c["outcome"] == "failed"]
    counts["error"] += len(broken)  # a module skipped as a whole (no numpydoc) counts as one
    counts["skipped"] += sum(c["outcome"] == "skipped" for c in collectors)
    failing += broken
    return {"namespace": label, "counts": dict(counts), "failing": failing,
            "seconds": round(seconds), "pytest_exit": code, "versions": versions(namespace)}


def versions(namespace: str) -> dict[str, str]:
    from importlib.metadata import version

    names = ["scikit-learn", "scipy", "numpy", "array-api-compat",
             "hxarray" if namespace == "hxarray" else "array-api-strict"]
    return {name: version(name) for name in names}


def table(results: list[dict[str, Any]]) -> str:
    """A markdown table: one row per namespace."""
    lines = ["| namespace | " + " | ".join(OUTCOMES) + " | time |",
             "|---|" + "--:|" * (len(OUTCOMES) + 1)]
    for r in results:
        cells = [str(r["counts"].get(o, 0)) for o in OUTCOMES]
        lines.append(f"| {r['namespace']} | " + " | ".join(cells) + f" | {r['seconds']} s |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    extra: list[str] = []
    if "--" in argv:
        argv, extra = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    parser = argparse.ArgumentParser(prog="python -m conformance.sklearn",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--namespace", nargs="+", default=["hxarray", "array_api_strict"],
                        choices=["hxarray", "array_api_strict"],
                        help="namespaces to run (default: both)")
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers")
    parser.add_argument("--devices", nargs="+", metavar="D",
                        help="hxarray devices to test (default: the CPU and every other usable "
                             "device; the simulated CUDA device needs HXARRAY_CUDA_DRIVER=sim)")
    args = parser.parse_args(argv)
    results = [run(ns, args.workers, extra, args.devices) for ns in args.namespace]
    print("\nscikit-learn's array-API tests (" + ", ".join(
        f"{k} {v}" for k, v in results[0]["versions"].items()) + ")\n")
    print(table(results))
    for r in results:
        if r["failing"]:
            print(f"\n{r['namespace']}: failing ({len(r['failing'])}):")
            print("\n".join(f"  {nodeid}" for nodeid in r["failing"]))
    (REPORTS_DIR / "sklearn-summary.json").write_text(json.dumps(results, indent=1))
    return 0 if all(not r["failing"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
