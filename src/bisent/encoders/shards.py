"""Vector shards: fp16 ``.npy`` files plus ``manifest.json``, written by streaming a text file.

Layout of a vectors folder::

    manifest.json        format, encoder id, dim, language, input checksum, shards, rejected lines
    shard-00000.npy      (rows, dim) float16, rows in input-line order
    shard-00001.npy      ...

Every input line gets exactly one row, so row ``i`` is line ``i + 1``. A line
that cannot be embedded (empty; and with ``on_bad="keep"`` also undecodable,
NUL bytes, tabs, lone CRs, over-long, or a non-finite vector from the encoder) gets an all-zero row and an entry in the
manifest's ``rejected`` list with its line number and reason; mining never
pairs a zero row. With ``on_bad="error"`` (the default) such a line other than
an empty one stops the run with ``FILE:LINE: problem``.

Resuming: the folder is a :class:`bisent.state.StateDir` whose fingerprint is
the input's checksum, the encoder and the settings; each finished shard is
recorded in ``.progress.json``. A rerun of the same command keeps the shards
whose checksums still match and embeds the rest; a folder of another input or
settings (finished or not) is refused unless ``force`` (``--force``). Shard files are deterministic,
so a resumed run ends with the same bytes as an uninterrupted one.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import mmap
import os
from pathlib import Path
from typing import Iterator

import numpy as np

from ..errors import BisentError, where
from ..io import MAX_LINE_BYTES, atomic_write, check_readable, file_sha256, read_lines
from ..progress import progress_bar
from ..safeload import read_json
from ..state import StateDir
from .base import Encoder

FORMAT = "bisent-vectors/1"
MANIFEST = "manifest.json"
PROGRESS = ".progress.json"
SHARD_ROWS = 50_000
NON_FINITE = "the encoder gave a non-finite (NaN or infinite) vector"


def _shard_name(i: int) -> str:
    return f"shard-{i:05d}.npy"


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def _save_npy_atomic(path: Path, array: np.ndarray) -> str:
    """Write ``array`` as .npy via a temp file + rename; return the file's SHA-256."""
    with atomic_write(path, "wb") as f:
        np.save(f, array, allow_pickle=False)
    return _sha256_file(path)


def _write_json_atomic(path: Path, obj: dict) -> None:
    with atomic_write(path) as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")


def _drop_pages(arr: np.ndarray) -> None:
    """Unmap the resident pages of a read-only memory-mapped shard once it has been streamed.

    The pages of a file mapping count in the process's RSS for as long as they stay mapped; without
    this, one pass over 1M × 512 fp16 vectors leaves 1 GB resident. The data stay in the page cache
    (and on disk): a later read faults them back in, so this changes memory, never results.
    """
    mm = getattr(arr, "_mmap", None)
    if mm is not None and hasattr(mm, "madvise") and hasattr(mmap, "MADV_DONTNEED"):
        try:
            mm.madvise(mmap.MADV_DONTNEED)
        except (OSError, ValueError):
            pass


