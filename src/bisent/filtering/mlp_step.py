"""The ``mlp`` filter step: Kim et al. (2019)'s MLP similarity q(a, b) as an embedding step.

    - {type: mlp, model: scorers/en-de-worst60, accept: {min: 0.5}}

It embeds both sides like every embedding step (:class:`.embedding.EmbeddingStep`,
with the encoder the scorer was trained on, checked by id) and scores the
aligned rows with the trained :class:`.mlp.MLPScorer` instead of a cosine.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import BisentError
from ..langcodes import same_language
from .embedding import EmbeddingStep
from .mlp import MLPScorer
from .records import Pair
from .steps import register_step


@register_step("mlp")
class MLPStep(EmbeddingStep):
    """q(a, b) of a trained MLP scorer (``model``: its directory), with the encoder it was trained on."""

    def __init__(self, *, name: str | None = None, src_lang: str, tgt_lang: str, model: str,
                 batch_size: int | None = None):
        scorer = MLPScorer.load(model)
        langs = scorer.meta.get("languages") or {}
        trained = (langs.get("src"), langs.get("tgt"))
        if None not in trained and not (same_language(trained[0], src_lang) and same_language(trained[1], tgt_lang)):
            raise ValueError(f"scorer {model} was trained for {trained[0]}-{trained[1]}, not {src_lang}-{tgt_lang}")
        try:
            super().__init__(name=name, src_lang=src_lang, tgt_lang=tgt_lang, encoder=scorer.encoder_name,
                             batch_size=batch_size)
        except ValueError:
            raise ValueError(f"scorer {model} was trained with encoder {scorer.encoder_name!r}, which is neither "
                             f"registered nor a model directory here") from None
        self.scorer = scorer
        self.model_dir = str(model)

    def check_encoder(self, encoder) -> None:
        if encoder.id != self.scorer.encoder_id:
            raise BisentError(f"{self.model_dir}: trained on encoder {self.scorer.encoder_name} with id "
                              f"{self.scorer.encoder_id}, but that encoder now has id {encoder.id}; retrain the scorer")

    def score_vectors(self, x: np.ndarray, y: np.ndarray, pairs: Sequence[Pair]) -> np.ndarray:
        """q(a, b) (n,) float64 of aligned rows x (n, d), y (n, d)."""
        return self.scorer.score(x, y)
