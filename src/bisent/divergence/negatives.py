"""The labelled examples of section 3.1: true pairs and the three negatives, each with its word labels
(-1 parallel, +1 divergent).

- :func:`paired` (P); :func:`unpaired` (U): a random other target; :func:`replace` (R): a span of 1-3 words
  swapped for one with the same word classes; :func:`insert` (I): a second sentence glued on, all under the
  length-ratio constraint of :func:`~bisent.divergence.tokens.ratio_ok`;
- :class:`NegativeSampler`: draws them from a list of tokenised pairs (what training uses).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .aligner import DiceAligner
from .tokens import ratio_ok
from .wordclasses import WordClasses


@dataclass
class Example:
    """A training/test pair of word lists with labels -1 (parallel) / +1 (divergent) and its kind (P/U/R/I)."""

    src: list[str]
    tgt: list[str]
    y_src: list[int]
    y_tgt: list[int]
    kind: str = "P"
    info: dict = field(default_factory=dict)


def paired(src: list[str], tgt: list[str]) -> Example:
    """A true translation: every word parallel."""
    return Example(list(src), list(tgt), [-1] * len(src), [-1] * len(tgt), "P")


def unpaired(src: list[str], tgt_pool: Sequence[list[str]], rng: np.random.Generator, tries: int = 20,
             exclude: int | None = None) -> Example | None:
    """A random target of the pool (length ratio within the constraint): every word divergent."""
    for _ in range(tries):
        k = int(rng.integers(len(tgt_pool)))
        if k == exclude:
            continue
        tgt = tgt_pool[k]
        if ratio_ok(len(src), len(tgt)):
            return Example(list(src), list(tgt), [1] * len(src), [1] * len(tgt), "U")
    return None


def insert(src: list[str], tgt: list[str], pool: Sequence[list[str]], rng: np.random.Generator, *,
           side: str | None = None, where: str | None = None, tries: int = 30, exclude: int | None = None
           ) -> Example | None:
    """A second sentence of ``pool`` (same language as ``side``) glued at the start or end of one side.

    The original words stay parallel (-1), the glued ones are divergent (+1).
    ``side`` ('src'/'tgt') and ``where`` ('start'/'end') are drawn when not given.
    """
    side = side or ("src" if rng.random() < 0.5 else "tgt")
    where = where or ("start" if rng.random() < 0.5 else "end")
    base, other = (src, tgt) if side == "src" else (tgt, src)
    for _ in range(tries):
        k = int(rng.integers(len(pool)))
        extra = pool[k]
        if k == exclude or not extra or not ratio_ok(len(base) + len(extra), len(other)):
            continue
        glued = list(extra) + list(base) if where == "start" else list(base) + list(extra)
        ys = [1] * len(extra) + [-1] * len(base) if where == "start" else [-1] * len(base) + [1] * len(extra)
        info = {"side": side, "where": where, "glued": len(extra)}
        if side == "src":
            return Example(glued, list(tgt), ys, [-1] * len(tgt), "I", info)
        return Example(list(src), glued, [-1] * len(src), ys, "I", info)
    return None


class ClassIndex:
    """Where each sequence of word classes of length 1..max_n occurs in a pool of sentences."""

    def __init__(self, pool: Sequence[list[str]], classes: "WordClasses", max_n: int = 3):
        self.pool, self.max_n = pool, max_n
        self.index: dict[tuple[int, ...], list[tuple[int, int]]] = {}
        for k, sent in enumerate(pool):
            cls = classes.of(sent)
            for n in range(1, max_n + 1):
                for p in range(len(sent) - n + 1):
                    self.index.setdefault(tuple(cls[p:p + n]), []).append((k, p))

    def draw(self, key: tuple[int, ...], avoid: list[str], rng: np.random.Generator,
             tries: int = 10) -> list[str] | None:
        """A span of some pool sentence with the class sequence ``key`` whose words differ from ``avoid``."""
        hits = self.index.get(key)
        if not hits:
            return None
        low = [w.lower() for w in avoid]
        for _ in range(tries):
            k, p = hits[int(rng.integers(len(hits)))]
            span = self.pool[k][p:p + len(key)]
            if all(a.lower() != b for a, b in zip(span, low)):
                return list(span)
        return None


def replace(src: list[str], tgt: list[str], index: dict[str, ClassIndex], classes: dict[str, "WordClasses"],
            aligner: "DiceAligner", rng: np.random.Generator, *, side: str | None = None, tries: int = 10
            ) -> Example | None:
    """A span of 1-3 words on one side swapped for a span with the same word classes from another sentence.

    The replaced words are divergent (+1), and so are the words on the other
    side aligned to them (by ``aligner``); the rest stays parallel (-1).
    ``index``/``classes`` are keyed 'src'/'tgt'.
    """
    side = side or ("src" if rng.random() < 0.5 else "tgt")
    base = src if side == "src" else tgt
    for _ in range(tries):
        n = int(rng.integers(1, min(3, len(base)) + 1))
        p = int(rng.integers(len(base) - n + 1))
        key = tuple(classes[side].of(base[p:p + n]))
        if all(c == classes[side].punct for c in key):
            continue                                                       # swapping punctuation says nothing
        new = index[side].draw(key, base[p:p + n], rng)
        if new is None:
            continue
        links = aligner.align(src, tgt)                                    # [(i, j)]
        changed = set(range(p, p + n))
        if side == "src":
            out_src, out_tgt = base[:p] + new + base[p + n:], list(tgt)
            ys = [1 if i in changed else -1 for i in range(len(src))]
            yt = [1 if any(i in changed for i, jj in links if jj == j) else -1 for j in range(len(tgt))]
        else:
            out_src, out_tgt = list(src), base[:p] + new + base[p + n:]
            yt = [1 if j in changed else -1 for j in range(len(tgt))]
            ys = [1 if any(j in changed for ii, j in links if ii == i) else -1 for i in range(len(src))]
        return Example(out_src, out_tgt, ys, yt, "R", {"side": side, "start": p, "n": n})
    return None


KINDS = ("unpaired", "replace", "insert")


class NegativeSampler:
    """Draws P/U/R/I examples from a list of tokenised pairs; ``fit`` learns the word classes and the aligner."""

    def __init__(self, n_classes: int = 64, seed: int = 0):
        self.n_classes, self.seed = n_classes, seed

    def fit(self, pairs: Sequence[tuple[list[str], list[str]]], *, replace: bool = True) -> "NegativeSampler":
        """Keep the pairs; learn word classes, their index and the aligner only when ``replace`` examples are drawn."""
        self.pairs = list(pairs)
        self.src_pool = [s for s, _ in self.pairs]
        self.tgt_pool = [t for _, t in self.pairs]
        if not replace:
            return self
        self.classes = {"src": WordClasses(self.n_classes, seed=self.seed).fit(self.src_pool),
                        "tgt": WordClasses(self.n_classes, seed=self.seed).fit(self.tgt_pool)}
        self.index = {"src": ClassIndex(self.src_pool, self.classes["src"]),
                      "tgt": ClassIndex(self.tgt_pool, self.classes["tgt"])}
        self.aligner = DiceAligner().fit(self.pairs)
        return self

    def make(self, k: int, kind: str, rng: np.random.Generator) -> Example | None:
        """Pair ``k`` turned into an example of ``kind`` (P, U, R or I); None when no valid one was found."""
        s, t = self.pairs[k]
        if kind == "P":
            return paired(s, t)
        if kind == "U":
            return unpaired(s, self.tgt_pool, rng, exclude=k)
        if kind == "R":
            return replace(s, t, self.index, self.classes, self.aligner, rng)
        if kind == "I":
            side = "src" if rng.random() < 0.5 else "tgt"
            return insert(s, t, self.src_pool if side == "src" else self.tgt_pool, rng, side=side, exclude=k)
        raise ValueError(f"unknown example kind {kind!r}")
