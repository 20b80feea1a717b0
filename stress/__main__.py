"""`python -m stress [--scale ci|full] [--devices cpu,ref:0,cuda:0] [--modes compiled,pure]
[--parts PART,...] [--seed N] [--json PATH]`: the reliability suite (docs/reliability.md;
PARTS lists the parts). Each part runs in processes of its own, on each device and in
each mode (compiled, or every module from its Python source); the figures go to stdout as a
table and to a JSON file. The exit status is 1 if any part failed its criterion (see
docs/reliability.md), 2 if a device cannot be used (cuda:0 needs a GPU, or
HXARRAY_CUDA_DRIVER=sim for the simulator)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from . import fuzz
from .settings import FAILURES as FAILURES_OF_SETTINGS

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "stress" / "results"

# Per scale: fuzz calls, leak iterations, threads and seconds, OOM rounds, cache processes and
# calls per process, whether the OOM part also bounds the whole CPU process, the dtypes of the
# write cases, settings values per variable (0: all), pipeline runs, memory-limit steps, the
# differential's pairs of different dtypes per binary operation and Python scalars per side (0:
# every value), the deferred errors' calls, the cache directory's processes, rounds each and
# other programs' files, fused functions per mode (numpy, strict), temporary-elision cases,
# hxarray.random's draws per device, and numpy-subclass cases.
SCALES = {
    "ci": {"fuzz": 700, "leak": 300, "threads": (4, 3.0), "oom": 8, "cache": (3, 150),
           "numpy_retry": False, "timeout": 60.0, "writes": "float64", "settings": 3,
           "pipelines": 40, "memory": 1000, "differential": (0, 2), "deferred": 1500,
           "cachedir": (3, 6, 30), "fuse": 30, "temporaries": 300, "random": 200,
           "subclasses": 1500},
    "full": {"fuzz": 20_000, "leak": 20_000, "threads": (8, 20.0), "oom": 200,
             "cache": (8, 2000), "numpy_retry": True, "timeout": 120.0,
             "writes": "float64,int32,complex64,bool", "settings": 0, "pipelines": 1500,
             "memory": 20_000, "differential": (12, 0), "deferred": 30_000,
             "cachedir": (8, 20, 150), "fuse": 200, "temporaries": 3000, "random": 5000,
             "subclasses": 30_000},
}
PARTS = ("fuzz", "leak", "threads", "oom", "cache", "writes", "settings", "pipelines", "memory",
         "differential", "deferred", "cachedir", "fuse", "temporaries", "random", "subclasses")


def _part(module: str, args: list[Any], mode: str, timeout: float) -> dict[str, Any]:
    """`python -m stress.<module> args...` in `mode`; its JSON, or what went wrong."""
    env = {**os.environ, "HXARRAY_PURE_PYTHON": "1" if mode == "pure" else "0"}
    try:
        done = subprocess.run([sys.executable, "-m", f"stress.{module}", *map(str, args)],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"failure": f"no answer in {timeout:.0f} s"}
    if done.returncode != 0:
        return {"failure": f"exit status {done.returncode}: {done.stderr[-1500:]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(scale: str, devices: list[str], modes: list[str], parts: list[str],
        seed: int) -> dict[str, Any]:
    settings = SCALES[scale]
    report: dict[str, Any] = {"scale": scale, "devices": devices, "modes": modes, "seed": seed,
                              **{part: [] for part in PARTS}}
    start = time.perf_counter()
    logs = RESULTS / "logs"
    if "fuzz" in parts:
        calls = fuzz.generate(settings["fuzz"], seed)  # one draw, run everywhere
        for device in devices:
            for mode in modes:
                _say(f"fuzz {device} {mode}: {len(calls)} calls")
                report["fuzz"].append(fuzz.run(device, mode, calls, settings["timeout"], logs))
    for device in devices:
        for mode in modes:
            if "leak" in parts:
                _say(f"leak {device} {mode}")
                report["leak"].append({"device": device, "mode": mode, **_part(
                    "leak", [device, settings["leak"]], mode, 3600)})
            if "threads" in parts:
                _say(f"threads {device} {mode}")
                count, seconds = settings["threads"]
                report["threads"].append({"device": device, "mode": mode, **_part(
                    "threads", [device, count, seconds], mode, 3600)})
            if "oom" in parts:
                _say(f"oom {device} {mode}")
                report["oom"].append({"device": device, "mode": mode, **_part(
                    "oom", [device, settings["oom"], int(settings["numpy_retry"])], mode,
                    3600)})
            # (device, scale, seed)
            for part in ("writes", "pipelines", "memory", "deferred", "fuse", "temporaries",
                         "subclasses"):
                if part in parts:
                    _say(f"{part} {device} {mode}")
                    report[part].append({"device": device, "mode": mode, **_part(
                        part, [device, settings[part], seed], mode, 3600)})
    if "differential" in parts:  # all devices in one process, against the CPU
        mixed, scalars = settings["differential"]
        for mode in modes:
            _say(f"differential {mode}")
            report["differential"].append({"mode": mode, **_part(
                "differential", [",".join(dict.fromkeys(["cpu", *devices])), mixed, scalars,
                                 seed], mode,
                3600)})
    if "random" in parts:  # all devices in one process, against the numpy evaluation
        for mode in modes:
            _say(f"random {mode}")
            report["random"].append({"mode": mode, **_part(
                "random_streams", [",".join(dict.fromkeys(["cpu", *devices])),
                                   settings["random"], seed], mode, 3600)})
    if "cache" in parts:
        _say("kernel cache")
        processes, per_process = settings["cache"]
        report["cache"].append(_part("kernel_cache", [processes, per_process], "compiled", 3600))
    if "cachedir" in parts:
        _say("kernel cache directory")
        report["cachedir"].append(_part("cache_dir", [*settings["cachedir"], seed], "compiled",
                                        3600))
    if "settings" in parts:  # each process runs in one mode or the other, on cpu and cuda:0
        _say("settings")
        report["settings"].append(_part("settings", [settings["settings"], seed,
                                                     settings["timeout"]], "compiled", 3600))
    report["seconds"] = round(time.perf_counter() - start, 1)
    report["failures"] = failures(report)
    return report


def unusable(devices: list[str]) -> list[str]:
    """Why each of `devices` that cannot hold an array cannot (its error)."""
    import hxarray as xp

    reasons = []
    for name in devices:
        try:
            xp.empty(0, device=xp.Device(name))
        except Exception as exc:  # noqa: BLE001 - reported to the user
            reasons.append(f"{name}: {type(exc).__name__}: {exc}")
    return reasons


def _say(text: str) -> None:
    print(f"[stress] {text}", file=sys.stderr, flush=True)


def failures(report: dict[str, Any]) -> list[str]:
    """Every criterion a part missed, as a line of text."""
    found = []
    for r in report["fuzz"]:
        for kind in fuzz.FAILURES:
            if r["tally"].get(kind):
                found.append(f"fuzz {r['device']} {r['mode']}: {r['tally'][kind]} {kind}")
    for part, flag in (("leak", "flat"), ("threads", "equal"), ("oom", "clean"),
                       ("writes", "clean"), ("pipelines", "clean"), ("memory", "clean"),
                       ("deferred", "clean"), ("fuse", "clean"), ("temporaries", "clean"),
                       ("subclasses", "clean")):
        for r in report[part]:
            if not r.get(flag):
                found.append(f"{part} {r['device']} {r['mode']}: "
                             f"{r.get('failure') or f'not {flag}'}")
    for r in report["cache"]:
        if not r.get("clean"):
            found.append(f"kernel cache: {r.get('failure') or 'not clean'}")
    for r in report["cachedir"]:
        if not r.get("clean"):
            found.append(f"kernel cache directory: {r.get('failure') or 'not clean'}")
    for r in report.get("settings", []):
        if not r.get("clean"):
            found.append(f"settings: {r.get('failure') or r['tally']}")
    for r in report.get("random", []):
        if r.get("failure") or r.get("mismatches"):
            found.append(f"random {r['mode']}: {r.get('failure') or r['examples']}")
    for r in report["differential"]:
        if "failure" in r:
            found.append(f"differential {r['mode']}: {r['failure']}")
        for rec in r.get("records", []):
            if rec["mismatches"]:
                found.append(f"differential {rec['device']} {r['mode']} "
                             f"{'strict' if rec['strict'] else 'numpy mode'}: "
                             f"{rec['mismatches']} in {rec['by_operation']}")
    return found


def _table(header: list[str], results: list[dict[str, Any]],
           cells: Any) -> list[str]:
    """A markdown table: one row per result (its label, then `cells(result)`), or the failure
    of a part that did not finish."""
    lines = ["| " + " | ".join(header) + " |", "|---|" + "--:|" * (len(header) - 1)]
    for r in results:
        label = f"{r.get('device', '')} {r.get('mode', '')}".strip() or header[0]
        row = [r["failure"][:120]] if "failure" in r else [str(c) for c in cells(r)]
        lines.append("| " + " | ".join([label, *row]) + " |")
    return lines + [""]


def _fuzz_cells(r: dict[str, Any]) -> list[Any]:
    t = r["tally"]
    clean = t.get("right class, hxarray message", 0) + t.get("right class, python message", 0)
    raised = clean + t.get("right class, foreign message", 0) + t.get("wrong class", 0)
    share = f" ({100 * clean / raised:.1f}%)" if raised else ""
    return [t.get("calls", 0), t.get("returned", 0), f"{clean}{share}",
            t.get("right class, foreign message", 0),
            *(t.get(k, 0) for k in ("wrong class", "crashes", "hangs", "changed inputs",
                                    "unusable results", "deferred errors", "warnings"))]


def _yes(flag: bool) -> str:
    return "yes" if flag else "**no**"


def markdown(report: dict[str, Any]) -> str:
    """The figures as markdown tables."""
    lines = [f"Scale **{report['scale']}**, seed {report['seed']}, {report['seconds']} s.", ""]
    if report["fuzz"]:
        lines += _table(["fuzz", "calls", "returned", "right class, hxarray or Python message",
                         "right class, other message", "wrong class", "crashes", "hangs",
                         "changed inputs", "unusable results", "deferred errors",
                         "escaped warnings"], report["fuzz"], _fuzz_cells)
    if report["leak"]:
        lines += _table(["leak loop", "iterations", "allocations", "exceptions",
                         "allocated bytes after", "RSS growth after the first tenth",
                         "cycles left", "flat"], report["leak"], lambda r: [
            r["iterations"], r["allocations"], r["exceptions"], r["checkpoints"][-1]["allocated"],
            f"{r['rss_growth'] / 1024:.0f} KiB", r["cycles"], _yes(r["flat"])])
    if report["threads"]:
        lines += _table(["threads", "threads", "tasks", "results unlike the serial run",
                         "errors", "settings restored"], report["threads"], lambda r: [
            r["threads"], r["tasks"], r["mismatches"], len(r["errors"]),
            _yes(r["settings_restored"])])
    if report["oom"]:
        lines += _table(["out of memory", "operations", "MemoryErrors", "other errors",
                         "messages missing the device or stats", "over the limit",
                         "memory not back", "numpy allocations retried"], report["oom"],
                        lambda r: [r["operations"], r["memory_errors"], r["wrong_class"],
                                   r["bad_messages"], r["over_limit"], r["not_restored"],
                                   r.get("numpy_retry", "-")])
    if report["writes"]:
        lines += _table(["writes", "cases", "refusals", "not refused", "wrong class",
                         "read-only bytes changed", "allowed (wrote)", "bytes outside the target",
                         "overlaps", "overlaps unlike numpy's copy"], report["writes"],
                        lambda r: [r["cases"], r["refusals"], r["not_refused_count"],
                                   r["wrong_class_count"], r["changed_count"],
                                   f"{r['allowed']} ({r['wrote']})", r["outside_target_count"],
                                   r["overlaps"], r["overlap_wrong_count"]])
    if report["pipelines"]:
        lines += _table(["pipelines", "pipelines", "results", "worker delays", "wrong results",
                         "changed by a later pipeline", "errors"], report["pipelines"],
                        lambda r: [r["pipelines"], r["results"], r["delays"], r["wrong"],
                                   r["changed_later"], r["errors"]])
    if report["memory"]:
        lines += _table(["memory limits", "steps", "allocations", "MemoryErrors", "frees",
                         "limit changes", "over the limit", "wrong refusals", "unclean errors",
                         "memory back"], report["memory"], lambda r: [
            r["steps"], r["allocations"], r["memory_errors"], r["frees"], r["limit_changes"],
            r["over_the_limit"], r["wrong_refusals"], r["unclean_errors"],
            _yes(r["memory_back"])])
    if report["deferred"]:
        kinds = ("calls", "bad_calls", "raised_at_the_call", "raised_later", "calls_that_raised",
                 "failed_results_refused", "unreported", "reported_twice", "misattributed",
                 "failed_result_read", "wrong_values", "other_errors")
        lines += _table(["deferred errors", *(k.replace("_", " ") for k in kinds)],
                        report["deferred"], lambda r: [r[k] for k in kinds])
    if report["subclasses"]:
        lines += _table(["numpy subclasses", "cases", "numpy's answer", "numpy's exception",
                         "TypeError", "masked arrays refused", "anything else"],
                        report["subclasses"], lambda r: [
            r["cases"], r["answer"], r["same error"], r["TypeError"], r["refused"], r["wrong"]])
    if report["cache"]:
        lines += _table(["kernel cache", "processes", "calls", "corruptions injected",
                         "wrong bytes", "errors", "rebuilt (compiles)", "temporary files left",
                         "files outside"], report["cache"], lambda r: [
            r["processes"], r["calls"], r["corruptions"], r["wrong"], r["errors"],
            r["compiles"], len(r["temporary_files_left"]), len(r["files_outside"])])
    if report["cachedir"]:
        lines += _table(["kernel cache directory", "processes", "other programs' paths",
                         "kernels, entries, fuses", "evictions", "their paths changed",
                         "entry bytes (bound)", "headers left", "left over", "refusals"],
                        report["cachedir"], lambda r: [
            r["processes"], r["foreign_paths"], f"{r['kernels']}, {r['entries']}, {r['fuses']}",
            r["evictions"], r["touched_count"], f"{r['entry_bytes']} ({r['bound']})",
            r["headers_left"], len(r["left_over"]), f"{r['refused']} of 2"])
    if report.get("settings"):
        lines += _table(["settings", "variables", "processes", "worked", "refused, naming the "
                         "variable", "no GPU", *FAILURES_OF_SETTINGS, "slowest (s)"],
                        report["settings"], lambda r: [
            r["tally"]["variables"], r["tally"]["processes"],
            *(r["tally"].get(k, 0) for k in ("worked", "refused", "no GPU",
                                             *FAILURES_OF_SETTINGS)), r["slowest"]])
    if report["differential"]:
        rows = [r for r in report["differential"] if "failure" in r] + [
            {**rec, "device": f"{rec['device']} {'strict' if rec['strict'] else 'numpy mode'}",
             "mode": r["mode"]} for r in report["differential"] for rec in r.get("records", [])]
        lines += _table(["differential", "cases", "calls", "exact", "within the ulp bound",
                         "same exception", "disagreements"], rows, lambda r: [
            r["cases"], r["calls"], r["exact"], r["rounded"], r["raised"],
            sum(r["mismatches"].values())])
    if report.get("fuse"):
        rows = [r for r in report["fuse"] if "failure" in r] + [
            {**rec, "device": f"{r['device']} {r['mode']}",
             "mode": "strict" if rec["strict"] else "numpy mode"}
            for r in report["fuse"] for rec in r.get("records", [])]
        lines += _table(["fuse", "functions", "calls", "unfused raised", "fused: exact",
                         "within the ulp bound", "same exception", "refused (documented)",
                         "fallback: exact, within the bound, same exception",
                         "NaN signs differing", "worst ulps", "failures"], rows, lambda r: [
            r["cases"], r["calls"], r["unfused raised"], r["fused"]["exact"], r["fused"]["close"],
            r["fused"]["same exception"], r["fused"]["refused"],
            ", ".join(str(r["fallback"][k]) for k in ("exact", "close", "same exception")),
            r["nan signs"], f"{r['worst_ulps']:.0f}", sum(r["failures"].values())])
    if report.get("temporaries"):
        lines += _table(["temporaries", "cases", "operations", "wrong results",
                         "held arrays changed", "results that are a held array", "errors"],
                        report["temporaries"], lambda r: [
            r["cases"], r["operations"], r["wrong"], r["held changed"],
            r["result is a held array"], r["errors"]])
    if report.get("random"):
        lines += _table(["random", "devices", "draws per device", "bits unlike numpy's "
                         "evaluation"], report["random"], lambda r: [
            r["devices"], r["draws"], r["mismatches"]])
    lines.append("**Failures**: " + ("; ".join(report["failures"]) if report["failures"]
                                     else "none"))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m stress", description=__doc__)
    parser.add_argument("--scale", choices=SCALES, default="full")
    parser.add_argument("--devices", default="cpu,ref:0,cuda:0",
                        help="comma-separated devices (cuda:0 with HXARRAY_CUDA_DRIVER=sim "
                             "where there is no GPU)")
    parser.add_argument("--modes", default="compiled,pure")
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=RESULTS / "latest.json")
    args = parser.parse_args(argv)
    parts = args.parts.split(",")
    unknown = set(parts) - set(PARTS)
    if unknown:
        parser.error(f"unknown parts {sorted(unknown)}; expected some of {', '.join(PARTS)}")
    devices = args.devices.split(",")
    # CUDA reports an out-of-range index at the next synchronising call by default; the suite
    # judges errors at the call that caused them, so its processes check at once
    os.environ.setdefault("HXARRAY_CUDA_SYNC_CHECKS", "1")
    reasons = unusable(devices)
    if reasons:
        parser.error("devices that cannot be used: " + "; ".join(reasons))
    report = run(args.scale, devices, args.modes.split(","), parts, args.seed)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(markdown(report))
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
