"""Teacher embeddings for distillation (and frozen base features for adapters), computed once.

The teacher is any :class:`bisent.encoders.base.Encoder` (``use-m3``,
``me5-small``, a model directory). Its ``encode`` goes through the persistent
embedding cache keyed by the teacher's ``id``, so the minutes a slow teacher
spends on the training sentences are spent once: a second run, a resumed
run, or another student reads the rows back from the cache. On a machine
with many cores, :func:`fill_cache` first embeds what the cache lacks in
several processes (recipe key ``objectives.teacher_workers``): each embeds
chunks with one BLAS thread and writes its rows into the same SQLite file
(WAL mode), and the run then reads them all from it.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import sys
import time
from contextlib import contextmanager

import numpy as np

from ..encoders import Encoder, get_encoder
from ..encoders.cache import EmbeddingCache
from ..encoders.cache import enabled as cache_enabled
from ..errors import BisentError
from ..threads import VARIABLES as THREAD_VARIABLES


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


def fill_cache(teacher: str, groups: list[tuple[list[str], str]], *, workers: int, batch_size: int = 64,
               progress: bool | None = None) -> dict:
    """Embed the ``(texts, lang)`` groups' sentences that the teacher's persistent cache lacks, in ``workers``
    processes (one BLAS thread each), so that :func:`teacher_embeddings` then reads them all from the cache.

    Chunks of about ``missing / (8 * workers)`` sentences keep the processes busy to the end. Nothing is
    done (and ``{}`` returned) for one worker, caching off, or fewer missing sentences than a batch; a chunk
    whose rows could not be written is embedded again by :func:`teacher_embeddings`. Returns what to log.
    """
    if workers <= 1 or not cache_enabled():
        return {}
    from ..progress import progress_bar

    enc = get_encoder(teacher)
    store = EmbeddingCache(enc.id, enc.dim)                  # one connection for every group
    todo: dict[str, list[str]] = {}
    for texts, lang in groups:
        try:
            enc.check_lang(lang)
        except BisentError:
            continue                                         # teacher_embeddings says so, in one line
        uniq = list(dict.fromkeys(texts))
        found = _cached_mask(enc, uniq, lang, store)
        todo.setdefault(lang, []).extend(t for t, f in zip(uniq, found) if not f)
    todo = {lang: list(dict.fromkeys(ts)) for lang, ts in todo.items() if ts}
    missing = sum(map(len, todo.values()))
    if missing <= batch_size:
        return {}
    size = max(batch_size, math.ceil(missing / (8 * workers)))
    chunks = [(teacher, ts[i:i + size], lang, batch_size) for lang, ts in todo.items() for i in range(0, len(ts), size)]
    t0 = time.monotonic()
    print(f"teacher {enc.name}: embedding {missing} sentences in {workers} processes", file=sys.stderr, flush=True)
    ctx = multiprocessing.get_context("spawn")              # no forked torch or SQLite state
    with _single_threaded(), ctx.Pool(min(workers, len(chunks))) as pool, \
            progress_bar(progress, total=missing, desc=f"teacher {enc.name}", unit="sent") as bar:
        for n in pool.imap_unordered(_embed_chunk, chunks):
            bar.update(n)
        pool.close()
        pool.join()                                          # workers exit cleanly (no leaked semaphores)
    return {"teacher_workers": workers, "embedded": missing, "seconds": round(time.monotonic() - t0, 1)}


def _embed_chunk(args: tuple) -> int:
    """Worker: embed one chunk through the teacher's cache (the rows travel through the SQLite file)."""
    teacher, texts, lang, batch_size = args
    get_encoder(teacher).encode(texts, lang, batch_size=batch_size, progress=False)
    return len(texts)


@contextmanager
def _single_threaded():
    """Spawned workers inherit one BLAS / OpenMP thread each (set before they import NumPy or torch)."""
    old = {n: os.environ.get(n) for n in THREAD_VARIABLES}
    os.environ.update({n: "1" for n in THREAD_VARIABLES})
    try:
        yield
    finally:
        for n, v in old.items():
            if v is None:
                os.environ.pop(n, None)
            else:
                os.environ[n] = v


def _cached_mask(enc: Encoder, texts: list[str], lang: str, store: EmbeddingCache | None = None) -> np.ndarray:
    """``(n,)`` bool: which of ``texts`` the encoder's persistent cache (``store``, else opened here) holds
    (all False when caching is off)."""
    if not cache_enabled() or not texts:
        return np.zeros(len(texts), dtype=bool)
    ckey = enc.check_lang(lang) if enc.lang_dependent else None
    return (store or EmbeddingCache(enc.id, enc.dim)).has(texts, ckey)


def _cached_count(enc: Encoder, texts: list[str], lang: str) -> int:
    """How many of ``texts`` the encoder's persistent cache holds already (0 when caching is off)."""
    return int(_cached_mask(enc, texts, lang).sum())
