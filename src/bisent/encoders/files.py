"""Reading the files of a user's encoder: JSON cards, declared languages, the hash of a model's files."""

from __future__ import annotations

import hashlib
from pathlib import Path

from ..errors import BisentError
from ..langcodes import normalise_lang

#: the card of vectors read from files (:mod:`bisent.encoders.vectors`)
VECTOR_CARD = "vectors.json"


def json_or_none(path: Path):
    """The JSON value of ``path``, None when there is no such file (one-line errors for a broken one)."""
    from ..safeload import read_json

    return read_json(path) if path.is_file() else None


def parse_languages(value, source) -> frozenset[str] | None:
    """A card's languages: ``"any"`` (None) or a list of codes (a set of normalised codes)."""
    if value == "any" or value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
        raise BisentError(f"{source}: languages must be \"any\" or a list of language codes")
    codes = {normalise_lang(v) for v in value} - {"multilingual"}
    return frozenset(codes) if codes else None


def files_hash(root: Path, files: list[Path] | None = None) -> str:
    """SHA-256 (first 16 hex digits) of the model's files: their paths relative to ``root`` and their bytes."""
    root = Path(root)
    if files is None:
        files = sorted(f for f in root.rglob("*") if f.is_file() and not any(
            part.startswith(".") for part in f.relative_to(root).parts))
    h = hashlib.sha256()
    for f in files:
        h.update(str(f.relative_to(root) if f.is_relative_to(root) else f.name).encode("utf-8") + b"\0")
        with open(f, "rb") as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
        h.update(b"\0")
    return h.hexdigest()[:16]
