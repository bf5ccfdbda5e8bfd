"""Reading text (plain, .gz, .xz), TSV pairs and BUCC files; atomic writes.

Every input line is accounted for: :func:`read_lines` yields one
:class:`Line` per physical line, with ``problem`` set when the line cannot be
used as a sentence. Callers either stop with a one-line :class:`BisentError`
naming file and line (the default, ``on_bad="error"``) or keep the line as a
rejected row (``on_bad="keep"``), never silently drop or shift it.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import lzma
import os
import tempfile
from pathlib import Path
from typing import IO, Iterator, NamedTuple

from .errors import BisentError, where

#: Lines longer than this (in bytes) are rejected; encoders truncate far earlier.
MAX_LINE_BYTES = 20_000


class Line(NamedTuple):
    """One physical input line: 1-based number, decoded text ("" when unusable), problem or None."""

    lineno: int
    text: str
    problem: str | None


def _suffix(path) -> str:
    """``".gz"``, ``".xz"`` or ``""``: the compression a file name says."""
    name = Path(path).name
    return next((s for s in (".gz", ".xz") if name.endswith(s)), "")


def open_binary(file, mode: str = "rb", *, like=None) -> IO[bytes]:
    """Open ``file`` (a path or an open binary file) for ``"rb"``/``"wb"``, (de)compressed as the name
    ``like`` (default: ``file``'s own name) says: ``.gz``, ``.xz``, else plain."""
    kind = _suffix(like if like is not None else file)
    if kind == ".gz":
        return gzip.open(file, mode)
    if kind == ".xz":
        return lzma.open(file, mode)
    return open(file, mode) if isinstance(file, (str, os.PathLike)) else file


def compress_like(path, data: bytes) -> bytes:
    """``data`` as one gzip member / xz stream for ``.gz`` / ``.xz`` names (concatenations stay readable)."""
    kind = _suffix(path)
    if kind == ".gz":
        return gzip.compress(data, compresslevel=6, mtime=0)
    if kind == ".xz":
        return lzma.compress(data)
    return data


def check_readable(path) -> Path:
    """Return ``Path(path)`` or raise a one-line error if it is missing or a folder."""
    path = Path(path)
    if not path.exists():
        raise BisentError(f"{path}: no such file")
    if path.is_dir():
        raise BisentError(f"{path}: is a folder, expected a text file")
    return path


def line_problem(raw: bytes, *, max_bytes: int = MAX_LINE_BYTES, allow_tab: bool = False) -> tuple[str, str | None]:
    """Decode one line (without its newline) and say what, if anything, is wrong with it."""
    if len(raw) > max_bytes:
        return "", f"line is {len(raw)} bytes long, over the limit of {max_bytes}"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return "", f"not valid UTF-8 (byte 0x{raw[e.start]:02x} at column {e.start + 1})"
    if "\x00" in text:
        return "", "contains a NUL byte"
    if not allow_tab and "\t" in text:
        return "", "contains a tab (a sentence may not hold tabs)"
    text = text.strip()
    if not text:
        return "", "empty line"
    return text, None


def iter_raw_lines(path) -> Iterator[tuple[int, bytes]]:
    """Yield ``(lineno, bytes)`` for each physical line, newline (and a final CR) removed."""
    path = check_readable(path)
    try:
        with open_binary(path) as f:
            for n, raw in enumerate(f, 1):
                if raw.endswith(b"\n"):
                    raw = raw[:-1]
                if raw.endswith(b"\r"):
                    raw = raw[:-1]
                yield n, raw
    except (OSError, EOFError, lzma.LZMAError) as e:
        raise BisentError(f"{path}: cannot read ({e.__class__.__name__}: {e})") from None


def read_lines(path, *, on_bad: str = "error", max_bytes: int = MAX_LINE_BYTES,
               allow_empty: bool = True) -> Iterator[Line]:
    """Yield every line of a one-sentence-per-line file as a :class:`Line`.

    ``on_bad="error"`` raises ``BisentError("FILE:LINE: problem")`` at the first
    unusable line (undecodable, NUL byte, tab, too long); ``"keep"`` yields it
    with ``problem`` set. Empty lines are yielded with problem ``"empty line"``
    (``allow_empty=False`` makes them errors too). An empty file is an error.
    """
    seen = False
    for n, raw in iter_raw_lines(path):
        seen = True
        text, problem = line_problem(raw, max_bytes=max_bytes)
        if problem and on_bad == "error" and (problem != "empty line" or not allow_empty):
            raise BisentError(f"{where(path, n)}: {problem}")
        yield Line(n, text, problem)
    if not seen:
        raise BisentError(f"{path}: file is empty")


def read_id_sentences(path, *, max_bytes: int = MAX_LINE_BYTES) -> Iterator[tuple[int, str, str]]:
    """Read a BUCC file (``id<TAB>sentence``); yield ``(lineno, id, sentence)``; errors name the line."""
    seen = False
    for n, raw in iter_raw_lines(path):
        seen = True
        parts = raw.split(b"\t")
        if len(parts) != 2:
            raise BisentError(f"{where(path, n)}: expected 2 tab-separated columns (id, sentence), found {len(parts)}")
        ident, problem = line_problem(parts[0], max_bytes=max_bytes)
        if problem:
            raise BisentError(f"{where(path, n)}: id: {problem}")
        text, problem = line_problem(parts[1], max_bytes=max_bytes)
        if problem:
            raise BisentError(f"{where(path, n)}: {problem}")
        yield n, ident, text
    if not seen:
        raise BisentError(f"{path}: file is empty")


def read_tsv(path, ncols: int) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(lineno, columns)`` of a TSV file with exactly ``ncols`` columns, else a one-line error."""
    for n, raw in iter_raw_lines(path):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise BisentError(f"{where(path, n)}: not valid UTF-8 (byte 0x{raw[e.start]:02x} at column {e.start + 1})") from None
        cols = text.split("\t")
        if len(cols) != ncols:
            raise BisentError(f"{where(path, n)}: expected {ncols} tab-separated columns, found {len(cols)}")
        yield n, cols


def file_sha256(path, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file's bytes (the compressed bytes for .gz/.xz)."""
    h = hashlib.sha256()
    with open(check_readable(path), "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


@contextlib.contextmanager
def atomic_write(path, mode: str = "w", encoding: str = "utf-8"):
    """Open a temp file beside ``path``; on success rename it into place, on error remove it.

    ``.gz`` / ``.xz`` names are compressed. Readers never see a half-written file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; the result should look like any new file
    binary = "b" in mode
    try:
        raw = open_binary(tmp, "wb", like=path)
        f = raw if binary else io.TextIOWrapper(raw, encoding=encoding, newline="\n")
        with f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
