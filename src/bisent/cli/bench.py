"""``bisent bench TASK``: benchmark tasks on LibreOffice help, anchors measured in the same run.

One subcommand per task of :data:`bisent.bench.TASKS`, each with the options shared by every task (``--pair``,
``-e``, ``--no-anchors``, ``--limit``, ``--results``) and its own (``TASK_OPTIONS``).
"""

from __future__ import annotations

import click

from ..bench import TASKS
from ..datasets.domains import DOMAINS
from ..paths import guarded


def _options(*options):
    """A decorator applying ``options`` (click decorators) in the order given, the first on top in ``--help``."""
    def decorate(fn):
        for option in reversed(options):
            fn = option(fn)
        return fn

    return decorate


COMMON = _options(
    click.option("--pair", default="en-de", show_default=True, help="Language pair, e.g. en-fr."),
    click.option("-e", "--encoder", "encoders", multiple=True, help="Encoder under test (repeatable)."),
    click.option("--no-anchors", is_flag=True, help="Skip use-m3 and me5-small (for quick checks only)."),
    click.option("--limit", type=click.IntRange(1), default=None,
                 help="Cap the items (gold pairs for mining, pairs for recover/filter/speed/pairs, pages for docs)."),
    click.option("--results", default=None, type=click.Path(file_okay=False),
                 help="Also append each result to DIR/TASK.jsonl (e.g. benchmarks/results of a checkout); "
                      "by default results are only printed."))


COMMON_PARAMS = COMMON(lambda: None).__click_params__


def _split(*choices: str, what: str):
    return click.option("--split", type=click.Choice(choices), default="test", show_default=True,
                        help=f"Documents the task queries ({what}).")


DOMAIN = click.option("--domain", default="libreoffice", show_default=True, type=click.Choice(DOMAINS),
                      help="Text the task runs on: LibreOffice help, gettext UI messages, GNOME help, FreeDict "
                           "dictionary phrases, Bible verses (en-es).")
DEV = "dev: where the settings are chosen"

#: task -> its own options (besides COMMON)
TASK_OPTIONS: dict[str, list] = {
    "mining": [DOMAIN],
    "recover": [DOMAIN, _split("test", "dev", what=DEV)],
    "divergence": [DOMAIN],
    "filter": [_split("test", "dev", what=DEV)],
    "docmine": [
        _split("test", "dev", what=DEV),
        click.option("--rerank", type=click.IntRange(0), default=0, show_default=True,
                     help="Also measure each encoder with the DEPTH nearest documents re-scored by sentence "
                          "alignment (bisent.mining.rerank; e.g. 10).")],
    "calibration": [
        _split("test", "dev", "all", what=f"{DEV}; all: every page, the docs setting only"),
        click.option("--setting", "settings", multiple=True, type=click.Choice(["mining", "docs", "filter", "align"]),
                     help="Run only these settings (repeatable; default all)."),
        click.option("--estimator", type=click.Choice(["split", "storey", "em", "joint"]), default=None,
                     help="How the false share is estimated (default: storey; storey: Storey's share over all "
                          "pairs; em: the share fitted by EM with the true pairs' curve; split (mining only): "
                          "mutual and non-mutual mined pairs apart; joint (mining only): one mixture over the "
                          "pairs' scores and mutuality).")],
    "align": [
        _split("test", "dev", what=DEV),
        click.option("--gold", "gold", type=click.Path(file_okay=False), default=None,
                     help="Score on this folder of human-aligned documents instead of help pages (NAME.SRC, "
                          "NAME.TGT and gold NAME.SRCTGT, vecalign / Bleualign format; e.g. dev.de, dev.fr, "
                          "dev.defr)."),
        click.option("--view", "views", multiple=True,
                     type=click.Choice(["clean", "drop10", "merge10", "drop10-merge10", "paragraphs"]),
                     help="Run only these views of the help pages (repeatable; default all; paragraphs: every "
                          "paragraph kept, m-n ones scored by paragraph consistency)."),
        click.option("--no-peers", "peers", is_flag=True, flag_value=False, default=True,
                     help="Leave out the peer aligners (sentalign) even when installed.")],
}


