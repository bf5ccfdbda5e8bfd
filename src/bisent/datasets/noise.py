"""Realistic noise for the filtering benchmark, built from clean aligned paragraphs.

Each noisy pair keeps a real source paragraph and replaces its target with:

- ``misaligned``: the target of a random pair from another document;
- ``neighbour``: the target of the next (or previous) paragraph of the same page;
- ``untranslated``: a copy of the source;
- ``third_language``: the same paragraph in a third language (from that language's help package);
- ``truncated``: the first 30-60 % of the target's words;
- ``glued``: the target followed by the next paragraph's target (two sentences glued together).
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass
from typing import Sequence

NOISE_KINDS = ("misaligned", "neighbour", "untranslated", "third_language", "truncated", "glued")


@dataclass(frozen=True)
class LabelledPair:
    src: str
    tgt: str
    kind: str  # "clean" or one of NOISE_KINDS
    doc: str
    pid: str

    @property
    def clean(self) -> bool:
        return self.kind == "clean"


def make_noisy_set(pairs: Sequence, third: dict[tuple[str, str], str] | None = None, *, clean_share: float = 0.5,
                   seed: int = 0, limit: int | None = None) -> list[LabelledPair]:
    """Mix clean pairs with equal shares of every noise kind (deterministic for a seed).

    ``pairs``: objects with doc, pid, src, tgt, in page order; ``third``: (doc, pid) ->
    the paragraph in a third language (the kind is skipped when None). ``limit``
    caps the number of source paragraphs used. Every item uses a distinct source
    paragraph, so a source never appears twice.
    """
    rng = random.Random(seed)
    by_doc: dict[str, list] = defaultdict(list)
    for p in pairs:
        by_doc[p.doc].append(p)
    items = list(pairs)
    rng.shuffle(items)
    if limit:
        items = items[:limit]
    kinds = [k for k in NOISE_KINDS if k != "third_language" or third]
    out: list[LabelledPair] = []
    n_clean = int(round(clean_share * len(items)))
    for p in items[:n_clean]:
        out.append(LabelledPair(p.src, p.tgt, "clean", p.doc, p.pid))
    for n, p in enumerate(items[n_clean:]):
        kind = kinds[n % len(kinds)]
        tgt = _noisy_target(kind, p, by_doc, items, third, rng)
        if tgt is None or tgt == p.tgt:
            kind, tgt = "misaligned", _other_doc_target(p, items, rng)
        out.append(LabelledPair(p.src, tgt, kind, p.doc, p.pid))
    rng.shuffle(out)
    return out


def _neighbour(p, by_doc) -> object | None:
    page = by_doc[p.doc]
    i = next(i for i, q in enumerate(page) if q.pid == p.pid)
    if i + 1 < len(page):
        return page[i + 1]
    return page[i - 1] if i > 0 else None


def _other_doc_target(p, items, rng) -> str:
    while True:
        q = items[rng.randrange(len(items))]
        if q.doc != p.doc:
            return q.tgt


def _noisy_target(kind: str, p, by_doc, items, third, rng) -> str | None:
    if kind == "misaligned":
        return _other_doc_target(p, items, rng)
    if kind == "neighbour":
        q = _neighbour(p, by_doc)
        return q.tgt if q is not None else None
    if kind == "untranslated":
        return p.src
    if kind == "third_language":
        return third.get((p.doc, p.pid))
    if kind == "truncated":
        words = p.tgt.split()
        if len(words) < 4:
            return None
        return " ".join(words[: max(1, int(len(words) * rng.uniform(0.3, 0.6)))])
    if kind == "glued":
        q = _neighbour(p, by_doc)
        return f"{p.tgt} {q.tgt}" if q is not None else None
    raise ValueError(kind)
