"""`python -m conformance.marray --marray PATH`: marray's tests (a clone of
github.com/mdhaber/marray at PATH) for hxarray and, run the same way, for array-api-strict and
numpy; a table per namespace, and every failure classified as hxarray's or the test's
(conformance/marray/known.py).

Each namespace runs with the plug-in (conformance/marray/plugin.py) that adds hxarray to the
namespaces marray's tests are parametrized with and keeps one namespace's tests, in the clone (so
marray's own pytest settings apply: warnings are errors), with the clone first on the path.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from conformance.clients import (
    REPORTS_DIR,
    classify,
    client_arguments,
    failures,
    finish,
    pytest_command,
    run_pytest,
    table,
    versions,
)
from conformance.marray.known import KNOWN


def run(clone: Path, namespace: str, workers: int, extra: list[str]) -> dict[str, Any]:
    report = REPORTS_DIR / f"marray-{namespace}.json"
    cmd = pytest_command(["marray/tests", "-p", "conformance.marray.plugin"], report, workers)
    env = {"HXARRAY_MARRAY_NAMESPACE": namespace}
    result = run_pytest(f"marray {namespace}", cmd + extra, report, env, cwd=clone,
                        path=[clone])
    result["namespace"] = namespace
    if namespace == "hxarray":
        ours, theirs = classify(result["failing"], KNOWN)
        result.update(hxarrays=ours, tests=theirs)
    return result


def main(argv: list[str] | None = None) -> int:
    parser, argv, extra = client_arguments("python -m conformance.marray", __doc__,
                                           ["hxarray", "array_api_strict", "numpy"], argv)
    parser.add_argument("--marray", required=True, type=Path, metavar="PATH",
                        help="a clone of https://github.com/mdhaber/marray")
    args = parser.parse_args(argv)
    clone = args.marray.expanduser().resolve()
    if not (clone / "marray" / "tests" / "test_marray.py").is_file():
        raise SystemExit(f"--marray {args.marray}: no marray/tests/test_marray.py there; clone "
                         "it with `git clone https://github.com/mdhaber/marray.git PATH`")
    results = [run(clone, ns, args.workers, extra) for ns in args.namespace]
    commit = subprocess.run(["git", "-C", str(clone), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True, check=False).stdout.strip()
    print(f"\nmarray's tests (marray {commit or 'at an unknown commit'}; " + ", ".join(
        f"{k} {v}" for k, v in versions(["numpy", "array-api-strict", "hxarray"]).items()) +
        ")\n")
    print(table(results))
    for r in results:
        print(failures(r, f"\n{r['namespace']}"))
    return finish("marray", results)


if __name__ == "__main__":
    raise SystemExit(main())
