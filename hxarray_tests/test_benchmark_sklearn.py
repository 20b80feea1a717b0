"""The scikit-learn benchmark's check, target and table on hand-made results (no timing)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from benchmarks import report
from benchmarks import sklearn as skbench


def _row(workload: str, kind: str, dtype: str, numpy_s: float, hxarray_s: float,
         check: str = "ok") -> dict[str, Any]:
    timed = check == "ok"
    return {"workload": workload, "estimator": workload.split(".")[0], "kind": kind,
            "shape": [10, 2], "dtype": dtype, "check": {"numpy": "reference", "hxarray": check},
            "median_s": {"numpy": numpy_s, "hxarray": hxarray_s} if timed else {},
            "hx_over_np": hxarray_s / numpy_s if timed else None, "timings": {}}


def test_target_is_the_geometric_mean_with_no_row_above_the_limit() -> None:
    rows = [_row("A.fit", "tall", "float64", 1e-3, 0.8e-3),
            _row("A.fit", "wide", "float32", 1e-3, 1.2e-3)]
    found = skbench.target({"results": rows})
    assert math.isclose(found["value"], math.sqrt(0.8 * 1.2))
    assert found["status"] == report.MET
    rows.append(_row("B.predict", "square", "float64", 1e-3, 0.5e-3))
    rows.append(_row("B.fit", "square", "float64", 1e-3, 1.31e-3))
    found = skbench.target({"results": rows})
    assert found["value"] < 1.0 and found["status"] == report.NOT_MET
    assert found["above"] == ["B.fit square float64"]


def test_a_failed_check_is_not_timed_and_fails_the_target() -> None:
    rows = [_row("A.fit", "tall", "float64", 1e-3, 0.5e-3),
            _row("A.transform", "tall", "float64", 0, 0, check="mismatch: values differ")]
    found = skbench.target({"results": rows})
    assert found["status"] == report.NOT_MET and "1 not comparable" in found["measured"]
    assert skbench.target({"results": []})["status"] == report.NOT_MEASURED
    assert skbench._cell(rows[1]).startswith("✗ hxarray: mismatch")


def test_check_compares_shape_dtype_and_values_with_the_dtype_tolerance() -> None:
    want = np.linspace(1.0, 2.0, 6).reshape(2, 3)
    assert skbench.check(want * (1 + 1e-7), want, "float64") == "ok"
    assert skbench.check(want * (1 + 1e-5), want, "float64").startswith("mismatch: values")
    want32 = want.astype(np.float32)
    assert skbench.check(want32 * np.float32(1 + 1e-4), want32, "float32") == "ok"
    assert skbench.check(want32, want, "float64").startswith("mismatch: dtype")
    assert skbench.check(want.T, want, "float64").startswith("mismatch: shape")


def test_markdown_renders_the_matrix_and_the_target() -> None:
    rows = [_row("A.fit", "tall", "float64", 1e-3, 0.9e-3),
            _row("A.fit", "wide", "float32", 1e-3, 2e-3)]
    document = {"mode": "quick", "created": "now", "duration_s": 1.0, "clock": "cpu",
                "threads": 1, "notes": [], "results": rows, "left_out": {"X": "why"},
                "shapes": {"default": {"tall": [10, 2]}, "PolynomialFeatures": {"tall": [5, 2]}},
                "machine": {"cpu": "cpu", "logical_cpus": 2, "usable_cpus": 2, "python": "3",
                            "load_average_start": 1.0, "load_average_end": 1.0, "blas": "none",
                            "libraries": {"numpy": "2", "hxarray": "0", "scikit-learn": "1.9",
                                          "scipy": "1", "array-api-compat": "1"}}}
    document["targets"] = [skbench.target(document)]
    text = skbench.markdown(document, details=True)
    assert "| workload | tall f64 | tall f32 | wide f64 | wide f32 |" in text
    assert "| A.fit | 0.90 |  |  | **2.00** |" in text
    assert "**not met**" in text and "- X: why" in text
