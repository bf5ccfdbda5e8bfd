"""``bisent filter``: filter a bitext with a YAML pipeline; a thin layer over :func:`bisent.jobs.filter`."""

from __future__ import annotations

import click

from ..jobs.filter import DEFAULT_CONFIG, PATHS
from ..paths import guarded
from .options import LANG, FiniteFloat, bitext_options, echo_summary, recipe_name, score_all_option


@click.command("filter")
@click.argument("pairs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-l", "--src-lang", type=LANG, required=True, help="Language of the first column.")
@click.option("-L", "--tgt-lang", type=LANG, required=True, help="Language of the second column.")
@click.option("-c", "--config", "config", default=DEFAULT_CONFIG, show_default=True,
              callback=recipe_name,
              type=click.Path(dir_okay=False),
              help="YAML pipeline: an installed recipe's name (bisent recipes: filter-default, filter-paracrawl) "
                   "or a path to a list of steps, or {steps: [...], select: {...}}.")
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False),
              help="Kept lines or units in the input's format, byte for byte where unchanged (.gz/.xz/.zst: "
                   "compressed). Moses input: a stem (-o kept writes kept.en kept.de).")
@click.option("--rejected", required=True, type=click.Path(dir_okay=False),
              help="Rejected lines as lineno<TAB>reason<TAB>score<TAB>line.")
@click.option("--summary", type=click.Path(dir_okay=False), default=None,
              help="Also write the summary (lines per reason) to this JSON file.")
@click.option("-e", "--encoder", default=None,
              help="Encoder for every embedding step (cosine, csls, margin), overriding the configuration.")
@click.option("--chunk-size", type=click.IntRange(1), default=10_000, show_default=True,
              help="Lines scored (and checkpointed) at a time.")
@click.option("--no-resume", is_flag=True, help="Start over even if an unfinished run left a checkpoint.")
@click.option("--progress/--no-progress", default=None,
              help="Show progress bars (default: on a terminal; periodic lines otherwise).")
@click.option("--report", type=click.Path(dir_okay=False), default=None,
              help="Also write this HTML report (and KEPT.report.json: scores, samples, calibration).")
@click.option("--precision", type=FiniteFloat(min=0, max=1), default=None,
              help="Keep only pairs above the score step's threshold whose precision, estimated without gold, is this "
                   "(overrides the recipe's select: {precision: P}).")
@click.option("--train-divergence", "train_divergence", default=None, type=click.Path(file_okay=False),
              help="Add a divergence step (share of words found parallel >= 0.8) with the model in this folder; "
                   "when it holds none, first train one there (recipe divergence-fast, at most 12 minutes) on the "
                   "pairs the recipe keeps of this input (src<TAB>tgt). A later run with the folder reuses it.")
@bitext_options
@score_all_option
@click.option("--score-column", "score_column", is_flag=True,
              help="Add the score to kept units: a last TSV column, a JSONL key / Parquet column `score`, a TMX "
                   "<prop type=\"x-bisent-score\">, an XLIFF bisent:score attribute.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a pipeline key, a step by its name, type or index: --set cosine.accept.min=0.4, "
                   "--set length.max_length=100, --set select.n=1000 (repeatable; the value is read as YAML).")
@guarded(**PATHS)
def filter_cmd(**options):
    """Filter PAIRS into kept and rejected lines (`-o -`: kept lines to standard output); print the summary
    as JSON. PAIRS is one file (src<TAB>tgt, TSV with --columns, TMX, XLIFF, JSONL, Parquet; .gz/.xz/.zst;
    `-`: standard input) or two line-aligned Moses files (FILE.en FILE.de).

    Every input line or unit ends up in exactly one output; bad rows (wrong
    column count, undecodable bytes, NUL, a side over 1 MB) and malformed TMX/
    XLIFF units are rejected with a bad_row:* / bad_unit:* reason and their line
    or unit number. A file whose every line has the wrong column count is an
    error. A killed run on a src<TAB>tgt file continues where it stopped when rerun.

    \b
    Examples:
      bisent filter noisy.tsv -l en -L de -o kept.tsv --rejected rejected.tsv
      bisent filter corpus.tmx -l en -L fr -c filter-paracrawl -o kept.tmx --rejected rejected.tsv --report filter.html
    """
    from .. import jobs

    echo_summary(jobs.filter(**options), err=True)
