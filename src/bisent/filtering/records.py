"""What a filter run writes: a pair's outcome, the per-line score record, values and lines as text.

Shared by the pipeline (which makes :class:`FilterResult`), the file runner
(:mod:`.files`, which writes kept/rejected lines) and the selection's second
pass (:mod:`.selection`, which reads :data:`RECORD` back), so none of them
imports another for it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

Pair = tuple[str, str]
#: A step's value for one pair: a number, or a short list of numbers (e.g. one per side).
Value = float | list[float]

#: Per kept line, kept for a two-pass selection: line number, score, words counted.
RECORD = np.dtype([("lineno", "<i8"), ("score", "<f8"), ("words", "<i8")])


class FilterResult(NamedTuple):
    """One pair's outcome: ``reason`` is the rejecting step's name (None when kept); ``score``
    is that step's value, or for a kept pair the value of the pipeline's score step."""

    pair: Pair
    kept: bool
    reason: str | None
    score: Value | None


def format_value(value: Value | None, names: tuple[str, ...] = ()) -> str:
    """A value as text for the rejected file: ``0.5``, ``3,81`` for lists, empty for None; a list with ``names``
    (one a part, the step's :attr:`~bisent.filtering.steps.Step.value_names`) as ``gain=0,side=-1,...``."""
    if value is None:
        return ""
    if isinstance(value, (list, tuple, np.ndarray)):
        if names and len(names) == len(value):
            return ",".join(f"{name}={format_value(v)}" for name, v in zip(names, value))
        return ",".join(format_value(v) for v in value)
    if isinstance(value, np.floating):
        value = float(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def show_line(raw: bytes) -> str:
    """The original line as text for the rejected file: bad bytes and NULs as ``\\xNN`` escapes, lone CRs as ``\\r``,
    a final CR (of a CRLF file) dropped."""
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    return raw.decode("utf-8", errors="backslashreplace").replace("\x00", "\\x00").replace("\r", "\\r")


def rejected_line(lineno: int, reason: str, value: Value | None, raw: bytes, label: str = "",
                  names: tuple[str, ...] = ()) -> bytes:
    """One line of the rejected file: ``lineno<TAB>reason<TAB>score<TAB>original line`` (``label`` before the
    line: a TMX/XLIFF unit's ``[id ...]``; ``names``: the parts of a list value)."""
    return f"{lineno}\t{reason}\t{format_value(value, names)}\t{label}{show_line(raw)}\n".encode("utf-8")
