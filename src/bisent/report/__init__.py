"""Reports people look at: plots, samples, explanations, and thresholds calibrated without gold.

    bisent mine a.en b.de -l en -L de -o mined.tsv --report report.html --precision 0.95
    bisent filter raw.tsv -l en -L de -c filter-default -o kept.tsv --rejected rej.tsv --report r.html
    bisent report RUN_DIR -o report.html
    bisent explain "The cat sits." "Die Katze sitzt." -l en -L de --background mined.tsv

- :mod:`.calibration`: precision at every threshold from synthetic negatives (no gold);
- :mod:`.record`: what a run leaves for its report (``OUTPUT.report.json``: binned scores, samples), for
  ``mine``, ``filter``, ``documents mine`` (:func:`.record.docs_record`) and ``align`` (:func:`.record.align_record`);
- :mod:`.finished`: a finished run read back (its record, where its outputs are): the one reader, for the
  report and for ``bisent review``;
- :mod:`.runs`: ``--report`` / ``--precision`` of ``mine`` and ``filter``;
- :mod:`.explain`: one pair's cosine, margins, competitors, filter decision;
- :mod:`.plots` (matplotlib to inline SVG) and :mod:`.html` (one self-contained file).
"""

from pathlib import Path

from ..calibration import (
    Calibration,
    calibrate,
    calibrate_split,
    filter_negatives,
    mining_calibration,
    mining_negatives,
    synthetic_pairs,
)
from ..errors import BisentError
from .explain import explain_pair
from .html import render
from .record import folder_runs, records_from_folder
from .runs import RecordingScorer, choose_threshold, finish_filter, finish_mining


def report_folder(run_dir, out_path, *, title: str | None = None):
    """Write the HTML report of every run found in ``run_dir``; returns its path. A run whose output has
    the labels of ``bisent review`` beside it (``OUTPUT.review.jsonl``) shows what they measured."""
    records, skipped = folder_runs(run_dir)
    folder = Path(run_dir) if Path(run_dir).is_dir() else Path(run_dir).parent
    for name, rec in records:
        output, labels = folder / name, folder / f"{name}.review.jsonl"
        if name == "pairs" and rec.get("kind") == "align":            # a `bisent align --pairs` folder
            output, labels = folder, folder / "review.jsonl"
        if labels.is_file() and output.exists():
            from ..review import open_review

            rec["review"] = open_review(output, labels).summary()
    try:
        return render(records, out_path, title=title or f"bisent report: {run_dir}", skipped=skipped)
    except (TypeError, KeyError, ValueError, AttributeError, IndexError) as e:   # a record edited by hand
        raise BisentError(f"{run_dir}: a record holds a field of an unexpected type or value "
                          f"({type(e).__name__}: {' '.join(str(e).split())[:100]})") from None


__all__ = ["Calibration", "calibrate", "calibrate_split", "mining_calibration", "mining_negatives", "filter_negatives",
           "synthetic_pairs", "explain_pair", "render", "records_from_folder", "report_folder", "RecordingScorer",
           "choose_threshold", "finish_mining", "finish_filter"]
