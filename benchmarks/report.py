"""What is written: the machine description, the JSON document, the markdown table, the plots, and
the "Latest results" block of docs/performance.md.

The markdown and the plots are rendered from the JSON document alone, so an old results file can be
rendered again.
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .cases import CASES, Library
from .runner import Measurement

DOCS_START, DOCS_END = "<!-- bench:start -->", "<!-- bench:end -->"
REFERENCE, SUBJECT, STRICT = "numpy", "hxarray", "array-api-strict"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git_commit() -> str | None:
    """The source tree's commit, with "+dirty" if hxarray/ has uncommitted changes."""
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, check=True,
                                capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "hxarray"], cwd=root,
                               check=True, capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit + ("+dirty" if dirty else "")


def _blas() -> list[dict[str, Any]] | str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown (threadpoolctl is not installed)"
    return [{key: pool.get(key) for key in ("internal_api", "version", "architecture",
                                            "num_threads", "threading_layer", "filepath")}
            for pool in threadpool_info()]


def machine(libs: Iterable[Library]) -> dict[str, Any]:
    """The CPU, the software versions and the load, for the JSON document."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu": _cpu_model(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": usable,
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "libraries": {lib.name: lib.version for lib in libs},
        "hxarray_git": _git_commit(),
        "blas": _blas(),
        "load_average_start": os.getloadavg()[0],
    }


def _time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _divide(numerator: float | None, denominator: float | None) -> float | None:
    return None if numerator is None or denominator is None else numerator / denominator


def _bytes_text(count: int) -> str:
    for unit, scale in (("MB", 10**6), ("kB", 10**3)):
        if count >= scale:
            return f"{count / scale:.3g} {unit}"
    return f"{count} B"


def _bytes(count: int) -> str:
    return f"{count / 2**20:.0f} MiB"


def _size(shape: list[int]) -> str:
    if len(shape) > 1:
        return "×".join(str(n) for n in shape)
    n = shape[0]
    for suffix, scale in (("M", 10**6), ("k", 10**3)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{suffix}"
    return str(n)


def _blas_text(blas: list[dict[str, Any]] | str) -> str:
    if isinstance(blas, str):
        return blas
    return ", ".join(f"{p['internal_api']} {p['version']} ({p['architecture']}, "
                     f"{p['num_threads']} threads)" for p in blas) or "none found"


def _check_text(checks: dict[str, str]) -> str:
    problems = [f"{lib}: {text}" for lib, text in checks.items() if text not in ("ok", "reference")]
    return "; ".join(problems).replace("|", "\\|") or "ok"


def markdown(document: dict[str, Any], image_prefix: str | None = None) -> str:
    """The results as markdown: a header about the run, the timing table, the memory table and,
    with `image_prefix`, links to the plots (`<prefix><group>.png`)."""
    m, s = document["machine"], document["settings"]
    libs = m["libraries"]
    has_strict = STRICT in libs
    lines = [
        f"Run: **{document['mode']}**, {document['created']}, {document['duration_s']:.0f} s.",
        "",
        (f"- Machine: {m['cpu']}, {m['logical_cpus']} logical CPUs ({m['usable_cpus']} usable), "
         f"{m['platform']}, Python {m['python']}."),
        f"- numpy {libs[REFERENCE]}, BLAS: {_blas_text(m['blas'])}; hxarray {libs[SUBJECT]}"
        + (f" (git {m['hxarray_git']})" if m["hxarray_git"] else "")
        + (f"; array-api-strict {libs[STRICT]}." if has_strict else "."),
        (f"- Load average (1 min): {m['load_average_start']:.2f} at the start, "
         f"{m['load_average_end']:.2f} at the end."),
        f"- Median time per call over {s['min_rounds']} to {s['rounds']} interleaved rounds of "
        f"about {s['round_seconds'] * 1e3:g} ms per library. speedup = numpy / hxarray "
        "(> 1: hxarray is faster); hx/np = hxarray / numpy"
        + ("; strict/hx = array-api-strict / hxarray." if has_strict else "."),
    ]
    lines += [f"- Note: {note}" for note in document["notes"]]
    lines += [""] + targets_markdown(document) + ["", "### All cases", ""]
    header = ["case", "size", "numpy", "hxarray"] + (["strict"] if has_strict else []) \
        + ["speedup", "hx/np"] + (["strict/hx"] if has_strict else []) + ["check"]
    lines += ["| " + " | ".join(header) + " |",
              "|" + "|".join("---" if h in ("case", "check") else "--:" for h in header) + "|"]
    for r in document["results"]:
        variants = r.get("variants") or [None]
        for i, variant in enumerate(variants):
            suffix = "" if i == 0 else f":{variant}"
            times = {lib: r["median_s"].get(lib + suffix) for lib in (REFERENCE, SUBJECT, STRICT)}
            row = [r["case"] + suffix, _size(r["shape"]), _time(times[REFERENCE]),
                   _time(times[SUBJECT])]
            row += [_time(times[STRICT])] if has_strict else []
            row += [_ratio(_divide(times[REFERENCE], times[SUBJECT])),
                    _ratio(_divide(times[SUBJECT], times[REFERENCE]))]
            row += [_ratio(_divide(times[STRICT], times[SUBJECT]))] if has_strict else []
            row.append(_check_text({lib: text for lib, text in r["check"].items()
                                    if lib.partition(":")[2] == suffix[1:]}))
            lines.append("| " + " | ".join(row) + " |")
    if document["rss"]:
        first = document["rss"][0]
        lines += ["", (f"Peak RSS of the chain at {first['size']:,} elements, {first['repeat']} "
                       "evaluations, one fresh process per library:"),
                  "", "| library | peak RSS | before the chain | increase | allocator peak |",
                  "|---|--:|--:|--:|--:|"]
        for r in document["rss"]:
            allocator = _bytes(r["allocator_peak_allocated"]) + " allocated, " \
                + _bytes(r["allocator_peak_reserved"]) + " reserved" \
                if "allocator_peak_allocated" in r else "-"
            lines.append(f"| {r['library']} | {_bytes(r['peak_rss'])} | "
                         f"{_bytes(r['peak_rss_before_chain'])} | "
                         f"{_bytes(r['peak_rss'] - r['peak_rss_before_chain'])} | {allocator} |")
    if image_prefix is not None:
        lines += [""] + [f"![{group}]({image_prefix}{group}.png)" for group in groups(document)]
    return "\n".join(lines) + "\n"


def groups(document: dict[str, Any]) -> list[str]:
    """The case groups present, in the order they were run."""
    return list(dict.fromkeys(r["group"] for r in document["results"]))


_NICE = [m * 10.0**e for e in range(-3, 4) for m in (1, 2, 3, 5)]  # y ticks of the plots


def plot(document: dict[str, Any], directory: Path, prefix: str) -> list[Path] | str:
    """One PNG per group, `<directory>/<prefix><group>.png`: speedup against size for each case,
    log-log, with the break-even line at 1. Returns the paths, or why there are none."""
    try:
        import matplotlib
    except ImportError:
        return "no plots: matplotlib is not installed"
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    paths = []
    for group in groups(document):
        rows = [r for r in document["results"] if r["group"] == group and r["speedup"]]
        fig, ax = plt.subplots(figsize=(7, 4.2), layout="constrained")
        for case in dict.fromkeys(r["case"] for r in rows):
            points = [(r["size"], r["speedup"]) for r in rows if r["case"] == case]
            ax.plot(*zip(*points), marker="o", label=case)
        ax.axhline(1.0, color="black", linewidth=1, linestyle="--")
        ax.set_xscale("log")
        ax.set_yscale("log")
        sizes = sorted({r["size"] for r in rows})
        ax.set_xticks(sizes, [_size([n]) for n in sizes])
        ratios = [r["speedup"] for r in rows] + [1.0]
        ax.set_yticks([v for v in _NICE if min(ratios) / 1.6 <= v <= max(ratios) * 1.6],
                      [f"{v:g}" for v in _NICE if min(ratios) / 1.6 <= v <= max(ratios) * 1.6])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("n (n × n matrices)" if group == "matmul" else "elements")
        ax.set_ylabel("speedup = numpy time / hxarray time")
        ax.set_title(f"{group}: hxarray vs numpy, {document['mode']} run "
                     f"(> 1: hxarray faster)", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        path = directory / f"{prefix}{group}.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        paths.append(path)
    return paths

# ---------------------------------------------------------------------------------------------
# The performance targets, judged on one run's document alone.

MET, NOT_MET, NOT_MEASURED = "met", "not met", "not measured"
BAND = (100_000, 1_000_000)  # "1e5..1e6 elements": every case's speedup at least BAND_SPEEDUP
BAND_SPEEDUP = 0.9
# Cases the 1e5..1e6 target does not cover: the allocator and interop cases have targets of
# their own, and none compares like with like (alloc_pair against np.empty, alloc_add against
# itself, asarray_shared against numpy returning its argument).
BAND_EXCLUDED_GROUPS = ("allocator", "interop")
ALLOC_PAIR_LIMIT_S = 1e-6
SHARE_LIMIT_S = 1e-6  # asarray(numpy_array) shares the memory in under a microsecond
ALLOC_SHARE_SIZE, ALLOC_SHARE_LIMIT = 100_000, 0.05
# "Small sizes": every case at 1e3 elements or fewer, and matmul at 64×64, with the same groups
# left out as for the band, the fused, random and numpy cases (targets of their own: the random
# cases compare two different generators, numpy's PCG64 against Philox; numpy's functions beyond
# the standard are composed of several calls) and the two cases whose numpy column does next to
# nothing (asarray copies 80 bytes, zeros maps zero pages).
SMALL_ELEMENTS, SMALL_MATMUL_SIDE = 1_000, 64
SMALL_EXCLUDED_CASES = ("asarray", "zeros")
SMALL_EXCLUDED_GROUPS = BAND_EXCLUDED_GROUPS + ("fused", "random", "numpy")
# numpy's functions beyond the standard (the numpy group): numpy's speed from 1e5 elements (a
# speedup of at least NUMPY_SPEEDUP: the band's "never more than 10% slower"), and below that at
# most NUMPY_SMALL_LIMIT times numpy's time.
NUMPY_FROM, NUMPY_SPEEDUP, NUMPY_SMALL_LIMIT = 100_000, 0.9, 1.5
# hxarray.random against numpy's default_rng(): (case, speedup at 1e7 at least, time at 1e3 at
# most this many times numpy's).
RANDOM_TARGETS = (("random_f64", 1.5, 2.0), ("random_f32", 2.0, 2.0),
                  ("standard_normal", 1.5, 2.0))
SMALL_GEOMEAN_LIMIT, SMALL_WORST_LIMIT = 1.2, 2.5


def _result(document: dict[str, Any], case: str, size: int) -> dict[str, Any] | None:
    return next((r for r in document["results"] if r["case"] == case and r["size"] == size), None)


def _problem(r: dict[str, Any], columns: Iterable[str]) -> str | None:
    """Why the row cannot count for the target: a column not timed or a result not numpy's."""
    for name in columns:
        check = r["check"].get(name)
        if check not in ("ok", "reference"):
            return f"{name}: {check or 'not run'}"
        if name not in r["median_s"]:
            return f"{name}: not timed"
    return None


