"""``bisent align``: sentence alignment inside document pairs (one pair, or many from a TSV of path pairs); a thin
layer over :func:`bisent.jobs.align`."""

from __future__ import annotations

import click

from ..align.costs import COPIES, LENGTH_WEIGHT, MAX_SIZE, MERGE_PENALTY, SKIP_FLOOR, SKIP_QUANTILE
from ..jobs.align import DEFAULT_ENCODER, PATHS
from ..paths import guarded
from .options import LANG, FiniteFloat, echo_summary


@click.command("align")
@click.argument("src_doc", required=False, type=click.Path(dir_okay=False))
@click.argument("tgt_doc", required=False, type=click.Path(dir_okay=False))
@click.option("-l", "--src-lang", type=LANG, required=True, help="Source language code.")
@click.option("-L", "--tgt-lang", type=LANG, required=True, help="Target language code.")
@click.option("-e", "--encoder", default=DEFAULT_ENCODER, show_default=True,
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
@click.option("-o", "--output", "output", required=True, type=click.Path(),
              help="Aligned TSV: src_lines, tgt_lines, score, src, tgt (a folder with --pairs).")
@click.option("--report", type=click.Path(dir_okay=False), default=None,
              help="Also write this HTML report (and OUT.report.json, or OUT/pairs.report.json with --pairs).")
@guarded(**PATHS)
def align(**options):
    """Align the sentences of SRC_DOC and TGT_DOC (one sentence per line, or raw text with --split).

    Every input line is in exactly one output row: aligned groups (1-1, 1-2,
    2-1, ...) with the cosine of their embeddings, unaligned lines as 1-0 / 0-1
    rows with an empty score, empty lines with the score 'empty'.

    \b
    Examples:
      bisent align doc.en doc.de -l en -L de -o aligned.tsv
      bisent align --pairs pairs.tsv -l en -L de -o aligned/ --report align.html
    """
    from .. import jobs

    echo_summary(jobs.align(**options))
