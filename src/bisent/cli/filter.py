"""``bisent filter``: filter a ``src<TAB>tgt`` file with a YAML pipeline; a thin layer over :func:`filter_file`."""

from __future__ import annotations

import json

import click


@click.command("filter")
@click.argument("pairs", type=click.Path(dir_okay=False))
@click.option("-l", "--src-lang", required=True, help="Language of the first column.")
@click.option("-L", "--tgt-lang", required=True, help="Language of the second column.")
@click.option("-c", "--config", "config", default="filter-default", show_default=True,
              type=click.Path(dir_okay=False),
              help="YAML pipeline: an installed recipe's name (bisent recipes: filter-default, filter-paracrawl) "
                   "or a path to a list of steps, or {steps: [...], select: {...}}.")
@click.option("-o", "--output", "kept", required=True, type=click.Path(dir_okay=False),
              help="Kept lines, byte for byte (.gz/.xz: compressed).")
@click.option("--rejected", required=True, type=click.Path(dir_okay=False),
              help="Rejected lines as lineno<TAB>reason<TAB>score<TAB>line.")
@click.option("--summary", type=click.Path(dir_okay=False), default=None,
              help="Also write the summary (lines per reason) to this JSON file.")
@click.option("-e", "--encoder", default=None,
              help="Encoder for every embedding step (cosine, csls, margin), overriding the configuration.")
@click.option("--chunk-size", type=click.IntRange(1), default=10_000, show_default=True,
              help="Lines scored (and checkpointed) at a time.")
@click.option("--no-resume", is_flag=True, help="Start over even if an unfinished run left a checkpoint.")
@click.option("--progress/--no-progress", default=None, help="Show progress bars (default: on a terminal; periodic lines otherwise).")
@click.option("--report", type=click.Path(dir_okay=False), default=None,
              help="Also write this HTML report (and KEPT.report.json: scores, samples, calibration).")
@click.option("--precision", type=click.FloatRange(0, 1), default=None,
              help="Keep only pairs above the score step's threshold whose precision, estimated without gold, is this.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a pipeline key, a step by its name, type or index: --set cosine.accept.min=0.4, "
                   "--set length.max_length=100, --set select.n=1000 (repeatable; the value is read as YAML).")
def filter_cmd(pairs, src_lang, tgt_lang, config, kept, rejected, summary, encoder, chunk_size, no_resume,
               progress, report, precision, overrides):
    """Filter PAIRS (plain, .gz or .xz; `-`: standard input) into kept and rejected lines (`-o -`: kept lines
    to standard output); print the summary as JSON.

    Every input line ends up in exactly one output; bad rows (wrong column
    count, undecodable bytes, NUL, a side over 1 MB) are rejected with a
    bad_row:* reason. A killed run continues where it stopped when rerun.
    """
    import shutil
    import sys
    import tempfile
    from pathlib import Path

    from ..errors import BisentError
    from ..filtering import FilterPipeline, edit_config, filter_file
    from ..io import check_paths, is_stdio, readable_file
    from ..recipes import resolve, set_keys
    from ..training.recipe import parse_override

    for name, path in (("--rejected", rejected), ("--summary", summary)):
        if is_stdio(path):
            raise BisentError(f"{name} -: standard output is for the kept lines (-o -); give {name} a file name")
    config = str(resolve(config))
    settings = [parse_override(s) for s in overrides]
    check_paths({"PAIRS": pairs, "--config": config}, {"--output": kept, "--rejected": rejected, "--summary": summary})
    pipe = config
    if encoder or settings:
        data = edit_config(config, encoder=encoder)
        if isinstance(data, dict) and isinstance(data.get("steps"), list):   # {steps, select}: other keys name steps
            on_steps = [(k, v) for k, v in settings if k.split(".")[0] not in ("steps", "select")]
            data["steps"] = set_keys(data["steps"], on_steps, config)
            settings = [s for s in settings if s not in on_steps]
        data = set_keys(data, settings, config)
        pipe = FilterPipeline.from_config(data, src_lang=src_lang, tgt_lang=tgt_lang, source=config)
    with readable_file(pairs) as in_path, tempfile.TemporaryDirectory(prefix="bisent-filter-") as tmp:
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
