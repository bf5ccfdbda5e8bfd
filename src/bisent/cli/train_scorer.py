"""``bisent train-scorer``: train Kim et al. (2019)'s MLP similarity; a thin layer over :func:`train_scorer`."""

from __future__ import annotations

import json
import time

import click

from ..encoders import DEFAULT_ENCODER
from ..errors import BisentError
from ..paths import guarded
from .options import LANG


def _hidden(text: str) -> list[int]:
    try:
        sizes = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        sizes = []
    if not sizes or any(s < 1 for s in sizes):
        raise BisentError(f"--hidden must be layer sizes like 512,512, got {text!r}")
    return sizes


@click.command("train-scorer")
@click.option("--clean", required=True, type=click.Path(dir_okay=False),
              help="Positives: a clean bitext, src<TAB>tgt per line (plain, .gz, .xz).")
@click.option("--noisy", type=click.Path(dir_okay=False), default=None,
              help="A noisy corpus (src<TAB>tgt) for the sample and worst:X negatives.")
@click.option("--negatives", default="random", show_default=True,
              help="random (re-paired clean pairs), sample (random noisy lines), worst:X (X in 20/40/60/80/100: "
                   "the pairs just above the top-X % cut of the noisy corpus by cosine), synthetic (noise kinds).")
@click.option("--third", type=click.Path(dir_okay=False), default=None,
              help="synthetic: one line per clean pair, its source in a third language (empty line: none).")
@click.option("-l", "--src-lang", type=LANG, required=True, help="Language of the first column.")
@click.option("-L", "--tgt-lang", type=LANG, required=True, help="Language of the second column.")
@click.option("-e", "--encoder", default=DEFAULT_ENCODER, show_default=True,
              help="Registered encoder name or a model directory (recorded in the scorer).")
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Scorer directory to write (config.json + model.safetensors).")
@click.option("--hidden", default="512,512", show_default=True, help="Hidden ReLU layer sizes.")
@click.option("--features", type=click.Choice(["concat", "concat-diff-prod"]), default="concat",
              show_default=True, help="Network input: [a;b] (the paper) or [a;b;|a-b|;a*b].")
@click.option("--n-negatives", type=click.IntRange(1), default=None,
              help="How many negatives (default: as many as positives; worst:X at most a fifth of the noisy corpus).")
@click.option("--max-updates", type=click.IntRange(1), default=1000, show_default=True,
              help="Optimiser updates of the MLP.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the negatives and the weights.")
@click.option("--threads", type=click.IntRange(1), default=None,
              help="torch threads for training (default 1: deterministic).")
@click.option("--progress/--no-progress", default=None, help="Show embedding progress bars.")
@guarded(reads=("clean", "noisy", "third"), folders=("out_dir",), what={"out_dir": "scorer directory"})
def train_scorer_cmd(clean, noisy, negatives, third, src_lang, tgt_lang, encoder, out_dir, hidden, features,
                     n_negatives, max_updates, seed, threads, progress):
    """Train an MLP similarity on CLEAN pairs against negatives chosen by strategy; use it with
    `{type: mlp, model: DIR}` in a filter pipeline.

    \b
    Examples:
      bisent train-scorer --clean clean.tsv -l en -L de -o models/scorer
    """
    from ..filtering.mlp import read_pairs, train_scorer
    from ..filtering.negatives import parse_strategy
    from ..io import read_lines

    t0 = time.perf_counter()
    name, _ = parse_strategy(negatives)
    if name in ("sample", "worst") and noisy is None:
        raise BisentError(f"--negatives {negatives} needs --noisy NOISY.tsv")
    pos, skipped = read_pairs(clean)
    if len(pos) < 2:
        raise BisentError(f"{clean}: fewer than 2 usable pairs")
    noisy_pairs, noisy_skipped = read_pairs(noisy) if noisy else (None, 0)
    third_texts = None
    if third is not None:
        if name != "synthetic":
            raise BisentError("--third is for --negatives synthetic")
        third_texts = [line.text or None for line in read_lines(third, on_bad="keep")]
        if skipped or len(third_texts) != len(pos):
            raise BisentError(f"{third}: {len(third_texts)} lines, but {clean} has {len(pos)} usable pairs "
                              f"(--third needs one line per clean line, and a clean file without bad rows)")
    scorer = train_scorer(pos, src_lang, tgt_lang, encoder=encoder, negatives=negatives, noisy=noisy_pairs,
                          n_negatives=n_negatives, third=third_texts, out_dir=out_dir, progress=progress,
                          hidden=_hidden(hidden), features=features, max_updates=max_updates, seed=seed,
                          threads=threads)
    summary = {"scorer": str(out_dir), "encoder": encoder, "negatives": negatives,
               "clean_skipped": skipped, "noisy_skipped": noisy_skipped, **scorer.meta["training"],
               "total_seconds": round(time.perf_counter() - t0, 2)}
    summary.pop("hp", None)
    click.echo(json.dumps(summary), err=True)
