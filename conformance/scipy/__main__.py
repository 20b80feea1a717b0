"""`python -m conformance.scipy`: SciPy's own array-API tests (those of the installed package that
use its `xp` fixture, module by module) for hxarray on each device asked for and, run the same
way, for array-api-strict; a table per module, and every failure classified as hxarray's or the
test's (conformance/scipy/known.py).

hxarray runs with the plug-in (conformance/scipy/plugin.py) that adds it to the backends SciPy's
`xp` fixture is parametrized with, selected with `-k hxarray`, on the device
HXARRAY_DEFAULT_DEVICE names; array-api-strict runs SciPy's tests as they ship, `-k
array_api_strict`. Each module in a scratch directory, with SCIPY_ARRAY_API=1 and pytest-xdist.
"""

from __future__ import annotations

import re
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
from conformance.scipy.known import KNOWN

_USES_XP = re.compile(r"def test\w*\(([^)]*)\)", re.S)


def modules() -> list[str]:
    """The scipy subpackages with tests that take the `xp` fixture (scipy._lib included)."""
    import scipy

    root = Path(scipy.__file__).parent
    found = set()
    for path in root.glob("*/**/tests/test_*.py"):
        text = path.read_text(errors="replace")
        if any(re.search(r"\bxp\b", params) for params in _USES_XP.findall(text)):
            found.add(path.relative_to(root).parts[0])
    return sorted(found)


def run(module: str, namespace: str, device: str | None, workers: int,
        extra: list[str]) -> dict[str, Any]:
    """One module's selection for one namespace (hxarray on `device`)."""
    label = namespace if namespace != "hxarray" else f"hxarray ({device})"
    report = REPORTS_DIR / f"scipy-{module}-{label.replace(' ', '').replace(':', '')}.json"
    plugin = ["-p", "conformance.scipy.plugin"] if namespace == "hxarray" else []
    cmd = pytest_command(["--pyargs", f"scipy.{module}", *plugin, "-m", "array_api_backends",
                          "-k", namespace], report, workers)
    env = {"SCIPY_ARRAY_API": "1"}
    if device:
        env["HXARRAY_DEFAULT_DEVICE"] = device
    result = run_pytest(f"scipy.{module} {label}", cmd + extra, report, env)
    result.update(namespace=label, module=module)
    if namespace == "hxarray":
        ours, theirs = classify(result["failing"], KNOWN)
        result.update(hxarrays=ours, tests=theirs)
    return result


def main(argv: list[str] | None = None) -> int:
    parser, argv, extra = client_arguments("python -m conformance.scipy", __doc__,
                                           ["hxarray", "array_api_strict"], argv)
    parser.add_argument("--devices", nargs="+", default=["cpu"], metavar="D",
                        help="hxarray devices, one run each (default: cpu; the simulated "
                             "cuda:0 needs HXARRAY_CUDA_DRIVER=sim)")
    parser.add_argument("--modules", nargs="+", metavar="M",
                        help="scipy subpackages (default: every one with array-API tests)")
    args = parser.parse_args(argv)
    runs = [(ns, d) for ns in args.namespace
            for d in (args.devices if ns == "hxarray" else [None])]
    results = []
    for module in args.modules or modules():
        for namespace, device in runs:
            result = run(module, namespace, device, args.workers, extra)
            results.append(result)
            print(f"\nscipy.{module}, {result['namespace']}: " + ", ".join(
                f"{n} {o}" for o, n in result["counts"].items()) + ("" if "hxarrays" not in result
                else f"; {len(result['hxarrays'])} hxarray's, {len(result['tests'])} the tests'"),
                flush=True)
    print("\nSciPy's array-API tests (" + ", ".join(f"{k} {v}" for k, v in versions(
        ["scipy", "numpy", "array-api-compat", "array-api-strict", "hxarray"]).items()) + ")\n")
    for namespace in dict.fromkeys(r["namespace"] for r in results):
        rows = [r for r in results if r["namespace"] == namespace]
        print(f"{namespace}:\n\n" + table(rows, first="module") + "\n")
    for r in results:
        print(failures(r, f"{r['namespace']}, scipy.{r['module']}"))
    return finish("scipy", results)


if __name__ == "__main__":
    raise SystemExit(main())
