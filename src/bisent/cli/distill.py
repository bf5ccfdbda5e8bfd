"""``bisent distill``: a fast student encoder distilled on the user's own text; a thin layer over
:func:`bisent.jobs.distill.distill`."""

from __future__ import annotations

import json

import click

from ..jobs.distill import DEFAULT_HELDOUT, DEFAULT_SAMPLE, DEFAULT_STEPS, DEFAULT_TEACHER
from ..paths import guarded
from .options import LANG


@click.command("distill")
@click.argument("files", metavar="FILE...", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-l", "--lang", "langs", multiple=True, required=True, type=LANG,
              help="Language of each FILE, in order (repeat: -l en -l de for two files).")
@click.option("-e", "--encoder", "teacher", default=DEFAULT_TEACHER, show_default=True,
              help="The teacher: a registered encoder or a model directory.")
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Model directory to write (weights, config.json, distill.json, distill.html, the sample).")
@click.option("--sample", type=click.IntRange(min=2), default=DEFAULT_SAMPLE, show_default=True,
              help="Sentences drawn from the input, all languages together (split equally between languages, "
                   "then between a language's files); all of them when the input is smaller.")
@click.option("--heldout", type=click.IntRange(min=1, max=10000), default=DEFAULT_HELDOUT, show_default=True,
              help="Sentences of each language held out from training for the quality figures (at most a tenth "
                   "of the language's sample).")
@click.option("--steps", type=click.IntRange(min=1), default=DEFAULT_STEPS, show_default=True,
              help="Training steps.")
@click.option("--seed", type=int, default=1, show_default=True, help="Seed of the sample and of the training.")
@click.option("--gold", "gold", multiple=True, metavar="[SRC-TGT=]PAIRS.tsv",
              help="Gold translation pairs (src<TAB>tgt): both encoders' recovery error on them (repeatable).")
@click.option("--lang-file", "lang_files", multiple=True, metavar="INPUT=LANGS",
              help="For a FILE of many languages (a crawl's language-identified side): LANGS gives the language of "
                   "each of its lines, one code a line (as `bisent data scale` writes tgt.lang); INPUT is the "
                   "file's position (1, 2, ...) or its -l code (still the code it is embedded with). Its share of "
                   "the sample is split equally between those languages, and the report gives the agreement per "
                   "language (repeatable).")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a key of the distill-dan recipe, e.g. --set model.buckets=65536 (repeatable).")
@click.option("--progress/--no-progress", default=None, help="Show progress bars (default: when on a terminal).")
@guarded(reads=("files",), specs=("gold", "lang_files"), states=("out_dir",), what={"out_dir": "model directory"})
def distill(files, langs, teacher, out_dir, sample, heldout, steps, seed, gold, lang_files, overrides, progress):
    """Distil a fast student of an encoder on your own text (FILE..., one sentence a line) into a model directory
    that every command takes as `-e DIR`, and measure it against its teacher on held-out sentences, without gold.

    Killed, the same command resumes; run again when finished, it reuses the model.

    \b
    Examples:
      bisent distill crawl.en.txt crawl.de.txt -l en -l de -o models/crawl
      bisent mine crawl.en.txt crawl.de.txt -l en -L de -e models/crawl -o mined.tsv
      bisent distill en.txt crawl.txt -l en -l de --lang-file 2=crawl.lang -o models/crawl
    """
    from ..jobs.distill import distill as run
    from ..training.recipe import parse_override

    summary = run(files, list(langs), out_dir, teacher=teacher, sample=sample, heldout=heldout, steps=steps,
                  seed=seed, gold=gold, overrides=dict(parse_override(o) for o in overrides), progress=progress,
                  lang_files=lang_files)
    click.echo(json.dumps({"model_dir": summary["model_dir"], "quality": {
        k: summary["quality"][k] for k in ("lowest_agreement", "closeness", "student_sentences_per_s")},
        "seconds": summary["seconds"]}))
