"""Teacher embeddings for distillation (and frozen base features for adapters), computed once.

The teacher is any :class:`bisent.encoders.base.Encoder` (``use-m3``,
``me5-small``, a model directory). Its ``encode`` goes through the persistent
embedding cache keyed by the teacher's ``id``, so the minutes a slow teacher
spends on the training sentences are spent once: a second run, a resumed
run, or another student reads the rows back from the cache.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from ..encoders import Encoder, get_encoder
from ..errors import BisentError


def teacher_embeddings(teacher: str | Encoder, sentences: list[str], lang: str, *, batch_size: int = 64,
                       progress: bool | None = None) -> tuple[np.ndarray, dict]:
    """``(n, D)`` float32 unit rows of ``sentences`` in ``lang`` under ``teacher``, and a report.

    The report says how many distinct sentences there were, how many the
    cache already held, and the seconds spent, for the training log. While
    it works, a bar (terminal) or a line every few seconds (log file) shows
    progress (:mod:`bisent.progress`).
    """
    enc = get_encoder(teacher)
    try:
        enc.check_lang(lang)
    except BisentError as e:
        raise BisentError(f"teacher {enc.name}: cannot embed the {lang} side ({e})") from None
    uniq = list(dict.fromkeys(sentences))
    cached = _cached_count(enc, uniq, lang)
    t0 = time.monotonic()
    if progress is not False and len(uniq) > cached:  # a phase of minutes: say so, then progress (bar or lines)
        print(f"teacher {enc.name}: embedding {len(uniq) - cached} {lang} sentences "
              f"({cached} of {len(uniq)} from the cache)", file=sys.stderr, flush=True)
    vecs = enc.encode(sentences, lang, batch_size=batch_size, progress=progress)
    report = {"teacher": enc.name, "teacher_id": enc.id, "lang": lang, "sentences": len(uniq),
              "from_cache": cached, "seconds": round(time.monotonic() - t0, 1)}
    return vecs, report


def _cached_count(enc: Encoder, texts: list[str], lang: str) -> int:
    """How many of ``texts`` the encoder's persistent cache holds already (0 when caching is off)."""
    import os

    from ..encoders.cache import EmbeddingCache

    if os.environ.get("BISENT_NO_EMBED_CACHE", "") not in ("", "0") or not texts:
        return 0
    ckey = enc.check_lang(lang) if enc.lang_dependent else None
    found, _ = EmbeddingCache(enc.id, enc.dim).get(texts, ckey)
    return int(found.sum())