def _target(key: str, target: str, status: str, measured: str, value: float | None = None,
            limit: float | None = None, **details: Any) -> dict[str, Any]:
    return {"key": key, "target": target, "status": status, "measured": measured,
            "value": value, "limit": limit, **details}


def _ratio_target(document: dict[str, Any], key: str, case: str, size: int, limit: float,
                  target: str, at_most: bool) -> dict[str, Any]:
    """hx/np at most `limit` (at_most) or speedup (np/hx) at least `limit`."""
    r = _result(document, case, size)
    if r is None:
        return _target(key, target, NOT_MEASURED, NOT_MEASURED, limit=limit)
    problem = _problem(r, (REFERENCE, SUBJECT))
    if problem:
        return _target(key, target, NOT_MET, problem, limit=limit)
    if at_most:
        value = r["hx_over_np"]
        return _target(key, target, MET if value <= limit else NOT_MET,
                       f"{value:#.3g}× ({_time(r['median_s'][SUBJECT])} vs "
                       f"{_time(r['median_s'][REFERENCE])})", value, limit)
    value = r["speedup"]
    return _target(key, target, MET if value >= limit else NOT_MET,
                   f"{value:#.3g} ({_time(r['median_s'][REFERENCE])} / "
                   f"{_time(r['median_s'][SUBJECT])})", value, limit)


