"""bisent's input and output: files, and bitexts in every format.

- :mod:`bisent.io.files`: compression (plain, .gz, .xz, .zst), atomic writes of files and folders, state folders,
  reading lines, TSV tables and BUCC files;
- :mod:`bisent.io.bitext`: the one reader of a bitext (TSV columns, Moses, TMX, XLIFF, JSONL, Parquet) with an
  explicit policy for bad rows, and the writer back into the input's format (one module a format in
  :mod:`bisent.io.bitext_formats`);
- :mod:`bisent.io.rows`: the unit of a bitext and the checks every row goes through.

The names of :mod:`bisent.io.files` and the bitext reader are importable from here.
"""

from .bitext import Bitext, Unit, iter_pairs, iter_units, open_bitext, read_bitext, write_bitext
from .files import (
    COMPRESSED,
    HARD_LINE_BYTES,
    MAX_LINE_BYTES,
    READ_ERRORS,
    STALE_SECONDS,
    STATE_MARKER,
    STDIO,
    Line,
    _suffix,  # noqa: F401  (the compression a name says; used by the bitext formats)
    atomic_dir,
    atomic_write,
    check_creatable_dir,
    check_readable,
    check_state_dir,
    check_writable,
    check_writable_dir,
    compress_like,
    file_sha256,
    format_block,
    is_state_dir,
    is_stdio,
    iter_raw_lines,
    line_problem,
    make_state_dir,
    make_temp_dir,
    open_append,
    open_binary,
    open_exclusive,
    open_existing,
    read_id_sentences,
    read_lines,
    read_tsv,
    readable_file,
    remove_stale_temps,
    remove_state_dir,
    remove_tree,
    same_file,
)
from .rows import MAX_SIDE_BYTES, parse_row

__all__ = [
    "Bitext", "COMPRESSED", "HARD_LINE_BYTES", "Line", "MAX_LINE_BYTES", "MAX_SIDE_BYTES", "READ_ERRORS",
    "STALE_SECONDS", "STATE_MARKER", "STDIO", "Unit", "atomic_dir", "atomic_write", "check_creatable_dir",
    "check_readable", "check_state_dir", "check_writable", "check_writable_dir", "compress_like", "file_sha256",
    "format_block", "is_state_dir", "is_stdio", "iter_pairs", "iter_raw_lines", "iter_units", "line_problem",
    "make_state_dir", "make_temp_dir", "open_append", "open_binary", "open_bitext", "open_exclusive",
    "open_existing", "parse_row", "read_bitext", "read_id_sentences", "read_lines", "read_tsv", "readable_file",
    "remove_stale_temps", "remove_state_dir", "remove_tree", "same_file", "write_bitext",
]
