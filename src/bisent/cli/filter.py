"""``bisent filter``: filter a ``src<TAB>tgt`` file with a YAML pipeline; a thin layer over :func:`filter_file`."""

from __future__ import annotations

import json

import click

from ..paths import guarded
from .options import LANG, FiniteFloat, bitext_options, recipe_name


def _filter_paths(kw: dict) -> dict:
    """The checkpoint folder beside the kept lines, KEPT.report.json, and the two kept files of Moses output."""
    from pathlib import Path

    from ..formats import format_of, output_paths
    from ..training.fastdiv import model_dir_paths

    kept = kw["kept"]
    if kept == "-":
        return model_dir_paths(kw["train_divergence"])
    precision = kw["precision"]
    if precision is None:
        try:
            precision = _recipe_precision(kw["config"], kw["src_lang"], kw["tgt_lang"])
        except Exception:          # a broken recipe is reported by the command itself
            precision = None
    by_set = any(o.split("=")[0].strip().startswith("select.") for o in kw["overrides"])   # --set select.precision=P
    record = f"{kept}.report.json" if kw["report"] or precision is not None or by_set else None
    state = Path(kept).parent / f".{Path(kept).name}.filter-state"
    outs = output_paths(kept, kw["pairs"], format_of(kw["pairs"], kw["fmt"]))
    writes = {"--output record": record, **({f"--output ({o})": o for o in outs} if len(outs) > 1 else {})}
    paths = model_dir_paths(kw["train_divergence"])
    return {**paths, "states": {"checkpoint folder of --output": state, **paths.get("states", {})}, "writes": writes}


def _recipe_precision(config, src_lang: str, tgt_lang: str) -> float | None:
    """The precision target of the recipe's ``select: {precision: P}`` (None without one)."""
    from ..filtering import FilterPipeline, load_config
    from ..filtering.selection import Selection, precision_target

    if isinstance(config, FilterPipeline):
        return precision_target(config)
    data = load_config(config)                                   # the select section alone: no step is built
    select = data.get("select") if isinstance(data, dict) else None
    return Selection.from_config(select, source=str(config)).precision if select is not None else None


@click.command("filter")
@click.argument("pairs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-l", "--src-lang", type=LANG, required=True, help="Language of the first column.")
@click.option("-L", "--tgt-lang", type=LANG, required=True, help="Language of the second column.")
@click.option("-c", "--config", "config", default="filter-default", show_default=True,
              callback=recipe_name,
              type=click.Path(dir_okay=False),
              help="YAML pipeline: an installed recipe's name (bisent recipes: filter-default, filter-paracrawl) "
                   "or a path to a list of steps, or {steps: [...], select: {...}}.")
