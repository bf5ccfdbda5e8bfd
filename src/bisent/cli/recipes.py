"""``bisent recipes``: the recipes installed with bisent, by name, or one recipe's text to copy and change."""

from __future__ import annotations

import click

from ..paths import guarded


@click.command("recipes")
@click.argument("name", required=False)
@guarded(reads=("name",))
def recipes_cmd(name):
    """List the installed recipes (name and what it is), or print recipe NAME (e.g. to copy it and change it).

    A NAME works wherever a recipe is taken: bisent train -c distill-dan, bisent filter -c filter-default,
    bisent run -c run-default; a path to your own YAML file works there too.

    \b
    Examples:
      bisent recipes
      bisent recipes filter-default
    """
    from ..io import check_readable
    from ..recipes import describe, names, resolve

    if name is None:
        width = max(map(len, names()))
        for n in names():
            click.echo(f"{n:<{width}}  {describe(n)}")
        return
    click.echo(check_readable(resolve(name)).read_text(encoding="utf-8"), nl=False)
