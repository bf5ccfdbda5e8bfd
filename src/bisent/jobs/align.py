"""The alignment job: the sentences of document pairs aligned many-to-many (``bisent align``).

One pair of documents (:func:`bisent.align.batch.align_files`) or many from a TSV of path pairs, resumably into
a folder (:func:`bisent.align.batch.align_many`); then the precision cut and the report record.
"""

from __future__ import annotations

from pathlib import Path

from ..align.costs import COPIES, LENGTH_WEIGHT, MAX_SIZE, MERGE_PENALTY, SKIP_FLOOR, SKIP_QUANTILE
from ..errors import BisentError
from .common import check_paths, fspaths

#: the encoder of the alignment unless told otherwise
DEFAULT_ENCODER = "use-m3"


def _paths(kw: dict) -> dict:
    """OUTPUT: a file, or with ``pairs`` bisent's folder of alignments; and its record."""
    out = kw["output"]
    if kw["pairs"]:
        return {"states": {"--output folder": out}, "writes": {"--output record": Path(out) / "pairs.report.json"
                                                        if kw["report"] else None}}
    return {"writes": {"--output": out, "--output record": f"{out}.report.json" if kw["report"] else None}}


#: the paths of an alignment run, for :func:`bisent.paths.guarded` and :func:`bisent.jobs.common.check_paths`
PATHS = {"reads": ("src_doc", "tgt_doc", "pairs"), "writes": ("blocks", "report"), "derived": _paths,
         "derived_params": ("output",)}


def align(src_doc=None, tgt_doc=None, *, src_lang: str, tgt_lang: str, output, encoder: str = DEFAULT_ENCODER,
          split: bool = False, pairs=None, jobs: int = 1, blocks=None, max_size: int = MAX_SIZE,
          skip_quantile: float = SKIP_QUANTILE, skip_floor: float = SKIP_FLOOR, merge_penalty: float = MERGE_PENALTY,
          length_weight: float = LENGTH_WEIGHT, copies: bool = COPIES, width: int = 10,
          precision: float | None = None, report=None) -> dict:
    """Align the sentences of ``src_doc`` and ``tgt_doc`` into the TSV ``output``, or of every pair of the TSV
    ``pairs`` into the folder ``output`` (rerun: finished pairs are kept), as ``bisent align`` does; returns
    the summary it prints.

    ``precision``: unalign the blocks below the lowest score whose estimated precision is this; ``report``:
    also the HTML report and the record beside the output.
    """
    src_doc, tgt_doc, output, pairs, blocks, report = fspaths(src_doc, tgt_doc, output, pairs, blocks, report)
    check_paths(PATHS, locals())
    options = {"max_size": max_size, "skip_quantile": skip_quantile, "skip_floor": skip_floor,
               "merge_penalty": merge_penalty, "length_weight": length_weight, "copies": copies, "width": width}
    if pairs:
        if src_doc or tgt_doc:
            raise BisentError("give either SRC_DOC TGT_DOC or --pairs, not both")
        from ..align.batch import align_many
        summary = align_many(pairs, output, src_lang, tgt_lang, encoder=encoder, jobs=jobs, split=split, **options)
        tsvs = sorted(Path(output).glob("[0-9]*.tsv"))
        cal = _keep_precision(summary, tsvs, [t.with_suffix(".blocks") for t in tsvs], encoder, src_lang, tgt_lang,
                              precision)
        if report:
            summary.update(_report(tsvs, Path(output) / "pairs", report, encoder, options, src_lang, tgt_lang, cal))
        return summary
    if not (src_doc and tgt_doc):
        raise BisentError("give SRC_DOC and TGT_DOC, or --pairs PAIRS.tsv")
    from ..align import SentenceAligner
    from ..align.batch import align_files
    summary = align_files(src_doc, tgt_doc, src_lang, tgt_lang, SentenceAligner(encoder, **options),
                          out_tsv=output, out_blocks=blocks, split=split)
    cal = _keep_precision(summary, [output], [blocks], encoder, src_lang, tgt_lang, precision)
    if report:
        summary.update(_report([output], output, report, encoder, options, src_lang, tgt_lang, cal))
    return summary


def _keep_precision(summary: dict, tsvs, blocks, encoder, src_lang, tgt_lang, precision):
    """``precision``: unalign the blocks below the calibrated threshold; the calibration (None without it)."""
    if precision is None:
        return None
    from ..report.runs import keep_precision

    fields, cal = keep_precision(tsvs, blocks, encoder, src_lang, tgt_lang, precision)
    summary.update(fields)
    return cal


def _report(tsvs, out, report, encoder, options, src_lang, tgt_lang, cal=None) -> dict:
    """The run record ``OUT.report.json`` of the aligned TSVs (with the blocks' calibration: ``cal``, the one
    ``precision`` chose its threshold by, when given) and the HTML report."""
    from ..report.record import SUFFIX
    from ..report.runs import align_run_record, write_report

    rec = align_run_record(tsvs, encoder, src_lang, tgt_lang, params={"encoder": encoder, **options},
                           summary={"documents": len(tsvs)}, calibration=cal)
    return write_report(rec, f"{out}{SUFFIX}", report, title=f"bisent align: {Path(out).name}")


__all__ = ["DEFAULT_ENCODER", "PATHS", "align"]
