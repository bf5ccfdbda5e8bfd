"""keep_freed_memory: freed large blocks stay in the process inside the block and go back to the kernel after."""

from __future__ import annotations

import numpy as np
import pytest

from bisent.training.heap import _mallopt, keep_freed_memory

pytestmark = pytest.mark.skipif(_mallopt() is None, reason="needs glibc's mallopt")


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def _freed_kept_mb() -> float:
    """Resident megabytes still held after a 256 MB block is written and freed."""
    before = _rss_mb()
    block = np.ones(64 * 2**20, dtype=np.float32)         # 256 MB, every page touched
    del block
    return _rss_mb() - before


def test_freed_blocks_stay_inside_and_go_back_after():
    assert _freed_kept_mb() < 64                           # glibc's default: mmap'd and unmapped on free
    start = _rss_mb()
    with keep_freed_memory() as on:
        assert on
        assert _freed_kept_mb() > 192                      # from the heap, kept for the next step
    assert _rss_mb() > start + 192                         # still held until glibc next trims the heap,
    _freed_kept_mb()
    assert _rss_mb() < start + 64                          # which, with the defaults back, the next free does
    with keep_freed_memory(False) as on:
        assert not on
        assert _freed_kept_mb() < 64
