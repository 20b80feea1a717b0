"""What is written: the machine description, the JSON document, the markdown table, the plots, and
the "Latest results" block of docs/performance.md.

The markdown and the plots are rendered from the JSON document alone, so an old results file can be
rendered again.
"""

from __future__ import annotations

import os
import platform
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
    header = ["case", "size", "numpy", "hxarray"] + (["strict"] if has_strict else []) \
        + ["speedup", "hx/np"] + (["strict/hx"] if has_strict else []) + ["check"]
    lines += ["", "| " + " | ".join(header) + " |",
              "|" + "|".join("---" if h in ("case", "check") else "--:" for h in header) + "|"]
    for r in document["results"]:
        times = r["median_s"]
        row = [r["case"], _size(r["shape"]), _time(times.get(REFERENCE)),
               _time(times.get(SUBJECT))]
        row += [_time(times.get(STRICT))] if has_strict else []
        row += [_ratio(r["speedup"]), _ratio(r["hx_over_np"])]
        row += [_ratio(r["strict_over_hx"])] if has_strict else []
        row.append(_check_text(r["check"]))
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


def update_docs(page: Path, text: str) -> None:
    """Replace what lies between the bench markers of `page` with `text`."""
    content = page.read_text(encoding="utf-8")
    start, end = content.find(DOCS_START), content.find(DOCS_END)
    if start < 0 or end < start:
        raise SystemExit(f"{page}: the markers {DOCS_START} and {DOCS_END} were not found")
    page.write_text(content[:start + len(DOCS_START)] + "\n" + text + content[end:],
                    encoding="utf-8")


def document(measurements: list[Measurement], rss: list[dict[str, Any]], info: dict[str, Any],
             notes: list[str], **run: Any) -> dict[str, Any]:
    """The JSON document: `run` (mode, created, duration_s, settings, command), the machine,
    notes, every measurement with its checks, timings and ratios, and the memory results."""
    shapes = {case.name: case.shape for case in CASES}
    descriptions = {case.name: case.description for case in CASES}
    info = {**info, "load_average_end": os.getloadavg()[0]}
    results = []
    for m in measurements:
        results.append({
            "case": m.case, "group": m.group, "size": m.size,
            "shape": list(shapes[m.case](m.size)),
            "check": m.checks,
            "median_s": {lib: t.median for lib, t in m.timings.items()},
            "speedup": m.ratio(REFERENCE, SUBJECT),
            "hx_over_np": m.ratio(SUBJECT, REFERENCE),
            "strict_over_hx": m.ratio(STRICT, SUBJECT),
            "timings": {lib: {"median_s": t.median, "q1_s": t.q1, "q3_s": t.q3,
                              "loops_per_round": t.loops, "per_call_s": t.per_call}
                        for lib, t in m.timings.items()},
        })
    return {"schema": 1, **run, "machine": info, "notes": notes,
            "cases": {r["case"]: descriptions[r["case"]] for r in results},
            "results": results, "rss": rss}
