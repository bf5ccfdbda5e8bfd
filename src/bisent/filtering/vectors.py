"""Embeddings shared by the steps of one batch: each text is looked up (cache or encoder) once per batch.

Several embedding steps of one pipeline embed the same texts: the coverage
step the wholes of both sides (and their sentences), the margin and cosine
steps the wholes again. :meth:`FilterPipeline.process` opens a
:func:`batch_memo` around its steps, and :func:`encode` answers a text the
batch has already embedded with the same encoder and language from memory
instead of asking the encoder (and its persistent cache) again. Outside a
memo :func:`encode` is the encoder's ``encode``. The rows are the encoder's
own, so scores do not change; the memo is dropped when the batch ends.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Iterator, Sequence

import numpy as np

_LOCAL = threading.local()


@contextlib.contextmanager
def batch_memo() -> Iterator[None]:
    """Share embeddings among the steps run inside (nested: the outer memo is used)."""
    if getattr(_LOCAL, "memo", None) is not None:
        yield
        return
    _LOCAL.memo = {}
    try:
        yield
    finally:
        _LOCAL.memo = None


def encode(encoder, texts: Sequence[str], lang: str) -> np.ndarray:
    """``encoder.encode(texts, lang)`` (float32 unit rows), through the batch's memo when one is open."""
    memo = getattr(_LOCAL, "memo", None)
    if memo is None:
        return encoder.encode(list(texts), lang, progress=False)
    rows: dict[str, np.ndarray] = memo.setdefault((encoder.id, lang), {})
    uniq = dict.fromkeys(texts)
    missing = [t for t in uniq if t not in rows]
    if missing and len(missing) == len(uniq):          # none known yet: the encoder's rows as they are, no stacking
        out = encoder.encode(list(texts), lang, progress=False)
        rows.update(zip(texts, out))
        return out
    if missing:
        fresh = encoder.encode(missing, lang, progress=False)
        rows.update(zip(missing, fresh))
    if not texts:
        return np.zeros((0, encoder.dim), dtype=np.float32)
    return np.stack([rows[t] for t in texts])
