"""A persistent embedding cache: one SQLite file per encoder id, keyed by (language,) text.

It lives in ``$BISENT_CACHE/embeddings`` (or ``$BISENT_EMBED_CACHE`` when set).

No sentence is embedded twice across runs. Values are the encoder's float32
output after L2 normalisation, stored exactly, so a cached row equals a fresh one.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import threading
from pathlib import Path

import numpy as np

from ..cache import cache_dir

_CHUNK = 500  # SQLite host-parameter limit is 999 on old builds


def _key(text: str, lang: str | None) -> bytes:
    data = text if lang is None else f"{lang}\t{text}"
    return hashlib.blake2b(data.encode("utf-8"), digest_size=16).digest()


class EmbeddingCache:
    """``get(texts) -> (found_mask, rows)`` and ``put(texts, rows)`` for one encoder id and dimension."""

    def __init__(self, encoder_id: str, dim: int, path=None):
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", encoder_id)[:120]
        folder = Path(os.environ["BISENT_EMBED_CACHE"]) if os.environ.get("BISENT_EMBED_CACHE") else cache_dir("embeddings")
        folder.mkdir(parents=True, exist_ok=True)
        self.path = path or folder / f"{safe}-{hashlib.sha1(encoder_id.encode()).hexdigest()[:8]}.sqlite"
        self.dim = dim
        self._local = threading.local()

    @property
    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=60)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("CREATE TABLE IF NOT EXISTS emb (k BLOB PRIMARY KEY, v BLOB NOT NULL)")
            self._local.db = db
        return db

    def get(self, texts: list[str], lang: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(found (n,) bool, rows (n, dim) float32)``; rows of missing texts are zero."""
        keys = [_key(t, lang) for t in texts]
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        found = np.zeros(len(texts), dtype=bool)
        where: dict[bytes, list[int]] = {}
        for i, k in enumerate(keys):
            where.setdefault(k, []).append(i)
        uniq = list(where)
        for s in range(0, len(uniq), _CHUNK):
            part = uniq[s:s + _CHUNK]
            q = f"SELECT k, v FROM emb WHERE k IN ({','.join('?' * len(part))})"
            for k, v in self._db.execute(q, part):
                vec = np.frombuffer(v, dtype=np.float32)
                if vec.shape[0] != self.dim:
                    continue  # stale entry from another dimension: re-embed
                for i in where[k]:
                    rows[i] = vec
                    found[i] = True
        return found, rows

    def put(self, texts: list[str], rows: np.ndarray, lang: str | None = None) -> None:
        rows = np.ascontiguousarray(rows, dtype=np.float32)
        data = [(_key(t, lang), rows[i].tobytes()) for i, t in enumerate(texts)]
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO emb (k, v) VALUES (?, ?)", data)
