"""`python -m benchmarks.dask [--gb 1.5] [--cols 64] [--chunk-mb 64] [--repeat 2]`: dask.array
workloads (an element-wise chain, reductions, X.T @ X) over hxarray chunks against numpy chunks,
on the threaded scheduler and on a 2-worker LocalCluster, in the same run. Each (library,
scheduler) pair runs in its own process so its peak RSS is its own; the data is generated chunk by
chunk inside the graph (never whole), so the peak stays near a few chunks per thread at any size.
The pairs run interleaved, `--rounds` times (the machine's load drifts; the best time counts).
Prints a markdown table: best wall time per workload, hxarray/numpy ratio, peak RSS."""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from typing import Any


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def _data(library: str, gb: float, cols: int, chunk_mb: int) -> Any:
    import dask.array as da
    import numpy as np

    rows = int(gb * 1e9 / 8 / cols)
    chunk_rows = max(1, int(chunk_mb * 1e6 / 8 / cols))
    x = da.random.random((rows, cols), chunks=(chunk_rows, cols))
    if library == "hxarray":
        import hxarray as xp

        # zero-copy adoption of each numpy chunk as it is generated
        x = x.map_blocks(xp.asarray, meta=xp.empty((0, 0), dtype=xp.float64), dtype=np.float64)
    return x


def _workloads(x: Any) -> dict[str, Any]:
    import dask.array as da

    return {
        "chain sum(sin(x)*2 + x**2 - 1)": (da.sin(x) * 2 + x ** 2 - 1).sum(),
        "mean, std (axis 0)": (x.mean(axis=0), x.std(axis=0)),
        "X.T @ X": x.T @ x,
    }


def _run(library: str, scheduler: str, gb: float, cols: int, chunk_mb: int,
         repeat: int) -> dict[str, Any]:
    """One (library, scheduler) pair in this process: best times and peak RSS."""
    import dask

    import hxarray as xp
    import hxarray.dask as hxd

    cores = len(os.sched_getaffinity(0))
    times: dict[str, float] = {}
    workers_rss: list[int] = []
    if scheduler == "threads":
        # the thread rule for one process running `cores` dask threads
        xp.set_num_threads(hxd.worker_threads(cores, 1, cores))
        for name, expr in _workloads(_data(library, gb, cols, chunk_mb)).items():
            best = float("inf")
            for _ in range(repeat):
                start = time.perf_counter()
                dask.compute(expr, scheduler="threads", num_workers=cores)
                best = min(best, time.perf_counter() - start)
            times[name] = best
    else:
        from distributed import Client, LocalCluster

        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            for name, expr in _workloads(_data(library, gb, cols, chunk_mb)).items():
                best = float("inf")
                for _ in range(repeat):
                    start = time.perf_counter()
                    client.compute(expr, sync=True)
                    best = min(best, time.perf_counter() - start)
                times[name] = best
            workers_rss = list(client.run(_peak_rss).values())
    return {"times": times, "client_rss": _peak_rss(), "workers_rss": workers_rss}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.dask", description=__doc__)
    parser.add_argument("--gb", type=float, default=1.5, help="size of X in GB (default 1.5)")
    parser.add_argument("--cols", type=int, default=64, help="columns of X (default 64)")
    parser.add_argument("--chunk-mb", type=int, default=64, help="chunk size in MB (default 64)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per workload and process")
    parser.add_argument("--rounds", type=int, default=3,
                        help="interleaved processes per (library, scheduler); the best counts")
    parser.add_argument("--schedulers", nargs="+", default=["threads", "cluster"],
                        choices=["threads", "cluster"])
    parser.add_argument("--one", nargs=2, metavar=("LIBRARY", "SCHEDULER"),
                        help=argparse.SUPPRESS)  # internal: one pair, JSON on stdout
    args = parser.parse_args(argv)
    if args.gb <= 0 or min(args.cols, args.chunk_mb, args.repeat, args.rounds) < 1:
        raise SystemExit("--gb, --cols, --chunk-mb, --repeat and --rounds must be positive")
    if args.one:
        library, scheduler = args.one
        print(json.dumps(_run(library, scheduler, args.gb, args.cols, args.chunk_mb,
                              args.repeat)))
        return
    results: dict[tuple[str, str], dict[str, Any]] = {}
    for _ in range(args.rounds):
        for scheduler in args.schedulers:
            for library in ("numpy", "hxarray"):
                command = [sys.executable, "-m", "benchmarks.dask", "--gb", str(args.gb),
                           "--cols", str(args.cols), "--chunk-mb", str(args.chunk_mb),
                           "--repeat", str(args.repeat), "--one", library, scheduler]
                out = subprocess.run(command, capture_output=True, text=True, check=True)
                run = json.loads(out.stdout.strip().splitlines()[-1])
                best = results.setdefault((library, scheduler), run)
                for name, t in run["times"].items():
                    best["times"][name] = min(best["times"][name], t)
                best["client_rss"] = max(best["client_rss"], run["client_rss"])
                best["workers_rss"] = [max(a, b) for a, b in zip(best["workers_rss"],
                                                                 run["workers_rss"])]
    mb = 1 << 20
    print(f"X: {args.gb} GB float64, {args.cols} columns, {args.chunk_mb} MB chunks; "
          f"{len(os.sched_getaffinity(0))} cores; best of {args.rounds} interleaved rounds x "
          f"{args.repeat}; load average at the end {os.getloadavg()[0]:.1f}\n")
    print("| scheduler | workload | numpy chunks (s) | hxarray chunks (s) | hxarray/numpy |")
    print("|---|---|--:|--:|--:|")
    for scheduler in args.schedulers:
        n, h = results["numpy", scheduler], results["hxarray", scheduler]
        for name, t in n["times"].items():
            th = h["times"][name]
            print(f"| {scheduler} | {name} | {t:.2f} | {th:.2f} | {th / t:.2f} |")
    print("\n| scheduler | library | peak RSS client (MiB) | peak RSS per worker (MiB) |")
    print("|---|---|--:|--:|")
    for scheduler in args.schedulers:
        for library in ("numpy", "hxarray"):
            r = results[library, scheduler]
            workers = ", ".join(f"{w / mb:.0f}" for w in r["workers_rss"]) or "-"
            print(f"| {scheduler} | {library} | {r['client_rss'] / mb:.0f} | {workers} |")


if __name__ == "__main__":
    main()