class Shards:
    """Read side of a vectors folder: validated manifest, row count, blocks, memory maps."""

    def __init__(self, folder):
        self.folder = Path(folder)
        path = self.folder / MANIFEST
        if not path.is_file():
            raise BisentError(f"{path}: missing (not a bisent vectors folder; make one with `bisent embed`)")
        self.manifest = read_json(path, "a bisent vectors folder")
        if not isinstance(self.manifest, dict):
            raise BisentError(f"{path}: expected a JSON object")
        m = self.manifest
        for key in ("format", "encoder", "dim", "shards", "rows", "lang"):
            if key not in m:
                raise BisentError(f"{path}: no '{key}' key")
        if m["format"] != FORMAT:
            raise BisentError(f"{path}: format '{m['format']}', expected '{FORMAT}'")
        self.dim = int(m["dim"])
        self.encoder_id = m["encoder"]
        self.lang = m["lang"]
        self._arrays: list[np.ndarray] = []
        total = 0
        if not isinstance(m["shards"], list) or not all(
                isinstance(s, dict) and isinstance(s.get("file"), str) and Path(s["file"]).name == s["file"]
                and isinstance(s.get("rows"), int) and isinstance(s.get("sha256"), str) for s in m["shards"]):
            raise BisentError(f"{path}: 'shards' must list {{file, rows, sha256}} of files in {self.folder}")
        for s in m["shards"]:
            f = self.folder / s["file"]
            if not f.is_file():
                raise BisentError(f"{f}: shard listed in {path} is missing")
            try:
                arr = np.load(f, mmap_mode="r", allow_pickle=False)
            except (ValueError, OSError) as e:
                raise BisentError(f"{f}: not a readable .npy file ({e})") from None
            if arr.dtype != np.float16 or arr.ndim != 2 or arr.shape != (s["rows"], self.dim):
                raise BisentError(f"{f}: holds {arr.dtype} {arr.shape}, but {path} says float16 ({s['rows']}, "
                                  f"{self.dim})")
            self._arrays.append(arr)
            total += arr.shape[0]
        if total != m["rows"]:
            raise BisentError(f"{path}: shards hold {total} rows, manifest says {m['rows']}")
        self.rejected_rows = np.array([r["line"] - 1 for r in m.get("rejected", [])], dtype=np.int64)

    def __len__(self) -> int:
        return int(self.manifest["rows"])

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self), self.dim)

    def verify(self) -> None:
        """Check every shard's SHA-256 against the manifest (reads all the bytes)."""
        for s in self.manifest["shards"]:
            f = self.folder / s["file"]
            if _sha256_file(f) != s["sha256"]:
                raise BisentError(f"{f}: checksum does not match {self.folder / MANIFEST}")

    def check_lang(self, lang: str) -> None:
        """Raise if these vectors were embedded for another language than ``lang``."""
        if self.lang != lang:
            raise BisentError(f"{self.folder / MANIFEST}: vectors embedded as language '{self.lang}', "
                              f"not '{lang}' (embed the file again with -l {lang})")

    def check_input(self, path) -> None:
        """Raise if these vectors were not made from the file at ``path`` (by checksum)."""
        want = self.manifest.get("input", {}).get("sha256")
        if want and file_sha256(path) != want:
            raise BisentError(f"{self.folder / MANIFEST}: made from another input than {path} (checksum differs)")

    def valid_mask(self) -> np.ndarray:
        """(rows,) bool: False for rejected (all-zero) rows."""
        mask = np.ones(len(self), dtype=bool)
        mask[self.rejected_rows] = False
        return mask

    def blocks(self, rows: int) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(start_row, float16 block)`` of at most ``rows`` rows, streaming across shards."""
        start = 0
        pending: list[np.ndarray] = []
        have = 0
        for arr in self._arrays:
            pos = 0
            while pos < arr.shape[0]:
                take = min(rows - have, arr.shape[0] - pos)
                pending.append(arr[pos:pos + take])
                have += take
                pos += take
                if have == rows:
                    yield start, np.concatenate(pending) if len(pending) > 1 else np.asarray(pending[0])
                    start += have
                    pending, have = [], 0
            _drop_pages(arr)
        if have:
            yield start, np.concatenate(pending) if len(pending) > 1 else np.asarray(pending[0])

    def load(self) -> np.ndarray:
        """All rows as one float16 array in memory ``(rows, dim)``."""
        if not self._arrays:
            return np.zeros((0, self.dim), dtype=np.float16)
        return np.concatenate([np.asarray(a) for a in self._arrays])


def encode_in_order(encoder: Encoder, lang: str, items: Iterator[tuple[object, list[str]]]):
    """``(item, vectors (len(texts), dim) float32)`` for each ``(item, texts)``, here, one after another.

    :func:`embed_file` encodes its shards through this or an equivalent (``encode_map``), e.g.
    :meth:`bisent.cluster.ray_embed.EncoderPool.encode_in_order` on Ray workers.
    """
    for item, texts in items:
        yield item, encode_texts(encoder, texts, lang)


def encode_texts(encoder: Encoder, texts: list[str], lang: str) -> np.ndarray:
    """``encoder.encode(texts)`` (n, dim) float32, and (0, dim) for no texts without calling the encoder."""
    if not texts:
        return np.zeros((0, encoder.dim), dtype=np.float32)
    return encoder.encode(texts, lang, progress=False)


def embed_file(input_path, lang: str, encoder: Encoder, out_dir, *, shard_rows: int = SHARD_ROWS,
               on_bad: str = "error", max_bytes: int = MAX_LINE_BYTES, force: bool = False,
               progress: bool | None = None, encode_map=None) -> Shards:
    """Stream a one-sentence-per-line file (plain/.gz/.xz) into fp16 shards in ``out_dir``; resumable.

    Returns the :class:`Shards` of the finished folder. See the module docstring
    for what empty and bad lines become. ``encode_map(lang, items)``: how the
    shards' sentences are encoded, in order (default :func:`encode_in_order` with
    ``encoder``); each shard is one call of ``encoder.encode``, wherever it runs,
    so the shard files are the same bytes.
    """
    input_path = check_readable(input_path)
    lang = encoder.check_lang(lang)
    out = Path(out_dir)
    sha = file_sha256(input_path)    # first: an input that cannot be read leaves no folder behind
    header = {
        "format": FORMAT, "encoder": encoder.id, "encoder_name": encoder.name, "dim": int(encoder.dim),
        "lang": lang, "dtype": "float16", "shard_rows": int(shard_rows), "on_bad": on_bad,
        "input": {"name": input_path.name, "sha256": sha},
    }
    # the folder is the output and its own resume state: a link, a file or a user's folder is refused; vectors or
    # unfinished shards of another input or settings too, unless ``force`` (stale shards are then deleted here)
    store = StateDir(out, "vectors", what="vectors", remedy="use --force to replace them",
                     ignore=[input_path.name] if input_path.parent.resolve() == out.resolve() else [])
    resumed = store.open(inputs={"input": header["input"]},
                         settings={k: v for k, v in header.items() if k != "input"}, restart=force)
    final = out / MANIFEST
    if resumed and final.is_file():
        return Shards(out)  # already done: same input, encoder, settings

    done: list[dict] = []
    rejected: list[dict] = []
    prog_path = out / PROGRESS
    prog = store.read_json(PROGRESS) if resumed else None
    if prog and all(prog.get(k) == v for k, v in header.items()):
        for s in prog.get("shards", []):
            f = out / s["file"]
            if f.is_file() and _sha256_file(f) == s["sha256"]:
                done.append(s)
            else:
                break
        limit = len(done) * shard_rows
        rejected = [r for r in prog.get("rejected", []) if r["line"] <= limit]
    skip = len(done) * shard_rows

    lines = read_lines(input_path, on_bad=on_bad, max_bytes=max_bytes)
    lines = itertools.islice(lines, skip, None)
    rows_done = skip

    def chunks():
        while chunk := list(itertools.islice(lines, shard_rows)):
            yield chunk, [ln.text for ln in chunk if ln.problem is None]

    encode_map = encode_map or (lambda lang, items: encode_in_order(encoder, lang, items))
    with progress_bar(progress, desc=f"embed {input_path.name}", unit="line", initial=skip) as bar:
        for chunk, vecs in encode_map(lang, chunks()):
            ok = [i for i, ln in enumerate(chunk) if ln.problem is None]
            block = np.zeros((len(chunk), encoder.dim), dtype=np.float16)
            problems = {i: ln.problem for i, ln in enumerate(chunk) if ln.problem}
            if ok:
                for j in np.flatnonzero(~np.isfinite(vecs).all(axis=1)):  # never a NaN row, silently or not
                    lineno = chunk[ok[j]].lineno
                    if on_bad == "error":
                        raise BisentError(f"{where(input_path, lineno)}: {NON_FINITE} (a broken model?)")
                    problems[ok[j]] = NON_FINITE
                    vecs[j] = 0.0
                block[ok] = vecs.astype(np.float16)
            rejected += [{"line": chunk[i].lineno, "reason": problems[i]} for i in sorted(problems)]
            name = _shard_name(len(done))
            digest = _save_npy_atomic(out / name, block)
            done.append({"file": name, "rows": len(chunk), "sha256": digest})
            rows_done += len(chunk)
            store.write_json(PROGRESS, {**header, "shards": done, "rejected": rejected}, indent=1)
            bar.update(len(chunk))
    if rows_done == 0:
        raise BisentError(f"{input_path}: file is empty")
    # Remove shards of an earlier, longer run that are not part of this result.
    listed = {s["file"] for s in done}
    for f in out.glob("shard-*.npy"):
        if f.name not in listed:
            f.unlink()
    manifest = {**header, "rows": rows_done, "shards": done, "rejected": rejected}
    _write_json_atomic(final, manifest)
    if prog_path.exists():
        os.unlink(prog_path)
    return Shards(out)


def as_array(vectors) -> np.ndarray:
    """An array view of ``vectors`` (a NumPy array or :class:`Shards`) without copying arrays."""
    if isinstance(vectors, Shards):
        return vectors.load()
    return np.asarray(vectors)


def iter_blocks(vectors, rows: int) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(start_row, block)`` of at most ``rows`` rows of an array, :class:`Shards` or :class:`RowView`,
    in the stored dtype (fp16 stays fp16: readers convert one block at a time)."""
    if hasattr(vectors, "blocks"):
        yield from vectors.blocks(rows)
    else:
        for s in range(0, vectors.shape[0], rows):
            yield s, vectors[s:s + rows]


