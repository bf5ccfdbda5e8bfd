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
    if isinstance(value, (tuple, list)):      # a repeatable option: each value checked
        for v in value:
            lang_codes(ctx, param, v)
        return value
    text = str(value)
    for code in [c for c in text.split(",") if c.strip()] if "," in text else [text]:
        try:
            check_code(code)
        except ValueError as e:
            raise click.BadParameter(str(e), ctx=ctx, param=param) from None
    return value


class LangCode(click.ParamType):
    """A language code option (``-l``, ``-L``): the shape of a BCP 47 tag (:func:`bisent.langcodes.check_bcp47`);
    the value is passed on as given. Whether an encoder knows the language is checked by the encoder."""

    name = "code"

    def convert(self, value, param, ctx):
        from ..langcodes import check_bcp47

        try:
            check_bcp47(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)
        return value


LANG = LangCode()


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


def fast_option(f):
    """``--fast`` of ``bisent mine``: mine with a student distilled on the two inputs
    (:func:`bisent.jobs.distill.fast_student`)."""
    return click.option("--fast", is_flag=True,
                        help="Distil a fast student of the encoder (-e, the teacher) on SRC and TGT first and mine "
                             "with it: minutes of distillation instead of hours of embedding on large inputs. The "
                             "student is kept in OUTPUT.student (a model directory, see `bisent distill`) and reused "
                             "while the inputs are the same.")(f)


def doc_match_options(f):
    """``--threshold`` and ``--min-cosine`` of document matching (``bisent documents mine``): a pair must reach both;
    each defaults to the value chosen on dev pages (:data:`bisent.documents.DEFAULT_THRESHOLD`,
    :data:`bisent.documents.DEFAULT_MIN_COSINE`), ``none`` turns it off."""
    from ..documents import DEFAULT_MIN_COSINE, DEFAULT_THRESHOLD

    f = click.option("--min-cosine", type=THRESHOLD_OR_NONE, default=None,
                     help=f"Pairs whose cosine of the plain mean sentence embeddings is below this are reported "
                          f"unmatched, whatever their margin (default {DEFAULT_MIN_COSINE:g}, chosen on dev pages; "
                          f"none: no floor; document models: the cosine of their vectors).")(f)
    return click.option("--threshold", type=THRESHOLD_OR_NONE, default=None,
                        help=f"Pairs scoring below this are reported unmatched (default {DEFAULT_THRESHOLD:g} on the "
                             f"ratio margin, chosen on dev pages; none: no threshold).")(f)


def score_all_option(f):
    """``--score-all FILE`` of ``bisent filter``: every unit with every step's value and the decision."""
    return click.option(
        "--score-all", "score_all", type=click.Path(dir_okay=False), default=None,
        help="Also write every input line or unit to FILE in the input's format, nothing dropped, with the "
             "decision (kept, or the step that rejected it) and every step's value, each step scoring every pair: "
             "TSV columns after the last (decision, then the steps in order), JSONL keys / Parquet columns "
             "bisent_NAME, TMX <prop type=\"x-bisent-NAME\">, XLIFF bisent:NAME attributes. Re-threshold it later "
             "without filtering again.")(f)


def _encoder_setting(ctx, param, value):
    """Click callback of ``--device`` / ``--batch-size`` / ``--pooling``: the setting is set for the encoders this
    command builds (:func:`bisent.encoders.settings.set_option`); a bad value is a one-line usage error."""
    from ..encoders.settings import set_option, torch_device
    from ..errors import BisentError

    try:
        set_option(param.name, value)
        if param.name == "device" and value != "cpu":   # a device that is not there: refused before any work
            try:
                torch_device(value)
            except ImportError:
                raise BisentError(f"--device {value}: needs torch (pip install 'bisent[encoders]')") from None
    except BisentError as e:
        raise click.BadParameter(str(e).split(": ", 1)[-1], ctx=ctx, param=param) from None
    return value


def encoder_options():
    """``--device``, ``--batch-size`` and ``--pooling``: how the torch and ONNX encoders of the user's own files run
    (:mod:`bisent.encoders.local`); the command itself never sees them."""
    from ..encoders.settings import POOLINGS

    return [
        click.Option(["--device"], default="cpu", show_default=True, expose_value=False, callback=_encoder_setting,
                     metavar="cpu|cuda|cuda:N|mps",
                     help="Where a torch or ONNX encoder (a model folder given to -e) runs."),
        click.Option(["--batch-size"], type=click.IntRange(1), default=None, expose_value=False,
                     callback=_encoder_setting,
                     help="Sentences a batch for a torch or ONNX encoder (default: its card's, else 32)."),
        click.Option(["--pooling"], type=click.Choice(POOLINGS), default=None, expose_value=False,
                     callback=_encoder_setting,
                     help="Pooling of a plain Hugging Face model's token vectors (default: its bisent-encoder.json)."),
    ]


def with_encoder_options(command: click.Command) -> click.Command:
    """``command`` (and every command of a group) given :func:`encoder_options` when it takes ``-e/--encoder``;
    done once, in place, so every job that builds an encoder takes them without code of its own."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            with_encoder_options(sub)
        return command
    names = {p.name for p in command.params}
    takes_encoder = any(isinstance(p, click.Option) and "-e" in p.opts for p in command.params)
    if takes_encoder and "device" not in names:
        command.params.extend(encoder_options())
    return command
def echo_summary(summary: dict, err: bool = False) -> None:
    """A job's summary as the one JSON line the command prints (on stderr with ``err``: stdout holds the output)."""
    import json

    click.echo(json.dumps(summary), err=err)
