"""Bitext files in the formats data engineers use: TSV, Moses, TMX, XLIFF, JSONL, Parquet.

The reader and writers live in :mod:`bisent.io.bitext` (one module a format in :mod:`bisent.io.formats`); this
module keeps their public names importable as ``bisent.formats``.
"""

from __future__ import annotations

from .io.bitext import (
    BISENT_NS,
    FORMATS,
    ON_BAD,
    TMX_SCORE_PROP,
    Bitext,
    Unit,
    check_columns,
    format_of,
    format_value,
    iter_pairs,
    iter_units,
    new_bitext,
    open_bitext,
    output_paths,
    parse_columns,
    read_bitext,
    remember_text,
    unit_id,
    whole_units,
    write_bitext,
    write_fields,
    xml_parser,
)

__all__ = ["BISENT_NS", "FORMATS", "ON_BAD", "TMX_SCORE_PROP", "Bitext", "Unit", "check_columns", "format_of",
           "format_value", "iter_pairs", "iter_units", "new_bitext", "open_bitext", "output_paths", "parse_columns",
           "read_bitext", "remember_text", "unit_id", "whole_units", "write_bitext", "write_fields", "xml_parser"]
