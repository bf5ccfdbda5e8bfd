"""The filtering job: a bitext through a YAML pipeline of steps into kept and rejected lines (``bisent filter``).

Owns what a run needs around :func:`bisent.filtering.filter_file` (a ``src<TAB>tgt`` file, resumable from its
checkpoint folder) and :func:`bisent.filtering.bitext.filter_bitext` (every other format): the recipe and its
``--set`` overrides, the precision target (the option, else the recipe's ``select: {precision: P}``), an optional
divergence step trained first, standard input and output, and the report record.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from ..errors import BisentError
from ..io import is_stdio
from .common import check_paths, fspaths, note, stdout_via_temp

#: the recipe a filter run uses unless told otherwise (an installed recipe's name)
DEFAULT_CONFIG = "filter-default"


def _paths(kw: dict) -> dict:
    """The checkpoint folder beside the kept lines, KEPT.report.json, and the two kept files of Moses output."""
    from ..formats import format_of, output_paths
    from ..training.fastdiv import model_dir_paths

    kept = kw["output"]
    if kept == "-":
        return model_dir_paths(kw["train_divergence"])
    precision = kw["precision"]
    if precision is None:
        try:
            precision = recipe_precision(kw["config"], kw["src_lang"], kw["tgt_lang"])
        except Exception:          # a broken recipe is reported by the job itself
            precision = None
    by_set = any(o.split("=")[0].strip().startswith("select.") for o in kw["overrides"])   # --set select.precision=P
    record = f"{kept}.report.json" if kw["report"] or precision is not None or by_set else None
    state = Path(kept).parent / f".{Path(kept).name}.filter-state"
    outs = output_paths(kept, kw["pairs"], format_of(kw["pairs"], kw["fmt"]))
    writes = {"--output record": record, **({f"--output ({o})": o for o in outs} if len(outs) > 1 else {})}
    paths = model_dir_paths(kw["train_divergence"])
    return {**paths, "states": {"checkpoint folder of --output": state, **paths.get("states", {})}, "writes": writes}


#: the paths of a filter run, for :func:`bisent.paths.guarded` and :func:`bisent.jobs.common.check_paths`
PATHS = {"reads": ("pairs", "config"), "writes": ("output", "rejected", "summary", "report", "score_all"),
         "derived": _paths, "derived_params": ("train_divergence",)}


def recipe_precision(config, src_lang: str, tgt_lang: str) -> float | None:
    """The precision target of the recipe's ``select: {precision: P}`` (None without one)."""
    from ..filtering import FilterPipeline, load_config
    from ..filtering.selection import Selection, precision_target

    if isinstance(config, FilterPipeline):
        return precision_target(config)
    data = load_config(config)                                   # the select section alone: no step is built
    select = data.get("select") if isinstance(data, dict) else None
    return Selection.from_config(select, source=str(config)).precision if select is not None else None


def _pipeline(config, encoder, overrides, src_lang, tgt_lang):
    """``(pipeline or the recipe itself, the edited configuration or None)``: ``encoder`` and ``--set`` applied."""
    from ..filtering import FilterPipeline, edit_config
    from ..recipes import set_keys
    from ..training.recipe import parse_override

    settings = [parse_override(s) for s in overrides]
    if not (encoder or settings):
        return config, None
    data = edit_config(config, encoder=encoder)
    if isinstance(data, dict) and isinstance(data.get("steps"), list):   # {steps, select}: other keys name steps
        on_steps = [(k, v) for k, v in settings if k.split(".")[0] not in ("steps", "select")]
        data["steps"] = set_keys(data["steps"], on_steps, config)
        settings = [s for s in settings if s not in on_steps]
    data = set_keys(data, settings, config)
    return FilterPipeline.from_config(data, src_lang=src_lang, tgt_lang=tgt_lang, source=config), data


