"""The Dice co-occurrence aligner: it marks the words on the other side aligned to a replaced span."""

from __future__ import annotations

from collections import Counter
from typing import Iterable

import numpy as np


class DiceAligner:
    """A simple co-occurrence aligner: word i links to the word j of the other side with the best Dice
    coefficient over the corpus (at least ``min_dice``), or to an identical token (names, numbers)."""

    def __init__(self, min_dice: float = 0.1, max_len: int = 80):
        self.min_dice, self.max_len = min_dice, max_len
        self.cs: Counter = Counter()
        self.ct: Counter = Counter()
        self.co: Counter = Counter()

    def fit(self, pairs: Iterable[tuple[list[str], list[str]]]) -> "DiceAligner":
        """Count, over the pairs, the pairs each word type occurs in and each (src, tgt) type co-occurrence."""
        ids: dict[str, dict[str, int]] = {"s": {}, "t": {}}
        keys, rows_s, rows_t = [], [], []
        for s, t in pairs:
            if len(s) > self.max_len or len(t) > self.max_len:
                continue
            us = np.unique([ids["s"].setdefault(w.lower(), len(ids["s"])) for w in s])
            ut = np.unique([ids["t"].setdefault(w.lower(), len(ids["t"])) for w in t])
            rows_s.append(us)
            rows_t.append(ut)
            keys.append((us[:, None] * (1 << 32) + ut[None, :]).ravel())
        vs = {i: w for w, i in ids["s"].items()}
        vt = {i: w for w, i in ids["t"].items()}
        for counter, rows, names in ((self.cs, rows_s, vs), (self.ct, rows_t, vt)):
            u, c = np.unique(np.concatenate(rows or [np.zeros(0, np.int64)]), return_counts=True)
            counter.update({names[int(i)]: int(n) for i, n in zip(u, c)})
        u, c = np.unique(np.concatenate(keys or [np.zeros(0, np.int64)]), return_counts=True)
        self.co.update({(vs[int(k >> 32)], vt[int(k & 0xFFFFFFFF)]): int(n) for k, n in zip(u, c)})
        return self

    def dice(self, a: str, b: str) -> float:
        a, b = a.lower(), b.lower()
        n = self.cs.get(a, 0) + self.ct.get(b, 0)
        return 2 * self.co.get((a, b), 0) / n if n else 0.0

    def align(self, src: list[str], tgt: list[str]) -> list[tuple[int, int]]:
        """Links ``(i, j)``: each source word to its best target word and each target word to its best source word."""
        if not src or not tgt:
            return []
        d = np.array([[1.0 if a.lower() == b.lower() else self.dice(a, b) for b in tgt]
                      for a in src])                                       # (I, J)
        links = {(i, int(np.argmax(d[i]))) for i in range(len(src)) if d[i].max() >= self.min_dice}
        links |= {(int(np.argmax(d[:, j])), j) for j in range(len(tgt)) if d[:, j].max() >= self.min_dice}
        return sorted(links)
