"""``bisent run``: document pairs -> alignment -> filter -> bitext, as resumable stages (see bisent.run)."""

from __future__ import annotations

import json

import click

from ..paths import guarded
from .options import recipe_name


def _run_paths(kw: dict) -> dict:
    """The run folder: -o, else run_dir of the YAML (relative to it)."""
    run_dir = kw["run_dir"]
    if run_dir is None and (kw["config"] or kw["config_arg"]):
        from ..run import load_run_config
        from ..training.recipe import parse_override

        overrides = dict(parse_override(s) for s in kw["overrides"])
        config, base = load_run_config(kw["config"] or kw["config_arg"], overrides)
        run_dir = base / str(config["run_dir"]) if config.get("run_dir") else None
    return {"states": {"--output folder": run_dir}}


@click.command("run")
@click.argument("config_arg", metavar="[CONFIG]", required=False, type=click.Path(dir_okay=False),
                callback=recipe_name)
@click.option("-c", "--config", type=click.Path(dir_okay=False), callback=recipe_name,
              help="The run's YAML: an installed recipe's name (bisent recipes: run-default) or a path. "
                   "(Or give it as the positional CONFIG.)")
@click.option("-o", "--output", "run_dir", type=click.Path(file_okay=False),
              help="Run folder (default: run_dir in the YAML, relative to it). Rerun the same to continue.")
@click.option("--force", is_flag=True, help="Redo every stage even when its inputs are unchanged.")
@click.option("--quiet", is_flag=True, help="No progress bars nor periodic progress lines.")
@click.option("--report", type=click.Path(dir_okay=False), default=None,
              help="Also write this HTML report of the documents, align and filter stages (filter: calibrated).")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a configuration key: --set align.encoder=me5-small, --set documents.pairs=task/pairs.tsv, "
                   "--set filter.config=filter-paracrawl (repeatable; the value is read as YAML).")
@guarded(reads=("config", "config_arg"), writes=("report",), derived=_run_paths, derived_params=("run_dir",))
def run_cmd(config_arg, config, run_dir, force, quiet, report, overrides):
    """Run the stages of the configuration -c (an installed recipe's name, e.g. run-default, or a YAML path);
    finished stages are skipped.

    \b
    Examples:
      bisent run -c run-default --set documents.pairs=task/pairs.tsv -o runs/en-de
      bisent run -c my-run.yaml --report run.html
    """
    from ..errors import BisentError
    from ..run import run_pipeline

    if config_arg is not None:
        if config is not None:
            raise BisentError("give the configuration once: CONFIG or -c/--config, not both")
        config = config_arg
    if config is None:
        raise BisentError("no configuration: give -c/--config (e.g. -c run-default)")
    from ..training.recipe import parse_override

    settings = dict(parse_override(s) for s in overrides)
    summary = run_pipeline(config, run_dir, progress=False if quiet else None, force=force, overrides=settings)
    if report:
        from ..run import report_run
        summary["report"] = report_run(config, run_dir, report, overrides=settings)
    click.echo(json.dumps(summary))
