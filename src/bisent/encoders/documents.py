"""The document-encoder interface and Sentence-Avg (Guo et al. 2019, §3.1.1): sentence vectors -> document vectors.

Sentence embeddings are summed per document in chunks of :data:`CHUNK`
sentences, so memory is bounded by one chunk plus ``n_docs × d`` floats
however long a document is (:func:`sentence_sums`). The trained document
models (HiDE, Document BoW) are in :mod:`bisent.models.hide`; reading,
mining and P@N in :mod:`bisent.documents`.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..progress import progress_bar
from .base import Encoder, l2_normalise

#: sentences embedded per call while summing documents (bounds memory for very long documents)
CHUNK = 4096


class DocumentEncoder:
    """``encode_documents(docs, lang) -> (n_docs, dim)`` float32 unit rows; zero rows for empty documents."""

    name: str = "document-encoder"
    id: str = "document-encoder"
    dim: int = 0

    def encode_documents(self, docs: Sequence[Sequence[str]], lang: str, *, progress: bool | None = None) -> np.ndarray:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, dim={self.dim})"


def sentence_sums(docs: Sequence[Sequence[str]], encoder: Encoder, lang: str, *, transform=None,
                  chunk: int = CHUNK, progress: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per document the sum of ``transform(sentence embeddings)`` and the sentence count, streamed.

    Returns ``sums (n_docs, d')`` float64 and ``counts (n_docs,)``. Sentences
    are embedded ``chunk`` at a time across document boundaries, so memory
    never holds more than one chunk of sentence vectors.
    """
    counts = np.array([len(d) for d in docs], dtype=np.int64)
    sums = None
    buf: list[str] = []
    owners: list[np.ndarray] = []

    def flush():
        nonlocal sums, buf, owners
        v = encoder.encode(buf, lang, progress=False).astype(np.float64)         # (c, d)
        if transform is not None:
            v = transform(v)                                                       # (c, d')
        if sums is None:
            sums = np.zeros((len(docs), v.shape[1]), dtype=np.float64)
        np.add.at(sums, np.concatenate(owners), v)
        bar.update(len(buf))
        buf, owners = [], []

    with progress_bar(progress, total=int(counts.sum()), desc=f"embed {lang} documents ({encoder.name})",
                      unit="sent", leave=False) as bar:
        for i, d in enumerate(docs):
            start = 0
            while start < len(d):
                take = list(d[start:start + chunk - len(buf)])
                buf.extend(take)
                owners.append(np.full(len(take), i, dtype=np.int64))
                start += len(take)
                if len(buf) >= chunk:
                    flush()
        if buf:
            flush()
    if sums is None:
        dim = transform(np.zeros((1, encoder.dim))).shape[1] if transform is not None else encoder.dim
        sums = np.zeros((len(docs), dim), dtype=np.float64)
    return sums, counts


class SentenceAvg(DocumentEncoder):
    """Sentence-Avg (§3.1.1): the unit mean of a sentence encoder's embeddings of the document's sentences.

    ``centred=True`` subtracts the mean sentence embedding of the collection
    being encoded (each side's own) before averaging.
    """

    def __init__(self, encoder: Encoder, *, centred: bool = True, chunk: int = CHUNK):
        self.encoder, self.centred, self.chunk = encoder, centred, chunk
        self.dim = encoder.dim
        self.name = f"sentence-avg{'-centred' if centred else ''}({encoder.name})"
        self.id = f"{self.name}/{encoder.id}"

    def encode_documents(self, docs, lang, *, progress=None):
        sums, counts = sentence_sums(docs, self.encoder, lang, chunk=self.chunk, progress=progress)
        if self.centred and counts.sum():
            mu = sums.sum(axis=0) / counts.sum()                                   # (d,) this side's mean sentence
            sums = sums - counts[:, None] * mu
        sums[counts == 0] = 0.0
        return l2_normalise(sums.astype(np.float32))
