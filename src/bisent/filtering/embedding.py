"""Embedding scores as filter steps: cosine, CSLS and the margins of Artetxe & Schwenk (2019).

Each step embeds both sides of a batch with a bisent encoder (the persistent
embedding cache makes a second run cheap) and scores the aligned pairs::

    - {type: cosine, encoder: use-m3, accept: {min: 0.5}}
    - {type: csls, k: 4}
    - {name: margin, type: margin, kind: ratio, k: 4, background: sample, sample: 4000}

CSLS and the margins compare cos(x, y) with the mean cosine of the k nearest
neighbours of x among *background targets* and of y among *background
sources* (:class:`bisent.mining.scoring.Scorer` with ``fit(bg_tgt, sources=bg_src)``).
A fixed bitext has no comparable corpus, so the background is (``background:``):

- ``sample`` (default): a deterministic sample of ``sample`` distinct pairs of
  the input itself, drawn in a pre-pass over the file
  (:func:`bisent.filtering.pipeline.background_sample`); its two sides are the
  two background collections;
- ``batch``: each scored batch is its own background (Artetxe & Schwenk
  scored ParaCrawl in batches of 5M pairs); no pre-pass, but a pair's score
  depends on the batch it falls in;
- ``files``: ``background_src`` and ``background_tgt``, one sentence per line
  (a user-given reference set; the two need not be aligned).

Without ``accept:`` these steps reject nothing (NaN aside): they score, and the
selection or :func:`bisent.filtering.rank_scores` rank by the score.
"""

from __future__ import annotations

from typing import Any, ClassVar, Sequence

import numpy as np

from ..encoders import DEFAULT_ENCODER, REGISTRY, get_encoder, is_encoder
from ..io import check_readable
from ..mining.scoring import MARGINS, Scorer, rowwise_cosine
from . import vectors
from .params import check_choice, check_number
from .pipeline import background_sample
from .records import Pair
from .steps import Step, register_step

BACKGROUNDS = ("sample", "batch", "files")
#: default background sample size: large enough for stable neighbourhood means, small enough
#: that the kNN search (batch × sample, both sides) stays cheaper than embedding.
DEFAULT_SAMPLE = 4000


def encode_pairs(encoder, pairs: Sequence[Pair], src_lang: str, tgt_lang: str) -> tuple[np.ndarray, np.ndarray]:
    """Embed both sides: ``(x (n, d), y (n, d))`` float32 unit rows."""
    x = vectors.encode(encoder, [s for s, _ in pairs], src_lang)
    y = vectors.encode(encoder, [t for _, t in pairs], tgt_lang)
    return x, y


def _read_sentences(path, what: str) -> list[str]:
    """The usable lines of a one-sentence-per-line file (empty and undecodable lines skipped)."""
    from ..io import read_lines

    texts = [line.text for line in read_lines(path, on_bad="keep") if line.problem is None]
    if not texts:
        raise ValueError(f"parameter '{what}': {path} holds no usable sentence")
    return texts


def check_encoder_name(encoder: Any) -> str:
    """``encoder`` if it names a registered encoder or an existing model directory (nothing is loaded)."""
    if not isinstance(encoder, str) or not is_encoder(encoder):
        raise ValueError(f"parameter 'encoder' must be one of {', '.join(REGISTRY)} or a model directory, "
                         f"got {encoder!r}")
    return encoder


