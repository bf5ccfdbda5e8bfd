"""A Ray session for bisent: Ray imported lazily, a local Ray started safely, task failures as one-line errors.

:func:`ray_session` connects to a cluster (``ADDRESS`` or ``auto``) or starts a
local one (``local``): no dashboard (so no job API; Ray's own gRPC services
listen as Ray 2.60 decides, guarded by its token authentication, on by
default), logs in a fresh temp folder removed afterwards; every worker runs
``threads`` BLAS/OpenMP threads. Without Ray installed, the first use says
``pip install bisent[ray]``.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import tempfile

from ..errors import BisentError
from ..threads import VARIABLES


def import_ray():
    """The ``ray`` module, or a one-line error naming the extra to install."""
    try:
        import ray
    except ImportError:
        raise BisentError("--ray needs Ray: pip install bisent[ray]") from None
    return ray


def thread_env(threads: int) -> dict[str, str]:
    """Environment of every worker: ``threads`` BLAS/OpenMP threads (FAISS's too), bisent's own pools and numba's
    (the compressed search's exact re-ranking; numba's default is every CPU of the node)."""
    return {**{name: str(threads) for name in VARIABLES}, "BISENT_THREADS": str(threads),
            "NUMBA_NUM_THREADS": str(threads)}


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


def ray_result(ray, ref, what: str, retries: int):
    """A finished task's value; its failure as a one-line error (a BisentError raised in the task as itself)."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as e:
        if isinstance(getattr(e, "cause", None), BisentError):
            raise e.cause from None
        raise BisentError(f"{what} failed on a Ray worker: {str(e).strip().splitlines()[-1]}") from None
    except ray.exceptions.RayError as e:
        raise BisentError(f"{what}: {type(e).__name__} after {retries} retries "
                          f"(finished work is kept: rerun to resume)") from None
