"""`python -m benchmarks [--quick] [--cases NAME ...] [--sizes N ...] [--update-docs]
[--render JSON]`: hxarray against numpy and array-api-strict on the CPU; writes
benchmarks/results/{<timestamp>,latest}.json, latest.md and latest-<group>.png, and prints the
markdown table (with the performance targets)."""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import sys
import time
from pathlib import Path

import hxarray
from hxarray._progress import bar

from . import memory, report
from .cases import CASES, MATMUL_SIZES, SIZES, Case, libraries
from .runner import FULL, QUICK, Measurement, measure

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
DOCS_PAGE, DOCS_IMAGES = ROOT / "docs" / "performance.md", ROOT / "docs" / "img"
RSS_SIZE = 10_000_000


def _select(names: list[str] | None) -> list[Case]:
    """The cases named, by case or group name (all when none are named)."""
    if not names:
        return list(CASES)
    known = {c.name for c in CASES} | {c.group for c in CASES}
    unknown = sorted(set(names) - known)
    if unknown:
        raise SystemExit(f"unknown case or group {', '.join(unknown)}; expected some of "
                         f"{', '.join(sorted(known))}")
    return [c for c in CASES if c.name in names or c.group in names]


def _release() -> None:
    """Free the last case's arrays and hxarray's cached blocks, so every case starts alike."""
    gc.collect()
    hxarray.empty_cache()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true",
                        help="fewer sizes and rounds, matmul up to 512 (under a minute)")
    parser.add_argument("--cases", nargs="+", metavar="NAME",
                        help="only these cases or groups (the chain's peak RSS runs with 'chain')")
    parser.add_argument("--update-docs", action="store_true",
                        help=f"also write the table into {DOCS_PAGE.relative_to(ROOT)} and the "
                             f"plots into {DOCS_IMAGES.relative_to(ROOT)}/")
    parser.add_argument("--sizes", nargs="+", type=int, metavar="N",
                        help="only these sizes of the cases run (matmul: the side n), e.g. "
                             "`--sizes 10 1000 64` for the small-size target")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--render", metavar="JSON", type=Path,
                        help="measure nothing: render a results file again (its targets judged "
                             "anew), into latest.md and the plots, and with --update-docs the docs")
    args = parser.parse_args(argv)
    if args.list:
        for case in CASES:
            print(f"{case.group:12s} {case.name:12s} {case.description}")
        return
    if args.render:
        document = json.loads(args.render.read_text(encoding="utf-8"))
        document["targets"] = report.targets(document)
        _write(document, args.update_docs, None)
        return
    cases, settings = _select(args.cases), QUICK if args.quick else FULL
    libs, notes = libraries()
    info = report.machine(libs)
    created = datetime.datetime.now(datetime.timezone.utc)
    start = time.perf_counter()

    rss = []
    if any(case.name == "chain" for case in cases):  # first, while this process is small
        try:
            rss = [memory.measure(library, RSS_SIZE) for library in memory.LIBRARIES]
        except RuntimeError as exc:
            notes.append(str(exc))
    plan = [(case, size) for case in cases for size in case.sizes_for(args.quick)
            if args.sizes is None or size in args.sizes]
    if not plan:
        raise SystemExit(f"no case of this run has any of the sizes {args.sizes}; a full run's "
                         f"sizes are {', '.join(map(str, SIZES))} (matmul: "
                         f"{', '.join(map(str, MATMUL_SIZES))}), --quick's fewer")
    measurements: list[Measurement] = []
    progress = bar(len(plan), "benchmarks", unit="case")
    for case, size in plan:
        progress.set_postfix_str(f"{case.name} {size:,}")
        measurements.append(measure(case, size, libs, settings))
        _release()
        progress.update()
    progress.close()

    document = report.document(
        measurements, rss, info, notes, mode="quick" if args.quick else "full",
        created=created.isoformat(timespec="seconds"),
        duration_s=time.perf_counter() - start, command=sys.argv, settings=vars(settings))
    _write(document, args.update_docs, created)


def _write(document: dict, update_docs: bool, created: datetime.datetime | None) -> None:
    """The plots, `<created>.json` and latest.json (when `created`: a new run), latest.md, the
    docs (when `update_docs`), and the table on stdout."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    plots = report.plot(document, RESULTS, "latest-")
    if isinstance(plots, str):
        document["notes"].append(plots)
    if created is not None:
        text = json.dumps(document, indent=1)
        (RESULTS / f"{created:%Y%m%dT%H%M%SZ}.json").write_text(text, encoding="utf-8")
        (RESULTS / "latest.json").write_text(text, encoding="utf-8")
    table = report.markdown(document, None if isinstance(plots, str) else "latest-")
    (RESULTS / "latest.md").write_text(table, encoding="utf-8")
    if update_docs:
        DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
        docs_plots = report.plot(document, DOCS_IMAGES, "bench-")
        report.update_docs(DOCS_PAGE, report.markdown(
            document, None if isinstance(docs_plots, str) else "img/bench-"))
    print(table)
    written = f"{RESULTS.relative_to(ROOT)}/" + ("latest.{json,md}" if created else "latest.md")
    print(f"written: {written}" + ("" if isinstance(plots, str) else f" and {len(plots)} plots")
          + (f"; {DOCS_PAGE.relative_to(ROOT)} updated" if update_docs else ""), file=sys.stderr)


if __name__ == "__main__":
    main()
