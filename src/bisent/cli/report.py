"""``bisent report``: one self-contained HTML report of a run folder."""

from __future__ import annotations

import click

from ..paths import guarded


@click.command()
@click.argument("run_dir", type=click.Path())
@click.option("-o", "--output", default="report.html", show_default=True, type=click.Path(dir_okay=False),
              help="The HTML file to write.")
@click.option("--title", default=None, help="Title of the report.")
@guarded(reads=("run_dir",), writes=("output",), rewrites=(".html", ".htm"))
def report(run_dir, output, title):
    """Report RUN_DIR: its *.report.json records, mined TSVs and filter summaries (also in a run folder's filter/,
    align/, documents/); the files left out are listed with why.

    \b
    Examples:
      bisent report runs/en-de -o report.html --title 'en-de run'
    """
    from ..report import report_folder

    click.echo(str(report_folder(run_dir, output, title=title)))