def _columns_target(document: dict[str, Any], key: str, case: str, size: int, slower: str,
                    faster: str, limit: float, target: str) -> dict[str, Any]:
    """Column `slower`'s time over column `faster`'s at least `limit` (same run, same rounds)."""
    r = _result(document, case, size)
    if r is None or slower not in r["check"]:
        return _target(key, target, NOT_MEASURED, NOT_MEASURED, limit=limit)
    problem = _problem(r, (slower, faster))
    if problem:
        return _target(key, target, NOT_MET, problem, limit=limit)
    value = r["median_s"][slower] / r["median_s"][faster]
    return _target(key, target, MET if value >= limit else NOT_MET,
                   f"{value:#.3g} ({_time(r['median_s'][slower])} / "
                   f"{_time(r['median_s'][faster])})", value, limit)


def _size_limit_target(document: dict[str, Any], key: str, case: str, size: int,
                       target: str, limit: float) -> dict[str, Any]:
    """hxarray's time for `case` at `size` under `limit` seconds."""
    r = _result(document, case, size)
    if r is None:
        return _target(key, target, NOT_MEASURED, NOT_MEASURED, limit=limit)
    problem = _problem(r, (SUBJECT,))
    if problem:
        return _target(key, target, NOT_MET, problem, limit=limit)
    value = r["median_s"][SUBJECT]
    return _target(key, target, MET if value <= limit else NOT_MET, _time(value), value, limit)


