"""What every benchmark task shares: the anchors, result records (the metrics are :mod:`bisent.evaluate`)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterable

from ..encoders import get_encoder
from ..io import check_readable

#: Measured beside the encoder under test in every run, on the same items.
ANCHORS = ("use-m3", "me5-small")


def run_encoders(names: Iterable[str], anchors: bool = True) -> list:
    """The encoders of one run: those asked for, then the anchors (each once)."""
    wanted = list(dict.fromkeys(list(names) + (list(ANCHORS) if anchors else [])))
    return [get_encoder(n) for n in wanted]


def machine() -> dict:
    """The machine absolute figures were measured on."""
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version()}


def git_commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True, cwd=Path(__file__).parent).stdout.strip() or None
    except (OSError, subprocess.CalledProcessError):
        return None


def peak_rss_mb() -> float:
    """Peak resident set size of this process (VmHWM, reset by exec), in MiB."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    import resource
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def command_line() -> str:
    """How this process was started, as a user would type it: ``bisent bench ...`` or
    ``python benchmarks/knn.py ...`` (a script's path relative to the working folder)."""
    if not sys.argv:
        return ""
    prog = sys.argv[0]
    if Path(prog).name == "bisent":
        return " ".join(["bisent"] + sys.argv[1:])
    if prog and os.path.isabs(prog):
        prog = os.path.relpath(prog)
    return " ".join(["python", prog] + sys.argv[1:])


def exact_anchor(x, y, k: int, cache=None):
    """The exact kNN both ways of ``x`` and ``y`` and its wall and CPU seconds: ``(KNN, seconds, cpu_seconds,
    reused)``. ``cache``: an .npz keeping it between runs on the same rows (its timing is the run that made it)."""
    import numpy as np

    from ..io import atomic_write
    from ..mining.index import KNN, knn_both

    saved = Path(cache) if cache else None
    if saved and saved.is_file():                     # the anchor of an earlier run on the same rows
        with np.load(saved) as z:
            return (KNN(z["fwd_sim"], z["fwd_idx"], z["bwd_sim"], z["bwd_idx"]), float(z["seconds"]),
                    float(z["cpu_seconds"]), True)
    t, c = time.perf_counter(), time.process_time()
    exact = knn_both(x, y, k, progress=False)
    t_exact, c_exact = time.perf_counter() - t, time.process_time() - c
    if saved:
        with atomic_write(saved, "wb") as f:
            np.savez(f, fwd_sim=exact.fwd_sim, fwd_idx=exact.fwd_idx, bwd_sim=exact.bwd_sim,
                     bwd_idx=exact.bwd_idx, seconds=t_exact, cpu_seconds=c_exact)
    return exact, t_exact, c_exact, False


def first_rows(sh, n: int, dtype=None):
    """The first ``n`` rows of a vectors folder (:class:`~bisent.encoders.shards.Shards`) as one array (n, d), in its
    stored dtype (fp16) or as ``dtype``; read block by block, stopping once ``n`` rows are in."""
    import numpy as np

    from ..encoders.shards import iter_blocks

    out = []
    for s, b in iter_blocks(sh, 65536):
        out.append(np.asarray(b[: max(0, n - s)], dtype=dtype))
        if s + len(b) >= n:
            break
    return np.concatenate(out)


def add_results_option(parser) -> None:
    """``--results DIR`` of every benchmark script, as ``bisent bench --results``."""
    parser.add_argument("--results", default="benchmarks/results",
                        help="folder whose TASK.jsonl each result is appended to ('' to not record)")


class Recorder:
    """THE result recorder of every benchmark (``bisent bench TASK`` and ``python benchmarks/X.py``):
    prints each result as one JSON line and appends it, with the command, commit, machine and time,
    to ``results_dir/TASK.jsonl``."""

    def __init__(self, task: str, results_dir=None, echo=print, options: dict | None = None):
        self.task = task
        self.path = Path(results_dir) / f"{task}.jsonl" if results_dir else None
        self.echo = echo
        self.context = {"command": command_line(),
                        "commit": git_commit(), "machine": machine(),
                        "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "options": options or {}}
        self.records: list[dict] = []

    def __call__(self, record: dict) -> dict:
        record = {"task": self.task, **record}
        self.records.append(record)
        self.echo(json.dumps(record))
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps({**record, **self.context}) + "\n")
        return record


__all__ = ["ANCHORS", "Recorder", "add_results_option", "command_line", "run_encoders", "peak_rss_mb",
           "machine", "git_commit", "check_readable", "exact_anchor"]
