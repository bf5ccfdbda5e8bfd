"""``bisent align``: sentence alignment inside document pairs (one pair, or many from a TSV of path pairs)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..align.costs import COPIES, LENGTH_WEIGHT, MAX_SIZE, MERGE_PENALTY, SKIP_FLOOR, SKIP_QUANTILE
from ..errors import BisentError
from ..paths import guarded
from .options import LANG, FiniteFloat


def _align_paths(kw: dict) -> dict:
    """OUT: a file, or with --pairs bisent's folder of alignments; and its OUT.report.json record."""
    out = kw["out"]
    if kw["pairs"]:
        return {"states": {"--output folder": out}, "writes": {"--output record": Path(out) / "pairs.report.json"
                                                        if kw["report"] else None}}
    return {"writes": {"--output": out, "--output record": f"{out}.report.json" if kw["report"] else None}}


@click.command("align")
@click.argument("src_doc", required=False, type=click.Path(dir_okay=False))
@click.argument("tgt_doc", required=False, type=click.Path(dir_okay=False))
@click.option("-l", "--src-lang", type=LANG, required=True, help="Source language code.")
@click.option("-L", "--tgt-lang", type=LANG, required=True, help="Target language code.")
@click.option("-e", "--encoder", default="use-m3", show_default=True,
              help="Encoder name or model directory, or 'gale-church' (length model, no encoder).")
@click.option("--split", is_flag=True,
              help="Input is raw text: split each line into sentences with sentencex; the TSV has a row per "
                   "sentence block (its sentences' lines, texts and score; --blocks stays at line level).")
@click.option("--pairs", type=click.Path(dir_okay=False),
              help="TSV of src_path<TAB>tgt_path lines (relative to it) instead of SRC_DOC TGT_DOC; -o is then a "
                   "folder.")
@click.option("-j", "--jobs", type=click.IntRange(1), default=1, show_default=True,
              help="Processes for --pairs (each loads the encoder).")
@click.option("--blocks", type=click.Path(dir_okay=False),
              help="Also write the alignment as [i]:[j]:score lines (0-based line indices).")
@click.option("--max-size", type=click.IntRange(2, 8), default=MAX_SIZE, show_default=True,
              help="Largest group a+b (4: 1-1, 1-2, 2-1, 1-3, 3-1, 2-2; 5 adds 1-4, 4-1, 2-3, 3-2).")
@click.option("--skip-quantile", type=FiniteFloat(min=0, max=1, min_open=True, max_open=True), default=SKIP_QUANTILE,
              show_default=True,
              help="Skip cost = this quantile of the costs of random sentence pairs.")
@click.option("--skip-floor", type=FiniteFloat(min=0, max=10), default=SKIP_FLOOR, show_default=True,
              help="The skip cost is at least this times the median cost of random sentence pairs (0: no floor).")
@click.option("--merge-penalty", type=FiniteFloat(min=0, max=10), default=MERGE_PENALTY, show_default=True,
              help="Added per extra sentence of a merged group (a 2-1 step pays it once).")
@click.option("--length-weight", type=FiniteFloat(min=0, max=10), default=LENGTH_WEIGHT, show_default=True,
              help="Weight of Gale & Church's length cost added to the embedding cost (0: none).")
@click.option("--copies/--no-copies", default=COPIES, show_default=True,
              help="Leave a prose sentence and its unchanged copy in the other document unaligned (an untranslated "
                   "passage), instead of aligning the text with itself.")
@click.option("--width", type=click.IntRange(1), default=10, show_default=True,
              help="Band half-width of the fine pass for long documents (sentences).")
@click.option("--precision", type=FiniteFloat(min=0, max=1), default=None,
              help="Keep only the aligned blocks above the lowest score whose precision, estimated without gold "
                   "(as --report calibrates), is this; the blocks below become unaligned 1-0 / 0-1 rows.")
