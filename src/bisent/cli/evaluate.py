"""``bisent eval``: score mined output against gold pairs."""

from __future__ import annotations

import json
import math

import click

from ..errors import BisentError
from ..evaluate import best_threshold, bucc_prf
from ..io import read_tsv
from ..paths import guarded
from .options import FINITE, LANG, bitext_options


@click.group("eval")
def eval_group():
    """Evaluate mined, aligned or filtered output against gold pairs or labels.

    \b
    Examples:
      bisent eval bucc mined.tsv data/bucc-en-de/gold.txt
      bisent eval filter kept.tsv rejected.tsv labels.tsv
    """


def read_mined(path) -> list[tuple[float, str, str]]:
    """Read `score, src, tgt, src_id, tgt_id` rows written by `bisent mine` with ids (scores finite)."""
    rows = []
    for n, cols in read_tsv(path, 5):
        try:
            score = float(cols[0])
        except ValueError:
            raise BisentError(f"{path}:{n}: score '{cols[0]}' is not a number") from None
        if not math.isfinite(score):
            raise BisentError(f"{path}:{n}: score '{cols[0]}' is not a finite number")
        rows.append((score, cols[3], cols[4]))
    return rows


def read_gold(path, mined: list[tuple[float, str, str]], mined_path) -> tuple[set[tuple[str, str]], int]:
    """Gold ``(src_id, tgt_id)`` pairs, and how many have an id that never occurs in the mined pairs.

    An empty gold file, or one whose ids never occur in a non-empty mined file
    (wrong file, or ids of another split), cannot mean anything: a one-line error.
    """
    gold = {(c[0], c[1]) for _, c in read_tsv(path, 2)}
    if not gold:
        raise BisentError(f"{path}: file is empty (no gold pairs)")
    src_ids = {s for _, s, _ in mined}
    tgt_ids = {t for _, _, t in mined}
    unseen = sum(1 for s, t in gold if s not in src_ids or t not in tgt_ids)
    if mined and not any(s in src_ids for s, _ in gold) and not any(t in tgt_ids for _, t in gold):
        raise BisentError(f"{path}: none of its {len(gold)} gold pairs' ids occurs in {mined_path} "
                          f"(ids of another file or split?)")
    return gold, unseen