@click.option("-o", "--output", "kept", required=True, type=click.Path(dir_okay=False),
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
@click.option("--score-column", "score_column", is_flag=True,
              help="Add the score to kept units: a last TSV column, a JSONL key / Parquet column `score`, a TMX "
                   "<prop type=\"x-bisent-score\">, an XLIFF bisent:score attribute.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a pipeline key, a step by its name, type or index: --set cosine.accept.min=0.4, "
                   "--set length.max_length=100, --set select.n=1000 (repeatable; the value is read as YAML).")
@guarded(reads=("pairs", "config"), writes=("kept", "rejected", "summary", "report"), derived=_filter_paths,
         derived_params=("train_divergence",))
def filter_cmd(pairs, src_lang, tgt_lang, config, kept, rejected, summary, encoder, chunk_size, no_resume,
               progress, report, precision, train_divergence, fmt, columns, score_column, overrides):
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
    import shutil
    import sys
    import tempfile
    from pathlib import Path

    from ..errors import BisentError
    from ..filtering import FilterPipeline, edit_config, filter_file
    from ..formats import format_of
    from ..io import is_stdio, readable_file
    from ..recipes import set_keys
    from ..training.recipe import parse_override

    in_fmt = format_of(pairs, fmt)
    for name, path in (("--rejected", rejected), ("--summary", summary)):
        if is_stdio(path):
            raise BisentError(f"{name} -: standard output is for the kept lines (-o -); give {name} a file name")
    settings = [parse_override(s) for s in overrides]
    pipe = config
    data = None
    if encoder or settings:
        data = edit_config(config, encoder=encoder)
        if isinstance(data, dict) and isinstance(data.get("steps"), list):   # {steps, select}: other keys name steps
            on_steps = [(k, v) for k, v in settings if k.split(".")[0] not in ("steps", "select")]
            data["steps"] = set_keys(data["steps"], on_steps, config)
            settings = [s for s in settings if s not in on_steps]
        data = set_keys(data, settings, config)
        pipe = FilterPipeline.from_config(data, src_lang=src_lang, tgt_lang=tgt_lang, source=config)
    if train_divergence:
        pipe = _add_divergence(pairs, in_fmt, columns, pipe, edit_config(config) if data is None else data, config,
                               src_lang, tgt_lang, train_divergence, progress)
    if precision is None:                                   # the recipe's select: {precision: P}
        precision = _recipe_precision(pipe, src_lang, tgt_lang)
    if in_fmt != "tsv" or columns is not None or score_column:
        _filter_bitext(pairs, kept, rejected, src_lang, tgt_lang, pipe, in_fmt, columns, score_column, summary,
                       chunk_size, progress, report, precision, config, encoder)
        return
    pairs = pairs[0]
    with readable_file(pairs) as in_path, tempfile.TemporaryDirectory(prefix="bisent-filter-") as tmp:
        from ..filtering.bitext import check_two_columns
        check_two_columns(in_path)
        # kept lines to standard output: built in a temporary file (a killed run cannot resume), then copied
        out = Path(tmp) / "kept.tsv" if is_stdio(kept) else kept
        result = filter_file(in_path, out, rejected, src_lang, tgt_lang, pipe, summary_path=summary,
                             chunk_size=chunk_size, resume=not no_resume and not is_stdio(kept), progress=progress)
        result["input"], result["kept_file"] = pairs, kept
        if report or precision is not None:
            from ..report import finish_filter
            result.update(finish_filter(in_path, out, rejected, result, pipe, src_lang, tgt_lang, precision=precision,
                                        report=report, summary_path=summary,
                                        params={"config": config, "encoder": encoder}))
        if is_stdio(kept):
            with open(out, "rb") as f:
                shutil.copyfileobj(f, sys.stdout.buffer)
            sys.stdout.buffer.flush()
    click.echo(json.dumps({k: v for k, v in result.items() if k != "pipeline"}), err=True)


def _add_divergence(pairs, in_fmt, columns, pipe, data, config, src_lang, tgt_lang, model_dir, progress):
    """``--train-divergence DIR``: the pipeline with a divergence step of the model in DIR, trained there first
    (on the pairs ``pipe`` keeps of the input) when DIR holds none (:mod:`bisent.training.fastdiv`)."""
    import tempfile
    from pathlib import Path

    from ..errors import BisentError
    from ..filtering import FilterPipeline, as_pipeline, filter_file, parse_row
    from ..io import is_stdio
    from ..training.fastdiv import check_model_dir, ensure_model, has_model, with_divergence

    check_model_dir(model_dir)
    if not has_model(model_dir):
        if in_fmt != "tsv" or columns is not None or len(pairs) != 1 or is_stdio(pairs[0]):
            raise BisentError(f"--train-divergence {model_dir}: training reads a src<TAB>tgt file (the folder holds "
                              "no model yet; train it on one, or with bisent train -c divergence-fast)")
        with tempfile.TemporaryDirectory(prefix="bisent-filter-div-") as tmp:
            first = as_pipeline(pipe, src_lang, tgt_lang)
            filter_file(pairs[0], Path(tmp) / "kept.tsv", Path(tmp) / "rejected.tsv", src_lang, tgt_lang, first,
                        resume=False, progress=progress)
            with open(Path(tmp) / "kept.tsv", "rb") as f:
                kept = [p for raw in f if (p := parse_row(raw.rstrip(b"\n"))[0]) is not None]
        click.echo(f"bisent filter: training a divergence model on {len(kept)} kept pairs into {model_dir}", err=True)
        ensure_model(model_dir, kept, src_lang, tgt_lang, progress=progress)
    return FilterPipeline.from_config(with_divergence(data, model_dir), src_lang=src_lang, tgt_lang=tgt_lang,
                                      source=str(config))


def _filter_bitext(pairs, kept, rejected, src_lang, tgt_lang, pipe, fmt, columns, score_column, summary, chunk_size,
                   progress, report, precision, config, encoder) -> None:
    """Any other format (or --columns, --score-column): :func:`bisent.filtering.bitext.filter_bitext`."""
    import contextlib

    from ..filtering.bitext import filter_bitext
    from ..io import readable_file

    finish = None
    if report or precision is not None:
        def finish(t_in, t_kept, t_rej, result):
            from ..report import finish_filter
            return finish_filter(t_in, t_kept, t_rej, result, pipe, src_lang, tgt_lang, precision=precision,
                                 report=report, params={"config": config, "encoder": encoder})
    with contextlib.ExitStack() as stack:
        paths = [stack.enter_context(readable_file(p)) for p in pairs]   # `-` and pipes: copied once
        result = filter_bitext(paths, kept, rejected, src_lang, tgt_lang, pipe, fmt=fmt, columns=columns,
                               score_column="score" if score_column else None, summary_path=summary,
                               chunk_size=chunk_size, progress=progress, finish=finish)
    result["input"] = list(pairs) if len(pairs) > 1 else pairs[0]
    click.echo(json.dumps({k: v for k, v in result.items() if k != "pipeline"}), err=True)
