"""``SentenceAligner``: sentences of two documents -> monotone many-to-many alignment blocks.

    from bisent.align import SentenceAligner
    al = SentenceAligner("use-m3")                     # or "gale-church", any encoder name or model dir
    res = al.align(src_sentences, tgt_sentences, "en", "de")
    for blk in res.blocks:                             # Block(src=(0,), tgt=(0, 1), score=0.83)
        ...

Every sentence of both documents is in exactly one block; an unaligned one is
a block with an empty side (1-0 / 0-1). Scores: the cosine of the two groups'
embeddings (Gale-Church: ``exp(-cost)`` of the step), none for skips.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from ..errors import BisentError
from ..values import config_bool, config_number
from .copies import copy_pairs
from .costs import (
    COPIES,
    LENGTH_WEIGHT,
    MAX_SIZE,
    MERGE_PENALTY,
    SKIP_FLOOR,
    SKIP_QUANTILE,
    EmbeddingCosts,
    GaleChurchCosts,
)
from .dp import align_costs, alignment_types
from .store import DiskVectors, LazyGroups

#: method name of the length-based floor (no encoder)
GALE_CHURCH = "gale-church"


class Block(NamedTuple):
    """One aligned group: 0-based sentence indices of each side (either may be empty) and a score."""

    src: tuple[int, ...]
    tgt: tuple[int, ...]
    score: float | None = None


class AlignResult(NamedTuple):
    blocks: list[Block]
    cost: float
    cells: int        # lattice points visited (all levels): ~ (n + m) * width when coarse to fine
    seconds: float


def group_texts(sentences: list[str], size: int, sep: str = " ") -> list[str]:
    """The concatenation of each run of ``size`` consecutive sentences (``len - size + 1`` texts)."""
    return [sep.join(sentences[k:k + size]) for k in range(len(sentences) - size + 1)]


#: the largest group a + b (the lattice stores type indices as int8; 8 is already 28 types)
MAX_GROUP = 8
#: the aligner's settings (keyword arguments and ``bisent run``'s ``align`` section) -> bounds of their values
OPTIONS = {
    "max_size": {"low": 2, "high": MAX_GROUP, "integer": True},
    "skip_quantile": {"low": 0, "high": 1, "low_open": True},
    "samples": {"low": 1, "high": 100_000, "integer": True},
    "size_factor": bool,
    "merge_penalty": {"low": 0, "high": 10},
    "skip_floor": {"low": 0, "high": 10},
    "length_weight": {"low": 0, "high": 10},
    "copies": bool,
    "width": {"low": 1, "integer": True},
    "exact_cells": {"low": 1, "integer": True},
    "seed": {"low": 0, "integer": True},
    "embed_chunk": {"low": 1, "integer": True},
}


def check_options(options: dict, source="align") -> dict:
    """``options`` (a subset of :data:`OPTIONS`) checked: an unknown key, a value of the wrong kind, out of
    range, ``nan`` or ``inf`` is a one-line error naming ``source``; returns them converted (ints, floats)."""
    out = {}
    for key, value in options.items():
        if key not in OPTIONS:
            raise BisentError(f"{source}: unknown setting '{key}' (known: {', '.join(OPTIONS)})")
        bounds = OPTIONS[key]
        out[key] = config_bool(source, key, value) if bounds is bool else config_number(source, key, value, **bounds)
    if out.get("skip_quantile") == 1:
        raise BisentError(f"{source}: parameter 'skip_quantile' must be below 1, got {options['skip_quantile']!r}")
    return out


class SentenceAligner:
    """vecalign-style aligner (overlap embeddings, normalised cosine cost, coarse to fine) or Gale-Church.

    ``max_size``: the largest group a + b (4: 1-1, 1-2, 2-1, 1-3, 3-1, 2-2; 5 adds 1-4, 4-1, 2-3, 3-2);
    ``skip_quantile``, ``skip_floor``, ``samples``, ``size_factor``, ``merge_penalty``, ``length_weight``: see
    :class:`EmbeddingCosts`; ``copies``: leave a prose sentence and its unchanged copy unaligned
    (:mod:`bisent.align.copies`);
    ``width``: band half-width (sentences) of the fine pass; ``exact_cells``:
    lattice size up to which the exact DP runs; beyond it the vectors of the
    document are written to temporary files in ``spill_dir`` (the system's
    temporary folder by default) and read back window by window. The defaults
    (groups up to 5, skip quantile 0.02 with the floor 0.3, merge penalty 0.1;
    ``costs.SKIP_QUANTILE``) were chosen by the rules of ``benchmarks/align_tune.py`` and
    ``benchmarks/align_rule.py`` on the human-aligned Bleualign de-fr dev document and LibreOffice help dev pages.
    """

    def __init__(self, encoder="use-m3", *, max_size: int = MAX_SIZE, skip_quantile: float = SKIP_QUANTILE,
                 samples: int = 20,
                 size_factor: bool = True, merge_penalty: float = MERGE_PENALTY, width: int = 10,
                 exact_cells: int = 250_000, seed: int = 0, embed_chunk: int = 4096, progress: bool | None = None,
                 spill_dir=None, skip_floor: float = SKIP_FLOOR, norm_groups: bool = False,
                 skip_pairs: str = "off_diagonal", length_weight: float = LENGTH_WEIGHT, copies: bool = COPIES):
        if isinstance(encoder, str) and encoder == GALE_CHURCH:
            self.encoder = None
        elif isinstance(encoder, str):
            from ..encoders import get_encoder
            self.encoder = get_encoder(encoder)
        else:
            self.encoder = encoder
        check_options({"max_size": max_size, "skip_quantile": skip_quantile, "samples": samples,
                       "size_factor": size_factor, "merge_penalty": merge_penalty, "width": width,
                       "exact_cells": exact_cells, "seed": seed, "embed_chunk": embed_chunk,
                       "length_weight": length_weight, "copies": copies, "skip_floor": skip_floor},
                      "SentenceAligner")
        self.types = alignment_types(max_size)
        self.max_size, self.skip_quantile, self.samples = max_size, skip_quantile, samples
        self.size_factor, self.width, self.exact_cells, self.seed = size_factor, width, exact_cells, seed
        self.merge_penalty, self.length_weight, self.copies = merge_penalty, length_weight, copies
        self.skip_floor, self.norm_groups, self.skip_pairs = skip_floor, norm_groups, skip_pairs
        self.embed_chunk, self.progress, self.spill_dir = embed_chunk, progress, spill_dir

    @property
    def name(self) -> str:
        return GALE_CHURCH if self.encoder is None else self.encoder.name

    def _embed_chunks(self, texts: list[str], lang: str):
        """float16 embeddings of ``texts``, ``embed_chunk`` at a time: ``(k, d)`` arrays in order."""
        for k in range(0, len(texts), self.embed_chunk):
            yield self.encoder.encode(texts[k:k + self.embed_chunk], lang, progress=self.progress).astype(np.float16)

    def group_embeddings(self, sentences: list[str], lang: str, sizes=None) -> dict[int, np.ndarray]:
        """{size: (n - size + 1, d) float16}: embeddings of the concatenated groups of 1..max_size-1 sentences."""
        return {a: np.concatenate(list(self._embed_chunks(group_texts(sentences, a), lang)))
                for a in sizes or range(1, min(self.max_size - 1, len(sentences)) + 1)}

    def lazy_group_embeddings(self, sentences: list[str], lang: str) -> dict:
        """As :meth:`group_embeddings`, for long documents in bounded memory: the sentences embedded chunk by
        chunk into a :class:`DiskVectors` (a temporary file), the groups of 2 or more sentences as
        :class:`LazyGroups`, embedded (through the encoder and its cache) window by window as the fine band
        reaches them."""
        out = {1: DiskVectors.write(self._embed_chunks(sentences, lang), spill_dir=self.spill_dir)}
        for a in range(2, min(self.max_size - 1, len(sentences)) + 1):
            def make(k0, k1, a=a):
                return self.encoder.encode(group_texts(sentences[k0:k1 + a - 1], a), lang,
                                           progress=False).astype(np.float16)
            out[a] = LazyGroups(make, len(sentences) - a + 1)
        return out

    def costs(self, src: list[str], tgt: list[str], src_lang: str, tgt_lang: str):
        """The cost model; above ``exact_cells`` lattice points (coarse to fine) the group embeddings are lazy."""
        if self.encoder is None:
            return GaleChurchCosts([len(s) for s in src], [len(t) for t in tgt])
        embed = self.group_embeddings
        if (len(src) + 1) * (len(tgt) + 1) > self.exact_cells:
            embed = self.lazy_group_embeddings
        return EmbeddingCosts(embed(src, src_lang), embed(tgt, tgt_lang),
                              samples=self.samples, skip_quantile=self.skip_quantile,
                              size_factor=self.size_factor, merge_penalty=self.merge_penalty, seed=self.seed,
                              skip_floor=self.skip_floor, norm_groups=self.norm_groups, skip_pairs=self.skip_pairs,
                              spill_dir=self.spill_dir, lengths=([len(x) for x in src], [len(x) for x in tgt]),
                              length_weight=self.length_weight, copies=copy_pairs(src, tgt) if self.copies else None)

    def align_costs(self, costs) -> AlignResult:
        """Align under a ready cost model (``EmbeddingCosts`` / ``GaleChurchCosts``)."""
        t0 = time.perf_counter()
        path, total, cells = align_costs(costs, self.types, width=self.width, exact_cells=self.exact_cells)
        blocks = []
        for i0, i1, j0, j1 in path:
            score = None
            if i1 > i0 and j1 > j0:
                a, b = i1 - i0, j1 - j0
                if isinstance(costs, EmbeddingCosts):
                    score = float(costs.cosine(a, b, i1, np.array([j1]))[0])
                else:
                    score = float(np.exp(-costs.cost(a, b, i1, np.array([j1]))[0]))
            blocks.append(Block(tuple(range(i0, i1)), tuple(range(j0, j1)), score))
        return AlignResult(blocks, total, cells, time.perf_counter() - t0)

    def align(self, src: list[str], tgt: list[str], src_lang: str, tgt_lang: str) -> AlignResult:
        """Align two documents (lists of sentences, each non-empty)."""
        if not src or not tgt:
            side = "source" if not src else "target"
            raise BisentError(f"the {side} document has no sentences")
        t0 = time.perf_counter()
        res = self.align_costs(self.costs(src, tgt, src_lang, tgt_lang))
        return res._replace(seconds=time.perf_counter() - t0)
