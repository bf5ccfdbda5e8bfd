"""What every job shares: the path check of its declared paths, notes on stderr, and output to standard output
through a temporary file."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Iterator


def check_paths(declaration: dict, values: dict) -> None:
    """Refuse, before any work, outputs that would destroy an input, collide or cannot be written
    (:mod:`bisent.paths`). ``declaration``: a job's ``PATHS``; ``values``: its arguments by name. Under the command
    line the errors name the options as the user wrote them (``--output``)."""
    from ..paths import PathSpec, _labels, check_command_paths, resolve

    check_command_paths(resolve(PathSpec(**declaration), values, _labels()))


def note(message: str) -> None:
    """One line for the user on standard error (``bisent: ...``), as the command line prints it."""
    print(message, file=sys.stderr, flush=True)


@contextlib.contextmanager
def stdout_via_temp(output, to_stdout: bool, prefix: str, name: str) -> Iterator[str]:
    """The path a job writes: ``output`` itself, or with ``to_stdout`` a file in a temporary folder whose bytes go
    to standard output once the job is done (a job that reads its output back, or thresholds it after the fact,
    cannot write to a pipe); the folder is removed either way."""
    if not to_stdout:
        yield str(output)
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        path = Path(tmp) / name
        yield str(path)
        with open(path, "rb") as f:
            shutil.copyfileobj(f, sys.stdout.buffer)
        sys.stdout.buffer.flush()


def fspaths(*values) -> list:
    """Paths as the command line gives them: ``str`` (``None`` stays ``None``), so that a Python caller's
    :class:`pathlib.Path` ends up in summaries and records as the same text."""
    return [None if v is None else os.fspath(v) for v in values]


def ray_session(ray_address: str | None, threads: int, workers: int | None):
    """The Ray session of a job run with ``ray_address`` (``local``, ``auto`` or a cluster's), else nothing."""
    if not ray_address:
        return contextlib.nullcontext()
    from ..cluster.ray_session import ray_session as session

    return session(ray_address, threads=threads, workers=workers)
