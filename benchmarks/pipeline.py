"""`python -m benchmarks.pipeline [--quick] [--update-docs]`: how much `xp.pipeline` overlaps
transfers with compute, on the reference device (asynchronous host streams) and the simulated
CUDA device.

For each device, in a process of its own (the simulator's settings are fixed when its driver
loads; it runs with one block worker, so that one core computes and the other copies, as a GPU's
SMs and copy engines are separate), a stage of k multiply-adds is calibrated so that computing a
batch takes about as long as uploading it (balanced stages). Then, in interleaved rounds, one
pass over the batches is timed for:

- `sequential`: the loop a user writes without a pipeline, `stage(asarray(b, device=d))
  .to_device("cpu")` per batch, each waited for;
- `depth 1`, `depth 2`, `depth 3`: `xp.pipeline(batches, stage, device=d, depth=...)`.

The speedup of a variant is the sequential median over its median. Results go to
benchmarks/results/pipeline.json and pipeline.png (with --update-docs also to docs/img/
bench-pipeline.png and the table in docs/performance.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from .report import update_docs

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
DOCS_PAGE, DOCS_IMAGE = ROOT / "docs" / "performance.md", ROOT / "docs" / "img" / \
    "bench-pipeline.png"
DEVICES = {
    "ref": {},
    "cuda:0": {"HXARRAY_CUDA_DRIVER": "sim", "HXARRAY_CUDA_SIM_WORKERS": "1"},
}
VARIANTS = ("sequential", "depth 1", "depth 2", "depth 3")
START, END = "<!-- pipeline:start -->", "<!-- pipeline:end -->"


def _stage(k: int) -> Any:
    def stage(x: Any) -> Any:
        for _ in range(k):
            x = x * 1.000001 + 0.5
        return x
    return stage


def _seconds(run: Any, device: Any) -> float:
    start = time.perf_counter()
    run()
    device.backend.synchronize(device)
    return time.perf_counter() - start


def measure_device(name: str, n: int, count: int, rounds: int) -> dict[str, Any]:
    """Calibrate and time the variants on one device (in this process)."""
    import hxarray as xp

    device = xp.Device(name)
    batches = [np.random.default_rng(i).standard_normal(n) for i in range(count)]
    x = xp.asarray(batches[0], device=device)
    _seconds(lambda: _stage(1)(x), device)  # compile, warm up
    upload = min(_seconds(lambda: xp.asarray(batches[0], device=device), device)
                 for _ in range(5))
    download = min(_seconds(lambda: x.to_device("cpu"), device) for _ in range(5))
    one = min(_seconds(lambda: _stage(1)(x), device) for _ in range(5))
    k = max(1, round(max(upload, download) / one))
    stage = _stage(k)
    expected = list(batches)
    for _ in range(k):
        expected = [e * 1.000001 + 0.5 for e in expected]

    def sequential() -> list[Any]:
        return [stage(xp.asarray(b, device=device)).to_device("cpu") for b in batches]

    def piped(depth: int) -> Any:
        return lambda: list(xp.pipeline(batches, stage, device=device, depth=depth))

    runs = {"sequential": sequential, "depth 1": piped(1), "depth 2": piped(2),
            "depth 3": piped(3)}
    for label, run in runs.items():  # warm-up and check
        results = run()
        if not all(np.allclose(np.asarray(r), e) for r, e in zip(results, expected)):
            raise RuntimeError(f"{name} {label}: results differ from numpy's")
    times: dict[str, list[float]] = {label: [] for label in runs}
    for _ in range(rounds):
        for label, run in runs.items():
            start = time.perf_counter()
            run()
            times[label].append(time.perf_counter() - start)
    medians = {label: statistics.median(t) for label, t in times.items()}
    return {"device": name, "batch_elements": n, "batches": count, "rounds": rounds,
            "stage_multiply_adds": k, "upload_s": upload, "download_s": download,
            "compute_s": one * k, "times_s": times, "median_s": medians,
            "speedup": {label: medians["sequential"] / m for label, m in medians.items()}}


def _run_child(name: str, n: int, count: int, rounds: int) -> dict[str, Any]:
    env = {**os.environ, **DEVICES[name]}
    done = subprocess.run([sys.executable, "-m", "benchmarks.pipeline", "--child", name,
                           "--elements", str(n), "--batches", str(count), "--rounds",
                           str(rounds)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=1800)
    if done.returncode:
        raise RuntimeError(f"the {name} run failed:\n{done.stderr}")
    return json.loads(done.stdout)


def plot(results: list[dict[str, Any]], path: Path) -> str | None:
    """Bars of the speedup over the sequential loop, per device and variant."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        return f"no plot: matplotlib cannot be imported ({exc})"
    fig, ax = plt.subplots(figsize=(7, 3.6), dpi=110)
    width = 0.8 / len(VARIANTS)
    for i, variant in enumerate(VARIANTS):
        values = [r["speedup"][variant] for r in results]
        xs = [j + (i - (len(VARIANTS) - 1) / 2) * width for j in range(len(results))]
        bars = ax.bar(xs, values, width, label=variant)
        ax.bar_label(bars, fmt="%.2f", fontsize=7)
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.axhline(1.3, color="tab:red", lw=0.8, ls="--", label="target 1.3x (depth 2)")
    ax.set_xticks(range(len(results)))
    for j, r in enumerate(results):
        ax.hlines(bound(r), j - 0.45, j + 0.45, colors="black", lw=1, ls=":",
                  label="overlap bound" if j == 0 else None)
    ax.set_xticklabels([f"{r['device']}\n{r['batches']} x {r['batch_elements']:,} float64, "
                        f"k={r['stage_multiply_adds']}" for r in results], fontsize=8)
    ax.set_ylabel("speedup over the sequential loop")
    ax.set_title("xp.pipeline: overlap of upload, compute and download (2 cores)", fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return None


def bound(r: dict[str, Any]) -> float:
    """The most any overlap can gain: the stages' sum over the longest stage."""
    stages = (r["upload_s"], r["compute_s"], r["download_s"])
    return sum(stages) / max(stages)


def markdown(results: list[dict[str, Any]], image: str | None) -> str:
    lines = ["| device | stages per batch | overlap bound | " + " | ".join(VARIANTS)
             + " | depth 2 ≥ 1.3× |", "|---|---|---|" + "---|" * (len(VARIANTS) + 1)]
    for r in results:
        cells = [f"{r['median_s'][v] * 1e3:.0f} ms ({r['speedup'][v]:.2f}×)" for v in VARIANTS]
        met = "met" if r["speedup"]["depth 2"] >= 1.3 else "**not met**"
        lines.append(f"| {r['device']} | up {r['upload_s'] * 1e3:.1f} ms, compute "
                     f"{r['compute_s'] * 1e3:.1f} ms (k={r['stage_multiply_adds']}), down "
                     f"{r['download_s'] * 1e3:.1f} ms | {bound(r):.2f}× | " + " | ".join(cells)
                     + f" | {met} |")
    if image:
        lines += ["", f"![pipeline speedups]({image})"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.pipeline", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller batches, fewer rounds")
    parser.add_argument("--update-docs", action="store_true")
    parser.add_argument("--devices", nargs="+", default=list(DEVICES), choices=list(DEVICES))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--elements", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--batches", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure_device(args.child, args.elements, args.batches, args.rounds)))
        return
    n, count, rounds = (1 << 19, 8, 5) if args.quick else (1 << 21, 12, 9)
    from hxarray._progress import progress

    results = []
    for name in progress(args.devices, desc="pipeline benchmark", unit="device"):
        results.append(_run_child(name, n, count, rounds))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "pipeline.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    note = plot(results, RESULTS / "pipeline.png")
    print(markdown(results, None if note else "pipeline.png"))
    if note:
        print(note, file=sys.stderr)
    if args.update_docs:
        if note is None:
            plot(results, DOCS_IMAGE)
        update_docs(DOCS_PAGE, markdown(results, None if note else "img/bench-pipeline.png"),
                    (START, END))


if __name__ == "__main__":
    main()
