"""The recipe keys a model declares next to its code (``MODEL_CONFIGS`` in its module).

A model module (``bisent/models/<name>.py``) holds ``MODEL_CONFIGS = {architecture: ModelConfig(...)}``:
the ``model`` section of its recipes and the objective that trains it. The objective
(``bisent/training/objectives/<name>.py``) declares the other sections it reads as ``RECIPE_SECTIONS``,
and :mod:`bisent.training.recipe` merges both with the keys every run shares (tokenizer, data, optim, train).
Adding a model is its model file, its objective and its recipe; no central schema.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

#: a number: an int or a float
NUM = (int, float)


class Field(NamedTuple):
    """One recipe key: default value, accepted type(s), allowed choices, whether null is allowed."""

    default: Any
    type: type | tuple[type, ...]
    choices: tuple | None = None
    nullable: bool = False
    minimum: float | None = None


@dataclass(frozen=True)
class ModelConfig:
    """What a recipe of one architecture holds besides the shared sections.

    ``model``: the keys of its ``model`` section. ``objective``: the objective written into the recipe
    (``training/objectives/<objective>.py``); None: the objective module named after the architecture, and the
    recipe has no ``objective`` key. ``choices``: the objectives a recipe may name (the first is the default;
    empty: the objective is fixed). ``tokenizer``: the recipe has the ``tokenizer`` section and
    ``data.max_len`` (subword input; hashed and document input have neither). ``check``: cross-key rules of
    the model section, ``check(recipe, src)`` raising a one-line error naming ``src``.
    """

    model: dict[str, Field]
    objective: str | None = None
    choices: tuple[str, ...] = ()
    tokenizer: bool = True
    check: Callable[[dict, str], None] | None = None
