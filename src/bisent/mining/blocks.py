"""The exact kNN of both directions as a grid of independent blocks, merged, resumable.

Sources X (n, d) and targets Y (m, d) are cut into blocks of ``block`` rows a
side. Job (i, j) runs :func:`bisent.mining.index.knn_both` on source block i and target
block j: the top-k targets of block j for each source of block i, and the top-k
sources of block i for each target of block j. A row's top-k over all of Y (or X)
is the top-k of the union of its blocks' lists under the kernel's order (score
descending, index ascending), so :func:`merge_topk` folds blocks in, in any
order, to the lists of one pass over the whole matrix. Margin scoring and
retrieval then run on the merged lists exactly as after one pass
(:class:`BlockScorer` is a :class:`~bisent.mining.scoring.Scorer`), so the mined pairs
are the same bytes as ``bisent mine`` without blocks.

Blocks are whole multiples of the kernel's tile (4096 rows), so every score is
computed by the same sgemm of the same shapes as in the one pass: the same bits.
(A block smaller than a tile is its own tile; the lists then equal
``knn_both`` run with tiles of that size; BLAS may round tiny shapes differently.)

Resuming: each finished block's lists are written atomically to a state folder
(``block-IIIII-JJJJJ.npz``), folded now and then into ``merged.npz``; the
folder's fingerprint (:class:`bisent.state.StateDir`) is both sides' rows and
the settings. A rerun with the same inputs loads them and runs only the missing
blocks; a folder of other inputs or settings is refused. Jobs run through an executor: :class:`LocalExecutor` (this
process, in order) or :class:`bisent.cluster.ray_mine.RayExecutor` (Ray tasks).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy as np

from ..encoders.shards import Shards
from ..encoders.shards import flatten_rows as _flatten
from ..progress import progress_bar
from ..state import StateDir
from .index import BLOCK_COLS, BLOCK_ROWS, KNN, knn_both
from .scoring import Candidates, Scorer

#: rows a side of one job (8 kernel tiles): about 10 s of work at d = 512 on one core
BLOCK = 8 * BLOCK_ROWS
MERGED = "merged.npz"
FIELDS = ("fwd_sim", "fwd_idx", "bwd_sim", "bwd_idx")
_BLOCK_FILE = re.compile(r"block-(\d{5})-(\d{5})\.npz")
_VERSION = "bisent-blocks/1"


# --- reading one block, wherever its rows live -------------------------------------------------

@dataclass(frozen=True)
class FolderRows:
    """Some rows (ascending) of a vectors folder, read by the worker itself (the folder must be visible to it)."""

    folder: str
    rows: np.ndarray  # (r,) int64, ascending rows of the folder


def read_block(spec) -> np.ndarray:
    """The fp16 rows a job spec names: an array (itself) or :class:`FolderRows` (only those rows are read)."""
    if not isinstance(spec, FolderRows):
        return spec
    shards = Shards(spec.folder)
    out = np.empty((len(spec.rows), shards.dim), dtype=np.float16)
    start = 0
    for arr in shards._arrays:                                        # memory maps: only touched pages are read
        lo, hi = np.searchsorted(spec.rows, [start, start + len(arr)])
        out[lo:hi] = arr[spec.rows[lo:hi] - start]
        start += len(arr)
    return out


class BlockSide:
    """One side cut into blocks of ``block`` rows: a spec per block and a fingerprint of the rows."""

    def __init__(self, vectors, block: int):
        self.base, self.rows = _flatten(vectors)
        self.n, self.dim = int(vectors.shape[0]), int(vectors.shape[1])
        self.block = block
        self._specs: dict[int, object] = {}

    def __len__(self) -> int:
        return -(-self.n // self.block)

    def start(self, b: int) -> int:
        return b * self.block

    def spec(self, b: int):
        """What a worker needs for block ``b``: :class:`FolderRows`, or the fp16 rows themselves (kept once)."""
        if b not in self._specs:
            s, e = b * self.block, min(self.n, (b + 1) * self.block)
            rows = self.rows[s:e] if self.rows is not None else None
            if isinstance(self.base, Shards):
                self._specs[b] = FolderRows(str(self.base.folder), rows if rows is not None
                                            else np.arange(s, e, dtype=np.int64))
            else:
                part = self.base[rows] if rows is not None else self.base[s:e]
                self._specs[b] = np.ascontiguousarray(part)
        return self._specs[b]

    def fingerprint(self) -> str:
        """SHA-256 of what the rows are: the folder's shard checksums and row list, or the array bytes."""
        h = hashlib.sha256()
        if isinstance(self.base, Shards):
            h.update(json.dumps([s["sha256"] for s in self.base.manifest["shards"]]).encode())
            h.update(np.ascontiguousarray(self.rows if self.rows is not None else np.arange(self.n)).tobytes())
        else:
            h.update(str(np.asarray(self.base).dtype).encode())
            for b in range(len(self)):
                h.update(self.spec(b).tobytes())
        return h.hexdigest()


# --- one job and the merge ---------------------------------------------------------------------

