"""``bisent repair``: cut pairs back to their parallel core (section 3.2), one line out per line in; a thin layer
over :func:`bisent.jobs.repair`."""

from __future__ import annotations

import click

from ..jobs.repair import PATHS
from ..paths import guarded
from .options import FiniteFloat, bitext_options, echo_summary


@click.command("repair")
@click.argument("pairs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-m", "--model", "model_dir", required=True,
              help="Divergence model directory (bisent train -c divergence).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="Repaired pairs (TSV, see below).")
@click.option("--n-best", type=click.IntRange(1), default=20, show_default=True, help="N-best cuts re-ranked.")
@click.option("--tau", type=click.IntRange(0), default=None,
              help="Both kept spans must have more than this many words (default: the value chosen on dev, "
                   "bisent.divergence.TAU; the paper's is 3).")
@click.option("--rerank", type=click.Choice(["align", "sim"]), default="align", show_default=True,
              help="Rank the N-best by aligned score (align) or by the Eq. 1 cosine of the cut pair (sim).")
@click.option("--min-gain", type=FiniteFloat(min=0), default=0.0, show_default=True,
              help="A cut must beat the full pair by more than this.")
@click.option("--min-word-gain", type=FiniteFloat(min=0), default=None,
              help="... and by more than this per word it removes (default: the value chosen on dev, "
                   "bisent.divergence.MIN_WORD_GAIN).")
@click.option("--boundary-cost", type=FiniteFloat(min=0), default=None,
              help="What a cut pays per edge that is not at a sentence end of its side (after . ! ? : ;); "
                   "0 turns the preference off (default: the value chosen on dev, bisent.divergence.BOUNDARY_COST).")
@click.option("--sentences-only", is_flag=True,
              help="Cut only where a sentence ends (as the filter pipeline's repair step does by default).")
@click.option("--one-side", is_flag=True, help="Keep one side whole (the repair step's default).")
@click.option("--match-ends", is_flag=True,
              help="Refuse a cut at an end after which one kept side ends with sentence-final punctuation and "
                   "the other does not (the repair step's default).")
@bitext_options
@guarded(**PATHS)
def repair(**options):
    """Cut leading/trailing words of both sides of each pair of PAIRS where the model finds them divergent.
    PAIRS: src<TAB>tgt (or doc<TAB>id<TAB>src<TAB>tgt), two Moses files, TMX, XLIFF, JSONL, Parquet (--format).

    Output, one line per input line: line<TAB>status<TAB>src_span<TAB>tgt_span<TAB>before<TAB>after
    <TAB>src<TAB>tgt. status is kept, cut, or skipped: REASON (bad row, empty or over-long side;
    src/tgt then empty); spans are 1-based word ranges of the original sides (words: the paper's
    minimal tokenisation); before/after are the ranking scores of the full and of the kept pair.
    `cut -f7,8` gives the repaired bitext. A summary goes to stderr.

    \b
    Examples:
      bisent repair pairs.tsv -m models/divergence -o repaired.tsv
      bisent repair corpus.en corpus.de -m models/divergence --sentences-only -o repaired.tsv
    """
    from .. import jobs

    echo_summary(jobs.repair(**options), err=True)
