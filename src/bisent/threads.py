"""How many CPU threads bisent's own pools use, from the usual environment variables.

Order: ``BISENT_THREADS`` (bisent only), then ``OMP_NUM_THREADS``,
``MKL_NUM_THREADS``, ``OPENBLAS_NUM_THREADS`` (what every OpenMP/BLAS program
honours), then the CPUs this process may run on. Commands with ``--threads``
(``train``, ``train-scorer``) take that first. bisent reads these variables
and leaves the caller's environment as it was (the parallel teacher,
:func:`bisent.training.teacher.fill_cache`, sets them to 1 only while it
spawns its workers, then puts them back).
"""

from __future__ import annotations

import os

from .errors import BisentError

VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def cpu_count() -> int:
    """CPUs this process may run on (its affinity mask where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:
        return os.cpu_count() or 1


def default_threads(fallback: int | None = None) -> int:
    """The thread count from the environment (see the module docstring); ``fallback`` (default: the CPUs) else."""
    raw = os.environ.get("BISENT_THREADS", "").strip()
    if raw:
        if not raw.isdigit() or int(raw) < 1:
            raise BisentError(f"BISENT_THREADS={raw!r}: expected a positive whole number of threads")
        return int(raw)
    for name in VARIABLES:
        first = os.environ.get(name, "").split(",")[0].strip()  # OpenMP allows a nested list "4,2"
        if first.isdigit() and int(first) >= 1:
            return int(first)
    return fallback if fallback is not None else cpu_count()