def knn_block(x_spec, y_spec, i0: int, j0: int, k: int, tile: int) -> tuple[np.ndarray, ...]:
    """kNN both ways inside one block: ``(fwd_sim, fwd_idx, bwd_sim, bwd_idx)`` with indices into all of Y / X.

    x rows are sources ``i0..``, y rows targets ``j0..``; ``tile`` is the kernel's tile size.
    """
    knn = knn_both(read_block(x_spec), read_block(y_spec), k, block_rows=tile, block_cols=tile, progress=False)
    return knn.fwd_sim, knn.fwd_idx + j0, knn.bwd_sim, knn.bwd_idx + i0


def merge_topk(sim_a, idx_a, sim_b, idx_b, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The best ``k`` of two neighbour lists of the same rows: (r, ka) and (r, kb) -> (r, k), best first.

    Order: larger score first, equal scores by smaller index (empty slots, -inf / -1, last):
    a total order, so folding blocks in in any order gives the same lists.
    """
    sim = np.concatenate([sim_a, sim_b], axis=1)
    idx = np.concatenate([idx_a, idx_b], axis=1)
    order = np.lexsort((idx, -sim), axis=1)[:, :k]
    return np.take_along_axis(sim, order, axis=1), np.take_along_axis(idx, order, axis=1)


class Merged:
    """Running top-k lists of every source (among targets) and every target (among sources)."""

    def __init__(self, n: int, m: int, k: int, block: int):
        self.kf, self.kb, self.block = min(k, m), min(k, n), block
        self.fwd_sim = np.full((n, self.kf), -np.inf, dtype=np.float32)
        self.fwd_idx = np.full((n, self.kf), -1, dtype=np.int64)
        self.bwd_sim = np.full((m, self.kb), -np.inf, dtype=np.float32)
        self.bwd_idx = np.full((m, self.kb), -1, dtype=np.int64)

    def add(self, i: int, j: int, result) -> None:
        """Fold block (i, j)'s ``(fwd_sim, fwd_idx, bwd_sim, bwd_idx)`` in."""
        fs, fi, bs, bi = result
        r = slice(i * self.block, i * self.block + len(fs))
        c = slice(j * self.block, j * self.block + len(bs))
        self.fwd_sim[r], self.fwd_idx[r] = merge_topk(self.fwd_sim[r], self.fwd_idx[r], fs, fi, self.kf)
        self.bwd_sim[c], self.bwd_idx[c] = merge_topk(self.bwd_sim[c], self.bwd_idx[c], bs, bi, self.kb)

    def arrays(self) -> tuple[np.ndarray, ...]:
        return self.fwd_sim, self.fwd_idx, self.bwd_sim, self.bwd_idx

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays())

    def restore(self, arrays) -> None:
        """Take the lists saved by :meth:`BlockState.compact` (shapes checked)."""
        if any(a.shape != b.shape or a.dtype != b.dtype for a, b in zip(self.arrays(), arrays)):
            raise ValueError("saved lists do not fit this run")
        for mine, saved in zip(self.arrays(), arrays):
            mine[...] = saved

    def knn(self) -> KNN:
        return KNN(*self.arrays())


# --- the state folder --------------------------------------------------------------------------

class BlockState:
    """Finished blocks of one run in ``folder``: written atomically, reloaded by a rerun of the same run.

    The folder is a :class:`bisent.state.StateDir` whose fingerprint is both sides' rows and the settings
    (``inputs``, ``settings``): a folder holding blocks of other vectors or settings is refused, the one rule
    of every resumable job (an earlier version silently started such a folder over; the two-stage search,
    sharing ``mine --state``, refused it). Block files are folded into ``merged.npz`` (the merged lists and
    which blocks they hold) once they outweigh it and number at least ``compact_blocks``, then removed: the
    folder stays near the size of the lists (2 × rows × k × 12 bytes), however many blocks the grid has.
    """

    def __init__(self, folder, inputs: dict, settings: dict, compact_blocks: int = 64):
        self.store = StateDir(folder, "knn-blocks", what="kNN blocks")   # a user's folder is refused, never emptied
        self.store.open(inputs=inputs, settings=settings)
        self.folder = self.store.path
        self.compact_blocks = compact_blocks
        self.pending: list[Path] = []                                # block files not yet in merged.npz

    def _path(self, i: int, j: int) -> Path:
        return self.folder / f"block-{i:05d}-{j:05d}.npz"

    def load(self, merged: "Merged", grid: set) -> set[tuple[int, int]]:
        """Fold every finished block of ``grid`` into ``merged``; return their keys. Unreadable files are dropped."""
        done: set[tuple[int, int]] = set()
        path = self.folder / MERGED
        if path.is_file():
            try:
                with np.load(path, allow_pickle=False) as z:
                    arrays, keys = [z[f] for f in FIELDS], z["done"]
                merged.restore(arrays)
                done = {(int(i), int(j)) for i, j in keys}
            except (OSError, ValueError, KeyError):
                path.unlink()
        for f in sorted(self.folder.glob("block-*.npz")):
            m = _BLOCK_FILE.fullmatch(f.name)
            key = (int(m.group(1)), int(m.group(2))) if m else None
            if key is None or key not in grid or key in done:       # stray, or already in merged.npz
                f.unlink()
                continue
            try:
                with np.load(f, allow_pickle=False) as z:
                    result = tuple(z[name] for name in FIELDS)
            except (OSError, ValueError, KeyError):
                f.unlink()
                continue
            merged.add(*key, result)
            done.add(key)
            self.pending.append(f)
        return done

    def save(self, i: int, j: int, result) -> None:
        self.store.save_arrays(self._path(i, j).name, **dict(zip(FIELDS, result)))
        self.pending.append(self._path(i, j))

    def compact(self, merged: "Merged", done: set, *, force: bool = False) -> bool:
        """Write ``merged.npz`` and remove the block files it holds, when they outweigh it (or ``force``)."""
        size = sum(f.stat().st_size for f in self.pending)
        if not force and (len(self.pending) < self.compact_blocks or size < merged.nbytes):
            return False
        self.store.save_arrays(MERGED, **dict(zip(FIELDS, merged.arrays())),
                               done=np.array(sorted(done), dtype=np.int64))
        for f in self.pending:
            f.unlink(missing_ok=True)
        self.pending = []
        return True