def _elements(r: dict[str, Any]) -> int:
    return math.prod(r["shape"])


def _band_target(document: dict[str, Any]) -> dict[str, Any]:
    low, high = BAND
    target = (f"1e5..1e6 elements: every case's speedup ≥ {BAND_SPEEDUP} (never more than 10% "
              "slower than numpy)")
    rows = [r for r in document["results"] if low <= _elements(r) <= high
            and r["group"] not in BAND_EXCLUDED_GROUPS]
    if not rows:
        return _target("band", target, NOT_MEASURED, NOT_MEASURED, limit=BAND_SPEEDUP)
    misses = []
    for r in rows:
        problem = _problem(r, (REFERENCE, SUBJECT))
        if problem or r["speedup"] < BAND_SPEEDUP:
            misses.append({"case": r["case"], "size": _size(r["shape"]),
                           "speedup": None if problem else r["speedup"], "problem": problem})
    lowest = min((r for r in rows if r["speedup"] is not None), key=lambda r: r["speedup"],
                 default=None)
    measured = f"{len(misses)} of {len(rows)} case/size pairs below {BAND_SPEEDUP}" \
        + (" (listed under the table)" if misses else "")
    if lowest is not None:
        measured += f"; lowest: {lowest['case']} {_size(lowest['shape'])} {lowest['speedup']:#.3g}"
    return _target("band", target, NOT_MET if misses else MET, measured,
                   None if lowest is None else lowest["speedup"], BAND_SPEEDUP, misses=misses)


