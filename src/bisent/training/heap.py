"""Keep freed memory in the process while training on a CPU, instead of handing it back to the kernel each step.

glibc's malloc serves every block over its mmap threshold (at most 32 MB on
64-bit) by a fresh ``mmap`` and unmaps it on ``free``. A step of the general
student allocates several ``(U, E)`` buffers of the rows it touches (about
150,000 x 256 float32, 150 MB each: the gathered rows, their gradient, the
zeroed gradient buffer of ``embedding_bag``'s backward), so every step the
kernel faults in and zeroes the same hundreds of megabytes again. With mmap
off (``M_MMAP_MAX`` 0) and a high trim threshold those blocks come from the
heap and are reused from one step to the next.

:func:`keep_freed_memory` does that for the length of a ``with`` block (the
training loop's, ``train.keep_freed_memory``) and then restores glibc's
defaults, so freed memory goes back to the kernel afterwards. Elsewhere (not
glibc: macOS, musl) it does nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import platform

# mallopt parameters and glibc's defaults (malloc.h, mallopt(3))
M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4
DEFAULT_TRIM_THRESHOLD, DEFAULT_MMAP_MAX = 128 * 1024, 65536
#: freed memory at the top of the heap kept for reuse (mallopt takes an int: 1 GiB)
KEEP_BYTES = 1 << 30


def _mallopt():
    """glibc's ``mallopt`` or None."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        fn = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    except (OSError, AttributeError):
        return None
    fn.argtypes, fn.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return fn


@contextlib.contextmanager
def keep_freed_memory(enabled: bool = True):
    """Inside the block, large blocks come from the heap and freed ones stay in the process (see the module
    docstring); yields whether that is in effect (False where disabled or not glibc)."""
    mallopt = _mallopt() if enabled else None
    on = mallopt is not None and bool(mallopt(M_MMAP_MAX, 0)) & bool(mallopt(M_TRIM_THRESHOLD, KEEP_BYTES))
    try:
        yield on
    finally:
        if mallopt is not None:
            mallopt(M_MMAP_MAX, DEFAULT_MMAP_MAX)
            mallopt(M_TRIM_THRESHOLD, DEFAULT_TRIM_THRESHOLD)
