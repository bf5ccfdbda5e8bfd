"""The Encoder interface: ``encode(sentences, lang) -> float32 (n, d)``, rows L2-normalised.

Subclasses implement :meth:`Encoder.embed_batch` for one batch; the base class
does the rest the same way for every encoder: language check, de-duplication,
the persistent cache, batches grouped by length, a progress bar, normalisation.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from ..errors import BisentError
from ..langcodes import normalise_lang, supported
from ..progress import progress_bar
from .cache import EmbeddingCache
from .cache import enabled as cache_enabled


def l2_normalise(x: np.ndarray) -> np.ndarray:
    """Rows of ``x`` (n, d) scaled to unit length; all-zero rows stay zero."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


def from_half(x: np.ndarray) -> np.ndarray:
    """Rows stored as float16 (n, d), back as float32 unit rows: how cached and fresh rows are made equal."""
    return l2_normalise(np.asarray(x, dtype=np.float32))


class Encoder:
    """Base class. Attributes: ``name`` (registry name or path), ``id`` (cache key:
    changes whenever the weights or preprocessing change), ``dim``, ``languages``
    (a set of codes, or None for any), ``lang_dependent`` (True when the
    embedding of a text depends on the declared language)."""

    name: str = "encoder"
    id: str = "encoder"
    dim: int = 0
    languages: frozenset[str] | None = None
    lang_dependent: bool = False
    batch_size: int = 64
    #: how the persistent cache stores rows: float16 (rows are rounded alike when fresh) or float32 (exact rows)
    cache_dtype: str = "float16"
    #: False for encoders whose rows are cheaper to make than to cache (vectors read from files, ensembles of
    #: cached members)
    cacheable: bool = True

    def embed_batch(self, sentences: list[str], lang: str) -> np.ndarray:
        """Embed one batch: ``(len(sentences), dim)`` float32 (normalisation is done by ``encode``)."""
        raise NotImplementedError

    def check_lang(self, lang: str) -> str:
        """``lang`` normalised (:func:`bisent.langcodes.normalise_lang`), or a one-line error when this
        encoder does not support it."""
        if not lang or not isinstance(lang, str) or not lang.strip():
            raise BisentError(f"encoder {self.name}: a language code is required (e.g. -l en)")
        if not supported(lang, self.languages):
            from . import covering

            others = [n for n in covering(lang) if n != self.name]
            hint = (f"registered encoders that cover it: {', '.join(others)}" if others else
                    "no registered encoder lists it; -e also takes a model folder (bisent encoders)")
            raise BisentError(f"encoder {self.name}: unknown language '{lang}' (it supports: "
                              f"{', '.join(sorted(self.languages))}; {hint})")
        return normalise_lang(lang)

    def encode(self, sentences: Sequence[str], lang: str, *, batch_size: int | None = None,
               progress: bool | None = None, cache: bool | None = None) -> np.ndarray:
        """Embed ``sentences`` (list of str) in language ``lang``: float32 ``(n, dim)``, unit rows.

        Identical sentences are embedded once; sentences already in the
        persistent cache are not embedded again (``cache=False`` or the
        environment variable ``BISENT_NO_EMBED_CACHE=1`` turns it off). With
        the cache on, every row is rounded to float16 as the cache stores it,
        then scaled back to unit length (so a cached row equals a fresh one
        bit for bit); with it off, or for an encoder whose ``cache_dtype`` is
        float32, rows are exact float32.
        Batches are grouped by length so padding stays small.
        """
        lang = self.check_lang(lang)
        sentences = list(sentences)
        out = np.zeros((len(sentences), self.dim), dtype=np.float32)
        if not sentences:
            return out
        uniq: dict[str, int] = {}
        inverse = np.fromiter((uniq.setdefault(s, len(uniq)) for s in sentences), dtype=np.int64, count=len(sentences))
        texts = list(uniq)
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        use_cache = (cache if cache is not None else cache_enabled()) and self.cacheable
        half = self.cache_dtype == "float16"
        store = EmbeddingCache(self.id, self.dim, dtype=self.cache_dtype) if use_cache else None
        ckey = lang if self.lang_dependent else None
        if store is not None:
            found, cached = store.get(texts, ckey)
            rows[found] = from_half(cached[found]) if half else cached[found]
            todo = np.flatnonzero(~found)
        else:
            todo = np.arange(len(texts))
        if len(todo):
            order = todo[np.argsort([len(texts[i]) for i in todo], kind="stable")]
            bs = batch_size or self.batch_size
            with progress_bar(progress, total=len(order), desc=f"embed {lang} ({self.name})", unit="sent",
                              leave=False) as bar:
                for s in range(0, len(order), bs):
                    idx = order[s:s + bs]
                    batch = [texts[i] for i in idx]
                    vecs = l2_normalise(self.embed_batch(batch, lang))
                    if vecs.shape != (len(batch), self.dim):
                        raise RuntimeError(f"encoder {self.name} returned shape {vecs.shape}, expected "
                                           f"{(len(batch), self.dim)}")
                    if store is not None:  # as the cache stores them: a row is the same cached or fresh
                        store.put(batch, vecs, ckey)
                        if half:
                            vecs = from_half(vecs.astype(np.float16))
                    rows[idx] = vecs
                    bar.update(len(idx))
        out[:] = rows[inverse]
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, dim={self.dim})"


def batched(items: Iterable, size: int):
    """Yield lists of up to ``size`` items."""
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
