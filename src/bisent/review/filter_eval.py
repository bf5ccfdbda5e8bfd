"""Precision and recall of a filter run against a person's labelled sample (``bisent eval filter``).

A labelled pair is looked up by its text (whitespace collapsed) in the kept output and in the rejected file
(``lineno<TAB>reason<TAB>score<TAB>original line``); the filter is right when it kept a parallel pair (label 1,
``y`` in a review log) or rejected a non-parallel one. A pair found in both (a duplicate whose first copy was kept)
counts as kept; labelled pairs found in neither are counted and left out.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import BisentError
from ..evaluate import filter_prf, pair_key


def read_labels(path) -> list[tuple[str, str, bool]]:
    """``(src, tgt, parallel)`` of a labels file: TSV ``src<TAB>tgt<TAB>label`` (1 parallel, 0 not) or the JSONL
    log of ``bisent review`` (``y`` parallel; ``n``, ``p`` not; skips left out)."""
    from ..report.record import tsv_rows
    from .labels import labelled_pairs

    with open(path, "rb") as f:
        first = f.read(1)
    if first == b"{":
        return [(ev["src"], ev["tgt"], ev["parallel"]) for ev in labelled_pairs(path)]
    out = []
    for n, cols in tsv_rows(path):
        if len(cols) != 3 or cols[2].strip() not in ("0", "1"):
            raise BisentError(f"{path}:{n}: expected src<TAB>tgt<TAB>label with label 1 (parallel) or 0 (not)")
        out.append((cols[0], cols[1], cols[2].strip() == "1"))
    if not out:
        raise BisentError(f"{path}: no labels: file is empty")
    return out


def rejected_pairs(path, columns: tuple[int, int] = (1, 2)) -> set[tuple[str, str]]:
    """The pairs of a rejected file (``lineno<TAB>reason<TAB>score<TAB>line``): ``columns`` of the original line."""
    from ..report.record import tsv_rows

    out = set()
    for n, cols in tsv_rows(path):
        if len(cols) < 4 or not cols[0].isdigit():
            raise BisentError(f"{path}:{n}: expected lineno<TAB>reason<TAB>score<TAB>line (a --rejected file)")
        line = cols[3:]
        if max(columns) <= len(line):
            out.add(pair_key(line[columns[0] - 1], line[columns[1] - 1]))
    return out


def evaluate_filter(kept_paths, rejected_path, labels_path, *, fmt=None, columns=None, src_lang=None,
                    tgt_lang=None) -> dict:
    """:func:`filter_prf` of the files of one ``bisent filter`` run (KEPT in any format bisent reads)."""
    from ..formats import parse_columns, read_bitext

    bt = read_bitext(kept_paths, fmt=fmt, columns=columns, src_lang=src_lang, tgt_lang=tgt_lang)
    kept = {pair_key(u.src, u.tgt) for u in bt.good()}
    cols = parse_columns(columns, "tsv") if bt.fmt == "tsv" and columns else (1, 2)
    labels = read_labels(labels_path)
    out = filter_prf(kept, rejected_pairs(rejected_path, cols), labels)
    out["files"] = {"kept": [str(p) for p in bt.paths], "rejected": str(Path(rejected_path)),
                    "labels": str(labels_path)}
    return out


