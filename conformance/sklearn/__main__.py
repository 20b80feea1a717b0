"""`python -m conformance.sklearn`: scikit-learn's own array-API tests for hxarray and, run the
same way, for array-api-strict; a table of outcomes per namespace and the failing tests.

hxarray runs with the plug-in (conformance/sklearn/plugin.py) that adds it to the namespaces
scikit-learn's tests are parametrized with, selected with `-k hxarray`; array-api-strict runs
scikit-learn's tests as they ship, selected with `-k array_api_strict`. Both in a scratch
directory (so no project configuration applies), with SCIPY_ARRAY_API=1 and pytest-xdist.
"""

from __future__ import annotations

import json
from typing import Any

from conformance.clients import (
    REPORTS_DIR,
    client_arguments,
    pytest_command,
    run_pytest,
    table,
    versions,
)


def run(namespace: str, workers: int, extra: list[str],
        devices: list[str] | None = None) -> dict[str, Any]:
    """Run one namespace's selection; its counts, failures, duration and versions."""
    label = namespace if not devices or namespace != "hxarray" else \
        f"{namespace} ({', '.join(devices)})"
    report = REPORTS_DIR / f"sklearn-{label.replace(' ', '').replace(',', '-')}.json"
    plugin = ["-p", "conformance.sklearn.plugin"] if namespace == "hxarray" else []
    cmd = pytest_command(["--pyargs", "sklearn", *plugin, "-k", namespace], report, workers)
    env = {"SCIPY_ARRAY_API": "1"}
    if devices:
        env["HXARRAY_SKLEARN_DEVICES"] = ",".join(devices)
    result = run_pytest(label, cmd + extra, report, env)
    result["failing"] = list(result["failing"])
    result["versions"] = versions(["scikit-learn", "scipy", "numpy", "array-api-compat",
                                   "hxarray" if namespace == "hxarray" else "array-api-strict"])
    return result


def main(argv: list[str] | None = None) -> int:
    parser, argv, extra = client_arguments("python -m conformance.sklearn", __doc__,
                                           ["hxarray", "array_api_strict"], argv)
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
