"""Strict F1 on a human-aligned gold folder with its 95 % bootstrap interval, and each aligner's gap to
``bisent align``'s defaults with its paired interval (:func:`bisent.align.interval.f1_interval`: stretches of
20 consecutive gold blocks drawn with replacement).

One document gives one figure: the interval says whether a target met or missed by a point, or a lead over
a peer, would hold on another document of the kind. Aligners: ``bisent align`` at its defaults with the
encoder, Gale-Church, and vecalign's DP (``sentalign``, when installed) fed the same embeddings.

    python benchmarks/align_interval.py --gold BLEUALIGN_DIR --pair de-fr
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gold", required=True, help="gold folder (NAME.SRC, NAME.TGT, NAME.SRCTGT)")
    ap.add_argument("--pair", default="de-fr")
    ap.add_argument("-e", "--encoder", default="use-m3")
    ap.add_argument("--size", type=int, default=20, help="gold blocks per bootstrap unit")
    from bisent.bench.common import Recorder, add_results_option
    add_results_option(ap)
    args = ap.parse_args()

    from bisent.align import GALE_CHURCH, SentenceAligner, line_blocks
    from bisent.align.interval import f1_interval
    from bisent.bench.align import load_gold_dir, run_peer

    s, t = args.pair.split("-")
    docs = load_gold_dir(args.gold, s, t)
    names, hyps = [], []
    for enc in (args.encoder, GALE_CHURCH):
        al = SentenceAligner(enc, progress=False)
        names.append(al.name)
        hyps.append([[(b.src, b.tgt) for b in line_blocks(al.align(d.src.sentences, d.tgt.sentences, s, t).blocks,
                                                          d.src, d.tgt)] for d in docs])
        if enc == args.encoder:
            encoder, max_size = al.encoder, al.max_size
    peer = run_peer("sentalign", [(d.src.sentences, d.tgt.sentences) for d in docs], encoder, s, t, max_size=max_size)
    if peer is not None:
        names.append(f"sentalign-{peer[1]}+{args.encoder}")
        hyps.append([[(b.src, b.tgt) for b in line_blocks(bl, d.src, d.tgt)] for bl, d in zip(peer[0], docs)])
    iv = f1_interval(hyps, [d.gold for d in docs], size=args.size)
    record = Recorder("align_interval", args.results or None)
    for k, name in enumerate(names):
        record({"pair": args.pair, "source": f"gold:{Path(args.gold).name}", "aligner": name, "n_docs": len(docs),
                "strict_f1": iv["f1"][k], "low": iv["low"][k], "high": iv["high"][k],
                "gap_to_defaults": iv["gap"][k], "gap_low": iv["gap_low"][k], "gap_high": iv["gap_high"][k],
                "units": iv["units"], "unit_blocks": iv["size"], "rounds": iv["rounds"]})


if __name__ == "__main__":
    main()