@eval_group.command("bucc")
@click.argument("mined", type=click.Path())
@click.argument("gold", required=False, type=click.Path(dir_okay=False))
@click.option("--threshold", type=FINITE, default=None, help="Also report P/R/F1 at this threshold.")
@click.option("--labels", type=click.Path(dir_okay=False), default=None,
              help="Instead of GOLD: the labels `bisent review MINED` wrote. Precision (with its 95 % interval) "
                   "and recall are the labels' estimates, recall of the true pairs within MINED.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@guarded(reads=("mined", "gold", "labels"))
def bucc(mined, gold, threshold, labels, as_json):
    """Precision, recall, F1 of MINED (from `bisent mine --line-numbers` or BUCC input) against GOLD
    (src_id<TAB>tgt_id), or against the labels of `bisent review` (--labels; MINED: any output it reviews).

    \b
    Examples:
      bisent eval bucc mined.tsv data/bucc-en-de/gold.txt --threshold 1.1
      bisent eval bucc run/ --labels run/review/labels.jsonl
    """
    if labels is not None:
        if gold is not None:
            raise BisentError("give GOLD or --labels, not both")
        return _labels_prf(mined, labels, threshold, as_json)
    if gold is None:
        raise BisentError("give GOLD (src_id<TAB>tgt_id) or --labels FILE")
    pairs = read_mined(mined)
    gold_pairs, unseen = read_gold(gold, pairs, mined)
    if unseen:
        click.echo(f"bisent: warning: {unseen} of {len(gold_pairs)} gold pairs have an id that occurs in no "
                   f"mined pair (they count as missed)", err=True)
    best = best_threshold(pairs, gold_pairs)
    out = {"best": best.as_dict()}
    if threshold is not None:
        out["at_threshold"] = bucc_prf(pairs, gold_pairs, threshold).as_dict()
    if as_json:
        click.echo(json.dumps({**out, "gold_ids_unseen": unseen}))
        return
    for name, r in out.items():
        thr = "none" if r["threshold"] is None else f"{r['threshold']:.6f}"
        click.echo(f"{name:13s} P={100 * r['precision']:.2f} R={100 * r['recall']:.2f} F1={100 * r['f1']:.2f} "
                   f"threshold={thr} mined={r['n_mined']} correct={r['n_correct']} gold={r['n_gold']}")


def _labels_prf(output, labels, threshold, as_json) -> None:
    """P/R/F1 of a reviewed output from the labels of ``bisent review``: of every scored pair (``all``),
    at the best-F1 threshold, and at ``threshold``."""
    from ..review import open_review

    out = open_review(output, labels).prf(threshold)
    if as_json:
        click.echo(json.dumps(out))
        return
    for name in ("all", "best", "at_threshold"):
        if name in out:
            r = out[name]
            lo, hi = r["precision_interval"]
            thr = "none" if r["threshold"] is None else f"{r['threshold']:.6f}"
            click.echo(f"{name:13s} P={100 * r['precision']:.2f} ({100 * lo:.2f}-{100 * hi:.2f}) "
                       f"R={100 * r['recall']:.2f} F1={100 * r['f1']:.2f} threshold={thr} "
                       f"mined={r['n_mined']} correct~{r['n_correct']} in-output~{r['n_gold']} "
                       f"(from {out['labelled']} labels)")


@eval_group.command("align")
@click.argument("hyp", type=click.Path())
@click.argument("gold", required=False, type=click.Path(dir_okay=False))
@click.option("--labels", type=click.Path(dir_okay=False), default=None,
              help="Instead of GOLD: the labels `bisent review HYP` wrote (HYP: the aligned TSV, or the --pairs "
                   "folder). Block precision with its 95 % interval, recall of the true blocks within HYP.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@guarded(reads=("hyp", "gold", "labels"))
def align_cmd(hyp, gold, labels, as_json):
    """Strict and lax P/R/F1 of alignment HYP against GOLD (one [0]:[0,1] block per line; a pairs TSV each:
    its third column names the alignment file of each pair), or against the labels of `bisent review`.

    \b
    Examples:
      bisent eval align aligned.tsv gold.tsv --json
    """
    if labels is not None:
        if gold is not None:
            raise BisentError("give GOLD or --labels, not both")
        return _labels_prf(hyp, labels, None, as_json)
    if gold is None:
        raise BisentError("give GOLD (alignment blocks) or --labels FILE")
    from ..align.files import read_alignment, read_alignment_list, score_alignments

    many = str(hyp).endswith(".tsv")
    h = read_alignment_list(hyp) if many else [read_alignment(hyp)]
    g = read_alignment_list(gold) if many else [read_alignment(gold)]
    if len(h) != len(g):
        raise BisentError(f"{hyp}: {len(h)} documents, but {gold} has {len(g)}")
    r = score_alignments(h, g).as_dict()
    click.echo(json.dumps(r) if as_json else
               f"strict P={r['strict_p']:.2f} R={r['strict_r']:.2f} F1={r['strict_f1']:.2f}  "
               f"lax P={r['lax_p']:.2f} R={r['lax_r']:.2f} F1={r['lax_f1']:.2f}  blocks={r['n_hyp']} "
               f"gold={r['n_gold']}")


from .documents import eval_docs  # noqa: E402  document retrieval P@N (Guo et al. 2019)

eval_group.add_command(eval_docs)


@eval_group.command("filter")
@click.argument("kept", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.argument("rejected", type=click.Path(dir_okay=False))
@click.argument("labels", type=click.Path(dir_okay=False))
@bitext_options
@click.option("-l", "--src-lang", type=LANG, default=None,
              help="Source language (TMX/XLIFF kept output: the side to read).")
@click.option("-L", "--tgt-lang", type=LANG, default=None, help="Target language (TMX/XLIFF kept output).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@guarded(reads=("kept", "rejected", "labels"))
def filter_eval(kept, rejected, labels, fmt, columns, src_lang, tgt_lang, as_json):
    """Precision and recall of a `bisent filter` run against a labelled sample. KEPT: its -o output (two
    files for Moses); REJECTED: its --rejected file; LABELS: src<TAB>tgt<TAB>label lines (1 parallel, 0 not)
    or the labels.jsonl of `bisent review`. Pairs are matched by their text; precision is the share of the
    labelled kept pairs that are parallel, recall the share of the labelled parallel pairs that were kept.

    \b
    Examples:
      bisent eval filter kept.tsv rejected.tsv labels.tsv
      bisent eval filter kept.en kept.de rejected.tsv review/labels.jsonl --json
    """
    from ..review.filter_eval import evaluate_filter

    if len(kept) > 2:
        raise BisentError(f"expected KEPT (one file, or two Moses files) REJECTED LABELS, got {len(kept) + 2} files")
    out = evaluate_filter(list(kept), rejected, labels, fmt=fmt, columns=columns, src_lang=src_lang,
                          tgt_lang=tgt_lang)
    if out["found"] == 0:
        raise BisentError(f"{labels}: none of the {out['labelled']} labelled pairs is in {kept[0]} or {rejected}")
    if out["not_found"]:
        click.echo(f"bisent: warning: {out['not_found']} of {out['labelled']} labelled pairs are in neither KEPT nor "
                   f"REJECTED (left out)", err=True)
    if as_json:
        click.echo(json.dumps(out))
        return

    def pct(x):
        return "-" if x is None else f"{100 * x:.2f}"

    click.echo(f"P={pct(out['precision'])} R={pct(out['recall'])} F1={pct(out['f1'])} "
               f"rejected_correct={pct(out['rejected_correct'])} labelled={out['labelled']} found={out['found']} "
               f"tp={out['tp']} fp={out['fp']} fn={out['fn']} tn={out['tn']}")
