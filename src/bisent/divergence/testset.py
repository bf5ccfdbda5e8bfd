"""The deterministic word-labelled P/U/R/I test set and the word accuracy measured on it."""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Sequence

import numpy as np

from .negatives import ClassIndex, Example, NegativeSampler, insert, paired, replace, unpaired
from .tokens import tokenize


def doc_seed(*parts: str) -> int:
    """A stable 64-bit seed from strings (a document name and a paragraph id): the test set never changes."""
    return int.from_bytes(hashlib.sha256("\t".join(parts).encode()).digest()[:8], "little")


def word_test_set(rows: Sequence[tuple[str, str, str, str]], train_pairs: Sequence[tuple[list[str], list[str]]],
                  *, shares=(("P", 0.4), ("U", 0.2), ("R", 0.2), ("I", 0.2)), min_words: int = 3,
                  max_words: int = 60, n_classes: int = 64) -> list[Example]:
    """The word-labelled test set: held-out ``(doc, id, src, tgt)`` rows turned into P/U/R/I examples.

    Each row's kind and every random choice come from a seed hashed from its
    document and paragraph id, so the set is the same on every machine. Word
    classes and the aligner are learned from ``train_pairs`` only; unpaired
    targets and glued sentences come from other test rows. Rows with a side
    outside ``min_words..max_words`` words are left out.
    """
    sampler = NegativeSampler(n_classes).fit(train_pairs)
    toks = [(tokenize(s).words, tokenize(t).words) for _, _, s, t in rows]
    keep = [i for i, (s, t) in enumerate(toks) if min_words <= len(s) <= max_words and min_words <= len(t) <= max_words]
    src_pool, tgt_pool = [toks[i][0] for i in keep], [toks[i][1] for i in keep]
    index = {"src": ClassIndex(src_pool, sampler.classes["src"]), "tgt": ClassIndex(tgt_pool, sampler.classes["tgt"])}
    kinds, cum = [k for k, _ in shares], np.cumsum([w for _, w in shares])
    out = []
    for pos, i in enumerate(keep):
        doc, pid = rows[i][0], rows[i][1]
        rng = np.random.default_rng(doc_seed(doc, pid))
        kind = kinds[int(np.searchsorted(cum, rng.random() * cum[-1], side="right"))]
        s, t = toks[i]
        if kind == "P":
            ex = paired(s, t)
        elif kind == "U":
            ex = unpaired(s, tgt_pool, rng, exclude=pos)
        elif kind == "R":
            ex = replace(s, t, index, sampler.classes, sampler.aligner, rng)
        else:
            side = "src" if rng.random() < 0.5 else "tgt"
            ex = insert(s, t, src_pool if side == "src" else tgt_pool, rng, side=side, exclude=pos)
        if ex is not None:
            ex.info.update({"doc": doc, "id": pid, "src_text": rows[i][2], "tgt_text": rows[i][3]})
            out.append(ex)
    return out


def word_accuracy(examples: Sequence[Example], scores: Sequence[tuple[np.ndarray, np.ndarray]]) -> dict[str, float]:
    """Word accuracy per kind and over all (``PURI``): a word is predicted divergent when its score is negative."""
    hit: Counter = Counter()
    tot: Counter = Counter()
    for ex, (a_s, a_t) in zip(examples, scores):
        pred = np.concatenate([np.where(np.asarray(a_s) < 0, 1, -1), np.where(np.asarray(a_t) < 0, 1, -1)])
        gold = np.array(ex.y_src + ex.y_tgt)
        for key in (ex.kind, "PURI"):
            hit[key] += int((pred == gold).sum())
            tot[key] += len(gold)
    return {k: hit[k] / tot[k] for k in ("P", "U", "R", "I", "PURI") if tot[k]}