def _numpy_functions_target(document: dict[str, Any]) -> dict[str, Any]:
    target = (f"numpy's functions (the numpy group): speedup ≥ {NUMPY_SPEEDUP} from 1e5 "
              f"elements, hxarray's time ≤ {NUMPY_SMALL_LIMIT}× numpy's below")
    rows = [r for r in document["results"] if r["group"] == "numpy"]
    if not rows:
        return _target("numpy_functions", target, NOT_MEASURED, NOT_MEASURED)
    misses = []
    for r in rows:
        problem = _problem(r, (REFERENCE, SUBJECT))
        large = _elements(r) >= NUMPY_FROM
        if problem:
            misses.append(f"{r['case']} {_size(r['shape'])} ({problem})")
        elif large and r["speedup"] < NUMPY_SPEEDUP:
            misses.append(f"{r['case']} {_size(r['shape'])} (speedup {r['speedup']:#.3g})")
        elif not large and r["hx_over_np"] > NUMPY_SMALL_LIMIT:
            misses.append(f"{r['case']} {_size(r['shape'])} ({r['hx_over_np']:#.3g}×)")
    measured = f"{len(rows) - len(misses)} of {len(rows)} case/size pairs within" + \
        ("; " + ", ".join(misses) if misses else "")
    return _target("numpy_functions", target, NOT_MET if misses else MET, measured)


def _small_sizes_target(document: dict[str, Any]) -> dict[str, Any]:
    target = (f"small sizes (≤ 1e3 elements, matmul 64×64; asarray and zeros aside): geometric "
              f"mean of hxarray's time / numpy's ≤ {SMALL_GEOMEAN_LIMIT}, no case above "
              f"{SMALL_WORST_LIMIT:g}×")
    rows = [r for r in document["results"]
            if (_elements(r) <= SMALL_ELEMENTS
                or (r["group"] == "matmul" and r["size"] == SMALL_MATMUL_SIDE))
            and r["case"] not in SMALL_EXCLUDED_CASES and r["group"] not in SMALL_EXCLUDED_GROUPS]
    timed = [r for r in rows if _problem(r, (REFERENCE, SUBJECT)) is None]
    if not timed:
        return _target("small", target, NOT_MEASURED, NOT_MEASURED, limit=SMALL_GEOMEAN_LIMIT)
    ratios = [r["median_s"][SUBJECT] / r["median_s"][REFERENCE] for r in timed]
    geomean = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    worst_ratio, worst = max(zip(ratios, timed), key=lambda pair: pair[0])
    above = [f"{r['case']} {_size(r['shape'])} ({x:.2f}×)" for x, r in zip(ratios, timed)
             if x > SMALL_WORST_LIMIT]
    measured = (f"{geomean:.2f}× over {len(timed)} case/size pairs"
                + (f" ({len(rows) - len(timed)} not comparable)" if len(timed) < len(rows) else "")
                + f"; worst {worst['case']} {_size(worst['shape'])} {worst_ratio:.2f}×"
                + (f"; above {SMALL_WORST_LIMIT:g}×: " + ", ".join(above) if above else ""))
    met = geomean <= SMALL_GEOMEAN_LIMIT and not above and len(timed) == len(rows)
    return _target("small", target, MET if met else NOT_MET, measured, geomean,
                   SMALL_GEOMEAN_LIMIT)


def _time_limit_target(document: dict[str, Any], case: str, target: str,
                       limit: float) -> dict[str, Any]:
    """hxarray's time for `case` under `limit` at every size it ran (8 bytes per element)."""
    rows = [r for r in document["results"] if r["case"] == case]
    if not rows:
        return _target(case, target, NOT_MEASURED, NOT_MEASURED, limit=limit)
    for r in rows:
        problem = _problem(r, (SUBJECT,))
        if problem:
            return _target(case, target, NOT_MET, f"at {_size(r['shape'])}: {problem}",
                           limit=limit)
    worst = max(rows, key=lambda r: r["median_s"][SUBJECT])
    best = min(r["median_s"][SUBJECT] for r in rows)
    value = worst["median_s"][SUBJECT]
    measured = f"{_time(value)} for {_bytes_text(8 * worst['size'])}"
    if len(rows) > 1:
        low, high = (_bytes_text(8 * f(r["size"] for r in rows)) for f in (min, max))
        measured += f" (the worst of {len(rows)} sizes, {low} to {high}; best {_time(best)})"
    return _target(case, target, MET if value < limit else NOT_MET, measured, value, limit)


