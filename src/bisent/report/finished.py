"""A finished run read back: ONE reader of what ``bisent mine``, ``filter``, ``documents mine``, ``align`` and ``run``
leave behind.

- :func:`read_record` reads and checks a run's record (``OUTPUT.report.json``: JSON object, field types, kind);
- :func:`find_run` locates the run a path names (its output, its record, a ``bisent align --pairs`` folder or
  a ``bisent run`` folder) as a :class:`FinishedRun`;
- :func:`sniff_kind` tells the kind of an output that has no record from its rows.

The HTML report (:func:`bisent.report.record.folder_runs`: every run of a folder) and the labelling page
(:func:`bisent.review.scored_run.load_run`: one run's scored pairs) both read runs through these.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..errors import BisentError
from ..safeload import read_json

#: the manifest of a `bisent run` folder
MANIFEST = "manifest.json"

SUFFIX = ".report.json"
#: the kinds of run a record describes
KINDS = ("mining", "filter", "docs", "align")
#: the name of ``bisent align --pairs``'s record, in its output folder
PAIRS_RECORD = f"pairs{SUFFIX}"

_NUMBER = (int, float)
#: a record's top-level fields -> the JSON types each may have (None: null)
RECORD_FIELDS = {"kind": (str,), "params": (dict,), "summary": (dict,), "threshold": (*_NUMBER, type(None)),
                 "precision_target": (*_NUMBER, type(None)), "counts": (dict,), "histogram": (dict,),
                 "samples": (list,), "yield": (dict, type(None)), "calibration": (dict, type(None)),
                 "explanations": (list,), "score_step": (str, type(None)), "other_scores": (dict,),
                 "rejected_samples": (dict,), "files": (list,)}
_LINES = re.compile(r"(\d+(,\d+)*)?")


def check_record(rec: dict, source) -> dict:
    """``rec`` if its fields have the types a record's fields have (and its counts are numbers, its samples
    mappings), else a one-line error naming ``source`` and the field."""
    for key, types in RECORD_FIELDS.items():
        if key in rec and (not isinstance(rec[key], types) or isinstance(rec[key], bool)):
            want = " or ".join("null" if t is type(None) else {dict: "an object", list: "a list", str: "a string",
                                                               int: "a number", float: "a number"}[t]
                               for t in dict.fromkeys(types))
            raise BisentError(f"{source}: '{key}' must be {want}, got {json.dumps(rec[key])[:60]}")
    bad = [k for k, v in (rec.get("counts") or {}).items() if not isinstance(v, _NUMBER) or isinstance(v, bool)]
    if bad:
        raise BisentError(f"{source}: counts.{bad[0]} must be a number")
    for name in ("samples", "explanations"):
        if not all(isinstance(x, dict) for x in rec.get(name) or []):
            raise BisentError(f"{source}: every item of '{name}' must be an object")
    if rec.get("threshold") is not None and not math.isfinite(rec["threshold"]):
        raise BisentError(f"{source}: 'threshold' must be a finite number or null")
    _check_calibration(rec.get("calibration"), source)
    return rec


def _number(x, finite: bool = True) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and (not finite or math.isfinite(x))


def _check_calibration(cal, source) -> None:
    """A record's calibration as bisent writes it (:class:`bisent.calibration.Calibration`), else one line."""
    if not cal:
        return
    from ..calibration import Calibration

    grid = ("thresholds", "precision", "kept")
    if set(cal) != set(Calibration.__dataclass_fields__) \
            or not all(isinstance(cal[k], list) and all(_number(x, k == "thresholds") for x in cal[k]) for k in grid) \
            or len({len(cal[k]) for k in grid}) != 1 or cal["thresholds"] != sorted(cal["thresholds"]) \
            or not all(_number(cal[k], False) for k in ("pi0", "shift", "n_scores", "n_negatives")):
        raise BisentError(f"{source}: 'calibration' is not a calibration bisent writes (thresholds, precision, kept "
                          "of one length, thresholds ascending; pi0, shift, n_scores, n_negatives)")


