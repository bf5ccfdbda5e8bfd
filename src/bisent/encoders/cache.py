"""A persistent embedding cache: one SQLite file per encoder id, keyed by (language,) text.

It lives in ``$BISENT_CACHE/embeddings`` (or ``$BISENT_EMBED_CACHE`` when set);
``bisent cache info`` shows it, ``bisent cache clear`` empties it.

No sentence is embedded twice across runs. Rows are stored as **float16**
(2 bytes per dimension, like the vector shards of ``bisent embed``): a cached
row is the fresh float32 unit row rounded to float16 (relative error below
2**-11 per component). So that a run gives the same numbers whether a row came
from the cache or not, :meth:`Encoder.encode` rounds its fresh rows the same
way whenever the cache is on and scales every row back to unit length (bit for
bit the same either way); with the cache off (``BISENT_NO_EMBED_CACHE=1``)
rows are exact float32.
Each row is stored with a 7-byte check (a BLAKE2b of the row keyed by its text's key): a row that fails it
(written for another text, swapped, damaged) is not used but embedded again, with one warning. Entries of
older versions (fp16 or float32 blobs without a check) are read, rounded alike, and replaced when rewritten.

Size cap: ``BISENT_CACHE_MAX_MB`` (default 4096) bounds each encoder's file;
when a write takes it over the cap, the oldest-written entries are deleted
until it is under 90 % of the cap (first in, first out; the freed pages are
reused by later writes). An unusable cache (read-only, locked, corrupt) gives
one warning and the run goes on without it.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import sys
import threading
from pathlib import Path

import numpy as np

from ..cache import cache_dir
from ..errors import BisentError

_CHUNK = 500  # SQLite host-parameter limit is 999 on old builds
DEFAULT_MAX_MB = 4096
#: SQLite page of a new cache file: 4 KB pages hold one 2 KB fp16 row of 1024 dims each (half empty);
#: 16 KB pages hold seven
PAGE_SIZE = 16384
_WARNED: set[str] = set()
_BAD_ROWS: set[str] = set()


def cache_folder() -> Path:
    """The folder of the embedding cache files (created if missing)."""
    env = os.environ.get("BISENT_EMBED_CACHE")
    if env:
        Path(env).mkdir(parents=True, exist_ok=True)
        return Path(env)
    return cache_dir("embeddings")


def enabled() -> bool:
    """Whether the persistent cache is on (``BISENT_NO_EMBED_CACHE`` unset, empty or ``0``)."""
    return os.environ.get("BISENT_NO_EMBED_CACHE", "") in ("", "0")


def max_bytes() -> int:
    """The cap on one encoder's cache file, from ``BISENT_CACHE_MAX_MB`` (MB of 10**6 bytes)."""
    raw = os.environ.get("BISENT_CACHE_MAX_MB", "")
    if not raw:
        return DEFAULT_MAX_MB * 10**6
    try:
        mb = float(raw)
    except ValueError:
        mb = float("nan")
    if not (mb > 0 and mb < float("inf")):
        raise BisentError(f"BISENT_CACHE_MAX_MB={raw!r}: expected a positive number of megabytes")
    return int(mb * 10**6)


def _key(text: str, lang: str | None) -> bytes:
    data = text if lang is None else f"{lang}\t{text}"
    return hashlib.blake2b(data.encode("utf-8"), digest_size=16).digest()


#: bytes of a row's check: odd, so that a checked fp16 row (2 * dim + 7 bytes) is never taken for an older
#: entry (2 * dim or 4 * dim bytes)
CHECK_BYTES = 7


def _check(k: bytes, row: bytes) -> bytes:
    """The check stored after a row: ties the row to the text it was computed for."""
    return hashlib.blake2b(row, digest_size=CHECK_BYTES, key=k).digest()


def _warn_once(path: Path, error: Exception) -> None:
    if str(path) not in _WARNED:
        _WARNED.add(str(path))
        print(f"bisent: warning: embedding cache {path} is unusable ({error}); continuing without it",
              file=sys.stderr)