class EmbeddingStep(Step):
    """Base of the embedding steps: the encoder, both languages, and (for CSLS and margins) a background."""

    #: the :data:`bisent.mining.scoring.KINDS` score this step computes (set by subclasses / ``kind``)
    score_kind: ClassVar[str] = "cosine"
    needs_background: ClassVar[bool] = False

    def __init__(self, *, name: str | None = None, src_lang: str, tgt_lang: str, encoder: str = DEFAULT_ENCODER,
                 k: int = 4, background: str | None = None, sample: int = DEFAULT_SAMPLE,
                 background_src: str | None = None, background_tgt: str | None = None,
                 batch_size: int | None = None):
        super().__init__(name=name)
        check_encoder_name(encoder)
        self.src_lang, self.tgt_lang = src_lang, tgt_lang
        self.encoder_name = encoder
        self.k = check_number("k", k, low=1, integer=True)
        self.sample = check_number("sample", sample, low=1, integer=True)
        if batch_size is not None:
            self.batch_size = check_number("batch_size", batch_size, low=1, integer=True)
        if background is None:
            background = "files" if (background_src or background_tgt) else "sample"
        self.background = check_choice("background", background, BACKGROUNDS)
        if self.background == "files":
            if not (background_src and background_tgt):
                raise ValueError("background: files needs both 'background_src' and 'background_tgt'")
            check_readable(background_src)
            check_readable(background_tgt)
        elif background_src or background_tgt:
            raise ValueError(f"'background_src'/'background_tgt' need background: files, not {background}")
        self.background_files = (background_src, background_tgt)
        self._sample_pairs: list[Pair] | None = None
        self._scorer: Scorer | None = None
        self._encoder = None

    @property
    def encoder(self):
        """The encoder, loaded on first use (so building a pipeline stays cheap)."""
        if self._encoder is None:
            enc = get_encoder(self.encoder_name)
            for lang in (self.src_lang, self.tgt_lang):
                enc.check_lang(lang)
            self.check_encoder(enc)
            self._encoder = enc
        return self._encoder

    def check_encoder(self, encoder) -> None:
        """Refuse an encoder the step cannot use (a subclass hook: the MLP checks its training encoder)."""

    # --- the background ---

    def reset(self) -> None:
        """Forget the input's sample (a new input draws its own); a ``files`` background is kept."""
        if self.background == "sample":
            self._sample_pairs = None
            self._scorer = None

    def sample_size(self) -> int:
        return self.sample if self.needs_background and self.background == "sample" else 0

    def fit_sample(self, pairs: Sequence[Pair]) -> None:
        self._sample_pairs = list(pairs)
        self._scorer = None

    def _fit(self, bg_x: np.ndarray, bg_y: np.ndarray) -> Scorer:
        """A scorer with background sources ``bg_x`` (m, d) and targets ``bg_y`` (m', d)."""
        k = max(1, min(self.k, len(bg_x), len(bg_y)))
        return Scorer(self.score_kind, k).fit(bg_y, sources=bg_x)

    def scorer_for(self, x: np.ndarray, y: np.ndarray, pairs: Sequence[Pair]) -> Scorer:
        """The fitted scorer for a batch (its own background for ``batch``, else the shared one)."""
        if not self.needs_background:
            return Scorer(self.score_kind, self.k)
        if self.background == "batch":
            return self._fit(x, y)
        if self._scorer is None:
            if self.background == "files":
                src_file, tgt_file = self.background_files
                bg_x = self.encoder.encode(_read_sentences(src_file, "background_src"), self.src_lang, progress=False)
                bg_y = self.encoder.encode(_read_sentences(tgt_file, "background_tgt"), self.tgt_lang, progress=False)
            else:
                if self._sample_pairs is None:  # never prepared: sample the first batch
                    self._sample_pairs = background_sample(pairs, self.sample)
                bg_x, bg_y = encode_pairs(self.encoder, self._sample_pairs, self.src_lang, self.tgt_lang)
            self._scorer = self._fit(bg_x, bg_y)
        return self._scorer

    # --- scoring ---

    def score_vectors(self, x: np.ndarray, y: np.ndarray, pairs: Sequence[Pair]) -> np.ndarray:
        """Scores (n,) of aligned rows x (n, d), y (n, d)."""
        if not self.needs_background:
            return rowwise_cosine(x, y)
        return self.scorer_for(x, y, pairs).score_pairs(x, y)

    def score_batch(self, pairs: Sequence[Pair]) -> np.ndarray:
        if not pairs:
            return np.zeros(0, dtype=np.float64)
        x, y = encode_pairs(self.encoder, pairs, self.src_lang, self.tgt_lang)
        return np.asarray(self.score_vectors(x, y, pairs), dtype=np.float64)

    def accept(self, value: Any) -> bool:
        return value == value  # only NaN fails; use `accept:` for a threshold


@register_step("cosine")
class CosineStep(EmbeddingStep):
    """cos(x, y) of the two sides' embeddings (no background)."""

    score_kind = "cosine"

    def __init__(self, *, name: str | None = None, src_lang: str, tgt_lang: str, encoder: str = DEFAULT_ENCODER,
                 batch_size: int | None = None):
        super().__init__(name=name, src_lang=src_lang, tgt_lang=tgt_lang, encoder=encoder, batch_size=batch_size)


@register_step("csls")
class CSLSStep(EmbeddingStep):
    """CSLS(x, y) = 2 cos(x, y) − r_x − r_y, neighbourhoods in the background."""

    score_kind = "csls"
    needs_background = True


@register_step("margin")
class MarginStep(EmbeddingStep):
    """The margin of Artetxe & Schwenk (2019): ``kind`` ratio (default), distance or absolute."""

    needs_background = True

    def __init__(self, *, name: str | None = None, src_lang: str, tgt_lang: str, encoder: str = DEFAULT_ENCODER,
                 kind: str = "ratio", k: int = 4, background: str | None = None, sample: int = DEFAULT_SAMPLE,
                 background_src: str | None = None, background_tgt: str | None = None,
                 batch_size: int | None = None):
        self.score_kind = check_choice("kind", kind, MARGINS)
        super().__init__(name=name, src_lang=src_lang, tgt_lang=tgt_lang, encoder=encoder, k=k,
                         background=background, sample=sample, background_src=background_src,
                         background_tgt=background_tgt, batch_size=batch_size)
        if self.score_kind == "absolute":
            self.needs_background = False  # absolute = cosine: nothing to fit
