"""One module per bitext format, each with the same four functions.

``read(bt)`` yields the units of the file(s) ``bt.paths`` (a malformed one with its reason, never dropped), filling
what writing back needs into ``bt``; ``write(paths, bt, units, scores, score_name)`` writes units back in the format;
``write_fields(paths, bt, units, fields, names)`` writes every unit with extra fields; ``new(bt, ...)`` makes ``bt``
as if read from a file bisent wrote. Only :func:`bisent.io.bitext.iter_units` calls ``read``.
"""

from __future__ import annotations

from importlib import import_module

#: the formats and their modules (TMX and XLIFF share one)
MODULES = {"tsv": "tsv", "moses": "moses", "tmx": "xml", "xliff": "xml", "jsonl": "jsonl", "parquet": "parquet"}


def module(fmt: str):
    """The module of format ``fmt``."""
    return import_module(f"{__name__}.{MODULES[fmt]}")