def used_bytes(db: sqlite3.Connection) -> int:
    """Bytes of the pages in use (the file's size less its free pages)."""
    pages = db.execute("PRAGMA page_count").fetchone()[0] - db.execute("PRAGMA freelist_count").fetchone()[0]
    return pages * db.execute("PRAGMA page_size").fetchone()[0]


class EmbeddingCache:
    """``get(texts) -> (found_mask, rows)``, ``has(texts) -> found_mask`` and ``put(texts, rows)`` for one encoder
    id and dimension.

    ``dtype``: how rows are stored, ``float16`` (the default) or ``float32`` (the encoders read from the user's
    files, whose rows must equal their own library's output; an id is always stored one way)."""

    def __init__(self, encoder_id: str, dim: int, path=None, dtype: str = "float16"):
        if dtype not in ("float16", "float32"):
            raise ValueError(f"cache dtype {dtype!r}: float16 or float32")
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", encoder_id)[:120]
        suffix = "-f32" if dtype == "float32" else ""
        name = f"{safe}-{hashlib.sha1(encoder_id.encode()).hexdigest()[:8]}{suffix}.sqlite"
        self.dim = dim
        self.dtype = dtype
        self.code = "<f2" if dtype == "float16" else "<f4"
        self.width = 2 if dtype == "float16" else 4
        self.cap = max_bytes()
        self.broken = False
        self._local = threading.local()
        try:
            self.path = Path(path) if path else cache_folder() / name
        except OSError as e:  # the cache folder cannot be made
            self.path = Path(os.environ.get("BISENT_EMBED_CACHE") or "embeddings") / name
            self._fail(e)

    @property
    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=60)
            try:
                db.execute(f"PRAGMA page_size={PAGE_SIZE}")  # takes effect only in a new file
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                db.execute("CREATE TABLE IF NOT EXISTS emb (k BLOB PRIMARY KEY, v BLOB NOT NULL)")
            except sqlite3.Error:
                db.close()
                raise
            self._local.db = db
        return db

    def _fail(self, error: Exception) -> None:
        self.broken = True
        _warn_once(self.path, error)

    def _select(self, texts: list[str], lang: str | None, column: str):
        """Yield ``(positions in texts, column value)`` for every text the file holds; ``column`` is an SQL
        expression over the row ``v`` (raises :class:`sqlite3.Error`)."""
        where: dict[bytes, list[int]] = {}
        for i, t in enumerate(texts):
            where.setdefault(_key(t, lang), []).append(i)
        uniq = list(where)
        for s in range(0, len(uniq), _CHUNK):
            part = uniq[s:s + _CHUNK]
            for k, v in self._db.execute(f"SELECT k, {column} FROM emb WHERE k IN ({','.join('?' * len(part))})", part):
                yield k, where[k], v

    def get(self, texts: list[str], lang: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(found (n,) bool, rows (n, dim) float32 holding float16 values, or float32 ones with
        dtype float32)``; missing rows are zero."""
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        found = np.zeros(len(texts), dtype=bool)
        if self.broken:
            return found, rows
        bad = 0
        try:
            for k, at, v in self._select(texts, lang, "v"):
                if len(v) == self.width * self.dim + CHECK_BYTES:
                    row, check = v[:-CHECK_BYTES], v[-CHECK_BYTES:]
                    if check != _check(k, row):
                        bad += len(at)
                        continue          # another text's row, or damaged: embedded again
                    vec = np.frombuffer(row, dtype=self.code).astype(np.float32)
                elif self.width == 4:
                    continue              # a float32 cache holds checked rows only
                elif len(v) == 2 * self.dim:  # an fp16 entry of an older version, without a check
                    vec = np.frombuffer(v, dtype="<f2").astype(np.float32)
                elif len(v) == 4 * self.dim:  # a float32 entry of an older version, rounded alike
                    vec = np.frombuffer(v, dtype="<f4").astype(np.float16).astype(np.float32)
                else:
                    continue  # stale entry from another dimension: re-embed
                rows[at] = vec
                found[at] = True
        except sqlite3.Error as e:
            self._fail(e)
            found[:] = False
            rows[:] = 0.0
        if bad and str(self.path) not in _BAD_ROWS:
            _BAD_ROWS.add(str(self.path))
            print(f"bisent: warning: embedding cache {self.path}: {bad} row(s) fail their check (written for "
                  "another text, or damaged); embedding them again", file=sys.stderr)
        return found, rows

    def has(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        """``(n,)`` bool: which of ``texts`` :meth:`get` would find, without reading or converting the rows."""
        found = np.zeros(len(texts), dtype=bool)
        if self.broken:
            return found
        try:
            for _, at, size in self._select(texts, lang, "length(v)"):
                found[at] = size in ((4 * self.dim + CHECK_BYTES,) if self.width == 4 else
                                     (2 * self.dim + CHECK_BYTES, 2 * self.dim, 4 * self.dim))
        except sqlite3.Error as e:
            self._fail(e)
            found[:] = False
        return found

    def put(self, texts: list[str], rows: np.ndarray, lang: str | None = None) -> None:
        """Store ``rows`` (n, dim) as float16 (float32 with dtype float32); rows that are not finite are never
        stored."""
        if self.broken:
            return
        half = np.ascontiguousarray(rows, dtype=self.code)
        ok = np.isfinite(half).all(axis=1)
        data = []
        for i, t in enumerate(texts):
            if ok[i]:
                k, row = _key(t, lang), half[i].tobytes()
                data.append((k, row + _check(k, row)))
        try:
            with self._db:
                self._db.executemany("INSERT OR REPLACE INTO emb (k, v) VALUES (?, ?)", data)
            self._evict()
        except sqlite3.Error as e:
            self._fail(e)

    def _evict(self) -> None:
        """Delete the oldest-written entries while the file is over the cap (down to 90 % of it)."""
        db = self._db
        used = used_bytes(db)
        if used <= self.cap:
            return
        n = db.execute("SELECT count(*) FROM emb").fetchone()[0]
        if not n:
            return
        drop = min(n, int((used - 0.9 * self.cap) / (used / n)) + 1)
        with db:
            db.execute("DELETE FROM emb WHERE rowid IN (SELECT rowid FROM emb ORDER BY rowid LIMIT ?)", (drop,))


def cache_files() -> list[Path]:
    """The encoder cache files in :func:`cache_folder`."""
    return sorted(cache_folder().glob("*.sqlite"))


#: the sub-folder of :func:`cache_folder` holding teacher-mined hard negatives of training runs
#: (:func:`bisent.training.objectives.dual.hard_cache_file`)
HARD_NEGATIVES = "hard-negatives"


def hard_negative_files() -> list[Path]:
    """The cached hard-negative files (one per training collection and teacher)."""
    folder = cache_folder() / HARD_NEGATIVES
    return sorted(folder.glob("*.safetensors")) if folder.is_dir() else []


def file_info(path: Path) -> dict:
    """Entries, bytes on disk (with the write-ahead log) and bytes in use of one cache file."""
    disk = sum(p.stat().st_size for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists())
    info = {"file": path.name, "bytes": disk}
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            info["entries"] = db.execute("SELECT count(*) FROM emb").fetchone()[0]
            info["used_bytes"] = used_bytes(db)
        finally:
            db.close()
    except sqlite3.Error as e:
        info["error"] = str(e)
    return info


def clear(pattern: str | None = None) -> list[Path]:
    """Remove the cache files whose name holds ``pattern`` (all when None, the hard negatives too; a hard-negative
    file's name is ``hard-negatives/KEY.safetensors``); return them."""
    gone = []
    for path in cache_files():
        if pattern is None or pattern in path.name:
            for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
                if p.exists():
                    p.unlink()
            gone.append(path)
    for path in hard_negative_files():
        if pattern is None or pattern in f"{HARD_NEGATIVES}/{path.name}":
            path.unlink(missing_ok=True)
            gone.append(path)
    return gone
