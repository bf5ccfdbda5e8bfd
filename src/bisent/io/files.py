"""Files: compression (plain, .gz, .xz, .zst), line reading, TSV tables and BUCC files; atomic writes.

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
import json
import lzma
import os
import re
import secrets
import shutil
import stat
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Iterator, NamedTuple

from ..errors import BisentError, where

#: Lines longer than this (in bytes) are rejected; encoders truncate far earlier.
MAX_LINE_BYTES = 20_000


class Line(NamedTuple):
    """One physical input line: 1-based number, decoded text ("" when unusable), problem or None."""

    lineno: int
    text: str
    problem: str | None


#: Compressed file names: the suffixes read and written (de)compressed.
COMPRESSED = (".gz", ".xz", ".zst")


def _suffix(path) -> str:
    """``".gz"``, ``".xz"``, ``".zst"`` or ``""``: the compression a file name says."""
    name = Path(path).name
    return next((s for s in COMPRESSED if name.endswith(s)), "")


def _read_errors() -> tuple[type[BaseException], ...]:
    """The exceptions a damaged or truncated compressed input raises while being read."""
    try:
        from zstandard import ZstdError
    except ImportError:  # pragma: no cover
        return (OSError, EOFError, lzma.LZMAError)
    return (OSError, EOFError, lzma.LZMAError, ZstdError)


#: Caught around reads of possibly compressed input: a one-line error instead of a traceback.
READ_ERRORS = _read_errors()


class _ForwardSeekable(io.RawIOBase):
    """A decompressed stream that seeks forward (by reading) and back to the start of what it has not passed:
    enough for a resumed read from a checkpoint's offset, as gzip and xz streams allow."""

    def __init__(self, raw):
        self.raw, self.pos = raw, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = self.raw.readinto(b)
        self.pos += n
        return n

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        target = offset if whence == io.SEEK_SET else self.pos + offset if whence == io.SEEK_CUR else None
        if target is None or target < self.pos:
            raise io.UnsupportedOperation("a .zst stream seeks forward only")
        while self.pos < target:
            if not self.raw.read(min(target - self.pos, 1 << 20)):
                break
            self.pos = self.raw.tell()
        return self.pos

    def close(self) -> None:
        self.raw.close()
        super().close()


def _zstd():
    try:
        import zstandard
    except ImportError:  # pragma: no cover - a declared dependency
        raise BisentError("reading or writing .zst needs zstandard (pip install zstandard)") from None
    return zstandard


def open_binary(file, mode: str = "rb", *, like=None) -> IO[bytes]:
    """Open ``file`` (a path or an open binary file) for ``"rb"``/``"wb"``, (de)compressed as the name
    ``like`` (default: ``file``'s own name) says: ``.gz``, ``.xz``, ``.zst``, else plain."""
    kind = _suffix(like if like is not None else file)
    if kind == ".gz":
        return gzip.open(file, mode)
    if kind == ".xz":
        return lzma.open(file, mode)
    if kind == ".zst":
        zstd = _zstd()
        f = open(file, mode) if isinstance(file, (str, os.PathLike)) else file
        if "r" in mode:  # every frame of a concatenation (bisent appends one per chunk)
            return io.BufferedReader(_ForwardSeekable(
                zstd.ZstdDecompressor().stream_reader(f, read_across_frames=True, closefd=True)))
        return zstd.ZstdCompressor().stream_writer(f, closefd=True)
    return open(file, mode) if isinstance(file, (str, os.PathLike)) else file


def compress_like(path, data: bytes) -> bytes:
    """``data`` as one gzip member / xz stream / zstd frame for ``.gz`` / ``.xz`` / ``.zst`` names
    (concatenations stay readable)."""
    kind = _suffix(path)
    if kind == ".gz":
        return gzip.compress(data, compresslevel=6, mtime=0)
    if kind == ".xz":
        return lzma.compress(data)
    if kind == ".zst":
        return _zstd().ZstdCompressor().compress(data)
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
    if "\r" in text:
        return "", (f"contains a carriage return (CR) at column {text.index(chr(13)) + 1} that does not end the line: "
                    f"lone-CR line endings are not line breaks here (convert them with tr '\\r' '\\n')")
    if not allow_tab and "\t" in text:
        return "", "contains a tab (a sentence may not hold tabs)"
    text = text.strip()
    if not text:
        return "", "empty line"
    return text, None


