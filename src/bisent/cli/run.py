"""``bisent run``: document pairs -> alignment -> filter -> bitext, as resumable stages; a thin layer over
:func:`bisent.jobs.run`."""

from __future__ import annotations

import click

from ..jobs.run import PATHS
from ..paths import guarded
from .options import echo_summary, recipe_name


def _run_paths(kw: dict) -> dict:
    """The job's paths, the positional CONFIG standing for -c."""
    return PATHS["derived"]({**kw, "config": kw["config"] or kw["config_arg"]})


@click.command("run")
@click.argument("config_arg", metavar="[CONFIG]", required=False, type=click.Path(dir_okay=False),
                callback=recipe_name)
@click.option("-c", "--config", type=click.Path(dir_okay=False), callback=recipe_name,
              help="The run's YAML: an installed recipe's name (bisent recipes: run-default) or a path. "
                   "(Or give it as the positional CONFIG.)")
@click.option("-o", "--output", "output", type=click.Path(file_okay=False),
              help="Run folder (default: run_dir in the YAML, relative to it). Rerun the same to continue.")
@click.option("--force", is_flag=True, help="Redo every stage even when its inputs are unchanged.")
@click.option("--quiet", is_flag=True, help="No progress bars nor periodic progress lines.")
@click.option("--report", type=click.Path(dir_okay=False), default=None,
              help="Also write this HTML report of the documents, align and filter stages (filter: calibrated).")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a configuration key: --set align.encoder=me5-small, --set documents.pairs=task/pairs.tsv, "
                   "--set filter.config=filter-paracrawl (repeatable; the value is read as YAML).")
@guarded(**{**PATHS, "reads": ("config", "config_arg"), "derived": _run_paths})
def run_cmd(config_arg, config, **options):
    """Run the stages of the configuration -c (an installed recipe's name, e.g. run-default, or a YAML path);
    finished stages are skipped.

    \b
    Examples:
      bisent run -c run-default --set documents.pairs=task/pairs.tsv -o runs/en-de
      bisent run -c my-run.yaml --report run.html
    """
    from .. import jobs
    from ..errors import BisentError

    if config_arg is not None:
        if config is not None:
            raise BisentError("give the configuration once: CONFIG or -c/--config, not both")
        config = config_arg
    echo_summary(jobs.run(config, **options))
