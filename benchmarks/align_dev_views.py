"""What the aligner's settings do on dev data beyond the sets its rule reads: strict F1 on the Bleualign dev
document and on LibreOffice (or GNOME, ``--source gnome``) help dev pages in the ``clean`` and ``drop10`` views,
per setting.

The rule of ``benchmarks/align_rule.py`` reads the Bleualign document, the paragraph gold and the help views'
``clean`` and ``drop10`` dev pages for its own candidates; this script scores any other setting. Settings are JSON
objects over the defaults (``{"skip_floor": 0.5}``); dev data only. Its records in ``align_dev_views.jsonl`` up to
commit 79e6868 were made with the defaults before (floor 0.5, merge penalty 0.15) and the earlier help-page gold.

    python benchmarks/align_dev_views.py --gold BLEUALIGN_DIR --pair en-de \
        --setting '{}' --setting '{"skip_floor": 0.5}'
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from align_rule import score_set  # noqa: E402
from align_tune import align_all, prepare  # noqa: E402

#: the defaults as ``align_all`` reads them
DEFAULTS = {"max_size": 5, "skip_quantile": 0.02, "merge_penalty": 0.1, "skip_floor": 0.3,
            "skip_pairs": "off_diagonal", "norm_groups": False, "samples": 20, "copies": True, "length_weight": 0.1}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gold", required=True, help="gold folder (NAME.de, NAME.fr, NAME.defr)")
    ap.add_argument("--pair", default="en-de", help="help pair of the views")
    ap.add_argument("--source", default="libreoffice", choices=["libreoffice", "gnome"], help="help pages of the views")
    ap.add_argument("--limit", type=int, default=40, help="dev pages per view")
    ap.add_argument("--setting", action="append", default=[], help="JSON object over the defaults (repeatable)")
    ap.add_argument("-e", "--encoder", default="use-m3")
    from bisent.bench.common import Recorder, add_results_option
    add_results_option(ap)
    args = ap.parse_args()

    from bisent.align import SentenceAligner
    from bisent.bench.align import VIEWS, load_gold_dir
    from bisent.datasets.align_gold import load_align_task

    aligner = SentenceAligner(args.encoder, progress=False)
    gdocs = load_gold_dir(args.gold, "de", "fr")
    texts = [(d.src.sentences, d.tgt.sentences) for d in gdocs]
    sets = {"bleualign-dev": ("gold", gdocs, prepare(aligner, [(s, t, "de", "fr") for s, t in texts], 4), texts)}
    s, t = args.pair.split("-")
    for view in ("clean", "drop10"):
        drop, merge = VIEWS[view]
        docs, _ = load_align_task(s, t, "dev", limit=args.limit, drop=drop, merge=merge, source=args.source)
        name = f"help-{view}-{args.pair}" if args.source == "libreoffice" else f"{args.source}-{view}-{args.pair}"
        sets[name] = ("clean", docs, prepare(aligner, [(d.src, d.tgt, s, t) for d in docs], 4),
                      [(d.src, d.tgt) for d in docs])
    record = Recorder("align_dev_views", args.results or None)
    for raw in args.setting or ["{}"]:
        setting = json.loads(raw)
        cfg = {**DEFAULTS, **setting}
        row = {"setting": setting, "encoder": args.encoder, "split": "dev", "pages": args.limit, "source": args.source}
        for name, (kind, docs, embs, txt) in sets.items():
            row[name] = score_set(kind, docs, align_all(embs, cfg, len(docs), txt))["strict_f1"]
        record(row)


if __name__ == "__main__":
    main()
