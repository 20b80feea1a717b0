"""hxarray's benchmark suite: hxarray against numpy and array-api-strict, interleaved, one process.

Run it with `python -m benchmarks [--quick]` (or `make bench` / `make bench-quick`); see
docs/performance.md. `cases` defines what is measured, `runner` how, `report` what is written, and
`memory` the peak-RSS measurement that needs a fresh process per library.
"""
