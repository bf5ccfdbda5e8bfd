"""Mining on Ray: the block jobs of :mod:`bisent.scale.blocks` as Ray tasks (``bisent mine --ray``).

:func:`ray_session` connects to a cluster (``ADDRESS`` or ``auto``) or starts a
local one (``local``): no dashboard (so no job API; Ray's own gRPC services
listen as Ray 2.60 decides, guarded by its token authentication, on by
default), logs in a fresh temp folder removed afterwards; every worker runs ``threads`` BLAS/OpenMP threads and each task asks
for that many CPUs. :class:`RayExecutor` submits one task per (source block,
target block), a bounded number at a time, and yields results as they finish; a
task whose worker dies is rerun by Ray (``max_retries``), and the driver writes
each finished block to the state folder, so a killed driver resumes too.
Merging, margins and retrieval run in the driver on the merged lists, as in
``bisent mine`` without Ray, hence the same output bytes.

Vectors: in-memory arrays are put in Ray's object store once per block; rows of
a vectors folder are read by the workers themselves (on a cluster the folder
must be on storage every node sees, at the same path).

Ray is imported only here, and only when used: without it, ``--ray`` says
``pip install bisent[ray]``.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import tempfile
from typing import Callable, Iterable, Iterator

import numpy as np

from ..errors import BisentError
from ..threads import VARIABLES
from .blocks import Job, knn_block


def import_ray():
    """The ``ray`` module, or a one-line error naming the extra to install."""
    try:
        import ray
    except ImportError:
        raise BisentError("--ray needs Ray: pip install bisent[ray]") from None
    return ray


def thread_env(threads: int) -> dict[str, str]:
    """Environment of every worker: ``threads`` BLAS/OpenMP threads and bisent's own pools."""
    return {**{name: str(threads) for name in VARIABLES}, "BISENT_THREADS": str(threads)}


@contextlib.contextmanager
def ray_session(address: str = "local", *, threads: int = 1, workers: int | None = None):
    """A Ray session for the ``with`` block: ``local`` starts one here (``workers`` × ``threads`` CPUs),
    ``auto`` or an address joins a running cluster. A session already open (e.g. by a test) is reused as is."""
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    env = {"env_vars": thread_env(threads)}
    tmp = None
    if address == "local":
        from ..threads import cpu_count

        tmp = tempfile.mkdtemp(prefix="bisent-ray-")
        cpus = (workers or max(1, cpu_count() // threads)) * threads
        ray.init(address="local", num_cpus=cpus, include_dashboard=False, _temp_dir=tmp, runtime_env=env,
                 logging_level=logging.WARNING)
    else:
        try:
            ray.init(address=address, runtime_env=env, logging_level=logging.WARNING)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise BisentError(f"--ray {address}: cannot connect ({str(e).splitlines()[0]})") from None
    try:
        yield ray
    finally:
        ray.shutdown()
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


class RayExecutor:
    """Runs block jobs as Ray tasks of ``threads`` CPUs each, at most ``window`` in flight.

    ``max_retries``: reruns of a task whose worker process died. ``block_fn``: the
    job (default :func:`~bisent.scale.blocks.knn_block`; tests wrap it to kill a worker).
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
            yield key, _result(ray, ready, key, self.max_retries)


def _result(ray, ref, key, retries: int):
    """A finished task's value; its failure as a one-line error (a BisentError raised in the task as itself)."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as e:
        if isinstance(getattr(e, "cause", None), BisentError):
            raise e.cause from None
        raise BisentError(f"kNN block {key} failed on a Ray worker: {str(e).strip().splitlines()[-1]}") from None
    except ray.exceptions.RayError as e:
        raise BisentError(f"kNN block {key}: {type(e).__name__} after {retries} retries "
                          f"(finished blocks are kept: rerun to resume)") from None
