"""``bisent demo``: the main job on real data with the default encoder."""

from __future__ import annotations

import json

import click

from ..encoders import DEFAULT_ENCODER, get_encoder
from ..paths import guarded


@click.command()
@click.option("--pair", default="en-de", show_default=True, help="Language pair of LibreOffice help.")
@click.option("-e", "--encoder", default=DEFAULT_ENCODER, show_default=True, help="Encoder name or model directory.")
@click.option("--max-gold", default=1000, show_default=True, type=click.IntRange(1),
              help="Hidden translation pairs per task (each side holds ~4x as many sentences).")
@click.option("-o", "--output", "out_dir", default="out/demo", show_default=True, type=click.Path(file_okay=False),
              help="Folder the demo writes into (its data and mined pairs).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@guarded(folders=("out_dir",))
def demo(pair, encoder, max_gold, out_dir, as_json):
    """Fetch LibreOffice help from Debian's packages, hide translation pairs among unrelated sentences
    (dev and test documents), mine both with the ratio margin, tune the threshold on dev and print
    precision, recall and F1 on test.

    \b
    Examples:
      bisent demo
      bisent demo --pair en-fr --max-gold 200 -o demo-en-fr --json
    """
    from ..demo import run_demo

    src, tgt = pair.split("-", 1)
    log = (lambda *a: click.echo(*a, err=True))
    log(f"bisent demo: mining LibreOffice help {src}-{tgt} with {encoder}")
    r = run_demo(get_encoder(encoder), src, tgt, max_gold=max_gold, out_dir=out_dir, log=log)
    if as_json:
        click.echo(json.dumps(r))
        return
    t, o = r["test"], r["test_oracle"]
    click.echo(f"encoder {r['encoder']}, ratio margin k={r['k']}, max-score retrieval")
    click.echo(f"threshold tuned on dev: {r['threshold_from_dev']:.4f} (dev F1 {100 * r['dev']['f1']:.1f})")
    click.echo(f"test at dev threshold:  P={100 * t['precision']:.1f} R={100 * t['recall']:.1f} F1={100 * t['f1']:.1f} "
               f"({t['n_correct']} of {t['n_gold']} hidden pairs found, {t['n_mined']} mined)")
    click.echo(f"test at oracle threshold {o['threshold']:.4f}: F1={100 * o['f1']:.1f}")
    click.echo(f"time: {r['seconds_total']:.0f}s (data {r['seconds_data']:.0f}s, mining dev "
               f"{r['seconds_mine_dev']:.0f}s, "
               f"test {r['seconds_mine_test']:.0f}s)")
    click.echo(f"mined pairs (test, above threshold): {r['mined_file']}")
    click.echo(f"report: {r['report']}")
