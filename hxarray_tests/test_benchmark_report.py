"""The benchmark report's judging of the small-size, numpy-function and random-number targets on
hand-made results (no timing)."""

from __future__ import annotations

import math
from typing import Any

from benchmarks import report


def _row(case: str, group: str, size: int, numpy_s: float, hxarray_s: float,
         shape: list[int] | None = None) -> dict[str, Any]:
    return {"case": case, "group": group, "size": size, "shape": shape or [size],
            "check": {"numpy": "reference", "hxarray": "ok"},
            "median_s": {"numpy": numpy_s, "hxarray": hxarray_s},
            "speedup": numpy_s / hxarray_s, "hx_over_np": hxarray_s / numpy_s}


def _small(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return next(t for t in report.targets({"results": rows, "rss": []}) if t["key"] == "small")


def test_small_sizes_target_is_the_geometric_mean_over_the_small_rows() -> None:
    rows = [_row("add", "elementwise", 10, 1e-6, 1e-6),
            _row("add", "elementwise", 1000, 1e-6, 2e-6),
            _row("matmul_f64", "matmul", 64, 1e-5, 1.2e-5, [64, 64]),
            # not counted: large, matmul beyond 64, asarray, zeros, the fused, allocator and
            # random groups
            _row("add", "elementwise", 100_000, 1e-6, 9e-6),
            _row("matmul_f64", "matmul", 128, 1e-5, 9e-5, [128, 128]),
            _row("asarray", "creation", 10, 1e-7, 9e-7),
            _row("zeros", "creation", 10, 1e-7, 9e-7),
            _row("fused_chain", "fused", 10, 1e-7, 9e-7),
            _row("alloc_pair", "allocator", 10, 1e-7, 9e-7),
            _row("random_f64", "random", 10, 1e-7, 9e-7),
            _row("median", "numpy", 10, 1e-7, 9e-7)]
    found = _small(rows)
    assert math.isclose(found["value"], (1 * 2 * 1.2) ** (1 / 3))
    assert found["status"] == report.NOT_MET  # 1.34 > 1.2
    assert "over 3 case/size pairs" in found["measured"]
    rows[1]["median_s"]["hxarray"] = 1.4e-6  # (1 * 1.4 * 1.2) ** (1 / 3) = 1.19
    assert _small(rows)["status"] == report.MET


def test_small_sizes_target_fails_on_one_case_above_two_and_a_half_times() -> None:
    rows = [_row("add", "elementwise", 10, 1e-6, 0.5e-6) for _ in range(8)]
    rows.append(_row("mask", "indexing", 10, 1e-6, 2.6e-6))
    found = _small(rows)
    assert found["value"] < 1.2 and found["status"] == report.NOT_MET
    assert "mask 10 (2.60×)" in found["measured"]


def test_numpy_functions_target_judges_speedups_from_1e5_and_ratios_below() -> None:
    def found(rows: list[dict[str, Any]]) -> dict[str, Any]:
        return next(t for t in report.targets({"results": rows, "rss": []})
                    if t["key"] == "numpy_functions")

    rows = [_row("median", "numpy", 1000, 10e-6, 14e-6),  # 1.4x: within (<= 1.5)
            _row("median", "numpy", 100_000, 1e-3, 1.05e-3),  # speedup 0.95: within (>= 0.9)
            _row("add", "elementwise", 1000, 1e-6, 9e-6)]  # not of the numpy group
    assert found(rows)["status"] == report.MET
    assert found(rows)["measured"] == "2 of 2 case/size pairs within"
    rows += [_row("histogram", "numpy", 10, 10e-6, 16e-6),  # 1.6x: not within
             _row("einsum", "numpy", 1_000_000, 1e-3, 1.2e-3, [1000, 1000])]  # speedup 0.83
    assert found(rows)["status"] == report.NOT_MET
    assert found(rows)["measured"] == ("2 of 4 case/size pairs within; histogram 10 (1.60×), "
                                       "einsum 1000×1000 (speedup 0.833)")
    assert found([_row("add", "elementwise", 10, 1e-6, 1e-6)])["status"] == report.NOT_MEASURED


def test_small_sizes_target_counts_a_wrong_result_against_it() -> None:
    rows = [_row("add", "elementwise", 10, 1e-6, 1e-6), _row("sort", "indexing", 10, 1e-6, 1e-6)]
    rows[1]["check"]["hxarray"] = "wrong values"
    found = _small(rows)
    assert found["status"] == report.NOT_MET and "1 not comparable" in found["measured"]


def test_small_sizes_target_without_small_rows_is_not_measured() -> None:
    assert _small([_row("add", "elementwise", 10**6, 1e-3, 1e-3)])["status"] \
        == report.NOT_MEASURED


def test_random_targets_judge_1e7_speedups_and_1e3_ratios() -> None:
    rows = [_row("random_f64", "random", 10**7, 30e-3, 19e-3),  # 1.58: met (>= 1.5)
            _row("random_f32", "random", 10**7, 30e-3, 16e-3),  # 1.88: not met (>= 2)
            _row("random_f64", "random", 1000, 4e-6, 7.9e-6),  # 1.98x: met (<= 2)
            _row("standard_normal", "random", 1000, 10e-6, 21e-6)]  # 2.1x: not met
    found = {t["key"]: t for t in report.targets({"results": rows, "rss": []})}
    assert found["random_f64_1e7"]["status"] == report.MET
    assert found["random_f32_1e7"]["status"] == report.NOT_MET
    assert found["random_f64_1e3"]["status"] == report.MET
    assert found["standard_normal_1e3"]["status"] == report.NOT_MET
    assert found["standard_normal_1e7"]["status"] == report.NOT_MEASURED
    assert found["random_f32_1e3"]["status"] == report.NOT_MEASURED
