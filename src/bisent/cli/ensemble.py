"""``bisent ensemble``: join trained students of one teacher into one model directory (their mean embedding)."""

from __future__ import annotations

import click

from ..paths import guarded


@click.command("ensemble")
@click.argument("members", nargs=-1, required=True, type=click.Path())
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="New model directory (member-1/, member-2/, ... and config.json); use it as -e OUT.")
@guarded(reads=("members",), folders=("out_dir",))
def ensemble(members: tuple[str, ...], out_dir: str):
    """Join MEMBERS (model directories of students distilled from the same teacher, two or more) into one
    encoder: the normalised mean of their embeddings. Files are hard-linked where possible, else copied.

    \b
    Examples:
      bisent ensemble models/student-1 models/student-2 -o models/ensemble
    """
    from ..models.ensemble import make_ensemble

    make_ensemble(out_dir, list(members))
    click.echo(f"wrote {out_dir} ({len(members)} members)")
