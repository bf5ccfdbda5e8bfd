"""``bisent train --prepare-only``: the set-up that every run of a recipe on the same data shares, done once.

The runs started afterwards (other seeds of the same recipe) find the teacher's rows and the mined hard
negatives in their caches instead of computing them side by side; :func:`bisent.training.loop.train` then
runs the steps.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from ..errors import BisentError
from ..io import atomic_write
from ..models.modeldir import WEIGHTS_FILE
from ..state import StateDir
from . import checkpoint
from .data import Bitext, Monotext
from .loop import pick_device
from .objectives import get_objective

#: what :func:`prepare` writes: the set-up's report (teacher rows, hard negatives, seconds)
PREPARED_FILE = "prepared.json"


def prepare(recipe: dict, bitexts: list[Bitext], monos: list[Monotext] | None = None,
            dev: list[Bitext] | None = None, out_dir=None) -> dict:
    """Do the set-up that every run of ``recipe`` on this data shares, write ``out_dir/prepared.json``, and stop.

    For distillation that is the teacher's rows of every training sentence (into the persistent embedding
    cache, in ``objectives.teacher_workers`` processes) and, with ``hard_source: teacher``, the mined hard
    negatives (into their cache, :func:`.objectives.dual.hard_cache_file`). Runs started afterwards, with any
    ``seed``, read both back instead of computing them side by side: two seeds started together on a cold
    cache each embedded the same sentences (``make -j2 student-general`` runs this once before its seeds).
    ``out_dir`` is a folder of its own (not a run's); the report is also returned.
    """
    objective = recipe.get("objective") or recipe["architecture"]
    if getattr(get_objective(objective), "OWN_STEP", False):
        raise BisentError(f"--prepare-only: the {objective} objective prepares its own data (word vectors) and "
                          "has no shared set-up to prepare")
    out_dir = Path(out_dir)
    if checkpoint.exists(out_dir) or (out_dir / WEIGHTS_FILE).exists():
        raise BisentError(f"{out_dir}: holds a training run; --prepare-only writes {PREPARED_FILE} into a "
                          "folder of its own")
    StateDir(out_dir, "train").adopt()   # a user's folder holding files is refused, never written into
    t0 = time.monotonic()
    run = get_objective(objective).setup(recipe, list(bitexts), list(monos or []), list(dev or []), out_dir,
                                         state=None, device=pick_device(recipe["train"]))
    report = {"event": "prepared", "objective": objective, "seconds": round(time.monotonic() - t0, 1), **run.info}
    with atomic_write(out_dir / PREPARED_FILE) as f:
        json.dump(report, f, ensure_ascii=False, indent=1)
        f.write("\n")
    return report