class RowView:
    """Some rows (ascending) of an array or :class:`Shards`, read block by block: nothing is loaded whole.

    Row ``i`` of the view is row ``rows[i]`` of ``vectors``. Mining uses it to
    skip rejected and repeated lines of a vectors folder without a copy.
    """

    def __init__(self, vectors, rows: np.ndarray):
        self.vectors = vectors
        self.rows = np.asarray(rows, dtype=np.int64)                          # (r,)
        if len(self.rows) and (np.any(np.diff(self.rows) <= 0) or self.rows[0] < 0
                               or self.rows[-1] >= vectors.shape[0]):
            raise ValueError("RowView rows must be ascending, distinct and inside the vectors")
        self.dim = int(vectors.shape[1])

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self.rows), self.dim)

    def blocks(self, rows: int) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(start, block)`` of at most ``rows`` chosen rows, streaming over the underlying blocks."""
        pending: list[np.ndarray] = []
        have = start = pos = 0
        for s, block in iter_blocks(self.vectors, rows):
            stop = int(np.searchsorted(self.rows, s + len(block)))
            if stop > pos:
                pending.append(block[self.rows[pos:stop] - s])
                have += stop - pos
                pos = stop
            while have >= rows:
                joined = np.concatenate(pending) if len(pending) > 1 else pending[0]
                yield start, joined[:rows]
                start += rows
                have -= rows
                pending = [joined[rows:]] if have else []
        if have:
            yield start, np.concatenate(pending) if len(pending) > 1 else pending[0]


def flatten_rows(vectors) -> tuple[object, np.ndarray | None]:
    """``(base, rows)``: the array or :class:`Shards` under ``vectors`` (RowViews unwrapped) and the rows of it
    that ``vectors`` are (None: all)."""
    if isinstance(vectors, RowView):
        base, rows = flatten_rows(vectors.vectors)
        return base, vectors.rows if rows is None else rows[vectors.rows]
    return vectors, None


def vectors_sha256(vectors) -> str:
    """What ``vectors`` are, as a SHA-256: a vectors folder's shard checksums and the rows taken of it (nothing
    read), or an array's dtype and bytes (streamed a block at a time)."""
    import hashlib
    import json

    base, rows = flatten_rows(vectors)
    h = hashlib.sha256()
    if isinstance(base, Shards):
        h.update(json.dumps([s["sha256"] for s in base.manifest["shards"]]).encode())
        h.update(np.ascontiguousarray(rows if rows is not None else np.arange(len(base)), dtype=np.int64).tobytes())
        return h.hexdigest()
    for i, (_, b) in enumerate(iter_blocks(vectors, 65536)):
        if i == 0:
            h.update(str(b.dtype).encode())
        h.update(np.ascontiguousarray(b).tobytes())
    return h.hexdigest()


