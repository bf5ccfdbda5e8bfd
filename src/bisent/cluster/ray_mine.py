"""Mining on Ray: the block jobs of :mod:`bisent.mining.blocks` as Ray tasks (``bisent mine --ray``).

:class:`RayExecutor` submits one task per (source block, target block), a
bounded number at a time, each asking for ``threads`` CPUs, and yields results
as they finish; a task whose worker dies is rerun by Ray (``max_retries``), and
the driver writes each finished block to the state folder, so a killed driver
resumes too. Merging, margins and retrieval run in the driver on the merged
lists, as in ``bisent mine`` without Ray, hence the same output bytes. The
session: :func:`bisent.cluster.ray_session.ray_session`.

Vectors: in-memory arrays are put in Ray's object store once per block; rows of
a vectors folder are read by the workers themselves (on a cluster the folder
must be on storage every node sees, at the same path).
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator

import numpy as np

from ..mining.blocks import Job, knn_block
from .ray_session import import_ray, ray_result


class RayExecutor:
    """Runs block jobs as Ray tasks of ``threads`` CPUs each, at most ``window`` in flight.

    ``max_retries``: reruns of a task whose worker process died. ``block_fn``: the
    job (default :func:`~bisent.mining.blocks.knn_block`; tests wrap it to kill a worker).
    """

    def __init__(self, *, threads: int = 1, max_retries: int = 3, window: int | None = None,
                 block_fn: Callable = knn_block):
        self.threads, self.max_retries, self.window, self.block_fn = threads, max_retries, window, block_fn

    def run(self, jobs: Iterable[Job]) -> Iterator[tuple[tuple[int, int], tuple]]:
        ray = import_ray()
        task = ray.remote(num_cpus=self.threads, max_retries=self.max_retries)(self.block_fn)
        window = self.window or 2 * max(1, int(ray.cluster_resources().get("CPU", 1)) // self.threads)
        refs: dict[int, object] = {}                          # id(array spec) -> its ObjectRef, put once
        keep = []                                             # the specs themselves, so their ids stay unique

        def put(spec):
            if not isinstance(spec, np.ndarray):
                return spec
            if id(spec) not in refs:
                refs[id(spec)] = ray.put(spec)
                keep.append(spec)
            return refs[id(spec)]

        pending: dict[object, tuple[int, int]] = {}
        jobs = iter(jobs)
        while True:
            for key, (xs, ys, *rest) in jobs:
                pending[task.remote(put(xs), put(ys), *rest)] = key
                if len(pending) >= window:
                    break
            if not pending:
                return
            [ready], _ = ray.wait(list(pending), num_returns=1)
            key = pending.pop(ready)
            yield key, ray_result(ray, ready, f"kNN block {key}", self.max_retries)

