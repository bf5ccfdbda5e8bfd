"""``bisent run``: document pairs -> alignment -> filter -> bitext, as resumable stages (see bisent.run)."""

from __future__ import annotations

import json

import click


@click.command("run")
@click.argument("config", type=click.Path(dir_okay=False))
@click.option("-o", "--out", "run_dir", type=click.Path(file_okay=False),
              help="Run folder (default: run_dir in the YAML, relative to it). Rerun the same to continue.")
@click.option("--force", is_flag=True, help="Redo every stage even when its inputs are unchanged.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
def run_cmd(config, run_dir, force, quiet):
    """Run the stages of CONFIG (YAML, e.g. recipes/run-default.yaml); finished stages are skipped."""
    from ..run import run_pipeline

    summary = run_pipeline(config, run_dir, progress=not quiet, force=force)
    click.echo(json.dumps(summary))
