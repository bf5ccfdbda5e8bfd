"""``bisent train``: train a sentence encoder from a recipe; a thin layer over :func:`bisent.training.loop.train`."""

from __future__ import annotations

import json

import click

from ..errors import BisentError
from ..paths import guarded
from .options import FiniteFloat, recipe_name


def _word_vectors(specs: tuple[str, ...]):
    """``--word-vectors vec.txt`` (all languages) or ``--word-vectors en=en.vec --word-vectors de=de.vec``."""
    from ..training.data import split_spec

    if not specs:
        return None
    parsed = [split_spec(s) for s in specs]
    if len(parsed) == 1 and parsed[0][0] is None:
        return parsed[0][1]
    if any(lang is None for lang, _ in parsed):
        raise BisentError("--word-vectors: with several files, name each one's language: en=en.vec")
    return {lang: path for lang, path in parsed}


@click.command("train")
@click.option("-c", "--config", "recipe_path", required=True, type=click.Path(dir_okay=False), callback=recipe_name,
              help="YAML recipe: an installed one's name (bisent recipes: kim2019, distill-dan, adapt-use-m3, ...) "
              "or a path.")
@click.option("--train", "train_specs", multiple=True, metavar="[SRC-TGT=]TSV",
              help="Parallel training data (optional only for distill-* with --mono), src<TAB>tgt per line, or the "
                   "doc<TAB>id<TAB>src<TAB>tgt files of "
                   "'bisent data libreoffice', or .tmx/.xlf/.xliff/.jsonl/.parquet (repeatable); for hide / doc-bow "
                   "recipes, folders of 'bisent data docs'. Languages from the prefix, a name like "
                   "train.en-de.tsv or a folder like en-de/train.tsv, or the recipe's 'languages'.")
@click.option("--mono", "mono_specs", multiple=True, metavar="[LANG=]TXT",
              help="Monolingual text, one sentence per line (repeatable): kim2019 autoencodes it, distill-* "
                   "learns student(x) ~ teacher(x); one stream per language, and one more for files named "
                   "words.XX.txt (word lists of 'bisent data general').")
@click.option("--dev", "dev_specs", multiple=True, metavar="[SRC-TGT=]TSV",
              help="Dev pairs for the alignment-recovery error logged every train.eval_every steps.")
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Model directory to write (config.json, model.safetensors, tokenizer.model, checkpoint, log).")
@click.option("--resume", is_flag=True, help="Continue the run whose checkpoint is in the output directory.")
@click.option("--init", "init_dir", type=click.Path(file_okay=False), default=None,
              help="Start a new run from this model directory's weights (continued training on other data; "
                   "the same architecture and model size; optimisers and step start afresh).")
@click.option("--prepare-only", is_flag=True,
              help="Do the set-up every run of this recipe and data shares (a distilling recipe: the teacher's rows "
                   "into the embedding cache, in objectives.teacher_workers processes, and teacher-mined hard "
                   "negatives into theirs), write prepared.json into the output folder and stop; runs started "
                   "afterwards, any seed, read both back.")
@click.option("--max-steps", type=click.IntRange(min=0), default=None, help="Override train.max_steps.")
@click.option("--max-minutes", type=FiniteFloat(min=0), default=None,
              help="Stop (with a checkpoint) after this many minutes of this run.")
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="CPU threads for torch (train.threads); 1 is often fastest on a busy machine.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a recipe key, e.g. --set model.hidden_dim=128 (repeatable).")
@click.option("--word-vectors", "word_vectors", multiple=True, metavar="[LANG=]FILE",
              help="kim2019, divergence: initialise word embeddings from cross-lingual vectors ('word v1 v2 ...' "
              "lines).")
@click.option("--word-vectors-from", "word_vectors_from", default=None, metavar="ENCODER",
              help="divergence: initialise word embeddings from a multilingual encoder's vectors of each vocabulary "
                   "word (e.g. use-m3), projected by one PCA shared by both languages.")
