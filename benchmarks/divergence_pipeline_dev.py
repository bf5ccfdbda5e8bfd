"""Choose the shape of cut of the filter pipeline's ``repair`` step on DEV.

    python benchmarks/divergence_pipeline_dev.py --pair en-de -e models/div-en-de \
        --setting '{}' --setting '{"sentences_only": true}' [--repair-only]

The filter benchmark's noisy set is built from LibreOffice DEV pages exactly as `bisent bench
divergence` builds it from TEST pages (:func:`bisent.bench.filtering.build_set` with ``split="dev"``,
2,000 items, seed 0), and the word-labelled set from DEV pages as
``benchmarks/divergence_dev_sweep.py`` builds it. Per ``--setting`` (extra options of the ``repair``
step and of :func:`bisent.divergence.repair.repair_pair`, JSON) it prints one JSON line: on the word set the
glued pairs restored exactly and the clean pairs cut; on the noisy set the share of each kind the step
cuts and the glued pairs restored exactly; without ``--repair-only`` also the default pipeline (use-m3)
with that step first (:func:`bisent.bench.divergence.clean_words`: correct words at precision 0.9 / 0.95 /
0.98). One line without the step comes first unless ``--repair-only``.
"""

from __future__ import annotations

import argparse
import json
import time

from bisent.bench.divergence import clean_words, held_out_word_set, repair_effects, repair_word_set
from bisent.bench.filtering import build_set
from bisent.datasets.domains import load_domain_pairs
from bisent.divergence.repair import repair_pair
from bisent.models.divergence import load_model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pair", default="en-de")
    ap.add_argument("-e", "--model", required=True)
    ap.add_argument("--setting", action="append", default=[], help="repair options as JSON (repeatable)")
    ap.add_argument("--limit", type=int, default=2000, help="noisy DEV items (as the bench's 2,000)")
    ap.add_argument("--repair-only", action="store_true", help="skip the pipeline (use-m3) figures")
    args = ap.parse_args()
    s, t = args.pair.split("-")
    settings = [json.loads(x) for x in args.setting] or [{}]
    rows = [(p.doc, p.pid, p.src, p.tgt) for p in load_domain_pairs("libreoffice", s, t, split="dev")]
    original = {(doc, pid): tgt for doc, pid, _, tgt in rows}
    words = [e for e in held_out_word_set(rows, "libreoffice", s, t) if e.kind in "PI"]
    items, _ = build_set(s, t, limit=args.limit, split="dev")
    model = load_model(args.model)
    head = {"pair": args.pair, "split": "dev", "model": args.model, "items": len(items)}
    if not args.repair_only:
        print(json.dumps({**head, "repair_step": False, **clean_words(items, original, None, s, t)}), flush=True)
    for opts in settings:
        t0 = time.perf_counter()
        out = {**head, "repair_step": True, **opts,
               **{f"words_{k}": v for k, v in repair_word_set(model, words, **opts).items()}}
        if args.repair_only:
            fixed = [(r.src, r.tgt) for r in (repair_pair(model, it.src, it.tgt, **opts) for it in items)]
            out.update(repair_effects(items, original, fixed))
        else:
            out.update(clean_words(items, original, {"type": "repair", "model": args.model, **opts}, s, t))
        out["seconds"] = round(time.perf_counter() - t0, 1)
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
