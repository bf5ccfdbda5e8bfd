"""``bisent filter``: filter a ``src<TAB>tgt`` file with a YAML pipeline; a thin layer over :func:`filter_file`."""

from __future__ import annotations

import json

import click

from ..paths import guarded


def _filter_paths(kw: dict) -> dict:
    """The checkpoint folder beside the kept lines and KEPT.report.json."""
    from pathlib import Path

    kept = kw["kept"]
    if kept == "-":
        return {}
    record = f"{kept}.report.json" if kw["report"] or kw["precision"] is not None else None
    state = Path(kept).parent / f".{Path(kept).name}.filter-state"
    return {"states": {"checkpoint folder of --output": state}, "writes": {"--output record": record}}


@click.command("filter")
@click.argument("pairs", type=click.Path(dir_okay=False))
@click.option("-l", "--src-lang", required=True, help="Language of the first column.")
@click.option("-L", "--tgt-lang", required=True, help="Language of the second column.")
@click.option("-c", "--config", "config", required=True, type=click.Path(dir_okay=False),
              help="YAML pipeline: a list of steps, or {steps: [...], select: {...}} "
                   "(e.g. recipes/filter-default.yaml).")
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
@guarded(reads=("pairs", "config"), writes=("kept", "rejected", "summary", "report"), derived=_filter_paths)
def filter_cmd(pairs, src_lang, tgt_lang, config, kept, rejected, summary, encoder, chunk_size, no_resume,
               progress, report, precision):
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
    from ..io import is_stdio, readable_file

    for name, path in (("--rejected", rejected), ("--summary", summary)):
        if is_stdio(path):
            raise BisentError(f"{name} -: standard output is for the kept lines (-o -); give {name} a file name")
    pipe = config
    if encoder:
        pipe = FilterPipeline.from_config(edit_config(config, encoder=encoder), src_lang=src_lang,
                                          tgt_lang=tgt_lang, source=config)
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
