"""`python -m benchmarks.sklearn [--quick] [--only NAME ...] [--shapes KIND ...]
[--dtypes DTYPE ...] [--threads N] [--clock {wall,cpu}] [--update-docs] [--list] [--render JSON]`:
scikit-learn with array-API dispatch on, hxarray (CPU) against numpy in the same run.

Every workload (an estimator's `fit`, its `transform` / `predict*` / `decision_function`, a metric
or a pairwise kernel) runs on a tall-narrow, a square and a wide float64 and float32 X, under
`sklearn.set_config(array_api_dispatch=True)` for both libraries (numpy: through array-api-compat's
numpy namespace, scikit-learn's own path for numpy inputs with dispatch on). For each workload,
shape and dtype:

1. each library gets its own copy of the same numpy data and calls the workload once (a `fit` is
   checked through the fitted estimator's transform or prediction of X); hxarray's result must be
   an hxarray array (an estimator that converted to numpy would fail here) with numpy's shape,
   dtype and values (`np.allclose`, rtol 1e-6 in float64, 1e-3 in float32). A library that raised
   or whose result differs is not timed;
2. the two libraries are then timed in interleaved rounds by the runner of `python -m benchmarks`
   (`runner.time_rounds`): median time per call, hx/np = hxarray's median over numpy's.

Only what scikit-learn supports with array-API inputs is timed (see `LEFT_OUT` for what is not,
and why). Results go to benchmarks/results/sklearn-{<timestamp>,latest}.json and
sklearn-latest.md; with --update-docs the table also goes into docs/performance.md, between the
`sklearn:start` / `sklearn:end` markers.
"""

from __future__ import annotations

import os

# scikit-learn refuses array_api_dispatch unless this is set before scipy is imported.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import argparse  # noqa: E402
import datetime  # noqa: E402
import functools  # noqa: E402
import gc  # noqa: E402
import importlib.metadata  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from . import report  # noqa: E402
from .cases import Library, libraries  # noqa: E402
from .runner import Settings, time_rounds  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
DOCS_PAGE = ROOT / "docs" / "performance.md"
START, END = "<!-- sklearn:start -->", "<!-- sklearn:end -->"
REFERENCE, SUBJECT = report.REFERENCE, report.SUBJECT

# Fewer rounds than the array benchmark's: a call lasts milliseconds to a second, not microseconds.
FULL = Settings(rounds=21, min_rounds=5, round_seconds=0.02, max_seconds=3.0)
QUICK = Settings(rounds=9, min_rounds=5, round_seconds=0.005, max_seconds=0.3)
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}

KINDS = ("tall", "square", "wide")
DTYPES = ("float64", "float32")
# (rows, columns) of X for each kind; quick, full
SHAPES = {
    True: {"tall": (10_000, 16), "square": (256, 256), "wide": (64, 1_024)},
    False: {"tall": (50_000, 32), "square": (1_000, 1_000), "wide": (200, 5_000)},
}
# PolynomialFeatures(2) makes about columns² / 2 features: smaller inputs of the same kinds.
POLY_SHAPES = {
    True: {"tall": (5_000, 10), "square": (48, 48), "wide": (16, 128)},
    False: {"tall": (20_000, 20), "square": (150, 150), "wide": (30, 600)},
}
KERNEL_ROWS = 50  # the kernels' second argument: that many other points
RTOL = {"float64": 1e-6, "float32": 1e-3}
ATOL = {"float64": 1e-8, "float32": 1e-4}

# Estimators scikit-learn 1.9 lists as array-API capable, or parameter choices of them, that are
# not timed, and why.
LEFT_OUT = {
    "PCA(svd_solver='arpack')": "not supported with array-API inputs (scipy's ARPACK; the "
                                "estimator's array_api_support tag is False)",
    "PCA(svd_solver='randomized') with power_iteration_normalizer='auto' or 'LU'":
        "not supported (the tag is False); timed with 'QR' instead",
    "PCA(svd_solver='auto')": "resolves to one of the solvers timed (full, covariance_eigh or "
                              "randomized, by shape)",
    "Ridge / RidgeClassifier with solvers other than 'svd'": "array-API inputs other than numpy "
                                                             "support only 'svd' (a ValueError)",
    "LogisticRegression with solvers other than 'lbfgs'": "not supported (the tag is False)",
    "GaussianMixture(init_params='kmeans' or 'k-means++')": "not supported (the tag is False); "
                                                           "timed with 'random_from_data'",
    "GaussianMixture(covariance_type='full') on square and wide X": "a 1000×1000 or 5000×5000 "
                                                                    "covariance per component "
                                                                    "and iteration; timed on "
                                                                    "tall X",
    "PCA(svd_solver='covariance_eigh') on wide X": "the solver is for n_samples ≫ n_features "
                                                  "(a 5000×5000 eigh); timed on tall and square",
    "QuadraticDiscriminantAnalysis": "its array_api_support tag is False in scikit-learn 1.9.1",
    "RidgeCV, RidgeClassifierCV, PoissonRegressor, Normalizer, Binarizer, KernelCenterer, "
    "LabelEncoder": "supported, not timed (yet), to keep --quick within minutes",
}
# MaxAbsScaler and RidgeClassifier(solver="svd") are timed although their array_api_support tag
# is False in 1.9.1: their code dispatches through the namespace, scikit-learn's own array-API
# compliance tests cover them, and the check below refuses a result that is not an hxarray array.