# --- running the grid --------------------------------------------------------------------------

#: a job: ((i, j), (x_spec, y_spec, i0, j0, k, tile))
Job = tuple[tuple[int, int], tuple]


class LocalExecutor:
    """Runs jobs one after another in this process."""

    def __init__(self, block_fn: Callable = knn_block):
        self.block_fn = block_fn

    def run(self, jobs: Iterable[Job]) -> Iterator[tuple[tuple[int, int], tuple]]:
        for key, args in jobs:
            yield key, self.block_fn(*args)


def knn_blocks(x, y, k: int = 4, *, block: int = BLOCK, executor=None, state=None, compact_blocks: int = 64,
               progress: bool | None = None) -> tuple[KNN, dict]:
    """Exact top-``k`` both ways, computed as a grid of blocks: the same lists as :func:`knn_both` in one pass.

    ``x``, ``y``: arrays, Shards or RowViews. ``block``: rows a side of a job, a
    multiple of the kernel's tile (or smaller than one tile). ``executor``:
    :class:`LocalExecutor` (default) or a Ray one. ``state``: a folder for
    finished blocks (resumable; refused when it holds blocks of other inputs or settings;
    ``compact_blocks``: see :class:`BlockState`), or None. Returns the lists and counts
    ``{"blocks", "resumed", "computed"}``.
    """
    if block < 1 or (block > BLOCK_ROWS and block % BLOCK_ROWS) or (block > BLOCK_COLS and block % BLOCK_COLS):
        raise ValueError(f"block {block}: must be a multiple of the kNN tile ({BLOCK_ROWS}) or smaller than it")
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"dimension mismatch: {x.shape[1]} vs {y.shape[1]}")
    tile = min(block, BLOCK_ROWS)
    sx, sy = BlockSide(x, block), BlockSide(y, block)
    merged = Merged(sx.n, sy.n, k, block)
    grid = [(i, j) for i in range(len(sx)) for j in range(len(sy))]
    done: set[tuple[int, int]] = set()
    store = None
    if state is not None and grid:
        store = BlockState(state, {"source vectors": sx.fingerprint(), "target vectors": sy.fingerprint()},
                           {"format": _VERSION, "k": k, "block": block, "tile": tile, "rows": [sx.n, sy.n],
                            "dim": sx.dim}, compact_blocks)
        done = store.load(merged, set(grid))
    todo = [key for key in grid if key not in done]
    jobs = ((key, (sx.spec(key[0]), sy.spec(key[1]), sx.start(key[0]), sy.start(key[1]), k, tile)) for key in todo)
    executor = executor or LocalExecutor()
    with progress_bar(progress, total=len(grid), initial=len(done), desc="kNN blocks", unit="block") as bar:
        for key, result in executor.run(jobs):
            merged.add(*key, result)
            done.add(key)
            if store is not None:
                store.save(*key, result)
                store.compact(merged, done)
            bar.update(1)
    return merged.knn(), {"blocks": len(grid), "resumed": len(grid) - len(todo), "computed": len(todo)}


class BlockScorer(Scorer):
    """A :class:`~bisent.mining.scoring.Scorer` whose exact kNN runs as a grid of blocks (see the module docstring).

    ``executor``: where jobs run (default: this process); ``state``: folder of
    finished blocks (a rerun resumes); ``block``: rows a side of a job.
    ``counts_`` holds the last run's block counts.
    """

    def __init__(self, kind: str = "ratio", k: int = 4, *, block: int = BLOCK, executor=None, state=None):
        super().__init__(kind, k, knn_method="exact")
        self.block, self.executor, self.state = block, executor, state
        self.counts_: dict = {}

    def score(self, sources, *, progress: bool | None = None) -> Candidates:
        knn, self.counts_ = knn_blocks(sources, self.targets_, self.k, block=self.block, executor=self.executor,
                                       state=self.state, progress=progress)
        return self.candidates(knn)