#: no physical line is read whole past this many bytes (``/dev/zero`` has no newline at all); a line may
#: still be refused earlier by its reader's own limit (:data:`MAX_LINE_BYTES` by default)
HARD_LINE_BYTES = 64 << 20


def iter_raw_lines(path) -> Iterator[tuple[int, bytes]]:
    """Yield ``(lineno, bytes)`` for each physical line, newline (and a final CR) removed; a line of more
    than :data:`HARD_LINE_BYTES` is a one-line error (read that far, not further)."""
    path = check_readable(path)
    try:
        with open_binary(path) as f:
            for n, raw in enumerate(iter(lambda: f.readline(HARD_LINE_BYTES + 1), b""), 1):
                if len(raw) > HARD_LINE_BYTES:
                    raise BisentError(f"{path}:{n}: line of more than {HARD_LINE_BYTES >> 20} MB without a "
                                      f"newline (not a text file?)")
                if raw.endswith(b"\n"):
                    raw = raw[:-1]
                if raw.endswith(b"\r"):
                    raw = raw[:-1]
                yield n, raw
    except READ_ERRORS as e:
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
    first: dict[str, int] = {}
    for n, raw in iter_raw_lines(path):
        seen = True
        parts = raw.split(b"\t")
        if len(parts) != 2:
            raise BisentError(f"{where(path, n)}: expected 2 tab-separated columns (id, sentence), found {len(parts)}")
        ident, problem = line_problem(parts[0], max_bytes=max_bytes)
        if problem:
            raise BisentError(f"{where(path, n)}: id: {problem}")
        if ident in first:
            raise BisentError(f"{where(path, n)}: duplicate id '{ident}' (first on line {first[ident]})")
        first[ident] = n
        text, problem = line_problem(parts[1], max_bytes=max_bytes)
        if problem:
            raise BisentError(f"{where(path, n)}: {problem}")
        yield n, ident, text
    if not seen:
        raise BisentError(f"{path}: file is empty")