@dataclass(frozen=True)
class Data:
    """One library's inputs for one shape and dtype."""

    X: Any
    X2: Any  # 0.9 X + 0.1: the "prediction" the regression metrics compare X with
    Y: Any  # KERNEL_ROWS other points: the kernels' second argument
    y_class: Any  # three classes, int64
    y_reg: Any  # X @ w + noise, X's dtype


@dataclass(frozen=True)
class Workload:
    """A timed call: `setup(data)` returns (the timed callable, the callable whose result is
    checked against numpy's). `estimator` names the row of the summary."""

    name: str
    estimator: str
    description: str
    setup: Callable[[Data], tuple[Callable[[], Any], Callable[[], Any]]]
    kinds: tuple[str, ...] = KINDS
    shapes: dict[bool, dict[str, tuple[int, int]]] = field(default_factory=lambda: SHAPES)


@functools.lru_cache(maxsize=4)
def host_data(rows: int, cols: int, dtype: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, cols))
    y_class = ((x[:, 0] > 0).astype(np.int64) + (x[:, 1 % cols] + x[:, 2 % cols] > 0.5))
    y_reg = x @ rng.standard_normal(cols) + 0.1 * rng.standard_normal(rows)
    # Y: other points than X's rows. Against X's own rows, the distances on the diagonal are
    # 0 computed as sqrt(|x|² + |y|² - 2 x·y), whose cancellation leaves up to sqrt(eps)·|x| (a
    # few 1e-7) that differs between any two BLAS: not a wrong answer, but not allclose either.
    out = {"X": x, "X2": 0.9 * x + 0.1, "Y": rng.standard_normal((KERNEL_ROWS, cols)),
           "y_reg": y_reg}
    out = {k: np.ascontiguousarray(v, dtype=dtype) for k, v in out.items()}
    out["y_class"] = y_class
    return out


def _data(lib: Library, rows: int, cols: int, dtype: str) -> Data:
    return Data(**{k: lib.from_numpy(v) for k, v in host_data(rows, cols, dtype).items()})


def _estimator(name: str, make: Callable[[], Any], method: str, target: str | None,
               kinds: tuple[str, ...] = KINDS,
               shapes: dict[bool, dict[str, tuple[int, int]]] = SHAPES) -> list[Workload]:
    """`name.fit` (checked through `method` of the fitted estimator) and `name.method` (on an
    estimator fitted once)."""
    def targets(d: Data) -> tuple[Any, ...]:
        return (d.X,) if target is None else (d.X, getattr(d, target))

    def fit(d: Data) -> tuple[Callable[[], Any], Callable[[], Any]]:
        estimator, args = make(), targets(d)
        return (lambda: estimator.fit(*args)), (lambda: getattr(estimator.fit(*args), method)(d.X))

    def apply(d: Data) -> tuple[Callable[[], Any], Callable[[], Any]]:
        call = getattr(make().fit(*targets(d)), method)
        return (lambda: call(d.X)), (lambda: call(d.X))

    y = "" if target is None else ", y"
    return [Workload(f"{name}.fit", name, f"`{name}.fit(X{y})`", fit, kinds, shapes),
            Workload(f"{name}.{method}", name, f"`{method}(X)` of a fitted {name}", apply, kinds,
                     shapes)]


def _function(name: str, call: Callable[[Data], Any]) -> Workload:
    def setup(d: Data) -> tuple[Callable[[], Any], Callable[[], Any]]:
        thunk = functools.partial(call, d)
        return thunk, thunk

    return Workload(name, name, "", setup)


