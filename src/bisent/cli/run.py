"""``bisent run``: document pairs -> alignment -> filter -> bitext, as resumable stages (see bisent.run)."""

from __future__ import annotations

import json

import click

from ..paths import guarded
from .options import recipe_name


def _run_paths(kw: dict) -> dict:
    """The run folder: -o, else run_dir of the YAML (relative to it)."""
    run_dir = kw["run_dir"]
    if run_dir is None:
        from ..run import load_run_config
        from ..training.recipe import parse_override

        config, base = load_run_config(kw["config"], dict(parse_override(s) for s in kw["overrides"]))
        run_dir = base / str(config["run_dir"]) if config.get("run_dir") else None
    return {"states": {"--out folder": run_dir}}


@click.command("run")
@click.argument("config", type=click.Path(dir_okay=False), callback=recipe_name)
@click.option("-o", "--out", "run_dir", type=click.Path(file_okay=False),
              help="Run folder (default: run_dir in the YAML, relative to it). Rerun the same to continue.")
@click.option("--force", is_flag=True, help="Redo every stage even when its inputs are unchanged.")
@click.option("--quiet", is_flag=True, help="No progress bars nor periodic progress lines.")
@click.option("--report", type=click.Path(dir_okay=False), default=None,
              help="Also write this HTML report of the documents, align and filter stages (filter: calibrated).")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a configuration key: --set align.encoder=me5-small, --set documents.pairs=task/pairs.tsv, "
                   "--set filter.config=filter-paracrawl (repeatable; the value is read as YAML).")
@guarded(reads=("config",), writes=("report",), derived=_run_paths, derived_params=("run_dir",))
def run_cmd(config, run_dir, force, quiet, report, overrides):
    """Run the stages of CONFIG (an installed recipe's name, e.g. run-default, or a YAML path); finished stages
    are skipped."""
    from ..run import run_pipeline
    from ..training.recipe import parse_override

    settings = dict(parse_override(s) for s in overrides)
    summary = run_pipeline(config, run_dir, progress=False if quiet else None, force=force, overrides=settings)
    if report:
        from ..report.runs import report_run
        summary["report"] = report_run(config, run_dir, report, overrides=settings)
    click.echo(json.dumps(summary))