def allocation_costs(r: dict[str, Any]) -> dict[str, Any]:
    """From an `alloc_add` row: what getting and freeing the output costs each library (fresh time
    minus time into a preallocated output), numpy's fresh time, and the two shares of it.

    Each is computed per round, from the four columns' times of that round (they run back to back,
    so a slowdown of the machine lasting a round or longer hits all four), and the median over
    rounds is reported, with the quartiles of the excess. The medians of the four columns would be
    fragile here: the metric is a difference of a few microseconds between calls of tens, and when
    another process slows down half of the rounds, the four medians can come from differently
    disturbed rounds."""
    names = (REFERENCE, REFERENCE + ":out", SUBJECT, SUBJECT + ":out")
    rounds = list(zip(*(r["timings"][name]["per_call_s"] for name in names)))
    hx = [h - ho for _, _, h, ho in rounds]
    np_ = [n - no for n, no, _, _ in rounds]
    excess = [(h - n) / fresh for h, n, (fresh, *_) in zip(hx, np_, rounds)]
    share = [h / fresh for h, (fresh, *_) in zip(hx, rounds)]
    q1, _, q3 = statistics.quantiles(excess, n=4, method="inclusive") if len(excess) > 1 \
        else (excess[0],) * 3
    return {"hxarray_allocation_s": statistics.median(hx),
            "numpy_allocation_s": statistics.median(np_),
            "numpy_fresh_s": statistics.median(fresh for fresh, *_ in rounds),
            "excess": statistics.median(excess), "excess_q1": q1, "excess_q3": q3,
            "allocator_share": statistics.median(share), "rounds": len(rounds)}


def _alloc_share_target(document: dict[str, Any]) -> dict[str, Any]:
    target = (f"at 1e5 elements the allocator adds < {ALLOC_SHARE_LIMIT:.0%} to an elementwise "
              "operation compared with numpy allocating its own output (`alloc_add`: "
              "[(hx fresh − hx out) − (np fresh − np out)] / np fresh, per round, median)")
    r = _result(document, "alloc_add", ALLOC_SHARE_SIZE)
    if r is None:
        return _target("alloc_share", target, NOT_MEASURED, NOT_MEASURED, limit=ALLOC_SHARE_LIMIT)
    problem = _problem(r, (REFERENCE, SUBJECT, REFERENCE + ":out", SUBJECT + ":out"))
    if problem:
        return _target("alloc_share", target, NOT_MET, problem, limit=ALLOC_SHARE_LIMIT)
    c = allocation_costs(r)
    measured = (f"{c['excess']:+.1%} (quartiles {c['excess_q1']:+.1%}, {c['excess_q3']:+.1%}; "
                f"medians over {c['rounds']} rounds): hxarray's output costs "
                f"{_time(c['hxarray_allocation_s'])}, numpy's {_time(c['numpy_allocation_s'])}, "
                f"numpy's add {_time(c['numpy_fresh_s'])}; hxarray's whole output cost is "
                f"{c['allocator_share']:.1%} of it")
    return _target("alloc_share", target, MET if c["excess"] < ALLOC_SHARE_LIMIT else NOT_MET,
                   measured, c["excess"], ALLOC_SHARE_LIMIT, **c)