def workloads() -> list[Workload]:
    from sklearn import (
        decomposition,
        discriminant_analysis,
        kernel_approximation,
        linear_model,
        metrics,
        mixture,
        naive_bayes,
        preprocessing,
    )
    from sklearn.metrics import pairwise

    def pca(solver: str, **extra: Any) -> Callable[[], Any]:
        return lambda: decomposition.PCA(8, svd_solver=solver, random_state=0, **extra)

    def gmm(covariance: str) -> Callable[[], Any]:
        return lambda: mixture.GaussianMixture(3, covariance_type=covariance, max_iter=20,
                                               init_params="random_from_data", random_state=0)

    found = [
        *_estimator("StandardScaler", preprocessing.StandardScaler, "transform", None),
        *_estimator("MinMaxScaler", preprocessing.MinMaxScaler, "transform", None),
        *_estimator("MaxAbsScaler", preprocessing.MaxAbsScaler, "transform", None),
        *_estimator("PolynomialFeatures", lambda: preprocessing.PolynomialFeatures(2),
                    "transform", None, shapes=POLY_SHAPES),
        *_estimator("PCA(full)", pca("full"), "transform", None),
        *_estimator("PCA(covariance_eigh)", pca("covariance_eigh"), "transform", None,
                    kinds=("tall", "square")),
        *_estimator("PCA(randomized)", pca("randomized", power_iteration_normalizer="QR"),
                    "transform", None),
        *_estimator("LinearDiscriminantAnalysis", discriminant_analysis.LinearDiscriminantAnalysis,
                    "predict_proba", "y_class"),
        *_estimator("GaussianNB", naive_bayes.GaussianNB, "predict_proba", "y_class"),
        *_estimator("Ridge", lambda: linear_model.Ridge(1.0, solver="svd"), "predict", "y_reg"),
        *_estimator("RidgeClassifier", lambda: linear_model.RidgeClassifier(solver="svd"),
                    "decision_function", "y_class"),
        *_estimator("LogisticRegression", linear_model.LogisticRegression, "predict_proba",
                    "y_class"),
        *_estimator("GaussianMixture(diag)", gmm("diag"), "predict_proba", None),
        *_estimator("GaussianMixture(full)", gmm("full"), "predict_proba", None,
                    kinds=("tall",)),
        *_estimator("Nystroem", lambda: kernel_approximation.Nystroem(n_components=KERNEL_ROWS,
                                                                        random_state=0),
                    "transform", None),
        _function("r2_score", lambda d: metrics.r2_score(d.X, d.X2)),
        _function("mean_squared_error", lambda d: metrics.mean_squared_error(d.X, d.X2)),
        _function("euclidean_distances", lambda d: pairwise.euclidean_distances(d.X, d.Y)),
        _function("rbf_kernel", lambda d: pairwise.rbf_kernel(d.X, d.Y)),
        _function("polynomial_kernel", lambda d: pairwise.polynomial_kernel(d.X, d.Y)),
        _function("cosine_similarity", lambda d: pairwise.cosine_similarity(d.X, d.Y)),
    ]
    descriptions = {"r2_score": "`r2_score(X, 0.9 X + 0.1)`, multi-output",
                    "mean_squared_error": "`mean_squared_error(X, 0.9 X + 0.1)`, multi-output"}
    return [w if w.description else
            Workload(w.name, w.estimator, descriptions.get(
                w.name, f"`{w.name}(X, Y)`, Y {KERNEL_ROWS} other points"), w.setup, w.kinds,
                w.shapes)
            for w in found]


def _native(lib: Library, value: Any) -> bool:
    """Whether `value` is the library's own array (or a Python scalar, as scores are)."""
    if isinstance(value, (float, int)):
        return True
    return isinstance(value, np.ndarray if lib.name == REFERENCE else lib.xp.Array)


def check(got: Any, want: np.ndarray, dtype: str) -> str:
    if got.shape != want.shape:
        return f"mismatch: shape {got.shape}, numpy {want.shape}"
    if got.dtype != want.dtype:
        return f"mismatch: dtype {got.dtype}, numpy {want.dtype}"
    if not np.allclose(got, want, rtol=RTOL[dtype], atol=ATOL[dtype], equal_nan=True):
        worst = float(np.max(np.abs(got.astype(np.float64) - want)))
        return f"mismatch: values differ from numpy's (largest difference {worst:.3g})"
    return "ok"


