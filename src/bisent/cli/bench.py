"""``bisent bench TASK``: benchmark tasks on LibreOffice help, anchors measured in the same run."""

from __future__ import annotations

import click

from ..bench import TASKS, task_module
from ..bench.common import Recorder, run_encoders
from ..datasets.domains import DOMAINS
from ..errors import BisentError
from ..paths import guarded


@click.command()
@click.argument("task", type=click.Choice(TASKS))
@click.option("--pair", default="en-de", show_default=True, help="Language pair, e.g. en-fr.")
@click.option("-e", "--encoder", "encoders", multiple=True, help="Encoder under test (repeatable).")
@click.option("--no-anchors", is_flag=True, help="Skip use-m3 and me5-small (for quick checks only).")
@click.option("--limit", type=click.IntRange(1), default=None,
              help="Cap the items (gold pairs for mining, pairs for recover/filter/speed/pairs, pages for docs).")
@click.option("--domain", default="libreoffice", show_default=True, type=click.Choice(DOMAINS),
              help="Text the mining, recover and divergence tasks run on: LibreOffice help, gettext UI "
                   "messages, GNOME help, FreeDict dictionary phrases, Bible verses (en-es).")
@click.option("--rerank", type=click.IntRange(0), default=0, show_default=True,
              help="docmine: also measure each encoder with the DEPTH nearest documents re-scored by sentence "
                   "alignment (bisent.mining.rerank; e.g. 10).")
@click.option("--split", type=click.Choice(["test", "dev", "all"]), default="test", show_default=True,
              help="Documents the calibration, docmine, align, filter and recover tasks query (dev: where their "
                   "settings are chosen; all: every page, calibration's docs setting only).")
@click.option("--setting", "settings", multiple=True, type=click.Choice(["mining", "docs", "filter", "align"]),
              help="Calibration: run only these settings (repeatable; default all).")
@click.option("--estimator", type=click.Choice(["split", "storey", "em"]), default=None,
              help="Calibration: how the false share is estimated (default: split in mining, storey elsewhere; "
                   "split: mutual and non-mutual mined pairs apart; storey: Storey's share over all pairs; "
                   "em: the share fitted by EM with the true pairs' curve).")
@click.option("--gold", "gold_dir", type=click.Path(file_okay=False), default=None,
              help="align: score on this folder of human-aligned documents instead of help pages (NAME.SRC, "
                   "NAME.TGT and gold NAME.SRCTGT, vecalign / Bleualign format; e.g. dev.de, dev.fr, dev.defr).")
@click.option("--view", "views", multiple=True,
              type=click.Choice(["clean", "drop10", "merge10", "drop10-merge10", "paragraphs"]),
              help="align: run only these views of the help pages (repeatable; default all; paragraphs: every "
                   "paragraph kept, m-n ones scored by paragraph consistency).")
@click.option("--no-peers", is_flag=True,
              help="align: leave out the peer aligners (sentalign) even when installed.")
@click.option("--results", default=None, type=click.Path(file_okay=False),
              help="Also append each result to DIR/TASK.jsonl (e.g. benchmarks/results of a checkout); "
                   "by default results are only printed.")
@guarded(reads=("gold_dir",), folders=("results",))
def bench(task, pair, encoders, no_anchors, limit, domain, rerank, split, settings, estimator, gold_dir,
          views, no_peers, results):
    """Run benchmark TASK (mining, recover, filter, docs, speed, pairs, ...): one JSON object per result line.

    \b
    Examples:
      bisent bench mining --pair en-de -e use-m3 --no-anchors --limit 500
      bisent bench filter --pair en-fr --split dev
      bisent bench align --pair en-es --split dev --view paragraphs --limit 30
    """
    try:
        src, tgt = pair.split("-", 1)
    except ValueError:
        raise BisentError(f"--pair must look like en-de, got {pair!r}") from None
    kwargs = {}
    if task == "docmine":  # trained document models (HiDE, Document BoW) go to the task by path
        from ..bench.docmine import split_models
        encoders, kwargs["doc_models"] = split_models(encoders)
        if rerank:
            kwargs["rerank"] = rerank
    elif rerank:
        raise BisentError("--rerank: only the docmine task re-ranks documents")
    encs = run_encoders(encoders, anchors=not no_anchors)
    if not encs and not kwargs.get("doc_models"):
        raise BisentError("no encoder to benchmark: give -e NAME or keep the anchors")
    kwargs.update({} if limit is None else {"max_gold" if task == "mining" else "limit": limit})
    if domain != "libreoffice":
        if task not in ("mining", "recover", "divergence"):
            raise BisentError(f"--domain {domain}: only the mining, recover and divergence tasks run outside "
                              "LibreOffice help")
        kwargs["domain"] = domain
    if gold_dir is not None:
        if task != "align":
            raise BisentError("--gold: only the align task reads a gold folder")
        kwargs["gold"] = gold_dir
    if views:
        if task != "align":
            raise BisentError("--view: only the align task has views")
        kwargs["views"] = list(views)
    if no_peers:
        if task != "align":
            raise BisentError("--no-peers: only the align task runs peers")
        kwargs["peers"] = False
    if split != "test":
        if task not in ("calibration", "docmine", "align", "filter", "recover") or \
                (task in ("docmine", "align", "filter", "recover") and split == "all"):
            raise BisentError(f"--split {split}: only the calibration task (test, dev, all) and the docmine, "
                              "align, filter and recover tasks (test, dev) take a split")
        kwargs["split"] = split
    if settings:
        if task != "calibration":
            raise BisentError("--setting: only the calibration task has settings")
        kwargs["settings"] = list(settings)
    if estimator is not None:
        if task != "calibration":
            raise BisentError("--estimator: only the calibration task estimates")
        kwargs["estimator"] = estimator
    record = Recorder(task, results or None, echo=click.echo, options=kwargs)
    task_module(task).run(src, tgt, encs, record, **kwargs)
