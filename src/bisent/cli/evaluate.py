"""``bisent eval``: score mined output against gold pairs."""

from __future__ import annotations

import json

import click

from ..errors import BisentError
from ..evaluate import best_threshold, bucc_prf
from ..io import read_tsv


@click.group("eval")
def eval_group():
    """Evaluate mined output."""


def read_mined(path) -> list[tuple[float, str, str]]:
    """Read `score, src, tgt, src_id, tgt_id` rows written by `bisent mine` with ids."""
    rows = []
    for n, cols in read_tsv(path, 5):
        try:
            score = float(cols[0])
        except ValueError:
            raise BisentError(f"{path}:{n}: score '{cols[0]}' is not a number") from None
        rows.append((score, cols[3], cols[4]))
    return rows


@eval_group.command("bucc")
@click.argument("mined", type=click.Path(dir_okay=False))
@click.argument("gold", type=click.Path(dir_okay=False))
@click.option("--threshold", type=float, default=None, help="Also report P/R/F1 at this threshold.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def bucc(mined, gold, threshold, as_json):
    """Precision, recall, F1 of MINED (from `bisent mine --line-numbers` or BUCC input) against GOLD (src_id<TAB>tgt_id)."""
    pairs = read_mined(mined)
    gold_pairs = {(c[0], c[1]) for _, c in read_tsv(gold, 2)}
    best = best_threshold(pairs, gold_pairs)
    out = {"best": best.as_dict()}
    if threshold is not None:
        out["at_threshold"] = bucc_prf(pairs, gold_pairs, threshold).as_dict()
    if as_json:
        click.echo(json.dumps(out))
        return
    for name, r in out.items():
        thr = "none" if r["threshold"] is None else f"{r['threshold']:.6f}"
        click.echo(f"{name:13s} P={100 * r['precision']:.2f} R={100 * r['recall']:.2f} F1={100 * r['f1']:.2f} "
                   f"threshold={thr} mined={r['n_mined']} correct={r['n_correct']} gold={r['n_gold']}")


from .docs import eval_docs  # noqa: E402  document retrieval P@N (Guo et al. 2019)

eval_group.add_command(eval_docs)
