"""Run array-api-tests against hxarray in a subprocess and summarise its JSON report."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from conformance.report import format_counters, format_summary, summarise

PROJECT_ROOT = Path(__file__).resolve().parent.parent
REPORTS_DIR = Path(__file__).resolve().parent / "reports"
CLONE_HINT = "git clone --recursive https://github.com/data-apis/array-api-tests.git"
PYTEST_EXIT = {2: "interrupted", 3: "internal error", 4: "usage error", 5: "no tests collected"}


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """Parse runner options; everything after a ``--`` is returned as extra pytest arguments."""
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1 :]
    parser = argparse.ArgumentParser(
        prog="python -m conformance",
        description="Run the array-api-tests conformance suite against hxarray.",
        epilog="Arguments after -- are passed to pytest unchanged (they may override the "
               "defaults).",
    )
    parser.add_argument(
        "--suite",
        required=True,
        type=Path,
        metavar="PATH",
        help="path to a recursive clone of array-api-tests",
    )
    parser.add_argument(
        "--version",
        default="2025.12",
        metavar="V",
        help="standard version to test (default: %(default)s)",
    )
    parser.add_argument(
        "--device",
        metavar="D",
        help="sets HXARRAY_DEFAULT_DEVICE, e.g. cpu or cuda:0 (default: unset)",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="run hxarray in strict mode (HXARRAY_STRICT=1: every case the standard leaves open "
             "raises); by default it runs in its numpy mode",
    )
    parser.add_argument(
        "--max-examples",
        type=int,
        default=100,
        metavar="N",
        help="hypothesis examples per test (default: %(default)s)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, metavar="S", help="hypothesis seed (default: %(default)s)"
    )
    parser.add_argument(
        "--report",
        type=Path,
        metavar="FILE",
        help="JSON report path (default: conformance/reports/<version>-<device>.json)",
    )
    parser.add_argument("-k", dest="keyword", metavar="EXPR", help="pytest -k test selection")
    parser.add_argument(
        "--module",
        default="hxarray",
        metavar="NAME",
        help="namespace under test (default: %(default)s; e.g. numpy or array_api_strict to "
             "compare)",
    )
    return parser.parse_args(argv), extra


def check_suite(suite: Path, version: str) -> str | None:
    """Why ``suite`` cannot run ``version``, or None when the checkout looks complete."""
    if not suite.is_dir():
        return f"suite path {suite} does not exist.\nClone the suite with: {CLONE_HINT}"
    if not (suite / "array_api_tests").is_dir() or not (suite / "conftest.py").is_file():
        return (
            f"{suite} is not an array-api-tests checkout (no array_api_tests/ or conftest.py).\n"
            f"Clone it with: {CLONE_HINT}"
        )
    stubs = suite / "array-api" / "src" / "array_api_stubs"
    if not stubs.is_dir():
        return (
            f"{suite / 'array-api'} is empty: the array-api spec submodule was not cloned.\n"
            f"Clone with: {CLONE_HINT}\n"
            f"(or run `git submodule update --init` inside {suite})"
        )
    tag = "_" + version.replace(".", "_")
    if not (stubs / tag).is_dir() or not (suite / "array-api" / "spec" / version).is_dir():
        known = sorted(p.name[1:].replace("_", ".") for p in stubs.glob("_[0-9]*"))
        return (
            f"this suite's array-api submodule has no spec version {version} "
            f"(it has: {', '.join(known) or 'none'}). Update the suite checkout or pick --version."
        )
    return None


def default_report(module: str, version: str, device: str | None,
                   strict: bool = False) -> Path:
    """``conformance/reports/<version>-<device>[-strict].json``, prefixed by the module if not
    hxarray."""
    name = f"{version}-{device or 'default'}{'-strict' if strict else ''}.json".replace(":", "_")
    return REPORTS_DIR / (name if module == "hxarray" else f"{module}-{name}")


def pytest_command(args: argparse.Namespace, extra: list[str], report: Path) -> list[str]:
    """The pytest command line, run with the suite as working directory."""
    # Skip and xfail lists are deliberately empty: os.devnull overrides any skips.txt or
    # xfails.txt lying in the suite checkout. Should one ever be added, every entry needs a
    # comment proving a bug in the suite itself, never a gap in hxarray.
    cmd = [
        sys.executable, "-m", "pytest",
        f"--max-examples={args.max_examples}",
        f"--hypothesis-seed={args.seed}",
        f"--skips-file={os.devnull}",
        f"--xfails-file={os.devnull}",
        "--json-report",
        f"--json-report-file={report}",
        "--tb=short",
    ]  # fmt: skip
    if args.device and args.device.split(":")[0] == "cuda":
        # CUDA kernels compile on first use (seconds on the simulator): hypothesis's 800 ms
        # deadline would time the compiler, not hxarray.
        cmd.append("--disable-deadline")
    if sys.stderr.isatty():  # a progress bar instead of a line of dots (conformance/progress.py)
        cmd += ["-p", "conformance.progress"]
    if args.module == "hxarray":  # host fallbacks per test file (conformance/counters.py)
        cmd += ["-p", "conformance.counters"]
    if args.keyword:
        cmd += ["-k", args.keyword]
    if not any(a.startswith("array_api_tests") for a in extra):
        cmd.append("array_api_tests")
    return cmd + extra


def pytest_env(args: argparse.Namespace, hypothesis_dir: str) -> dict[str, str]:
    """The environment: module, version, device, project root importable, fresh hypothesis DB."""
    # Inherited ARRAY_API_TESTS_* variables (e.g. ARRAY_API_TESTS_SKIP_DTYPES) are dropped so
    # that a run depends only on the runner's options and skips nothing quietly.
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARRAY_API_TESTS_")}
    env["ARRAY_API_TESTS_MODULE"] = args.module
    env["ARRAY_API_TESTS_VERSION"] = args.version
    env["HXARRAY_STRICT"] = "1" if args.strict else "0"
    if args.device:
        env["HXARRAY_DEFAULT_DEVICE"] = args.device
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
    # An empty example database per run: with a fixed seed the run is then reproducible,
    # instead of replaying failures remembered from earlier runs.
    env["HYPOTHESIS_STORAGE_DIRECTORY"] = hypothesis_dir
    return env


def git_head(path: Path) -> str | None:
    """The commit checked out at ``path``, or None if it is not a git checkout."""
    if not (path / ".git").exists():
        return None
    try:
        done = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "HEAD"],
            check=False,
            capture_output=True,
            text=True,
        )
    except OSError:  # git not installed
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def main(argv: list[str] | None = None) -> int:
    """Run the suite; exit status 0 only if pytest succeeded and nothing failed or errored."""
    args, extra = parse_args(sys.argv[1:] if argv is None else argv)
    suite = args.suite.expanduser().resolve()
    if problem := check_suite(suite, args.version):
        print(f"conformance: {problem}", file=sys.stderr)
        return 2
    report = (args.report or default_report(args.module, args.version, args.device,
                                            args.strict)).resolve()
    report.parent.mkdir(parents=True, exist_ok=True)
    report.unlink(missing_ok=True)

    cmd = pytest_command(args, extra, report)
    settings = {
        "module": args.module,
        "version": args.version,
        "device": args.device,
        "strict": args.strict,
        "seed": args.seed,
        "max_examples": args.max_examples,
        "suite": str(suite),
        "suite_commit": git_head(suite),
        "spec_commit": git_head(suite / "array-api"),
        "pytest_args": cmd[3:],
    }
    print(
        "conformance: " + ", ".join(f"{k}={v}" for k, v in settings.items() if k != "pytest_args")
    )
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="conformance-hypothesis-") as hypothesis_dir:
        env = pytest_env(args, hypothesis_dir)
        counters = report.with_suffix(".counters.json")
        counters.unlink(missing_ok=True)
        env["HXARRAY_CONFORMANCE_COUNTERS"] = str(counters)
        returncode = subprocess.run(cmd, check=False, cwd=suite, env=env).returncode
    elapsed = time.monotonic() - start

    if not report.is_file():
        print(
            f"\nconformance: pytest exited with code {returncode} without writing {report}; "
            f"see its output above (is {args.module} importable?)",
            file=sys.stderr,
        )
        return returncode or 1
    data = json.loads(report.read_text())
    data["conformance"] = settings
    if counters.is_file():
        data["device_counters"] = json.loads(counters.read_text())
        counters.unlink()
    report.write_text(json.dumps(data, indent=1))

    summary = summarise(data)
    print(f"\n{args.module} against array-api-tests {args.version} ({elapsed:.0f} s)\n")
    print(format_summary(summary))
    if "device_counters" in data:
        print(format_counters(data["device_counters"]))
    print(f"\nreport: {report}")
    if returncode not in (0, 1):  # 1 = some tests failed, already listed above
        why = PYTEST_EXIT.get(returncode, "unexpected exit code")
        print(f"conformance: pytest exited with code {returncode} ({why})", file=sys.stderr)
        return returncode
    return 0 if summary.ok and returncode == 0 else 1