def read_tsv(path, ncols: int | None) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(lineno, columns)`` of a TSV table (ids, scores, bisent's own outputs) with exactly ``ncols``
    columns (None: any number), else a one-line error. A bitext is read by :func:`bisent.io.bitext.iter_units`."""
    for n, raw in iter_raw_lines(path):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise BisentError(f"{where(path, n)}: not valid UTF-8 (byte 0x{raw[e.start]:02x} "
                              f"at column {e.start + 1})") from None
        if "\r" in text:
            raise BisentError(f"{where(path, n)}: contains a carriage return (CR) that does not end the line "
                              f"(lone-CR line endings are not line breaks here)")
        cols = text.split("\t")
        if ncols is not None and len(cols) != ncols:
            raise BisentError(f"{where(path, n)}: expected {ncols} tab-separated columns, found {len(cols)}")
        yield n, cols


def file_sha256(path, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file's bytes (the compressed bytes for .gz/.xz)."""
    h = hashlib.sha256()
    path = check_readable(path)
    try:
        with open(path, "rb") as f:
            while block := f.read(chunk):
                h.update(block)
    except OSError as e:
        raise BisentError(f"{path}: cannot read ({e.strerror or e})") from None
    return h.hexdigest()


@contextlib.contextmanager
def atomic_write(path, mode: str = "w", encoding: str = "utf-8"):
    """Open a temp file beside ``path``; on success rename it into place, on error remove it.

    ``.gz`` / ``.xz`` names are compressed. Readers never see a half-written file.
    The temp file is created exclusively without following links (:func:`open_exclusive`)
    with the permissions of any new file (0666 less the umask, applied by the kernel).
    ``path == "-"`` writes to standard output instead.
    """
    binary = "b" in mode
    if str(path) == STDIO:
        out = sys.stdout.buffer
        f = out if binary else io.TextIOWrapper(out, encoding=encoding, newline="\n", write_through=True)
        try:
            yield f
            f.flush()
        finally:
            if not binary:
                f.detach()  # leave sys.stdout open
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(path)
    while True:
        tmp = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        try:
            raw = open_exclusive(tmp)
            break
        except FileExistsError:
            continue
    try:
        with raw:
            stream = open_binary(raw, "wb", like=path)  # the compressor over the exclusively created file
            f = stream if binary else io.TextIOWrapper(stream, encoding=encoding, newline="\n")
            with f:
                yield f
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


#: how old a temp file of an older bisent (no process id in its name) must be to count as left by a kill
STALE_SECONDS = 3600


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this machine (one of another user's counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return pid > 0
    return True


def remove_stale_temps(path) -> list[Path]:
    """Remove the temp files a killed write of ``path`` left beside it: :func:`atomic_write`'s
    ``.NAME.<pid>.<8 hex>.tmp`` of a process that has ended (and ``.NAME.<8 hex>.tmp`` of an older bisent, an hour
    old); ``.NAME.<pid>.<8 hex>.tmp`` folders of :func:`atomic_dir` likewise. A live writer's are left alone, links
    are never followed, and nothing of another name is touched. Returns what was removed."""
    path = Path(path)
    name = re.escape(path.name)
    pattern = re.compile(rf"\.{name}\.(?:(\d+)\.)?[0-9a-f]{{8}}\.tmp")
    removed = []
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return removed
    for entry in entries:
        m = pattern.fullmatch(entry.name)
        if m is None:
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        stale = (not _alive(int(m.group(1)))) if m.group(1) else time.time() - st.st_mtime > STALE_SECONDS
        if not stale or entry.is_symlink():
            continue
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
            removed.append(Path(entry.path))
    return removed


# ---------------------------------------------------------------------------
# State folders and partial files: created without following links
# ---------------------------------------------------------------------------

#: The name that means standard input / output on the command line.
STDIO = "-"


def open_exclusive(path, mode: str = "wb") -> IO[bytes]:
    """Create ``path`` and open it for writing; fail if anything (a file, a link) is already there.

    ``O_CREAT | O_EXCL | O_NOFOLLOW``: a planted symlink is never followed, an
    existing file never truncated. Permissions are 0666 less the process umask
    (applied by the kernel: the umask itself is never read or changed).
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o666)
    return os.fdopen(fd, mode)


def open_append(path) -> IO[bytes]:
    """Open ``path`` for appending (created if missing) without following a link in its place."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o666)
    return os.fdopen(fd, "ab")


def open_existing(path, mode: str = "r+b") -> IO[bytes]:
    """Open a regular file bisent made earlier (a partial output being resumed), refusing a link."""
    flags = os.O_RDWR if "+" in mode or "w" in mode else os.O_RDONLY
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        if e.errno == 40:  # ELOOP: the name is a symlink
            raise BisentError(f"{path}: is a symbolic link, not a file bisent made; refusing to follow it") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise BisentError(f"{path}: is not a regular file; refusing to use it")
    return os.fdopen(fd, mode)


#: The file that marks a folder as bisent's own state (see :func:`make_state_dir`).
STATE_MARKER = ".bisent-state"


def is_state_dir(path) -> bool:
    """True when ``path`` is a real folder (not a link) holding bisent's marker file (a regular file)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode) and stat.S_ISREG(os.lstat(Path(path) / STATE_MARKER).st_mode)
    except OSError:
        return False


def check_state_dir(path, what: str = "state folder") -> None:
    """Refuse a ``path`` bisent may not use as its state folder.

    Missing (it must then be creatable: its parent is created), empty, or marked by :func:`make_state_dir` is
    fine; a link, a file, or a folder holding files but no marker (a user's folder: bisent deletes files in
    its state) is not.
    """
    path = Path(path)
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        check_creatable_dir(path, what)
        return
    if stat.S_ISLNK(st.st_mode):
        raise BisentError(f"{path}: {what} is a symbolic link; bisent keeps its state there and will not follow "
                          f"a link (remove the link or give another folder)")
    if not stat.S_ISDIR(st.st_mode):
        raise BisentError(f"{path}: {what} exists and is not a folder (bisent keeps its state there)")
    if not is_state_dir(path) and any(True for _ in os.scandir(path)):
        raise BisentError(f"{path}: {what} exists, holds files and was not made by bisent (no {STATE_MARKER} "
                          f"marker); bisent deletes files in its state folders: give a new or empty folder")


#: the name :func:`atomic_write` gives its temporary file (``.NAME.<8 hex>.tmp``)
_ATOMIC_TMP = re.compile(r"\..+\.[0-9a-f]{8}\.tmp")


def make_state_dir(path, kind: str = "state") -> Path:
    """Create bisent's private folder ``path`` (its parent may be created) with its marker file ``.bisent-state``.

    A folder of bisent's (marked) is kept (a resumed run); an empty one is adopted. Anything else is refused
    (:func:`check_state_dir`): a link is never followed and a user's folder never emptied, since files are
    later written and deleted inside. ``kind`` is recorded in the marker (what made the folder).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o777)
    check_state_dir(path)
    if not is_state_dir(path):
        with contextlib.suppress(FileExistsError), open_exclusive(path / STATE_MARKER) as f:
            f.write((json.dumps({"bisent_state": kind, "version": 1}) + "\n").encode())
    else:   # a resumed run: a write that a kill cut short left its temporary file (atomic_write's name) behind
        for entry in os.scandir(path):
            if _ATOMIC_TMP.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)
    return path


