"""One module per paper's training criterion; each sets up its own run with ``setup()``.

An objective is ``training/objectives/<name>.py`` (``recipe["objective"]``,
or the architecture's name for the seq2seq models) and provides::

    setup(recipe, bitexts, monos, dev, out_dir, *, state, device) -> Setup

which returns a :class:`Setup`: the data (:class:`bisent.training.data.Batches`,
one bucketed sampler for every objective), the model built from the
recipe's seed, the loss, the model as an Encoder for the dev figures, how to
write the model directory (:func:`bisent.models.modeldir.save`), and the
fingerprints a resumed run must find unchanged. ``state`` is the checkpoint's
JSON state when resuming (reload, don't retrain, a tokenizer:
:func:`.common.tokenizer_for`), else None. The loop
(:func:`bisent.training.loop.train`) does the rest: optimiser, steps,
logging, dev evaluation, checkpoints. Shared pieces:

- :mod:`.common`: the languages of the data, tokenizer train-or-reload;
- :mod:`.seq2seq`: the set-up of translation/autoencoding models (kim2019, artetxe2019);
- :mod:`.dual`: the set-up of dual encoders (guo2019, distill): language-pair
  streams, hard negatives, a loss that sums the objective's terms.

A new objective is one file, ``objectives/<name>.py``::

    def loss(model, batch) -> (scalar tensor, {name: float}):   # the paper's criterion on one batch
        ...
    def setup(recipe, bitexts, monos, dev, out_dir, *, state, device) -> Setup:
        specs = ...                                            # what to train on, from the recipe
        batches = Batches([(name, length_keys, weight), ...], collate, batch_size=..., seed=recipe["seed"],
                          bucket_batches=recipe["data"]["bucket_batches"])
        torch.manual_seed(recipe["seed"]); model = MyModel(**hp).to(device)
        return Setup(model=model, batches=batches, loss=loss, encoder=TorchDualEncoder(model, ...),
                     save_model=lambda d, step: modeldir.save(d, model.architecture, model.hp,
                                                              model.state_dict(), extra={"training": ...}),
                     data_hash=fingerprint(specs), dev=dev)

(or, for a dual encoder, ``return dual.setup(..., terms=[my_term(recipe["objectives"])])`` with a
term ``(sub-batch, x, y, x_hard, y_hard) -> (weighted scalar, log parts)``, as :mod:`.guo2019`).
Its recipe keys sit next to it: ``RECIPE_SECTIONS`` (section -> key -> :class:`bisent.models.keys.Field`,
the sections it reads besides ``model``) and, for rules across keys, ``check_recipe(recipe, raw, src)``.
The architecture's ``model`` section and the objective that trains it are the model module's
``MODEL_CONFIGS`` (:class:`bisent.models.keys.ModelConfig`; a new dual objective joins the dual models'
``choices``); :mod:`bisent.training.recipe` assembles both.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable


def get_objective(name: str) -> ModuleType:
    """The objective module ``training/objectives/<name>.py``."""
    return importlib.import_module(f"{__name__}.{name}")


@dataclass
class Setup:
    """What an objective's ``setup()`` hands the loop: everything that differs between model families.

    ``batches`` yields one batch per step (a list of sub-batches with ``.to(device)``)
    and has ``state_dict`` / ``load_state_dict`` / ``describe``; ``loss(model, batch)``
    returns ``(scalar, {name: float})``; ``save_model(out_dir, step)`` writes the
    model directory; ``fingerprints`` are artefacts a resumed run must find
    unchanged (the tokenizer's sha256); ``on_step(step)`` runs after each optimiser step
    and may return log fields; ``state()`` / ``load_state(tensors)`` carry the
    objective's own tensors through checkpoints (mined hard negatives).

    ``step(at)``, when given, is the objective's own optimisation step (0-based ``at``), returning
    ``(loss, {name: float})``: the loop then makes no optimisers and draws no batches (zhang2016: one L-BFGS
    iteration on the whole corpus; its optimiser's state rides in ``state``). ``dev_encoder()`` builds the
    encoder for the dev figures at the current weights, where ``encoder`` cannot follow the module.
    """

    model: Any                                   # torch.nn.Module
    batches: Any                                 # bisent.training.data.Batches
    loss: Callable[[Any, Any], tuple[Any, dict[str, float]]]
    encoder: Any                                 # bisent.encoders.base.Encoder over the model
    save_model: Callable[[Path, int], None]
    data_hash: str
    dev: list
    info: dict = field(default_factory=dict)
    fingerprints: dict[str, str] = field(default_factory=dict)
    tokenizer: Any = None
    on_step: Callable[[int], dict | None] | None = None
    state: Callable[[], dict] | None = None
    load_state: Callable[[dict], None] | None = None
    step: Callable[[int], tuple[float, dict[str, float]]] | None = None
    dev_encoder: Callable[[], Any] | None = None
