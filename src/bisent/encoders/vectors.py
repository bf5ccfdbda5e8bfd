"""Vectors computed elsewhere (LASER, SONAR, a GPU job), read from files, as vecalign reads them.

A card, ``vectors.json`` (in a folder given as ``-e FOLDER``, or any ``.json`` file given as ``-e CARD``), pairs
each text file with its vectors; paths are relative to the card::

    {"name": "laser3", "dim": 1024, "languages": "any",
     "files": [{"text": "en.txt", "vectors": "en.npy"},
               {"text": "de.txt", "vectors": "de.f32", "dtype": "float32", "lang": "de"},
               {"text": "fr.txt", "vectors": "vectors/fr"}]}

- ``.npy``: a 2-D float array, read with ``allow_pickle=False`` (an object array is refused, never unpickled);
- a folder: the fp16 shards of ``bisent embed``;
- anything else: raw little-endian rows of ``dtype`` (``float32``, the default, or ``float16``) and ``dim``
  columns, the layout of vecalign's and LASER's embedding files.

Line ``i`` of a text file (one text a line, UTF-8) is row ``i`` of its vectors; the row count and the dimension are
checked against the text when the card is read. The encoder then looks every sentence up by its text (spaces
collapsed; ``lang`` limits an entry to one language): a text without a vector is a one-line error, so an aligner
needs the overlaps of consecutive sentences in the text files, as vecalign does. Nothing is embedded and nothing
is cached; the encoder's ``id`` holds a hash of every file, so the embedding cache never mixes two sets.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from ..errors import BisentError, where
from .base import Encoder, l2_normalise
from .files import VECTOR_CARD, files_hash, json_or_none, parse_languages

CARD_KEYS = {"name", "dim", "languages", "files", "dtype"}
ENTRY_KEYS = {"text", "vectors", "dtype", "lang"}
DTYPES = {"float32": "<f4", "float16": "<f2"}


def _key(text: str) -> str:
    return " ".join(text.split())


def read_texts(path: Path) -> list[str]:
    """The lines of a UTF-8 text file (one text a line; ``\\r\\n`` endings allowed)."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise BisentError(f"{path}: cannot be read ({e.strerror or e})") from None
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    out = []
    for i, raw in enumerate(lines, 1):
        try:
            out.append(raw.decode("utf-8").removesuffix("\r"))
        except UnicodeDecodeError:
            raise BisentError(f"{where(path, i)}: not UTF-8") from None
    return out


