"""Option types shared by the commands: numbers that must be finite (``nan`` and ``inf`` are refused), or ``none``."""

from __future__ import annotations

import math

import click


class FiniteFloat(click.ParamType):
    """A float option that refuses ``nan`` and ``inf`` (Python's ``float()`` accepts both, and click's
    ``FloatRange`` lets ``nan`` through its bounds), with bounds; ``min_open`` / ``max_open`` exclude them."""

    name = "float"

    def __init__(self, min: float | None = None, max: float | None = None, *, min_open: bool = False,
                 max_open: bool = False):
        self.min, self.max, self.min_open, self.max_open = min, max, min_open, max_open

    def convert(self, value, param, ctx):
        try:
            x = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(x):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        if self.min is not None and (x < self.min or (self.min_open and x == self.min)):
            self.fail(f"{value!r} is {'not above' if self.min_open else 'below'} the minimum {self.min:g}", param, ctx)
        if self.max is not None and (x > self.max or (self.max_open and x == self.max)):
            self.fail(f"{value!r} is {'not below' if self.max_open else 'above'} the maximum {self.max:g}", param, ctx)
        return x


FINITE = FiniteFloat()


class ThresholdOrNone(FiniteFloat):
    """A finite threshold, or ``none`` (returned as the string ``"none"``): no threshold at all."""

    name = "float|none"

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value.strip().lower() == "none":
            return "none"
        return super().convert(value, param, ctx)


THRESHOLD_OR_NONE = ThresholdOrNone()


def recipe_name(ctx, param, value):
    """Click callback: a recipe or configuration given by an installed name (``filter-default``) becomes its file,
    so the path guard and the command see the file itself (:func:`bisent.recipes.resolve`)."""
    from ..recipes import resolve

    return None if value is None else str(resolve(value))


def bitext_options(f):
    """``--format`` and ``--columns`` of a command that reads a bitext (:mod:`bisent.formats`)."""
    from ..formats import FORMATS

    f = click.option("--columns", default=None, metavar="SRC,TGT",
                     help="TSV: the 1-based source and target columns (e.g. 3,4; the other columns are carried to "
                          "the output); JSONL/Parquet: the keys (default src,tgt).")(f)
    return click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
                        help="Input format (default: by suffix: .tsv, .tmx, .xlf/.xliff, .jsonl, .parquet, under "
                             ".gz/.xz/.zst; two files: moses; else tsv).")(f)


def lang_codes(ctx, param, value):
    """Click callback: the option's language code (or comma-separated codes) checked by
    :func:`bisent.langcodes.check_code` before a command fetches anything; the value is left as given."""
    from ..langcodes import check_code

    if value is None:
        return value
    text = str(value)
    for code in [c for c in text.split(",") if c.strip()] if "," in text else [text]:
        try:
            check_code(code)
        except ValueError as e:
            raise click.BadParameter(str(e), ctx=ctx, param=param) from None
    return value


def ray_options(what: str):
    """``--ray``, ``--threads``, ``--workers`` of a command that can run its ``what`` on Ray."""
    options = [
        click.option("--ray", "ray_address", default=None, metavar="ADDRESS|auto|local",
                     help=f"Run {what} on Ray: `local` starts Ray here, `auto` or an address joins a cluster "
                          "(pip install bisent[ray]). Same output as without."),
        click.option("--threads", type=click.IntRange(1), default=1, show_default=True,
                     help="With --ray: BLAS threads of each Ray worker (and CPUs each task asks for)."),
        click.option("--workers", type=click.IntRange(1), default=None,
                     help="With --ray: workers (default: CPUs / --threads; `local` starts that many CPUs)."),
    ]

    def decorate(f):
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


def echo_summary(summary: dict, err: bool = False) -> None:
    """A job's summary as the one JSON line the command prints (on stderr with ``err``: stdout holds the output)."""
    import json

    click.echo(json.dumps(summary), err=err)
