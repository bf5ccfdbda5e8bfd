"""Option types shared by the commands: numbers that must be finite (``nan`` and ``inf`` are refused), or ``none``."""

from __future__ import annotations

import math

import click


class FiniteFloat(click.ParamType):
    """A float option that refuses ``nan`` and ``inf`` (Python's ``float()`` accepts both), with bounds."""

    name = "float"

    def __init__(self, min: float | None = None, max: float | None = None):
        self.min, self.max = min, max

    def convert(self, value, param, ctx):
        try:
            x = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(x):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        if self.min is not None and x < self.min:
            self.fail(f"{value!r} is below the minimum {self.min:g}", param, ctx)
        if self.max is not None and x > self.max:
            self.fail(f"{value!r} is above the maximum {self.max:g}", param, ctx)
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


def bitext_options(f):
    """``--format`` and ``--columns`` of a command that reads a bitext (:mod:`bisent.formats`)."""
    from ..formats import FORMATS

    f = click.option("--columns", default=None, metavar="SRC,TGT",
                     help="TSV: the 1-based source and target columns (e.g. 3,4; the other columns are carried to "
                          "the output); JSONL/Parquet: the keys (default src,tgt).")(f)
    return click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
                        help="Input format (default: by suffix: .tsv, .tmx, .xlf/.xliff, .jsonl, .parquet, under "
                             ".gz/.xz/.zst; two files: moses; else tsv).")(f)


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
