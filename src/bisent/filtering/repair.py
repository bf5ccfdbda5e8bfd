"""Pipeline steps of the divergence model: ``repair`` cuts pairs back to their parallel core before later
steps score them; ``divergence`` scores a pair by the share of its words the model finds parallel.

    - {type: repair, model: models/div-en-de}                  # section 3.2, N = 20, tau = 1; by default only a
                                                               # whole glued sentence is cut (sentences_only,
                                                               # one_side, match_ends: false each allows more)
    - {type: divergence, model: models/div-en-de, accept: {min: 0.8}}

A step that defines ``rewrite(pair)`` hands the pipeline a new pair for the
steps after it; the kept output carries the repaired text.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .params import check_bool, check_choice, check_number
from .records import Pair
from .steps import Step, register_step


def _model(path: str):
    from ..models.divergence import load_model

    return load_model(path)


@register_step("repair")
class RepairStep(Step):
    """Section 3.2 repair; the value is the number of words cut (0: kept as is). Accepts every pair.

    Unlike `bisent repair`, the step cuts by default only where a sentence ends, on one side, and when both
    kept sides then end alike (:data:`bisent.divergence.repair.STEP_DEFAULTS`): a truncated translation cut back to
    its translated part would pass the length-ratio rule and rank high, and is not a clean pair.
    """

    batch_size = 256

    def __init__(self, *, model: str, n_best: int = 20, tau: int | None = None, rerank: str = "align",
                 min_gain: float = 0.0, min_word_gain: float | None = None, boundary_cost: float | None = None,
                 sentences_only: bool | None = None, one_side: bool | None = None, match_ends: bool | None = None,
                 name: str | None = None):
        super().__init__(name=name)
        from ..divergence.repair import BOUNDARY_COST, MIN_WORD_GAIN, STEP_DEFAULTS, TAU

        self.n_best = int(check_number("n_best", n_best, low=1, integer=True))
        self.tau = int(check_number("tau", TAU if tau is None else tau, low=0, integer=True))
        self.rerank = check_choice("rerank", rerank, ("align", "sim"))
        self.min_gain = check_number("min_gain", min_gain, low=0)
        self.min_word_gain = check_number("min_word_gain", MIN_WORD_GAIN if min_word_gain is None else min_word_gain,
                                          low=0)
        self.boundary_cost = check_number("boundary_cost", BOUNDARY_COST if boundary_cost is None else boundary_cost,
                                          low=0)
        given = {"sentences_only": sentences_only, "one_side": one_side, "match_ends": match_ends}
        self.shape = {k: STEP_DEFAULTS[k] if v is None else check_bool(k, v) for k, v in given.items()}
        self.config = {"model": str(model), "n_best": self.n_best, "tau": self.tau, "rerank": self.rerank,
                       "min_gain": self.min_gain, "min_word_gain": self.min_word_gain,
                       "boundary_cost": self.boundary_cost, **self.shape}
        self.model = _model(model)
        self.fixed: dict[Pair, Pair] = {}

    def score_batch(self, pairs: Sequence[Pair]) -> np.ndarray:
        from ..divergence.repair import repair_pair

        if len(self.fixed) > 200_000:                                    # repairs of earlier chunks, already applied
            self.fixed.clear()
        out = np.zeros(len(pairs))
        for k, (src, tgt) in enumerate(pairs):
            r = repair_pair(self.model, src, tgt, n_best=self.n_best, tau=self.tau, rerank=self.rerank,
                            min_gain=self.min_gain, min_word_gain=self.min_word_gain,
                            boundary_cost=self.boundary_cost, **self.shape)
            if r.status == "cut":
                self.fixed[(src, tgt)] = (r.src, r.tgt)
                out[k] = ((r.src_words - (r.src_span[1] - r.src_span[0] + 1))
                          + (r.tgt_words - (r.tgt_span[1] - r.tgt_span[0] + 1)))
        return out

    def accept(self, value) -> bool:
        return True

    def rewrite(self, pair: Pair) -> Pair:
        """The repaired pair (or the pair itself)."""
        return self.fixed.get(pair, pair)


@register_step("divergence")
class DivergenceStep(Step):
    """Share of the pair's words with a non-negative Eq. 2 score (0 for a pair that cannot be scored)."""

    batch_size = 256

    def __init__(self, *, model: str, min_share: float = 0.8, name: str | None = None):
        super().__init__(name=name)
        self.min_share = check_number("min_share", min_share, low=0, high=1)
        self.config = {"model": str(model), "min_share": self.min_share}
        self.model = _model(model)

    def score_batch(self, pairs: Sequence[Pair]) -> np.ndarray:
        from ..divergence.scores import parallel_share

        return np.array([parallel_share(self.model, s, t) for s, t in pairs])

    def accept(self, value) -> bool:
        return value >= self.min_share
