"""The pairs that ``bisent divergence`` and ``bisent repair`` read, each line with its problem."""

from __future__ import annotations


def read_pairs(path, max_bytes: int = 100_000, *, fmt: str | None = None, columns: str | None = None):
    """Yield ``(lineno, (src, tgt) or None, reason or None)`` for every line of a ``src<TAB>tgt`` file
    (or the ``doc<TAB>id<TAB>src<TAB>tgt`` files of ``bisent data libreoffice``); bad lines get a reason.

    ``path`` may also be two Moses files, or a bitext of another format (:mod:`bisent.formats`, by suffix,
    ``fmt`` or TSV ``columns``): ``lineno`` is then the line or unit number.
    """
    from ..formats import format_of, read_bitext
    from ..io import iter_raw_lines

    paths = list(path) if isinstance(path, (list, tuple)) else [path]
    if format_of(paths, fmt) != "tsv" or columns is not None:
        for u in read_bitext(paths, fmt=fmt, columns=columns).units:
            yield u.n, (None if u.problem else (u.src, u.tgt)), (f"{u.label}: {u.problem}" if u.problem else None)
        return
    path = paths[0]
    for n, raw in iter_raw_lines(path):
        if len(raw) > max_bytes:
            yield n, None, f"line of {len(raw)} bytes (more than {max_bytes})"
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            yield n, None, f"not valid UTF-8 (byte 0x{raw[e.start]:02x} at column {e.start + 1})"
            continue
        cols = text.rstrip("\r").split("\t")
        if len(cols) not in (2, 4):
            yield n, None, f"expected 2 (src, tgt) or 4 (doc, id, src, tgt) tab-separated columns, found {len(cols)}"
            continue
        yield n, (cols[-2].strip(), cols[-1].strip()), None
