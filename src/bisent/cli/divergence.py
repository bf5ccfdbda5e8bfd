"""``bisent divergence``: every word of every pair with its divergence score and label (JSON lines).

Training goes through ``bisent train -c divergence`` (the one training loop,
:mod:`bisent.training.objectives.divergence`).
"""

from __future__ import annotations

import json

import click

from ..paths import guarded
from .options import bitext_options


@click.command("divergence")
@click.argument("pairs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-m", "--model", "model_dir", required=True,
              help="Divergence model directory (bisent train -c divergence).")
@click.option("-o", "--output", default="-", show_default=True, type=click.Path(dir_okay=False),
              help="JSON lines, one per input line.")
@bitext_options
@guarded(reads=("pairs", "model_dir"), writes=("output",))
def divergence(pairs, model_dir, output, fmt, columns):
    """Score each word of PAIRS (src<TAB>tgt, doc<TAB>id<TAB>src<TAB>tgt, two Moses files, TMX, XLIFF, JSONL,
    Parquet: see --format) as parallel or divergent.

    One JSON line per input line: {"line": N, "src": [[word, score, label], ...], "tgt": [...],
    "divergent": count, "sim": Eq. 1 cosine}; label +1 (divergent) when the score (Eq. 2) is
    negative, -1 (parallel) otherwise. A line that cannot be scored (bad row, empty side,
    over-long side) gets {"line": N, "reason": "..."}.

    \b
    Examples:
      bisent divergence pairs.tsv -m models/divergence -o words.jsonl
      bisent divergence corpus.en corpus.de -m models/divergence
    """
    import sys

    from ..divergence.files import read_pairs
    from ..divergence.scores import score_pair
    from ..io import atomic_write
    from ..models.divergence import load_model

    model = load_model(model_dir)

    def lines():
        for n, pair, reason in read_pairs(pairs, fmt=fmt, columns=columns):
            rec = {"line": n, **({"reason": reason} if pair is None else score_pair(model, *pair))}
            yield json.dumps(rec, ensure_ascii=False) + "\n"

    if output == "-":
        sys.stdout.writelines(lines())
    else:
        with atomic_write(output) as f:
            f.writelines(lines())