def _rss_target(document: dict[str, Any]) -> dict[str, Any]:
    target = "peak RSS of the chain at 1e7 elements not above numpy's"
    rss = {r["library"]: r for r in document["rss"]}
    if REFERENCE not in rss or SUBJECT not in rss:
        return _target("rss", target, NOT_MEASURED, NOT_MEASURED, limit=1.0)
    hx, np_ = rss[SUBJECT], rss[REFERENCE]
    value = hx["peak_rss"] / np_["peak_rss"]
    measured = (f"hxarray {_bytes(hx['peak_rss'])}, numpy {_bytes(np_['peak_rss'])} (increase "
                f"over the inputs: {_bytes(hx['peak_rss'] - hx['peak_rss_before_chain'])} vs "
                f"{_bytes(np_['peak_rss'] - np_['peak_rss_before_chain'])})")
    return _target("rss", target, MET if hx["peak_rss"] <= np_["peak_rss"] else NOT_MET, measured,
                   value, 1.0)


def targets(document: dict[str, Any]) -> list[dict[str, Any]]:
    """One entry per performance target: the target, what this run measured, and met / not met /
    not measured (the case or size was not run)."""
    big = 10_000_000
    found = [
        _ratio_target(document, "add_10", "add", 10, 2.0,
                      "10-element binary elementwise (`add` at 10): hxarray's time ≤ 2.0× "
                      "numpy's", at_most=True),
        _ratio_target(document, "overhead", "overhead", 10, 2.5,
                      "tiny-op loop (`overhead`): hxarray's time ≤ 2.5× numpy's", at_most=True),
        _small_sizes_target(document),
        _numpy_functions_target(document),
    ]
    for case, limit in (("add", 1.8), ("exp", 1.8), ("sin", 1.8), ("chain", 1.8), ("sum", 1.6)):
        found.append(_ratio_target(document, f"{case}_1e7", case, big, limit,
                                   f"`{case}` at 1e7 float64: speedup ≥ {limit}", at_most=False))
    found.append(_band_target(document))
    for case, dtype in (("matmul_f64", "float64"), ("matmul_f32", "float32")):
        found.append(_ratio_target(document, f"{case}_1024", case, 1024, 0.95,
                                   f"`matmul` 1024×1024 {dtype}: speedup ≥ 0.95", at_most=False))
    for size, label in ((1_000_000, "1e6"), (big, "1e7")):
        found.append(_ratio_target(document, f"sort_{label}", "sort", size, 1.2,
                                   f"`sort` of {label} float64: speedup ≥ 1.2 (a quiet machine)",
                                   at_most=False))
    for size, label in ((100_000, "1e5"), (1_000_000, "1e6"), (big, "1e7")):
        found.append(_ratio_target(document, f"arange_f64_{label}", "arange_f64", size, 0.9,
                                   f"`arange` of {label} float64: speedup ≥ 0.9", at_most=False))
    for size, label, limit in ((100_000, "1e5", 2.0), (1_000_000, "1e6", 2.0), (big, "1e7", 4.0)):
        found.append(_ratio_target(document, f"fused_chain_{label}", "fused_chain", size, limit,
                                   f"fused chain at {label} float64: speedup ≥ {limit:g}",
                                   at_most=False))
    found += [
        _columns_target(document, "fused_chain_numexpr", "fused_chain", big, "numexpr", SUBJECT,
                        1.0, "fused chain at 1e7: at least numexpr's speed (numexpr time / "
                        "hxarray time ≥ 1)"),
        _size_limit_target(document, "fused_chain_10", "fused_chain", 10, "a fused call on 10 "
                           "elements (warm) ≤ 3 µs", 3e-6),
        _columns_target(document, "fused_sum_1e7", "fused_sum", big, SUBJECT + ":unfused",
                        SUBJECT, 1.5, "fused `sum(a * b)` at 1e7: ≥ 1.5× `xp.sum(a * b)`"),
        _columns_target(document, "graph_1e3", "graph", 1_000, SUBJECT + ":eager", SUBJECT, 1.5,
                        "twenty operations on 1e3 float64 replayed by `hxarray.graph`: ≥ 1.5× "
                        "eager"),
    ]
    for case, speedup, small in RANDOM_TARGETS:
        found += [_ratio_target(document, f"{case}_1e7", case, big, speedup,
                                f"`{case}` at 1e7: speedup ≥ {speedup:g} over numpy's "
                                "`default_rng()` (two threads)", at_most=False),
                  _ratio_target(document, f"{case}_1e3", case, 1_000, small,
                                f"`{case}` at 1e3: hxarray's time ≤ {small:g}× numpy's",
                                at_most=True)]
    found += [_time_limit_target(document, "alloc_pair", "caching allocator: a cached allocate + "
                                 "free pair (`alloc_pair`) < 1 µs", ALLOC_PAIR_LIMIT_S),
              _alloc_share_target(document), _rss_target(document),
              _time_limit_target(document, "asarray_shared", "`asarray(numpy_array)` "
                                 "shares the memory in < 1 µs at every size", SHARE_LIMIT_S)]
    return found


