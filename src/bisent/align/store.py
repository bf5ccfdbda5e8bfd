"""Vectors of long documents outside the process's memory: made or read window by window.

The coarse-to-fine DP only ever looks at a band a few sentences wide, so a
long document's vectors need not be in memory at once. Two stand-ins for a
whole ``(count, d)`` float16 array, both read through ``make(k0, k1)``:

- :class:`LazyGroups`: rows computed on demand (the embeddings of the 2- and
  3-sentence groups, through the encoder and its cache; sums of pooled rows);
- :class:`DiskVectors`: rows written once, in order, to an anonymous temporary
  file (deleted by the system when the object goes) and read back with
  ``os.pread``. Not memory-mapped: mapped pages that were read count in the
  process's resident memory until the kernel needs them back, read pages do not.

:class:`~bisent.align.costs.EmbeddingCosts` keeps a few chunks of either, so the
peak memory of aligning a long document does not grow with its length.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np


class LazyGroups:
    """Group embeddings of one size made window by window: ``make(k0, k1) -> (k1 - k0, d) float16`` for the
    groups ``k0..k1-1`` of ``count``. Stands in for a whole array in :class:`EmbeddingCosts`, which
    keeps only the few chunks the band of the current DP rows needs (long documents: bounded memory)."""

    def __init__(self, make, count: int):
        self.make, self.count = make, count

    def __len__(self) -> int:
        return self.count


class DiskVectors(LazyGroups):
    """A ``(count, dim)`` float16 matrix in an anonymous temporary file, read by rows.

    Build it with :meth:`write` from chunks in row order; ``make(k0, k1)`` /
    ``v[k0:k1]`` read a window, :meth:`take` any rows (sorted reads).
    """

    def __init__(self, file, count: int, dim: int):
        super().__init__(self._read, count)
        self.file, self.dim = file, dim
        self.row_bytes = 2 * dim

    @classmethod
    def write(cls, chunks, dim: int | None = None, spill_dir=None) -> "DiskVectors":
        """Rows of ``chunks`` (an iterable of ``(k, d)`` arrays, stored as float16) one after another."""
        f = tempfile.TemporaryFile(dir=spill_dir)
        count = 0
        for c in chunks:
            c = np.ascontiguousarray(c, dtype=np.float16)
            if dim is None:
                dim = c.shape[1]
            if c.ndim != 2 or c.shape[1] != dim:
                raise ValueError(f"rows of width {dim} expected, got shape {c.shape}")
            f.write(c.tobytes())
            count += len(c)
        f.flush()
        return cls(f, count, dim or 0)

    def _read(self, k0: int, k1: int) -> np.ndarray:
        k0, k1 = max(k0, 0), min(k1, self.count)
        if k1 <= k0:
            return np.zeros((0, self.dim), np.float16)
        buf = os.pread(self.file.fileno(), (k1 - k0) * self.row_bytes, k0 * self.row_bytes)
        return np.frombuffer(buf, np.float16).reshape(k1 - k0, self.dim).copy()

    def __getitem__(self, key):
        if isinstance(key, slice) and key.step in (None, 1):
            k0, k1, _ = key.indices(self.count)
            return self._read(k0, k1)
        return self.take(np.asarray(key))

    def take(self, idx) -> np.ndarray:
        """Rows ``idx`` (any order, repeats allowed): ``(len(idx), dim)``."""
        idx = np.asarray(idx, dtype=np.int64)
        if len(idx) and (idx.min() < 0 or idx.max() >= self.count):
            raise IndexError(f"row out of range 0..{self.count - 1}")
        uniq, inverse = np.unique(idx, return_inverse=True)
        rows = np.stack([self._read(int(k), int(k) + 1)[0] for k in uniq]) if len(uniq) else \
            np.zeros((0, self.dim), np.float16)
        return rows[inverse]

    def close(self) -> None:
        self.file.close()
