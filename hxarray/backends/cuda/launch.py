"""Launch configuration, in one place: block size from the kernel's attributes, grid capped to
WAVES times what the device keeps resident (grid-stride loops do the rest; a second wave keeps
every SM busy while the first one's stragglers finish)."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
