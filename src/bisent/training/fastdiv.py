"""A divergence model trained on the input itself, once: ``bisent filter --train-divergence DIR``.

The word-alignment BiLSTM of the ``divergence`` step (and ``bisent repair``) needs a trained model. This
module trains one with the ``divergence-fast`` recipe on the pairs a first pass of the recipe keeps (the
user's own bitext: the synthetic negatives of the objective need no labels; the first pass keeps the noise
the rules and the encoder find out of the positives), caches it in ``DIR`` (a later run with the same
``DIR`` uses it as it is), and adds a divergence step to the recipe, before its last step::

    - {name: divergence, type: divergence, model: DIR, min_share: 0.8}

A pair is then rejected (reason ``divergence``) when less than ``min_share`` of its words are found parallel.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Sequence

from ..errors import BisentError
from ..filtering.records import Pair

#: the training recipe (src/bisent/recipes/divergence-fast.yaml)
RECIPE = "divergence-fast"
#: the share of a pair's words that must be parallel (the divergence step's default)
MIN_SHARE = 0.8


def has_model(model_dir) -> bool:
    """Whether ``model_dir`` holds a trained divergence model (its config and weights)."""
    d = Path(model_dir)
    return (d / "config.json").is_file() and (d / "model.safetensors").is_file()


def model_dir_paths(model_dir) -> dict:
    """``--train-divergence DIR`` for the path guard (:mod:`bisent.paths`): a model it reads, or, when DIR holds
    none, the folder training writes (checked as bisent's own: a user's folder of other files is refused before
    any work)."""
    if not model_dir:
        return {}
    if has_model(model_dir):
        return {"reads": {"--train-divergence model": model_dir}}
    return {"states": {"--train-divergence folder (it holds no model, so one would be trained there)": model_dir}}


def check_model_dir(model_dir) -> None:
    """Before any work: ``model_dir`` holds a model, or training may write one there (a new or empty folder, or
    one bisent made); a user's folder of other files is a one-line error now, not after the first pass."""
    if not has_model(model_dir):
        from ..io import check_state_dir

        check_state_dir(model_dir, "--train-divergence folder (it holds no model, so one would be trained there)")


def ensure_model(model_dir, pairs: Sequence[Pair], src_lang: str, tgt_lang: str, *, recipe: str = RECIPE,
                 max_minutes: float | None = None, progress: bool | None = None) -> bool:
    """Train the model on ``pairs`` into ``model_dir`` unless it holds one; True when it trained."""
    if has_model(model_dir):
        return False
    from ..recipes import resolve
    from ..training.data import Bitext
    from ..training.loop import train
    from ..training.recipe import load_recipe

    pairs = [(s, t) for s, t in pairs if s.strip() and t.strip()]
    if len(pairs) < 10:
        raise BisentError(f"--train-divergence: only {len(pairs)} pairs to train on (need at least 10)")
    train(load_recipe(resolve(recipe)), [Bitext(src_lang, tgt_lang, pairs, source="<input>")], out_dir=model_dir,
          max_minutes=max_minutes, progress=progress)
    if not has_model(model_dir):
        raise BisentError(f"{model_dir}: training wrote no model")
    return True


def with_divergence(config: Any, model_dir, *, min_share: float = MIN_SHARE) -> Any:
    """A copy of ``config`` (plain data: a list of steps or ``{steps, select}``) with the divergence step of
    ``model_dir`` before its last step (so the last step still gives kept pairs their score)."""
    data = copy.deepcopy(config)
    steps = data.get("steps") if isinstance(data, dict) else data
    if not isinstance(steps, list) or not steps:
        raise BisentError("--train-divergence: the recipe has no list of steps")
    names = {s.get("name", s.get("type")) for s in steps if isinstance(s, dict)}
    if "divergence" in names:
        raise BisentError("--train-divergence: the recipe already has a step named 'divergence'")
    steps.insert(len(steps) - 1, {"name": "divergence", "type": "divergence", "model": str(model_dir),
                                  "min_share": min_share})
    return data
