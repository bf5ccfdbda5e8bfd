"""The compressed search's query shards as Ray tasks (``bisent mine --ray ADDRESS --index compressed``).

The driver trains each side's index once (:mod:`bisent.mining.plan`, saved in its state folder as without Ray);
:class:`RaySearch` then puts the index (``faiss.serialize_index``: bytes, not pickle), the projection and the
indexed side in Ray's object store once per direction and submits one task per shard of
:data:`bisent.mining.compressed.BLOCK` query rows — the shards :func:`~bisent.mining.compressed.search_side`
walks on one machine, so every task searches the same rows in the same batches. Results are placed by their
rows, so the merge does not depend on the order tasks finish: the lists, hence the mined pairs, are one
machine's. A task whose worker dies is rerun by Ray (``max_retries``). A worker keeps the index it deserialised
for the next shard of the same search, so each worker deserialises each direction's index once.

Vectors: rows of a vectors folder are read by the workers themselves from their memory-mapped shards (on a
cluster the folder must be on storage every node sees, at the same path); in-memory arrays travel through the
object store.
"""

from __future__ import annotations

import uuid
from typing import Callable

import numpy as np

from .ray_session import import_ray, ray_result


def _rows_spec(v):
    """What a worker needs to read ``v``: ``("folder", path, rows or None)`` or the fp16/float32 array itself."""
    from ..encoders.shards import Shards, flatten_rows
    from ..mining.compressed import BLOCK

    base, rows = flatten_rows(v)
    if isinstance(base, Shards):
        return ("folder", str(base.folder), rows)
    out = None
    for s, b in (((0, base),) if isinstance(base, np.ndarray) and rows is None else _blocks(v, BLOCK)):
        if out is None:
            out = np.empty(v.shape, dtype=b.dtype)
        out[s:s + len(b)] = b
    return out


def _blocks(v, rows):
    from ..encoders.shards import iter_blocks

    return iter_blocks(v, rows)


def _open(spec):
    """The vectors a :func:`_rows_spec` names (a RowView of a vectors folder, or the array)."""
    if isinstance(spec, tuple) and spec and spec[0] == "folder":
        from ..encoders.shards import RowView, Shards

        shards = Shards(spec[1])
        return shards if spec[2] is None else RowView(shards, spec[2])
    return spec


#: the index this worker process last deserialised: (key, index). A worker runs many shards of one direction, so it
#: deserialises each index once (at 100M rows a side a PQ index is ~4 GB: seconds of copying a task, and memory)
_LAST_INDEX: list = [None, None]


def _index(index_bytes: np.ndarray, key: str | None):
    import faiss

    if key is not None and _LAST_INDEX[0] == key:
        return _LAST_INDEX[1]
    _LAST_INDEX[:] = [None, None]                     # the previous direction's index freed first
    index = faiss.deserialize_index(index_bytes)
    if key is not None:
        _LAST_INDEX[:] = [key, index]
    return index


def search_shard(index_bytes: np.ndarray, p: np.ndarray, q_spec, start: int, stop: int, db_spec, k: int,
                 extra: int, nprobe: int, key: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One task: query rows ``start:stop`` of ``q_spec`` searched in the deserialised index, re-ranked exactly
    from ``db_spec``'s rows: (sim (r, k), idx (r, k)). ``key``: names the index (one per search), so a worker
    deserialises it once for all the shards it runs."""
    from ..encoders.shards import RowView
    from ..mining.compressed import Rows, search_side

    index = _index(index_bytes, key)
    queries = _open(q_spec)
    part = queries[start:stop] if isinstance(queries, np.ndarray) else RowView(queries, np.arange(start, stop))
    return search_side(index, part, p, Rows(_open(db_spec)), k, extra, nprobe)


class RaySearch:
    """A search executor for :class:`bisent.mining.plan.CompressedPlan`: query shards as Ray tasks of ``threads``
    CPUs, ``max_retries`` reruns of a task whose worker died, ``shard_rows`` query rows a task (default
    :data:`bisent.mining.compressed.BLOCK`, the batches of one machine's search). ``shard_fn``: the task (tests
    wrap it)."""

    def __init__(self, *, threads: int = 1, max_retries: int = 3, shard_rows: int | None = None,
                 shard_fn: Callable = search_shard):
        self.threads, self.max_retries, self.shard_fn = threads, max_retries, shard_fn
        self.shard_rows = shard_rows

    def __call__(self, index, queries, p: np.ndarray, db, k: int, extra: int,
                 nprobe: int) -> tuple[np.ndarray, np.ndarray]:
        import faiss

        from ..mining.compressed import BLOCK

        step = self.shard_rows or BLOCK
        ray = import_ray()
        task = ray.remote(num_cpus=self.threads, max_retries=self.max_retries)(self.shard_fn)
        blob, p_ref = ray.put(faiss.serialize_index(index)), ray.put(p)
        q_ref, db_ref = ray.put(_rows_spec(queries)), ray.put(_rows_spec(db))
        n, kk = len(queries), min(k, index.ntotal)
        sim = np.empty((n, kk), dtype=np.float32)
        idx = np.empty((n, kk), dtype=np.int64)
        key = uuid.uuid4().hex
        pending = {task.remote(blob, p_ref, q_ref, s, min(n, s + step), db_ref, k, extra, nprobe, key): s
                   for s in range(0, n, step)}
        while pending:
            [ready], _ = ray.wait(list(pending), num_returns=1)
            s = pending.pop(ready)
            sim[s:s + step], idx[s:s + step] = ray_result(ray, ready, f"compressed search of rows {s}..",
                                                            self.max_retries)
        return sim, idx