def read_json_object(path) -> dict:
    """The JSON object in ``path`` (one-line errors: missing, not UTF-8, invalid, not an object)."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise BisentError(f"{path}: expected a JSON object")
    return data


def read_record(path) -> dict:
    """The run record at ``path``, checked: a JSON object whose fields have a record's types and whose kind is
    one of :data:`KINDS` (one-line errors naming the file)."""
    rec = check_record(read_json_object(path), path)
    if rec.get("kind") not in KINDS:
        raise BisentError(f"{path}: not a bisent run record (no kind mining/filter/docs/align)")
    return rec


def tsv_rows(path) -> Iterable[tuple[int, list[str]]]:
    """``(lineno, columns)`` of a TSV table bisent wrote (plain, .gz, .xz; may be empty): :func:`bisent.io.read_tsv`
    with any number of columns; bad UTF-8 is a one-line error."""
    from ..io import read_tsv

    return read_tsv(path, None)


def sniff_kind(path) -> str | None:
    """The kind of an output without a record, from its first row: a ``bisent documents mine`` header (docs), aligned
    rows (align: line lists in the first two columns), mined rows (mining: a score and two texts); None else."""
    from ..documents import MINE_COLUMNS

    for _, cols in tsv_rows(path):
        if cols == list(MINE_COLUMNS):
            return "docs"
        if len(cols) >= 5 and _LINES.fullmatch(cols[0]) and _LINES.fullmatch(cols[1]):
            return "align"
        try:
            float(cols[0])
        except ValueError:
            return None
        return "mining" if len(cols) >= 3 else None
    return None


@dataclass
class FinishedRun:
    """Where a finished run is: its kind, name, output (a file, or a folder of aligned TSVs), the files holding
    its rows, its record (None: an output read without one) and, for a ``bisent run``, the run folder."""

    kind: str
    name: str
    output: Path
    files: list[Path]
    record: dict | None = None
    record_path: Path | None = None
    run_folder: Path | None = None


def find_run(path) -> FinishedRun:
    """The run whose output, record, ``bisent align --pairs`` folder or ``bisent run`` folder ``path`` is.

    A ``bisent run`` folder is read as its filter stage (``filter/kept.tsv`` with the record ``--report``
    writes); an output's record is ``OUTPUT.report.json`` beside it, else its kind is sniffed from its rows
    (a filter's kept lines carry no scores: they need the record)."""
    p = Path(path)
    if not p.exists():
        raise BisentError(f"{p}: no such file or folder")
    if p.is_dir():
        if (p / MANIFEST).is_file():
            kept = p / "filter" / "kept.tsv"
            rec_path = Path(f"{kept}{SUFFIX}")
            if not rec_path.is_file():
                raise BisentError(f"{p}: no record {rec_path}: run `bisent run -c CONFIG --report FILE` "
                                  "to score and record the filter stage first")
            return FinishedRun("filter", p.name, kept, [kept], read_record(rec_path), rec_path, run_folder=p)
        if (p / PAIRS_RECORD).is_file():
            return FinishedRun("align", p.name, p, sorted(p.glob("[0-9]*.tsv")), read_record(p / PAIRS_RECORD),
                               p / PAIRS_RECORD)
        raise BisentError(f"{p}: not a run folder of `bisent run` (no {MANIFEST}) nor of `bisent align --pairs` "
                          f"(no {PAIRS_RECORD})")
    if p.name.endswith(SUFFIX):
        if p.name == PAIRS_RECORD:
            return find_run(p.parent)
        out = p.with_name(p.name[:-len(SUFFIX)])
        if not out.exists():
            raise BisentError(f"{p}: the output it records, {out}, is not there")
        return find_run(out)
    rec_path = Path(f"{p}{SUFFIX}")
    rec = read_record(rec_path) if rec_path.is_file() else None
    kind = rec.get("kind") if rec else sniff_kind(p)
    if kind is None:
        raise BisentError(f"{p}: not an output bisent review knows without a record {rec_path} (mined pairs, "
                          "aligned blocks, matched documents); a filter output needs the record of --report")
    return FinishedRun(kind, p.name, p, [p], rec, rec_path if rec else None)
