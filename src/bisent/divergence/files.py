"""The pairs that ``bisent divergence`` and ``bisent repair`` read, each line with its problem."""

from __future__ import annotations


def read_pairs(path, *, fmt: str | None = None, columns: str | None = None):
    """Yield ``(lineno, (src, tgt) or None, reason or None)`` for every line of a ``src<TAB>tgt`` file
    (or the ``doc<TAB>id<TAB>src<TAB>tgt`` files of ``bisent data libreoffice``, told apart by the first line);
    bad lines get a reason.

    ``path`` may also be two Moses files, or a bitext of another format (:mod:`bisent.io.bitext`, by suffix,
    ``fmt`` or TSV ``columns``): ``lineno`` is then the line or unit number. Read by
    :func:`bisent.io.bitext.iter_units`, malformed units kept.
    """
    from ..io.bitext import format_of, iter_units, open_bitext, tsv_layout
    from ..io.rows import describe

    paths = list(path) if isinstance(path, (list, tuple)) else [path]
    if columns is None and format_of(paths, fmt) == "tsv":
        columns = tsv_layout(paths[0])
    bt = open_bitext(paths, fmt=fmt, columns=columns)
    for u in iter_units(bt, on_bad="keep"):
        if u.problem is None:
            yield u.n, (u.src, u.tgt), None
        else:
            reason = describe(u, bt.ncols)
            yield u.n, None, (f"{u.label}: {reason}" if u.line is not None else reason)