def targets_markdown(document: dict[str, Any]) -> list[str]:
    """The targets table (and the list of misses of the 1e5..1e6 target) as markdown lines."""
    found = document.get("targets") or targets(document)
    counts = {status: sum(t["status"] == status for t in found)
              for status in (MET, NOT_MET, NOT_MEASURED)}
    lines = ["### Targets", "",
             f"The performance targets, judged on this run alone: {counts[MET]} met, "
             f"{counts[NOT_MET]} not met, {counts[NOT_MEASURED]} not measured "
             "(their case or size was not part of this run). speedup = numpy time / hxarray "
             "time.", "",
             "| target | measured | result |", "|---|---|---|"]
    for t in found:
        status = f"**{t['status']}**" if t["status"] == NOT_MET else t["status"]
        lines.append(f"| {t['target']} | {t['measured']} | {status} |".replace("\n", " "))
    for t in found:
        if t.get("misses"):
            lines += ["", "Below the 1e5..1e6 target: " + ", ".join(
                f"{m['case']} {m['size']} ({m['problem'] or format(m['speedup'], '#.3g')})"
                for m in t["misses"]) + "."]
    return lines


def update_docs(page: Path, text: str, markers: tuple[str, str] = (DOCS_START, DOCS_END)) -> None:
    """Replace what lies between the `markers` of `page` (the bench section's by default) with
    `text`."""
    first, last = markers
    content = page.read_text(encoding="utf-8")
    start, end = content.find(first), content.find(last)
    if start < 0 or end < start:
        raise SystemExit(f"{page}: the markers {first} and {last} were not found")
    page.write_text(content[:start + len(first)] + "\n" + text + content[end:], encoding="utf-8")


def document(measurements: list[Measurement], rss: list[dict[str, Any]], info: dict[str, Any],
             notes: list[str], **run: Any) -> dict[str, Any]:
    """The JSON document: `run` (mode, created, duration_s, settings, command), the machine,
    notes, every measurement with its checks, timings and ratios (timings per column: a library,
    or "<library>:<variant>" for a case's other variants), the memory results, and the
    performance targets judged on all of it (`targets`)."""
    cases = {case.name: case for case in CASES}
    info = {**info, "load_average_end": os.getloadavg()[0]}
    results = []
    for m in measurements:
        results.append({
            "case": m.case, "group": m.group, "size": m.size,
            "shape": list(cases[m.case].shape(m.size)),
            "variants": list(cases[m.case].variants),
            "check": m.checks,
            "median_s": {lib: t.median for lib, t in m.timings.items()},
            "speedup": m.ratio(REFERENCE, SUBJECT),
            "hx_over_np": m.ratio(SUBJECT, REFERENCE),
            "strict_over_hx": m.ratio(STRICT, SUBJECT),
            "timings": {lib: {"median_s": t.median, "q1_s": t.q1, "q3_s": t.q3,
                              "loops_per_round": t.loops, "per_call_s": t.per_call}
                        for lib, t in m.timings.items()},
        })
    doc = {"schema": 2, **run, "machine": info, "notes": notes,
           "cases": {r["case"]: cases[r["case"]].description for r in results},
           "results": results, "rss": rss}
    doc["targets"] = targets(doc)
    return doc
