"""Launch configuration, in one place: block size from the kernel's attributes, grid capped to
WAVES times what the device keeps resident (grid-stride loops do the rest; a second wave keeps
every SM busy while the first one's stragglers finish); the launches of reductions and scans
(`reduction_plan`, `scan_plan`: the parameters their kernels' layouts take, `codegen`'s `pack`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..codegen import reduction as rd
from ..codegen import scan as sc

if TYPE_CHECKING:
    from .driver import DeviceProperties, Function

BLOCK = 256  # threads: a multiple of the warp size that keeps 8 blocks resident per SM
WAVES = 2  # grids hold up to this many times the blocks the device keeps resident


def grid_for(props: DeviceProperties, function: Function, work: int,
             block: int = BLOCK) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(grid, block) for `work` independent items: at most one item per thread, at most WAVES
    times as many threads as the device keeps resident at once."""
    block = min(block, function.attributes.max_threads_per_block, props.max_threads_per_block)
    block -= block % props.warp_size or 0
    resident = props.multiprocessor_count * (props.max_threads_per_multiprocessor // block)
    blocks = max(1, min(-(-work // block), WAVES * resident, props.max_grid_dims[0]))
    return (blocks, 1, 1), (block, 1, 1)


def resident_threads(props: DeviceProperties) -> int:
    return props.multiprocessor_count * props.max_threads_per_multiprocessor


def reduction_plan(outputs: int, length: int, row_inner: bool, props: DeviceProperties,
                   max_block: int = rd.BLOCK, may_split: bool = True) -> rd.Launch:
    """A reduction's launch (`codegen/reduction.py`): enough threads to fill the device WAVES
    times (at most one per rd.PER_THREAD elements): a group of threads per output where rows lie
    inner (the group reads neighbouring elements), else one thread per output (neighbouring
    threads read neighbouring outputs); where that leaves the device idle (few outputs, long
    rows) and `may_split`, rows split into parts for two passes, unless each thread folds at
    most rd.SERIAL elements in one (a launch saved)."""
    wanted = max(1, min(WAVES * resident_threads(props),
                        -(-outputs * length // rd.PER_THREAD)))
    per_output = -(-wanted // outputs)
    block = 1 << (min(max_block, rd.BLOCK, props.max_threads_per_block).bit_length() - 1)
    group = min(block, 1 << (per_output - 1).bit_length()) if row_inner else 1
    parts = -(-per_output // group) if may_split and length > group * rd.SERIAL else 1
    parts = max(1, min(parts, rd.MAX_PARTS, -(-length // (group * rd.PER_THREAD))),
                -(-length // rd.MAX_CHUNK) if may_split else 1)
    chunk = -(-length // parts)
    parts = -(-length // chunk)
    tasks = outputs * parts
    block = min(block, -(-tasks * group // props.warp_size) * props.warp_size)
    resident_blocks = props.multiprocessor_count * (props.max_threads_per_multiprocessor // block)
    grid = max(1, min(-(-tasks * group // block), WAVES * resident_blocks,
                      props.max_grid_dims[0]))
    return rd.Launch(group, parts, chunk, block, grid)


def scan_plan(rows: int, length: int, row_inner: bool, props: DeviceProperties, per_thread: int,
              max_block: int = sc.MAX_BLOCK) -> sc.Launch:
    """A scan's launch (`codegen/scan.py`): enough threads to fill the device, as
    `reduction_plan` counts them: one thread per row for short rows or where rows alone fill the
    device; else, where a row's elements lie inner (`row_inner`), a block per row, sized to the
    row, its tiles (`per_thread` elements a thread: `sc.items`) scanned in turn, and otherwise a
    thread per part of a row; rows split into parts (their totals first) where too few would
    run."""
    wanted = max(1, min(resident_threads(props), -(-rows * length // rd.PER_THREAD)))
    block = 1 << (min(max_block, sc.MAX_BLOCK, props.max_threads_per_block).bit_length() - 1)
    sequential = length <= sc.SHORT_ROW or rows >= wanted or not row_inner
    if sequential:
        parts = 1 if length <= sc.SHORT_ROW else -(-wanted // rows)
        per_part = rd.PER_THREAD
    else:
        block = min(block, -(-length // (per_thread * props.warp_size)) * props.warp_size)
        parts = -(-wanted // (rows * block))
        per_part = block * per_thread  # whole tiles, so that parts start on a tile
    parts = max(1, min(parts, sc.MAX_PARTS, -(-length // per_part)))
    chunk = -(-length // parts // per_part) * per_part
    parts = -(-length // chunk)
    threads = rows * parts if sequential else rows * parts * block
    block = min(block, -(-threads // props.warp_size) * props.warp_size)
    resident_blocks = props.multiprocessor_count * (props.max_threads_per_multiprocessor // block)
    grid = max(1, min(-(-threads // block), resident_blocks, props.max_grid_dims[0]))
    return sc.Launch(sequential, parts, chunk, block, grid)