def measure(workload: Workload, kind: str, dtype: str, quick: bool, libs: list[Library],
            settings: Settings, clock: str = "wall") -> dict[str, Any]:
    """Check, then time, one workload on one shape and dtype: a result row."""
    rows, cols = workload.shapes[quick][kind]
    thunks: dict[str, Callable[[], Any]] = {}
    checks: dict[str, str] = {}
    reference: np.ndarray | None = None
    for lib in libs:
        try:
            thunk, checked = workload.setup(_data(lib, rows, cols, dtype))
            value = checked()
            if isinstance(value, tuple):
                value = value[0]
            if not _native(lib, value):
                raise TypeError(f"returned a {type(value).__module__}.{type(value).__name__}, "
                                f"not an array of the input's namespace")
            result = np.asarray(lib.to_numpy(value) if not isinstance(value, (float, int))
                                else value)
        except Exception as exc:  # reported in the results; the run goes on
            checks[lib.name] = f"error: {type(exc).__name__}: {exc}"[:300]
            if reference is None:
                break
            continue
        if reference is None:
            reference, checks[lib.name] = result, "reference"
        else:
            checks[lib.name] = check(result, reference, dtype)
        if checks[lib.name] in ("ok", "reference"):
            thunks[lib.name] = thunk
    timings = time_rounds(thunks, settings, CLOCKS[clock]) if len(thunks) == len(libs) else {}
    median = {name: t.median for name, t in timings.items()}
    return {"workload": workload.name, "estimator": workload.estimator, "kind": kind,
            "shape": [rows, cols], "dtype": dtype, "check": checks, "median_s": median,
            "hx_over_np": median[SUBJECT] / median[REFERENCE] if median else None,
            "timings": {name: {"median_s": t.median, "q1_s": t.q1, "q3_s": t.q3,
                               "loops_per_round": t.loops, "per_call_s": t.per_call}
                        for name, t in timings.items()}}


# ---------------------------------------------------------------------------------------------
# The target, judged on one run's document alone.

GEOMEAN_LIMIT, WORST_LIMIT = 1.0, 1.3


def target(document: dict[str, Any]) -> dict[str, Any]:
    text = (f"scikit-learn group (array-API dispatch on): geometric mean of hxarray's time / "
            f"numpy's ≤ {GEOMEAN_LIMIT:g}, no workload (estimator method × shape × dtype) above "
            f"{WORST_LIMIT:g}×")
    rows = document["results"]
    timed = [r for r in rows if r["hx_over_np"] is not None]
    if not timed:
        return report._target("sklearn", text, report.NOT_MEASURED, report.NOT_MEASURED,
                               limit=GEOMEAN_LIMIT)
    ratios = [r["hx_over_np"] for r in timed]
    geomean = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    worst = max(timed, key=lambda r: r["hx_over_np"])
    above = [r for r in timed if r["hx_over_np"] > WORST_LIMIT]
    measured = (f"{geomean:.2f}× over {len(timed)} rows"
                + (f" ({len(rows) - len(timed)} not comparable)" if len(timed) < len(rows) else "")
                + f"; worst {_label(worst)} {worst['hx_over_np']:.2f}×; {len(above)} above "
                f"{WORST_LIMIT:g}×")
    met = geomean <= GEOMEAN_LIMIT and not above and len(timed) == len(rows)
    return report._target("sklearn", text, report.MET if met else report.NOT_MET, measured,
                          geomean, GEOMEAN_LIMIT, above=[_label(r) for r in above])


def _label(r: dict[str, Any]) -> str:
    return f"{r['workload']} {r['kind']} {r['dtype']}"


# ---------------------------------------------------------------------------------------------
# Markdown

def _cell(r: dict[str, Any] | None) -> str:
    if r is None:
        return ""
    if r["hx_over_np"] is None:
        problems = [f"{lib}: {text}" for lib, text in r["check"].items()
                    if text not in ("ok", "reference")]
        return "✗ " + "; ".join(problems).replace("|", "\\|")[:80]
    value = f"{r['hx_over_np']:.2f}"
    return f"**{value}**" if r["hx_over_np"] > WORST_LIMIT else value