def remove_state_dir(path) -> None:
    """Remove a state folder made by :func:`make_state_dir`; a folder without the marker (or a link) is refused."""
    path = Path(path)
    if not os.path.lexists(path):
        return
    if not is_state_dir(path):
        raise BisentError(f"{path}: not removed: it is not a folder bisent made (no {STATE_MARKER} marker, or a "
                          f"link); bisent only deletes its own state folders")
    shutil.rmtree(path)  # rmtree never follows symlinks inside the tree (it unlinks them)


def make_temp_dir(parent, prefix: str, suffix: str = ".tmp") -> Path:
    """A new, uniquely named folder in ``parent`` with the permissions of any new folder
    (0777 less the umask, applied by the kernel; ``tempfile.mkdtemp`` would make it 0700)."""
    while True:
        path = Path(parent) / f"{prefix}{secrets.token_hex(4)}{suffix}"
        try:
            os.mkdir(path, 0o777)
            return path
        except FileExistsError:
            continue


@contextlib.contextmanager
def atomic_dir(path: Path, *, replace_names: frozenset[str] | None = None) -> Iterator[Path]:
    """Yield an empty temp folder beside ``path``; on success rename it to ``path``, on error remove it.

    Readers never see a half-written folder. An existing ``path`` is replaced
    only when it is empty or holds nothing but files named in
    ``replace_names`` (a previous output of the same builder); otherwise it is
    a :class:`BisentError`, so a user's folder is never clobbered. When
    ``replace_names`` is None and ``path`` appears meanwhile (another process
    won the race), the new copy is discarded and the existing one kept.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _check_replaceable(path, replace_names)
    remove_stale_temps(path)
    tmp = make_temp_dir(path.parent, f".{path.name}.{os.getpid()}.")
    try:
        yield tmp
        _move_into_place(tmp, path, replace_names)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _check_replaceable(path: Path, replace_names: frozenset[str] | None) -> None:
    """Fail early if ``path`` exists and may not be replaced by :func:`atomic_dir`."""
    if not path.exists() or replace_names is None:
        return
    if not path.is_dir():
        raise BisentError(f"{path}: exists and is not a folder")
    foreign = sorted(p.name for p in path.iterdir() if p.name not in replace_names)
    if foreign:
        raise BisentError(f"{path}: folder exists and holds other files ({', '.join(foreign[:3])}); "
                          "choose a new or empty folder")


def _move_into_place(tmp: Path, path: Path, replace_names: frozenset[str] | None) -> None:
    """Rename ``tmp`` to ``path``, swapping out a replaceable old folder."""
    if path.is_dir() and not any(path.iterdir()):
        path.rmdir()
    if not path.exists():
        try:
            os.rename(tmp, path)
            return
        except OSError:
            if not path.exists():
                raise
    if replace_names is None:  # someone else finished the same folder first: keep theirs
        shutil.rmtree(tmp, ignore_errors=True)
        return
    _check_replaceable(path, replace_names)
    old = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent))
    os.rename(path, old / "previous")
    try:
        os.rename(tmp, path)
    except OSError:
        os.rename(old / "previous", path)  # put the old folder back
        raise
    finally:
        shutil.rmtree(old, ignore_errors=True)


def remove_tree(path) -> None:
    """Remove ``path``: a link or file is unlinked (never its target), a folder removed without following links."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)  # rmtree never follows symlinks inside the tree (it unlinks them)
    else:
        os.unlink(path)