@click.group("bench")
def bench():
    """Run a benchmark task: one JSON object per result line.

    \b
    Examples:
      bisent bench mining --pair en-de -e use-m3 --no-anchors --limit 500
      bisent bench filter --pair en-fr --split dev
      bisent bench align --pair en-es --split dev --view paragraphs --limit 30
    """


def run_task(task: str, pair: str, encoders, no_anchors: bool, limit, results, **kwargs) -> None:
    """Run ``task`` on ``pair`` with the encoders under test (and the anchors); its own options ``kwargs`` (those
    given) go to the task's ``run``."""
    from ..bench import task_module
    from ..bench.common import Recorder, run_encoders
    from ..errors import BisentError

    try:
        src, tgt = pair.split("-", 1)
    except ValueError:
        raise BisentError(f"--pair must look like en-de, got {pair!r}") from None
    kwargs = {k: list(v) if isinstance(v, tuple) else v for k, v in kwargs.items()}
    if task == "docmine":  # trained document models (HiDE, Document BoW) go to the task by path
        from ..bench.docmine import split_models
        encoders, kwargs["doc_models"] = split_models(encoders)
    encs = run_encoders(encoders, anchors=not no_anchors)
    if not encs and not kwargs.get("doc_models"):
        raise BisentError("no encoder to benchmark: give -e NAME or keep the anchors")
    kwargs.update({} if limit is None else {"max_gold" if task == "mining" else "limit": limit})
    record = Recorder(task, results or None, echo=click.echo, options=kwargs)
    task_module(task).run(src, tgt, encs, record, **kwargs)


def _task_command(task: str) -> click.Command:
    """The subcommand of ``task``: the shared options, its own, the first line of its module's docstring."""
    def command(**options):
        # a task's own options go to it only when given: each task keeps its own defaults
        ctx = click.get_current_context()
        own = {p.name for p in ctx.command.params} - {p.name for p in COMMON_PARAMS}
        given = {k for k in own if ctx.get_parameter_source(k) is not click.core.ParameterSource.DEFAULT}
        run_task(task, **{k: v for k, v in options.items() if k not in own or k in given})

    command.__doc__ = (f"{_SUMMARIES[task]}\n\n\b\nExamples:\n  bisent bench {task} --pair en-de -e use-m3 "
                       f"--no-anchors --limit 100")
    command = guarded(reads=("gold",) if task == "align" else (), folders=("results",))(command)
    return bench.command(task, short_help=_SUMMARIES[task])(COMMON(_options(*TASK_OPTIONS.get(task, []))(command)))


#: task -> what it measures (one line; the task modules are imported only when their task runs)
_SUMMARIES = {
    "mining": "Mining: BUCC-like tasks from held-out documents, threshold tuned on dev, scored on test.",
    "recover": "Alignment recovery (Kim 2019): shuffle held-out pairs, find each sentence's translation.",
    "filter": "Filtering: held-out clean pairs mixed with realistic noise, ranked by a scorer or a pipeline.",
    "docs": "Document retrieval (Guo et al. 2019): P@1 over held-out pages from averaged sentence embeddings.",
    "speed": "Speed: sentences/s per encoder, pairs/s scored, peak RSS, on the same real sentences.",
    "calibration": "Calibration: precision estimated without gold against the precision measured with gold.",
    "divergence": "Divergence: word-level divergence, repair and filtering on LibreOffice help.",
    "align": "Sentence alignment: strict / lax P/R/F1 on translated help pages re-split into sentences.",
    "pairs": "Parallel-vs-sampled accuracy (Zhang et al. 2016): is a translation scored above random text?",
    "docmine": "Parallel document mining at pool scale (Guo et al. 2019): P@1/3/10 both ways. -e also takes "
               "trained document models (HiDE, Document BoW) by path.",
}

for _task in TASKS:
    _task_command(_task)
