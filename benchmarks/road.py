"""The road as one run (`bisent run`) on LibreOffice help, with the precision of the kept pairs against gold.

Document pairs: the test pages of ``bisent data align`` with a tenth of the
paragraphs untranslated on one side (``--drop 0.1``), one sentence per line.
With ``--collections SHARE`` the pairs are not given: the pages go into two
folders under opaque shuffled names, SHARE of the pages lose their
translation (half of them the target file, half the source), and the run's
``documents`` stage mines them (bisent.documents, centred Sentence-Avg); a kept pair from a wrongly
matched page counts as wrong. The run aligns them (recipes/run-default.yaml settings, encoder as given),
filters the aligned groups with recipes/filter-default.yaml and keeps what
passes. A kept pair is correct (strict) when its source and target lines are
exactly a gold block, and lax when it shares a source and a target sentence
with one. Also reported: documents, sentences, aligned groups, kept and
rejected counts, and the share of gold blocks that end up kept (yield).

    python benchmarks/road.py --pair en-de [--encoder use-m3] [--limit PAGES]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pair", default="en-de")
    ap.add_argument("--encoder", default="use-m3")
    ap.add_argument("--limit", type=int, default=None, help="cap on pages")
    ap.add_argument("--drop", type=float, default=0.1)
    ap.add_argument("--collections", type=float, default=None,
                    help="match documents across two shuffled collections, this share of pages untranslated")
    ap.add_argument("--results", default="benchmarks/results", help="folder of road.jsonl ('' to not record)")
    args = ap.parse_args()
    from bisent.align import read_alignment
    from bisent.datasets.align_gold import load_align_task, write_task
    from bisent.run import run_pipeline
    from bisent.bench.common import Recorder

    src, tgt = args.pair.split("-")
    docs, stats = load_align_task(src, tgt, "test", limit=args.limit, drop=args.drop)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        write_task(docs, tmp / "task", src, tgt)
        documents, page_of = {"pairs": "task/pairs.tsv"}, None
        if args.collections is not None:
            documents, page_of = {"collections": {"src": "src", "tgt": "tgt"}}, {}
            for k in range(len(docs)):
                h = hashlib.blake2b(f"{k}".encode(), digest_size=6).hexdigest()
                u = int(h, 16) / 16 ** 12
                for side, lang, lost in (("src", src, 0 <= u < args.collections / 2),
                                         ("tgt", tgt, args.collections / 2 <= u < args.collections)):
                    if lost:
                        continue
                    (tmp / side).mkdir(exist_ok=True)
                    dest = tmp / side / f"{h}.txt"
                    dest.write_bytes((tmp / "task" / f"{k:04d}.{lang}").read_bytes())
                    page_of[dest.name] = k + 1          # the document id in a mined pairs.tsv
        cfg = tmp / "run.yaml"
        cfg.write_text(json.dumps({"src_lang": src, "tgt_lang": tgt, "documents": documents,
                                   "align": {"encoder": args.encoder},
                                   "filter": {"config": str(ROOT / "recipes" / "filter-default.yaml")}}))
        t0 = time.perf_counter()
        summary = run_pipeline(cfg, tmp / "run", echo=lambda *a, **k: None, progress=False)
        seconds = time.perf_counter() - t0
        gold = {}
        for k in range(len(docs)):
            blocks = read_alignment(tmp / "task" / f"{k:04d}.gold")
            gold[k + 1] = {(s, t) for s, t in blocks if s and t}
        strict = lax = n = 0
        pages = [[page_of.get(c, 0) for c in line.split("\t")[2:4]] if page_of is not None else None
                 for line in (tmp / "run" / "documents" / "pairs.tsv").read_text(encoding="utf-8").splitlines()]
        right_docs = sum(p is not None and p[0] == p[1] for p in pages)
        for line in (tmp / "run" / "bitext.ids.tsv").read_text(encoding="utf-8").splitlines():
            pair, s_lines, t_lines, _ = line.split("\t")
            n += 1
            if page_of is not None:
                ps, pt = pages[int(pair) - 1]
                if ps != pt:
                    continue
                pair = ps
            s = tuple(int(x) - 1 for x in s_lines.split(","))
            t = tuple(int(x) - 1 for x in t_lines.split(","))
            strict += (s, t) in gold[int(pair)]
            lax += any(set(s) & set(gs) and set(t) & set(gt) for gs, gt in gold[int(pair)])
    n_gold = sum(len(g) for g in gold.values())
    row = {"task": "road", "pair": args.pair, "encoder": args.encoder, "drop": args.drop, "documents": len(docs),
           "collections_untranslated": args.collections, "documents_matched": summary["documents"]["pairs"],
           "documents_matched_right": right_docs if page_of is not None else None,
           "documents_unmatched": [summary["documents"].get("unmatched_src"), summary["documents"].get("unmatched_tgt")],
           "src_sentences": stats["src_sentences"], "tgt_sentences": stats["tgt_sentences"], "gold_blocks": n_gold,
           "aligned_groups": summary["candidates"]["candidates"], "kept": summary["filter"]["kept"],
           "rejected_by": summary["filter"]["rejected_by"],
           "unaligned_src": summary["align"]["unaligned_src_lines"],
           "unaligned_tgt": summary["align"]["unaligned_tgt_lines"],
           "precision_strict": round(100 * strict / max(n, 1), 2), "precision_lax": round(100 * lax / max(n, 1), 2),
           "yield_of_gold": round(100 * strict / max(n_gold, 1), 2), "seconds": round(seconds, 1)}
    Recorder("road", args.results or None)(row)

if __name__ == "__main__":
    main()
