"""Choose the shape of cut of the filter pipeline's ``repair`` step on DEV.

    python benchmarks/divergence_pipeline_dev.py --pair en-de -e out/div/en-de-wv128 \
        --setting '{}' --setting '{"sentences_only": true}' [--repair-only]

The filter benchmark's noisy set is built from LibreOffice DEV pages exactly as `bisent bench
divergence` builds it from TEST pages (:func:`bisent.bench.filtering.build_set` with ``split="dev"``,
2,000 items, seed 0), and the word-labelled set from DEV pages as
``benchmarks/divergence_dev_sweep.py`` builds it. Per ``--setting`` (extra options of the ``repair``
step and of :func:`bisent.divergence.repair_pair`, JSON) it prints one JSON line: on the word set the
glued pairs restored exactly and the clean pairs cut; on the noisy set the share of each kind the step
cuts and the glued pairs restored exactly; without ``--repair-only`` also the default pipeline (use-m3)
with that step first (:func:`bisent.bench.divergence.clean_words`: correct words at precision 0.9 / 0.95 /
0.98). One line without the step comes first unless ``--repair-only``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from bisent.bench.divergence import clean_words
from bisent.bench.filtering import build_set
from bisent.datasets.domains import load_domain_pairs
from bisent.divergence import repair_pair, tokenize, word_test_set
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
    train = [(tokenize(p.src).words, tokenize(p.tgt).words) for p in load_domain_pairs("libreoffice", s, t, split="train")]
    words = [e for e in word_test_set(rows, [(a, b) for a, b in train if 1 <= len(a) <= 60 and 1 <= len(b) <= 60])
             if e.kind in "PI"]
    items, _ = build_set(s, t, limit=args.limit, split="dev")
    model = load_model(args.model)
    head = {"pair": args.pair, "split": "dev", "model": args.model, "items": len(items)}
    if not args.repair_only:
        print(json.dumps({**head, "repair_step": False, **clean_words(items, original, None, s, t)}), flush=True)
    for opts in settings:
        t0 = time.perf_counter()
        restored = glued = cut_clean = clean = 0
        for e in words:
            r = repair_pair(model, " ".join(e.src), " ".join(e.tgt), **opts)
            if e.kind == "P":
                clean += 1
                cut_clean += r.status == "cut"
            else:
                glued += 1
                restored += (tokenize(r.src).words, tokenize(r.tgt).words) == (
                    tokenize(e.info["src_text"]).words, tokenize(e.info["tgt_text"]).words)
        out = {**head, "repair_step": True, **opts, "words_glued": glued,
               "words_restored_exactly": round(restored / max(glued, 1), 4), "words_clean": clean,
               "words_clean_cut": round(cut_clean / max(clean, 1), 4)}
        if args.repair_only:
            cut: dict[str, list[int]] = {}
            exact = []
            for it in items:
                r = repair_pair(model, it.src, it.tgt, **opts)
                cut.setdefault(it.kind, []).append(int((r.src, r.tgt) != (it.src, it.tgt)))
                if it.kind == "glued":
                    exact.append((tokenize(r.src).words, tokenize(r.tgt).words)
                                 == (tokenize(it.src).words, tokenize(original[(it.doc, it.pid)]).words))
            out.update({"cut_share": {k: round(float(np.mean(v)), 4) for k, v in sorted(cut.items())},
                        "glued_restored_exactly": round(float(np.mean(exact)), 4)})
        else:
            out.update(clean_words(items, original, {"type": "repair", "model": args.model, **opts}, s, t))
        out["seconds"] = round(time.perf_counter() - t0, 1)
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
