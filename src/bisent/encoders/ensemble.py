"""Ensembles of encoders: ``-e use-m3+me5-small`` or weighted ``-e use-m3:0.6+me5-small:0.4``.

The ensemble's vector of a text is the concatenation of its members' unit
vectors, member ``i`` scaled by ``sqrt(w_i / sum(w))``. The result is a unit
vector (``d = sum(d_i)``) and the cosine of two texts is the weighted mean of
the members' cosines, ``sum(w_i cos_i) / sum(w)``; every score built on
cosines (margins, CSLS, the filter steps) works on it unchanged. Equal weights
when none is given. A member is any encoder spec but another ensemble.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import BisentError
from .base import Encoder, l2_normalise


def parse_spec(spec: str) -> list[tuple[str, float]]:
    """``"use-m3:0.6+me5-small:0.4"`` -> ``[("use-m3", 0.6), ("me5-small", 0.4)]``; weights default to 1."""
    out = []
    for part in str(spec).split("+"):
        name, weight = part.strip(), 1.0
        head, sep, tail = name.rpartition(":")
        if sep and head and tail.replace(".", "", 1).isdigit():
            name = head
            weight = float(tail)
            if not (weight > 0 and math.isfinite(weight)):
                raise BisentError(f"encoder '{spec}': weight {tail!r} of {name} must be a positive number")
        if not name:
            raise BisentError(f"encoder '{spec}': an empty member (write NAME+NAME, e.g. use-m3+me5-small)")
        out.append((name, weight))
    names = [n for n, _ in out]
    if len(set(names)) != len(names):
        raise BisentError(f"encoder '{spec}': a member is named twice")
    return out


class Ensemble(Encoder):
    """Weighted concatenation of unit vectors of its ``members`` [(Encoder, weight)], itself a unit vector."""

    cacheable = False   # the members cache their own rows

    def __init__(self, members: list[tuple[Encoder, float]], name: str | None = None):
        if not members:
            raise BisentError("an ensemble needs at least one member")
        for enc, _ in members:
            if isinstance(enc, Ensemble):
                raise BisentError(f"encoder '{name}': an ensemble cannot hold another ensemble ({enc.name})")
        total = sum(w for _, w in members)
        self.members = [enc for enc, _ in members]
        self.weights = [w / total for _, w in members]
        self.name = name or "+".join(f"{e.name}:{w:g}" for e, w in members)
        self.dim = sum(e.dim for e in self.members)
        self.id = "ensemble(" + ",".join(f"{e.id}:{w:.6g}" for e, w in zip(self.members, self.weights)) + ")"
        langs = [e.languages for e in self.members if e.languages is not None]
        self.languages = frozenset.intersection(*langs) if langs else None
        self.lang_dependent = any(e.lang_dependent for e in self.members)
        self.batch_size = max(e.batch_size for e in self.members)

    def check_lang(self, lang: str) -> str:
        for enc in self.members:   # the error names the member that lacks the language
            enc.check_lang(lang)
        return super().check_lang(lang)

    def encode(self, sentences, lang, *, batch_size=None, progress=None, cache=None) -> np.ndarray:
        """Each member encodes every sentence (its own batches, de-duplication and cache; ``cache`` passed on),
        then the weighted parts are joined: float32 ``(n, sum d_i)``, unit rows."""
        self.check_lang(lang)
        sentences = list(sentences)
        parts = [math.sqrt(w) * enc.encode(sentences, lang, batch_size=batch_size, progress=progress, cache=cache)
                 for enc, w in zip(self.members, self.weights)]                  # (n, d_i) each, unit rows
        return l2_normalise(np.concatenate(parts, axis=1) if parts else np.zeros((len(sentences), self.dim)))

    def embed_batch(self, sentences, lang):
        return self.encode(sentences, lang, progress=False)