def read_vectors(path: Path, dim: int | None, dtype: str | None) -> np.ndarray:
    """The ``(rows, dim)`` array stored at ``path`` (memory-mapped where it can be); one-line errors."""
    if path.is_dir():
        from .shards import Shards

        arr = Shards(path).load()
    elif not path.is_file():
        raise BisentError(f"{path}: vectors file missing")
    elif path.suffix == ".npy":
        try:
            arr = np.load(path, mmap_mode="r", allow_pickle=False)
        except ValueError as e:
            if "allow_pickle" in str(e) or "object" in str(e).lower():
                raise BisentError(f"{path}: holds Python objects (a pickle), which bisent never loads; save a float "
                                  "array (np.save(path, vectors.astype(np.float32)))") from None
            raise BisentError(f"{path}: not a readable .npy file ({' '.join(str(e).split())})") from None
        except OSError as e:
            raise BisentError(f"{path}: not a readable .npy file ({e})") from None
        if arr.dtype.kind != "f" or arr.ndim != 2:
            raise BisentError(f"{path}: holds {arr.dtype} {arr.shape}; expected a 2-D float array (rows, dim)")
    else:
        if dim is None:
            raise BisentError(f"{path}: raw vectors need the dimension: give \"dim\" in the card")
        code = DTYPES[dtype or "float32"]
        width = np.dtype(code).itemsize * dim
        size = path.stat().st_size
        if size % width:
            raise BisentError(f"{path}: {size} bytes is not a whole number of {dtype or 'float32'} rows of {dim} "
                              f"dimensions ({width} bytes a row): wrong dimension or dtype?")
        arr = np.memmap(path, dtype=code, mode="r", shape=(size // width, dim)) if size else np.zeros((0, dim))
    if dim is not None and arr.shape[1] != dim:
        raise BisentError(f"{path}: rows of {arr.shape[1]} dimensions, but the card says dim {dim}")
    return arr


class VectorTable(Encoder):
    """Looks sentences up in vectors read from files (see the module docstring)."""

    cacheable = False
    batch_size = 4096

    def __init__(self, entries: list[dict], *, name: str, dim: int | None = None, languages=None,
                 source: Path | None = None):
        self.source = source
        self.name = name
        card_dim = dim
        self._arrays: list[np.ndarray] = []
        self._where: dict[tuple[str | None, str], tuple[int, int]] = {}
        conflicts = 0
        files = []
        for entry in entries:
            text_path, vec_path = Path(entry["text"]), Path(entry["vectors"])
            texts = read_texts(text_path)
            arr = read_vectors(vec_path, card_dim, entry.get("dtype"))
            dim = dim or int(arr.shape[1])
            if arr.shape[1] != dim:
                raise BisentError(f"{vec_path}: rows of {arr.shape[1]} dimensions, but {entries[0]['vectors']} has "
                                  f"{dim}")
            if arr.shape[0] != len(texts):
                raise BisentError(f"{vec_path}: {arr.shape[0]} rows, but {text_path} has {len(texts)} lines (row i "
                                  "is the vector of line i)")
            n = len(self._arrays)
            self._arrays.append(arr)
            lang = entry.get("lang")
            for i, t in enumerate(texts):
                key = (lang, _key(t))
                old = self._where.setdefault(key, (n, i))
                if old != (n, i) and not np.allclose(self._arrays[old[0]][old[1]], arr[i], atol=1e-3):
                    conflicts += 1
            files += [text_path, vec_path]
        if dim is None:
            raise BisentError(f"{source}: no vectors (an empty \"files\" list)")
        if conflicts:
            print(f"bisent: warning: {source}: {conflicts} text(s) appear more than once with other vectors; the "
                  "first one's vector is used", file=sys.stderr)
        self.dim = int(dim)
        self.languages = languages
        digest_files = [p for f in files for p in (sorted(f.rglob("*")) if f.is_dir() else [f]) if p.is_file()]
        root = source.parent if source is not None else Path.cwd()
        self.id = f"vectors/{name}-{files_hash(root, [source, *digest_files] if source else digest_files)}"

    @classmethod
    def from_card(cls, path) -> "VectorTable":
        """The table a ``vectors.json`` card describes (``path``: the card, or the folder holding it)."""
        card_path = Path(path) / VECTOR_CARD if Path(path).is_dir() else Path(path)
        card = json_or_none(card_path)
        if not isinstance(card, dict) or not isinstance(card.get("files"), list):
            raise BisentError(f"{card_path}: not a vectors card (a JSON object with \"files\": [{{\"text\": ..., "
                              "\"vectors\": ...}, ...])")
        unknown = set(card) - CARD_KEYS
        if unknown:
            raise BisentError(f"{card_path}: unknown key(s) {', '.join(sorted(unknown))}")
        dim = card.get("dim")
        if dim is not None and not (isinstance(dim, int) and not isinstance(dim, bool) and dim >= 1):
            raise BisentError(f"{card_path}: dim must be a whole number >= 1")
        entries = []
        for i, e in enumerate(card["files"], 1):
            if not isinstance(e, dict) or not isinstance(e.get("text"), str) or not isinstance(e.get("vectors"), str):
                raise BisentError(f"{card_path}: files[{i}] needs \"text\" and \"vectors\" paths")
            if set(e) - ENTRY_KEYS:
                raise BisentError(f"{card_path}: files[{i}]: unknown key(s) {', '.join(sorted(set(e) - ENTRY_KEYS))}")
            dtype = e.get("dtype", card.get("dtype"))
            if dtype is not None and dtype not in DTYPES:
                raise BisentError(f"{card_path}: files[{i}]: dtype {dtype!r}, expected float32 or float16")
            if "lang" in e and not (isinstance(e["lang"], str) and e["lang"].strip()):
                raise BisentError(f"{card_path}: files[{i}]: lang must be a language code")
            entries.append({"text": card_path.parent / e["text"], "vectors": card_path.parent / e["vectors"],
                            "dtype": dtype, "lang": _norm_lang(e.get("lang"))})
        langs = card.get("languages")
        if langs is None and entries and all(e["lang"] for e in entries):
            langs = sorted({e["lang"] for e in entries})
        name = card.get("name") if isinstance(card.get("name"), str) else (
            card_path.parent.name if card_path.name == VECTOR_CARD else card_path.stem)
        return cls(entries, name=name, dim=dim, languages=parse_languages(langs, card_path), source=card_path)

    def embed_batch(self, sentences, lang):
        out = np.zeros((len(sentences), self.dim), dtype=np.float32)
        for r, s in enumerate(sentences):
            key = _key(s)
            at = self._where.get((lang, key)) or self._where.get((None, key))
            if at is None:
                if not key:
                    continue   # an empty text: a zero row, as bisent gives every empty line
                raise BisentError(f"{self.source}: no vector for the {lang} text {s[:60]!r} (the card's text files "
                                  f"hold {len(self._where)} texts; embed this one too)")
            out[r] = self._arrays[at[0]][at[1]]
        if not np.isfinite(out).all():
            raise BisentError(f"{self.source}: a non-finite (NaN or infinite) vector for the {lang} text "
                              f"{sentences[int(np.flatnonzero(~np.isfinite(out).all(axis=1))[0])][:60]!r}")
        return l2_normalise(out)


def _norm_lang(code):
    from ..langcodes import normalise_lang

    return normalise_lang(code) if code else None