@click.option("-o", "--output", "out", required=True, type=click.Path(),
              help="Aligned TSV: src_lines, tgt_lines, score, src, tgt (a folder with --pairs).")
@click.option("--report", type=click.Path(dir_okay=False), default=None,
              help="Also write this HTML report (and OUT.report.json, or OUT/pairs.report.json with --pairs).")
@guarded(reads=("src_doc", "tgt_doc", "pairs"), writes=("blocks", "report"), derived=_align_paths,
         derived_params=("out",))
def align(src_doc, tgt_doc, src_lang, tgt_lang, encoder, split, pairs, jobs, blocks, max_size, skip_quantile,
          skip_floor, merge_penalty, length_weight, copies, width, precision, out, report):
    """Align the sentences of SRC_DOC and TGT_DOC (one sentence per line, or raw text with --split).

    Every input line is in exactly one output row: aligned groups (1-1, 1-2,
    2-1, ...) with the cosine of their embeddings, unaligned lines as 1-0 / 0-1
    rows with an empty score, empty lines with the score 'empty'.

    \b
    Examples:
      bisent align doc.en doc.de -l en -L de -o aligned.tsv
      bisent align --pairs pairs.tsv -l en -L de -o aligned/ --report align.html
    """
    options = {"max_size": max_size, "skip_quantile": skip_quantile, "skip_floor": skip_floor,
               "merge_penalty": merge_penalty,
               "length_weight": length_weight, "copies": copies, "width": width}
    if pairs:
        if src_doc or tgt_doc:
            raise BisentError("give either SRC_DOC TGT_DOC or --pairs, not both")
        from ..align.batch import align_many
        summary = align_many(pairs, out, src_lang, tgt_lang, encoder=encoder, jobs=jobs, split=split, **options)
        tsvs = sorted(Path(out).glob("[0-9]*.tsv"))
        cal = _keep_precision(summary, tsvs, [t.with_suffix(".blocks") for t in tsvs], encoder, src_lang, tgt_lang,
                              precision)
        if report:
            summary.update(_report(tsvs, Path(out) / "pairs", report, encoder, options, src_lang, tgt_lang, cal))
        click.echo(json.dumps(summary))
        return
    if not (src_doc and tgt_doc):
        raise BisentError("give SRC_DOC and TGT_DOC, or --pairs PAIRS.tsv")
    from ..align import SentenceAligner
    from ..align.batch import align_files
    summary = align_files(src_doc, tgt_doc, src_lang, tgt_lang, SentenceAligner(encoder, **options),
                          out_tsv=out, out_blocks=blocks, split=split)
    cal = _keep_precision(summary, [out], [blocks], encoder, src_lang, tgt_lang, precision)
    if report:
        summary.update(_report([out], out, report, encoder, options, src_lang, tgt_lang, cal))
    click.echo(json.dumps(summary))


def _keep_precision(summary: dict, tsvs, blocks, encoder, src_lang, tgt_lang, precision):
    """``--precision``: unalign the blocks below the calibrated threshold; the calibration (None without it)."""
    if precision is None:
        return None
    from ..report.runs import keep_precision

    fields, cal = keep_precision(tsvs, blocks, encoder, src_lang, tgt_lang, precision)
    summary.update(fields)
    return cal


def _report(tsvs, out, report, encoder, options, src_lang, tgt_lang, cal=None) -> dict:
    """The run record ``OUT.report.json`` of the aligned TSVs (with the blocks' calibration: ``cal``, the one
    ``--precision`` chose its threshold by, when given) and the HTML report."""
    from ..report.record import SUFFIX
    from ..report.runs import align_run_record, write_report

    rec = align_run_record(tsvs, encoder, src_lang, tgt_lang, params={"encoder": encoder, **options},
                           summary={"documents": len(tsvs)}, calibration=cal)
    return write_report(rec, f"{out}{SUFFIX}", report, title=f"bisent align: {Path(out).name}")