def markdown(document: dict[str, Any], details: bool) -> str:
    m = document["machine"]
    libs = m["libraries"]
    shapes = document["shapes"]
    lines = [
        f"Run: **{document['mode']}**, {document['created']}, {document['duration_s']:.0f} s.",
        "",
        f"- Machine: {m['cpu']}, {m['logical_cpus']} logical CPUs ({m['usable_cpus']} usable), "
        f"Python {m['python']}; load average (1 min) {m['load_average_start']:.2f} at the start, "
        f"{m['load_average_end']:.2f} at the end.",
        f"- scikit-learn {libs['scikit-learn']}, scipy {libs['scipy']}, array-api-compat "
        f"{libs['array-api-compat']}, numpy {libs[REFERENCE]} (BLAS: "
        f"{report._blas_text(m['blas'])}), hxarray {libs[SUBJECT]}"
        + (f" (git {m['hxarray_git']})" if m.get("hxarray_git") else "") + ".",
        "- X: " + ", ".join(f"{kind} {r}×{c}" for kind, (r, c) in shapes["default"].items())
        + "; PolynomialFeatures(2): " + ", ".join(
            f"{kind} {r}×{c}" for kind, (r, c) in shapes["PolynomialFeatures"].items())
        + f"; kernels of X against {KERNEL_ROWS} other points.",
        "- Each cell: hxarray's median time / numpy's, both with `array_api_dispatch=True`, "
        f"interleaved in the same rounds (> 1: hxarray slower; bold: above {WORST_LIMIT:g}×; "
        "✗: not timed, the check failed); timed by "
        + ("the process's CPU time (`time.process_time`)" if document.get("clock") == "cpu"
           else "wall time") + (f", {document['threads']} thread(s) per pool"
                                if document.get("threads") else "") + ".",
    ]
    lines += [f"- Note: {note}" for note in document["notes"]]
    lines += ["", "### scikit-learn target"] + report.targets_markdown(document)[1:] + [""]
    results = document["results"]
    index = {(r["workload"], r["kind"], r["dtype"]): r for r in results}
    names = list(dict.fromkeys(r["workload"] for r in results))
    kinds = [k for k in KINDS if any(r["kind"] == k for r in results)]
    dtypes = [d for d in DTYPES if any(r["dtype"] == d for r in results)]
    header = ["workload"] + [f"{k} {d.replace('float', 'f')}" for k in kinds for d in dtypes]
    lines += ["| " + " | ".join(header) + " |", "|---|" + "--:|" * (len(header) - 1)]
    for name in names:
        lines.append("| " + " | ".join([name] + [_cell(index.get((name, k, d)))
                                                 for k in kinds for d in dtypes]) + " |")
    timed = sorted((r for r in results if r["hx_over_np"] is not None),
                   key=lambda r: -r["hx_over_np"])
    if timed:
        lines += ["", "Slowest against numpy: " + ", ".join(
            f"{_label(r)} {r['hx_over_np']:.2f}× ({report._time(r['median_s'][SUBJECT])} vs "
            f"{report._time(r['median_s'][REFERENCE])})" for r in timed[:6]) + "."]
    if details:
        lines += ["", "### All rows", "", "| workload | shape | dtype | numpy | hxarray | hx/np "
                  "| check |", "|---|---|---|--:|--:|--:|---|"]
        for r in results:
            t = r["median_s"]
            checks = "; ".join(f"{lib}: {text}" for lib, text in r["check"].items()
                               if text not in ("ok", "reference")).replace("|", "\\|") or "ok"
            lines.append(f"| {r['workload']} | {r['shape'][0]}×{r['shape'][1]} | {r['dtype']} "
                         f"| {report._time(t.get(REFERENCE))} | {report._time(t.get(SUBJECT))} "
                         f"| {report._ratio(r['hx_over_np'])} | {checks} |")
        lines += ["", "Left out:", ""] + [f"- {k}: {v}" for k, v in document["left_out"].items()]
    return "\n".join(lines) + "\n"


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _write(document: dict[str, Any], update_docs: bool, created: datetime.datetime | None) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    if created is not None:
        text = json.dumps(document, indent=1)
        (RESULTS / f"sklearn-{created:%Y%m%dT%H%M%SZ}.json").write_text(text, encoding="utf-8")
        (RESULTS / "sklearn-latest.json").write_text(text, encoding="utf-8")
    full = markdown(document, details=True)
    (RESULTS / "sklearn-latest.md").write_text(full, encoding="utf-8")
    if update_docs:
        report.update_docs(DOCS_PAGE, markdown(document, details=False), (START, END))
    print(full)
    print("written: benchmarks/results/sklearn-latest.{json,md}"
          + (f"; {DOCS_PAGE.relative_to(ROOT)} updated" if update_docs else ""), file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sklearn", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="smaller X, fewer rounds (a few minutes on two cores)")
    parser.add_argument("--only", nargs="+", metavar="NAME",
                        help="only these workloads or estimators (--list shows them)")
    parser.add_argument("--shapes", nargs="+", choices=KINDS, default=list(KINDS))
    parser.add_argument("--dtypes", nargs="+", choices=DTYPES, default=list(DTYPES))
    parser.add_argument("--update-docs", action="store_true",
                        help=f"also write the table into {DOCS_PAGE.relative_to(ROOT)}")
    parser.add_argument("--threads", type=int, metavar="N",
                        help="limit the BLAS and OpenMP pools (threadpoolctl) and hxarray's "
                             "threads to N, alike for both libraries (default: as they start)")
    parser.add_argument("--clock", choices=list(CLOCKS), default="wall",
                        help="time rounds by wall time (default) or by the process's CPU time "
                             "(time.process_time: on a loaded machine, with --threads 1, the "
                             "time other processes take the cores does not count)")
    parser.add_argument("--list", action="store_true", help="list the workloads and exit")
    parser.add_argument("--render", metavar="JSON", type=Path,
                        help="measure nothing: render a results file again")
    args = parser.parse_args(argv)
    if args.render:
        document = json.loads(args.render.read_text(encoding="utf-8"))
        document["targets"] = [target(document)]
        _write(document, args.update_docs, None)
        return
    import sklearn

    found = workloads()
    if args.list:
        for w in found:
            print(f"{w.name:42s} {', '.join(w.kinds):20s} {w.description}")
        return
    if args.only:
        known = {w.name for w in found} | {w.estimator for w in found}
        unknown = sorted(set(args.only) - known)
        if unknown:
            raise SystemExit(f"unknown workload {', '.join(unknown)}; --list shows them")
        found = [w for w in found if w.name in args.only or w.estimator in args.only]
    sklearn.set_config(array_api_dispatch=True)
    warnings.simplefilter("ignore")  # convergence and collinearity warnings, alike for both
    notes = []
    if args.threads:
        from threadpoolctl import threadpool_limits

        threadpool_limits(args.threads)
        # hxarray's own pool through its setting, not `set_num_threads`: that one also makes
        # every matmul set the BLAS pools' count and restore it (threadpoolctl, tens of µs per
        # call), which numpy's calls do not pay; threadpool_limits has set them already.
        if "hxarray" in sys.modules:
            sys.modules["hxarray"].set_num_threads(args.threads)
        else:
            os.environ["HXARRAY_NUM_THREADS"] = str(args.threads)
        notes.append(f"--threads {args.threads}: BLAS and OpenMP pools (threadpoolctl) and "
                     f"hxarray's pool (HXARRAY_NUM_THREADS) limited to {args.threads} thread(s)")
    import hxarray
    from hxarray._progress import bar

    if args.threads and hxarray.get_num_threads() != args.threads:
        raise SystemExit(f"hxarray runs {hxarray.get_num_threads()} threads, not {args.threads}")
    libs = [lib for lib in libraries()[0] if lib.name in (REFERENCE, SUBJECT)]
    info = report.machine(libs)
    info["libraries"].update({name: _version(name) for name in
                              ("scikit-learn", "scipy", "array-api-compat")})
    settings = QUICK if args.quick else FULL
    created = datetime.datetime.now(datetime.timezone.utc)
    start = time.perf_counter()
    plan = [(w, kind, dtype) for w in found for kind in args.shapes if kind in w.kinds
            for dtype in args.dtypes]
    results = []
    progress = bar(len(plan), "scikit-learn benchmark", unit="case")
    for w, kind, dtype in plan:
        progress.set_postfix_str(f"{w.name} {kind} {dtype}")
        results.append(measure(w, kind, dtype, args.quick, libs, settings, args.clock))
        gc.collect()
        hxarray.empty_cache()
        progress.update()
    progress.close()
    info["load_average_end"] = os.getloadavg()[0]
    document = {"schema": 1, "mode": "quick" if args.quick else "full", "clock": args.clock,
                "threads": args.threads,
                "created": created.isoformat(timespec="seconds"),
                "duration_s": time.perf_counter() - start, "command": sys.argv,
                "settings": vars(settings), "machine": info, "notes": notes,
                "shapes": {"default": SHAPES[args.quick],
                           "PolynomialFeatures": POLY_SHAPES[args.quick]},
                "left_out": LEFT_OUT, "results": results}
    document["targets"] = [target(document)]
    _write(document, args.update_docs, created)


if __name__ == "__main__":
    main()
