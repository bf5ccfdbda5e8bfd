"""Word classes learned from a corpus (k-means clusters of PPMI-SVD word vectors): what a ``replace``
example swaps within, in place of the paper's part-of-speech tags (no tagger with its model inside a PyPI
wheel was found)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable, Sequence

import numpy as np

_PUNCT = re.compile(r"^[^\w]+$", re.UNICODE)


class WordClasses:
    """Word classes learned from a corpus: k-means over PPMI-SVD vectors of the frequent words.

    The paper swaps spans with the same part-of-speech tags; without a
    trustworthy tagger inside a wheel, distributional clusters play that role
    (words that appear in the same contexts). Class 0 is punctuation, class 1
    numbers, class 2 rare/unknown words; clusters start at 3.
    """

    punct, number, rare = 0, 1, 2

    def __init__(self, n_classes: int = 64, max_words: int = 2000, dim: int = 40, window: int = 2, seed: int = 0,
                 contexts: int = 300):
        self.n_classes, self.max_words, self.dim, self.window, self.seed = n_classes, max_words, dim, window, seed
        self.contexts = contexts
        self.cls: dict[str, int] = {}

    def fit(self, sentences: Iterable[list[str]]) -> "WordClasses":
        sents = [[w.lower() for w in s] for s in sentences]
        counts = Counter(w for s in sents for w in s)
        vocab = [w for w, _ in counts.most_common() if not _PUNCT.match(w) and not w.isdigit()][:self.max_words]
        ids = {w: i for i, w in enumerate(vocab)}
        ctx_n = min(len(vocab), self.contexts)                              # context words: the most frequent
        co = np.zeros((len(vocab), 2 * self.window * ctx_n), dtype=np.float64)
        for s in sents:
            for p, w in enumerate(s):
                i = ids.get(w)
                if i is None:
                    continue
                for d in range(1, self.window + 1):
                    for slot, q in ((self.window - d, p - d), (self.window + d - 1, p + d)):
                        if 0 <= q < len(s):
                            c = ids.get(s[q])
                            if c is not None and c < ctx_n:
                                co[i, slot * ctx_n + c] += 1
        total = co.sum() or 1.0
        pw = co.sum(1, keepdims=True) / total
        pc = co.sum(0, keepdims=True) / total
        with np.errstate(divide="ignore", invalid="ignore"):
            pmi = np.log(co / total / (pw * pc))
        ppmi = np.nan_to_num(np.maximum(pmi, 0), nan=0.0, posinf=0.0)
        k = min(self.dim, max(1, min(ppmi.shape) - 1))
        u, s, _ = np.linalg.svd(ppmi, full_matrices=False)
        vecs = u[:, :k] * np.sqrt(s[:k])
        vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-9)
        labels = _kmeans(vecs, min(self.n_classes, len(vocab)), self.seed)
        self.cls = {w: 3 + int(c) for w, c in zip(vocab, labels)}
        return self

    def of(self, words: Sequence[str]) -> list[int]:
        out = []
        for w in words:
            lw = w.lower()
            if _PUNCT.match(lw):
                out.append(self.punct)
            elif lw.isdigit():
                out.append(self.number)
            else:
                out.append(self.cls.get(lw, self.rare))
        return out


def _kmeans(x: np.ndarray, k: int, seed: int, iters: int = 25) -> np.ndarray:
    """Plain Lloyd k-means (cosine on unit rows), seeded; returns a label per row."""
    rng = np.random.default_rng(seed)
    cent = x[rng.choice(len(x), size=k, replace=False)].copy()
    labels = np.zeros(len(x), dtype=np.int64)
    for _ in range(iters):
        labels = np.argmax(x @ cent.T, axis=1)
        for c in range(k):
            m = labels == c
            if m.any():
                v = x[m].mean(0)
                cent[c] = v / max(np.linalg.norm(v), 1e-9)
    return labels
