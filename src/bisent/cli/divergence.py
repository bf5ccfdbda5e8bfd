"""``bisent divergence``: every word of every pair with its divergence score and label (JSON lines).

Training goes through ``bisent train --recipe recipes/divergence.yaml`` (:func:`train_from_cli`).
"""

from __future__ import annotations

import json

import click

from ..errors import BisentError


@click.command("divergence")
@click.argument("pairs", type=click.Path(dir_okay=False))
@click.option("-e", "--encoder", "model_dir", required=True, help="Divergence model directory.")
@click.option("-o", "--output", default="-", show_default=True, type=click.Path(dir_okay=False),
              help="JSON lines, one per input line.")
def divergence(pairs, model_dir, output):
    """Score each word of PAIRS (src<TAB>tgt, or doc<TAB>id<TAB>src<TAB>tgt) as parallel or divergent.

    One JSON line per input line: {"line": N, "src": [[word, score, label], ...], "tgt": [...],
    "divergent": count, "sim": Eq. 1 cosine}; label +1 (divergent) when the score (Eq. 2) is
    negative, -1 (parallel) otherwise. A line that cannot be scored (bad row, empty side,
    over-long side) gets {"line": N, "reason": "..."}.
    """
    import sys

    from ..divergence import read_pairs, score_pair
    from ..io import atomic_write
    from ..models.divergence import load_model

    model = load_model(model_dir)

    def lines():
        for n, pair, reason in read_pairs(pairs):
            rec = {"line": n, **({"reason": reason} if pair is None else score_pair(model, *pair))}
            yield json.dumps(rec, ensure_ascii=False) + "\n"

    if output == "-":
        sys.stdout.writelines(lines())
    else:
        with atomic_write(output) as f:
            f.writelines(lines())


def train_from_cli(recipe_path, train_specs, out_dir, *, max_steps, max_minutes, threads, overrides, word_vectors,
                   progress):
    """``bisent train`` with a divergence recipe: one language pair, word-vector files keyed src/tgt or by language."""
    from ..training.data import resolve_bitext
    from ..training.objectives.divergence import load_recipe, train_divergence
    from ..training.recipe import parse_override

    extra = dict(parse_override(o) for o in overrides)
    if max_steps is not None:
        extra["train.max_steps"] = max_steps
    if max_minutes is not None:
        extra["train.max_minutes"] = max_minutes
    if threads is not None:
        extra["train.threads"] = threads
    recipe = load_recipe(recipe_path, extra)
    if len(train_specs) != 1:
        raise BisentError("--train: a divergence model is trained on one language pair (give one --train)")
    bt = resolve_bitext(train_specs[0])
    wv = None
    if word_vectors:
        wv = word_vectors if isinstance(word_vectors, dict) else {"src": word_vectors, "tgt": word_vectors}
        wv = {("src" if k == bt.src_lang else "tgt" if k == bt.tgt_lang else k): v for k, v in wv.items()}
    train_divergence(bt.pairs, out_dir, src_lang=bt.src_lang, tgt_lang=bt.tgt_lang, recipe=recipe,
                     word_vectors=wv, progress=progress)
    click.echo(json.dumps({"model_dir": str(out_dir)}))