def filter(pairs, *, src_lang: str, tgt_lang: str, output, rejected, config=DEFAULT_CONFIG, summary=None,
           encoder: str | None = None, chunk_size: int = 10_000, no_resume: bool = False,
           progress: bool | None = None, report=None, precision: float | None = None, train_divergence=None,
           fmt: str | None = None, columns: str | None = None, score_column: bool = False,
           score_all=None, overrides=()) -> dict:
    """Filter ``pairs`` (a path, or two Moses files) into kept lines ``output`` (``-``: standard output) and
    rejected lines ``rejected``, as ``bisent filter`` does; returns the summary it prints.

    ``config``: an installed recipe's name, a YAML path or a :class:`bisent.filtering.FilterPipeline`;
    ``overrides``: ``KEY=VALUE`` strings (``--set``). A killed run on a ``src<TAB>tgt`` file resumes from its
    checkpoint folder unless ``no_resume``. ``score_all``: also write every unit with every step's value and the
    decision to this file, in the input's format.
    """
    from ..filtering import edit_config
    from ..formats import format_of

    pairs = tuple(fspaths(*((pairs,) if isinstance(pairs, (str, Path)) else pairs)))
    output, rejected, summary, report, train_divergence, score_all = fspaths(output, rejected, summary, report,
                                                                             train_divergence, score_all)
    if isinstance(config, (str, Path)):
        from ..recipes import resolve
        config = str(resolve(config))
    check_paths(PATHS, {**locals(), "config": config if isinstance(config, str) else None})
    in_fmt = format_of(pairs, fmt)
    for name, path in (("--rejected", rejected), ("--summary", summary)):
        if is_stdio(path):
            raise BisentError(f"{name} -: standard output is for the kept lines (-o -); give {name} a file name")
    pipe, data = _pipeline(config, encoder, overrides, src_lang, tgt_lang)
    if train_divergence:
        pipe = _add_divergence(pairs, in_fmt, columns, pipe, edit_config(config) if data is None else data, config,
                               src_lang, tgt_lang, train_divergence, progress)
    if precision is None:                                   # the recipe's select: {precision: P}
        precision = recipe_precision(pipe, src_lang, tgt_lang)
    params = {"config": config if isinstance(config, str) else None, "encoder": encoder}
    if in_fmt != "tsv" or columns is not None or score_column or score_all:
        result = _filter_bitext(pairs, output, rejected, src_lang, tgt_lang, pipe, in_fmt, columns, score_column,
                                summary, chunk_size, progress, report, precision, params, score_all)
    else:
        result = _filter_tsv(pairs[0], output, rejected, src_lang, tgt_lang, pipe, summary, chunk_size, no_resume,
                             progress, report, precision, params)
    return {k: v for k, v in result.items() if k != "pipeline"}


def _filter_tsv(pairs, kept, rejected, src_lang, tgt_lang, pipe, summary, chunk_size, no_resume, progress, report,
                precision, params) -> dict:
    """A ``src<TAB>tgt`` file: :func:`bisent.filtering.filter_file`, resumable unless the kept lines go to a pipe."""
    from ..filtering import filter_file
    from ..filtering.bitext import check_two_columns
    from ..io import readable_file

    # kept lines to standard output: built in a temporary file (a killed run cannot resume), then copied
    with readable_file(pairs) as in_path, stdout_via_temp(kept, is_stdio(kept), "bisent-filter-", "kept.tsv") as out:
        check_two_columns(in_path)
        result = filter_file(in_path, out, rejected, src_lang, tgt_lang, pipe, summary_path=summary,
                             chunk_size=chunk_size, resume=not no_resume and not is_stdio(kept), progress=progress)
        result["input"], result["kept_file"] = pairs, kept
        if report or precision is not None:
            from ..report import finish_filter
            result.update(finish_filter(in_path, out, rejected, result, pipe, src_lang, tgt_lang, precision=precision,
                                        report=report, summary_path=summary, params=params))
    return result


def _filter_bitext(pairs, kept, rejected, src_lang, tgt_lang, pipe, fmt, columns, score_column, summary, chunk_size,
                   progress, report, precision, params, score_all=None) -> dict:
    """Any other format (or ``columns``, ``score_column``): :func:`bisent.filtering.bitext.filter_bitext`."""
    from ..filtering.bitext import filter_bitext
    from ..formats import output_paths
    from ..io import readable_file
    from ..report.record import SUFFIX

    with contextlib.ExitStack() as stack:
        paths = [stack.enter_context(readable_file(p)) for p in pairs]   # `-` and pipes: copied once
        finish = None
        if report or precision is not None:
            first = output_paths(kept, pairs, fmt)[0]

            def finish(run, result):
                from ..report.runs import finish_filter_pairs
                return finish_filter_pairs(lambda: iter(run.pairs), run.kept_pairs(), run.rejected_pairs(), result,
                                           pipe, src_lang, tgt_lang, precision=precision, report=report,
                                           params=params, input_path=paths[0], name=Path(str(first)).name,
                                           record_path=None if is_stdio(first) else f"{first}{SUFFIX}",
                                           linenos=lambda: list(run.kept))
        result = filter_bitext(paths, kept, rejected, src_lang, tgt_lang, pipe, fmt=fmt, columns=columns,
                               score_column="score" if score_column else None, summary_path=summary,
                               chunk_size=chunk_size, progress=progress, finish=finish, score_all=score_all)
    result["input"] = list(pairs) if len(pairs) > 1 else pairs[0]
    return result


def _add_divergence(pairs, in_fmt, columns, pipe, data, config, src_lang, tgt_lang, model_dir, progress):
    """``train_divergence``: the pipeline with a divergence step of the model in ``model_dir``, trained there first
    (on the pairs ``pipe`` keeps of the input) when the folder holds none (:mod:`bisent.training.fastdiv`)."""
    import tempfile

    from ..filtering import FilterPipeline, as_pipeline, filter_file
    from ..io.bitext import iter_pairs
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
            kept = list(iter_pairs(Path(tmp) / "kept.tsv", fmt="tsv", allow_empty=True))
        note(f"bisent filter: training a divergence model on {len(kept)} kept pairs into {model_dir}")
        ensure_model(model_dir, kept, src_lang, tgt_lang, progress=progress)
    return FilterPipeline.from_config(with_divergence(data, model_dir), src_lang=src_lang, tgt_lang=tgt_lang,
                                      source=str(config))


__all__ = ["DEFAULT_CONFIG", "PATHS", "filter", "recipe_precision"]