@click.option("--progress/--no-progress", default=None, help="Show a progress bar (default: when on a terminal).")
@guarded(reads=("recipe_path", "init_dir"), specs=("train_specs", "mono_specs", "dev_specs", "word_vectors"),
         folders=("out_dir",), what={"out_dir": "model directory"})
def train(recipe_path, train_specs, mono_specs, dev_specs, out_dir, resume, init_dir, prepare_only, max_steps,
          max_minutes, threads, overrides, word_vectors, word_vectors_from, progress):
    """Train an encoder from a recipe and write a model directory that `bisent embed -e DIR` can use.

    Sequence-to-sequence recipes (kim2019, artetxe2019) and dual encoders trained by ranking (guo2019-*),
    distillation from a teacher encoder (distill-*) or adaptation of a frozen encoder (adapt-*).

    \b
    Examples:
      bisent train -c kim2019 --train en-de=train.tsv -o models/kim
      bisent train -c divergence --train train.en-de.tsv -o models/divergence --max-minutes 30
    """
    from ..models.hide import DOC_ARCHITECTURES
    from ..training.data import resolve_bitext, resolve_monotext
    from ..training.loop import train as run_training
    from ..training.prepare import prepare
    from ..training.recipe import load_recipe

    wv = _word_vectors(word_vectors)
    extra = _recipe_overrides(overrides, wv, word_vectors_from, threads, max_steps)
    recipe = load_recipe(recipe_path, extra)
    if not train_specs and not (mono_specs and recipe.get("objective") == "distill"):
        raise BisentError("--train: give parallel training data (only a distill-* recipe learns from --mono "
                          "alone)")
    if wv is not None and word_vectors_from is None and recipe["model"].get("word_vectors_from"):
        recipe["model"]["word_vectors_from"] = None                 # your files replace the recipe's encoder
    doc_sets = recipe["architecture"] in DOC_ARCHITECTURES                 # HiDE / Document BoW: document-set folders
    bitexts = list(train_specs) if doc_sets else [resolve_bitext(s, recipe["languages"]) for s in train_specs]
    monos = [resolve_monotext(s) for s in mono_specs]
    dev = [resolve_bitext(s, recipe["languages"]) for s in dev_specs]
    if prepare_only:
        if resume or init_dir is not None:
            raise BisentError("--prepare-only starts no run: drop --resume / --init")
        report, hard = prepare(recipe, bitexts, monos, dev, out_dir), {}
        if isinstance(report.get("hard_negatives"), dict):
            hard = {"hard_negatives_from_cache": report["hard_negatives"].get("from_cache")}
        return click.echo(json.dumps({"prepared": str(out_dir), "seconds": report["seconds"], **hard}))
    result = run_training(recipe, bitexts, monos, dev, out_dir, resume=resume, max_steps=max_steps,
                          max_minutes=max_minutes, progress=progress, init=init_dir)
    click.echo(json.dumps(_summary(result)))


def _recipe_overrides(overrides, wv, word_vectors_from, threads, max_steps) -> dict:
    """The recipe keys set by ``--set`` and by the options that stand for a key."""
    from ..training.recipe import parse_override

    extra = dict(parse_override(o) for o in overrides)
    if wv is not None:
        extra["model.word_vectors"] = wv
    if word_vectors_from is not None:
        extra["model.word_vectors_from"] = word_vectors_from
    if threads is not None:
        extra["train.threads"] = threads
    if max_steps is not None:                                         # the objective sees the last step too
        extra["train.max_steps"] = max_steps
    return extra


def _summary(result) -> dict:
    """The line printed after training: the model folder, the last step and loss, the last dev figures."""
    last = next((r for r in reversed(result.log) if "loss" in r), {})
    dev_last = next((r for r in reversed(result.log) if "dev_err" in r or "dev_p1" in str(list(r))), {})
    return {"model_dir": str(result.model_dir), "step": result.step, "loss": last.get("loss"),
            **{k: v for k, v in dev_last.items() if k.startswith(("dev_err", "dev_mine", "dev_p1"))}}