def select_rows(vectors, rows: np.ndarray | None):
    """``vectors`` itself when ``rows`` is None or every row in order, else a :class:`RowView`."""
    if rows is None or (len(rows) == vectors.shape[0] and np.array_equal(rows, np.arange(len(rows)))):
        return vectors
    return RowView(vectors, rows)


#: sentences embedded per call when building fp16 vectors in memory: bounds the float32 working set
#: (about 3 × chunk × dim × 4 bytes inside ``Encoder.encode``) to less than one kNN tile
ENCODE_CHUNK = 2048


def encode_fp16(encoder: Encoder, texts: list[str], lang: str, *, chunk: int = ENCODE_CHUNK,
                progress: bool | None = None) -> np.ndarray:
    """Embed ``texts`` into a float16 ``(n, dim)`` array, ``chunk`` sentences at a time.

    The same rows as ``encoder.encode(texts).astype(float16)`` (the encoder's cache
    makes them identical), without ever holding all of them in float32.
    """
    out = np.zeros((len(texts), encoder.dim), dtype=np.float16)
    with progress_bar(progress, total=len(texts), desc=f"embed {lang} ({encoder.name})", unit="sent",
                      leave=False) as bar:
        for s in range(0, len(texts), chunk):
            out[s:s + chunk] = encoder.encode(texts[s:s + chunk], lang, progress=False)
            bar.update(min(chunk, len(texts) - s))
    return out
