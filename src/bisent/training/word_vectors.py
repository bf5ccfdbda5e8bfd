"""Cross-lingual word vectors from a multilingual sentence encoder, to initialise word-level models.

The divergence paper (section 3) and Zhang 2016 start their word embeddings
from cross-lingual vectors (fastText + MUSE there). No such vectors come from
the package registries, but a multilingual encoder such as use-m3 maps a
single word of any language it covers into one shared space. This module
embeds each vocabulary word alone, projects the words of *all* languages with
one joint PCA (so the space stays shared) to the model's ``embed_dim``, scales
them to unit variance per coordinate (what ``nn.Embedding`` starts from) and
writes one fastText-style text file per language (``count dim`` header, then
``word v1 ... vD``), the format ``model.word_vectors`` reads.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from ..errors import BisentError


def corpus_vocab(sentences: Iterable[Sequence[str]], size: int, min_count: int, lowercase: bool) -> list[str]:
    """The ``size`` most frequent words seen at least ``min_count`` times, most frequent first
    (ties in first-seen order, as :func:`bisent.training.objectives.divergence.build_vocab`)."""
    c: Counter = Counter()
    for words in sentences:
        c.update(w.lower() for w in words) if lowercase else c.update(words)
    return [w for w, n in c.most_common(size) if n >= min_count]


def joint_pca(blocks: Sequence[np.ndarray], dim: int) -> list[np.ndarray]:
    """Project each ``(n_k, D)`` block with one PCA fitted on all of them: ``[(n_k, dim)]`` float32,
    centred on the joint mean and scaled so the coordinates have variance 1 on average.

    Component signs are fixed (largest-magnitude loading positive) so the output does not depend on the
    LAPACK build.
    """
    X = np.concatenate([b.astype(np.float64) for b in blocks])                  # (N, D)
    if X.shape[0] < 2:
        raise BisentError(f"word vectors: {X.shape[0]} word(s) in all; need at least 2")
    if dim > min(X.shape):
        raise BisentError(f"word vectors: {dim} dimensions asked, but min(words, encoder dim) is {min(X.shape)}")
    mean = X.mean(0)
    _, _, vt = np.linalg.svd(X - mean, full_matrices=False)                     # (D', D), rows = components
    comps = vt[:dim]                                                             # (dim, D)
    flip = np.sign(comps[np.arange(dim), np.abs(comps).argmax(1)])
    comps = comps * flip[:, None]
    Y = (X - mean) @ comps.T                                                     # (N, dim)
    Y /= np.sqrt((Y ** 2).mean()) or 1.0
    bounds = np.cumsum([0] + [len(b) for b in blocks])
    return [Y[a:b].astype(np.float32) for a, b in zip(bounds[:-1], bounds[1:])]


def encoder_word_vectors(encoder, words: Sequence[tuple[str, list[str]]], dim: int, *,
                         progress: bool | None = None) -> list[np.ndarray]:
    """``[(len(words_k), dim)]`` for each ``(lang, words_k)``: every word embedded alone by ``encoder`` (a
    :class:`bisent.encoders.base.Encoder`) in its language, then one :func:`joint_pca` over all of them."""
    return joint_pca([encoder.encode(ws, lang, progress=progress) for lang, ws in words], dim)


def write_vec(path: Path, words: list[str], vectors: np.ndarray) -> None:
    """A fastText text file (``count dim`` header, one ``word v1 ... vD`` line per word), written atomically."""
    from ..io import atomic_write

    if vectors.shape[0] != len(words):
        raise ValueError(f"{len(words)} words for {vectors.shape[0]} vectors")
    lines = [f"{len(words)} {vectors.shape[1]}\n"]
    lines += [w + " " + " ".join(f"{v:.5f}" for v in row) + "\n" for w, row in zip(words, vectors)]
    with atomic_write(path, "w") as f:
        f.write("".join(lines))