def is_stdio(path) -> bool:
    return str(path) == STDIO


def same_file(a, b) -> bool:
    """True when ``a`` and ``b`` name the same file (same inode, or the same real path if one does not exist yet)."""
    if is_stdio(a) or is_stdio(b):
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _probe(path: Path, folder: Path, name: str, what: str) -> None:
    """Create ``folder`` (and its parents) and a file ``name`` in it, then remove it: a one-line error naming
    ``path`` when either cannot be done."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / name
        open_exclusive(probe).close()
        os.unlink(probe)
    except OSError as e:
        raise BisentError(f"{path}: cannot write {what} there ({e.strerror or e})") from None


def check_writable(path, what: str = "output") -> None:
    """Raise a one-line error if a file cannot be written at ``path`` (the folder is created if missing)."""
    if is_stdio(path):
        return
    path = Path(path)
    if path.is_dir():
        raise BisentError(f"{path}: {what} is a folder, expected a file name")
    _probe(path, path.parent, f".{path.name}.{secrets.token_hex(4)}.probe", what)


def check_writable_dir(path, what: str = "output folder") -> None:
    """Raise a one-line error if the folder ``path`` cannot be created or written (it is created)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise BisentError(f"{path}: {what} exists and is not a folder")
    _probe(path, path, f".probe.{secrets.token_hex(4)}", what)


def check_creatable_dir(path, what: str = "output folder") -> None:
    """Raise a one-line error if the folder ``path`` cannot be made or written; only its parent is created."""
    path = Path(path)
    if os.path.isdir(path):
        check_writable_dir(path, what)
        return
    try:
        check_writable_dir(path.parent, what)
    except BisentError as e:
        raise BisentError(f"{path}: cannot write {what} there ({str(e).rpartition('(')[2]}") from None
    if os.path.lexists(path):
        raise BisentError(f"{path}: {what} exists and is not a folder")


@contextlib.contextmanager
def readable_file(path, folder=None) -> Iterator[Path]:
    """Yield a path to a regular file holding the input at ``path``.

    ``-`` (standard input), ``/dev/stdin``, a pipe or any other non-regular file
    can be read only once, while bisent reads inputs more than once (checksum,
    then lines); its bytes are copied to a temporary file (in ``folder``, or the
    system's temp folder) that is removed afterwards. A regular file is used as is.
    """
    if not is_stdio(path):
        p = check_readable(path)
        if stat.S_ISREG(os.stat(p).st_mode):
            yield p
            return
    src = sys.stdin.buffer if is_stdio(path) else None
    suffix = "".join(s for s in Path(str(path)).suffixes[-1:] if s in COMPRESSED)
    fd, tmp = tempfile.mkstemp(prefix="bisent-stdin-", suffix=suffix, dir=folder)
    shown = "<stdin>" if src is not None else str(path)
    try:
        with os.fdopen(fd, "wb") as out:
            if src is not None:
                shutil.copyfileobj(src, out, 1 << 20)
            else:
                with open(path, "rb") as f:
                    shutil.copyfileobj(f, out, 1 << 20)
        try:
            yield Path(tmp)
        except BisentError as e:  # errors name the input as the user gave it, not the temporary copy
            raise BisentError(str(e).replace(tmp, shown)) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def format_block(src, tgt, score: float | None = None) -> str:
    """One line of an alignment file: ``[0]:[0,1]`` (0-based sentence indices of each side), ``:score`` optional."""
    text = f"[{','.join(map(str, src))}]:[{','.join(map(str, tgt))}]"
    return text if score is None else f"{text}:{score:.6f}"
