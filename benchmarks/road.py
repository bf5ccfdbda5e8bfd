"""The road as one run (`bisent run`) on LibreOffice help, with the precision of the kept pairs against gold.

Document pairs: the test pages of ``bisent data align`` with a tenth of the
paragraphs untranslated on one side (``--drop 0.1``), one sentence per line.
With ``--collections SHARE`` the pairs are not given: the pages go into two
folders under opaque shuffled names, SHARE of the pages lose their
translation (half of them the target file, half the source), and the run's
``documents`` stage mines them (bisent.documents, centred Sentence-Avg); a kept pair from a wrongly
matched page counts as wrong. The run aligns them (the run-default recipe's settings, encoder as given),
filters the aligned groups with the filter-default recipe and keeps what
passes. A kept pair is correct (strict) when its source and target lines are
exactly a gold block, and lax when it shares a source and a target sentence
with one. Also reported: documents, sentences, aligned groups, kept and
rejected counts, and the share of gold blocks that end up kept (yield).

    python benchmarks/road.py --pair en-de [--encoder use-m3] [--limit PAGES] [--collections 0.2]

Tuning the documents stage's threshold (``--sweep``, on ``--split dev``, never
on test): the two collections are built as above and only matched (the code
of the ``documents`` stage: Sentence-Avg, kNN + ratio margin, one to one);
for each threshold, the matched pairs scoring at least that are counted right
(the same page) or wrong, and document-pair precision / recall / F1 against
the translated pages are recorded (``road_threshold.jsonl``). The pairing does
not depend on the threshold (it only cuts pairs off), so one matching serves
every threshold.

    python benchmarks/road.py --pair en-de --split dev --collections 0.2 --sweep 0.9 1.0 1.05 1.1
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
import time
from pathlib import Path


def make_collections(tmp: Path, n_pages: int, share: float, src: str, tgt: str) -> dict:
    """Two folders of the task's pages under opaque shuffled names, ``share`` of the pages without their
    translation (half lose the target file, half the source); returns {file name: page number (1-based)}."""
    page_of = {}
    for k in range(n_pages):
        h = hashlib.blake2b(f"{k}".encode(), digest_size=6).hexdigest()
        u = int(h, 16) / 16 ** 12
        for side, lang, lost in (("src", src, 0 <= u < share / 2), ("tgt", tgt, share / 2 <= u < share)):
            if lost:
                continue
            (tmp / side).mkdir(exist_ok=True)
            dest = tmp / side / f"{h}.txt"
            dest.write_bytes((tmp / "task" / f"{k:04d}.{lang}").read_bytes())
            page_of[dest.name] = k + 1          # the document id in a mined pairs.tsv
    return page_of


def score_kept(tmp: Path, n_pages: int, page_of: dict | None) -> tuple[int, int, int, int, int]:
    """(kept, strict right, lax right, gold blocks, documents matched right) of a finished run in tmp/run."""
    from bisent.align import read_alignment

    gold = {k + 1: {(s, t) for s, t in read_alignment(tmp / "task" / f"{k:04d}.gold") if s and t}
            for k in range(n_pages)}
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
    return n, strict, lax, sum(len(g) for g in gold.values()), right_docs


def sweep(tmp: Path, page_of: dict, args, record) -> None:
    """Document-pair precision / recall / F1 per threshold of the documents stage (see the module docstring)."""
    from bisent.documents import get_document_encoder, mine_documents, read_documents

    src, tgt = args.pair.split("-")
    a_docs, b_docs = read_documents(tmp / "src", src, segmentation="given"), read_documents(tmp / "tgt", tgt,
                                                                                          segmentation="given")
    enc = get_document_encoder(args.encoder)
    a = enc.encode_documents([d.sentences for d in a_docs], src, progress=False)
    b = enc.encode_documents([d.sentences for d in b_docs], tgt, progress=False)
    matches = [m for m in mine_documents(a_docs, b_docs, a, b, threshold=None) if m.score is not None]
    translated = len({page_of[d.id] for d in a_docs} & {page_of[d.id] for d in b_docs})
    for t in args.sweep:
        kept = [m for m in matches if m.score >= t]
        right = sum(page_of[m.src_id] == page_of[m.tgt_id] for m in kept)
        p, r = right / max(len(kept), 1), right / max(translated, 1)
        record({"task": "road_threshold", "pair": args.pair, "split": args.split, "encoder": args.encoder,
                "collections_untranslated": args.collections, "src_documents": len(a_docs),
                "tgt_documents": len(b_docs), "translated_pairs": translated, "threshold": t,
                "matched": len(kept), "right": right, "wrong": len(kept) - right,
                "precision": round(100 * p, 2), "recall": round(100 * r, 2),
                "f1": round(200 * p * r / max(p + r, 1e-9), 2)})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pair", default="en-de")
    ap.add_argument("--encoder", default="use-m3")
    ap.add_argument("--split", default="test", choices=["dev", "test"], help="pages (tune on dev)")
    ap.add_argument("--limit", type=int, default=None, help="cap on pages")
    ap.add_argument("--drop", type=float, default=0.1)
    ap.add_argument("--collections", type=float, default=None,
                    help="match documents across two shuffled collections, this share of pages untranslated")
    ap.add_argument("--threshold", type=float, default=None, help="documents stage threshold (default: the run's)")
    ap.add_argument("--sweep", type=float, nargs="+", help="only match the collections, at each threshold")
    ap.add_argument("--results", default="benchmarks/results", help="folder of road.jsonl ('' to not record)")
    args = ap.parse_args()
    if args.sweep and args.collections is None:
        ap.error("--sweep needs --collections")
    from bisent.bench.common import Recorder
    from bisent.datasets.align_gold import load_align_task, write_task
    from bisent.run import run_pipeline

    src, tgt = args.pair.split("-")
    docs, stats = load_align_task(src, tgt, args.split, limit=args.limit, drop=args.drop)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        write_task(docs, tmp / "task", src, tgt)
        documents, page_of = {"pairs": "task/pairs.tsv"}, None
        if args.collections is not None:
            page_of = make_collections(tmp, len(docs), args.collections, src, tgt)
            documents = {"collections": {"src": "src", "tgt": "tgt"}}
            if args.threshold is not None:
                documents["threshold"] = args.threshold
        if args.sweep:
            return sweep(tmp, page_of, args, Recorder("road_threshold", args.results or None))
        cfg = tmp / "run.yaml"
        cfg.write_text(json.dumps({"src_lang": src, "tgt_lang": tgt, "documents": documents,
                                   "align": {"encoder": args.encoder},
                                   "filter": {"config": "filter-default"}}))
        t0 = time.perf_counter()
        summary = run_pipeline(cfg, tmp / "run", echo=lambda *a, **k: None, progress=False)
        seconds = time.perf_counter() - t0
        n, strict, lax, n_gold, right_docs = score_kept(tmp, len(docs), page_of)
    Recorder("road", args.results or None)(road_row(args, docs, stats, summary, n, strict, lax, n_gold,
                                                    right_docs if page_of is not None else None, seconds))


def road_row(args, docs, stats, summary, n, strict, lax, n_gold, right_docs, seconds) -> dict:
    """The road.jsonl record of one run."""
    return {"task": "road", "pair": args.pair, "encoder": args.encoder, "split": args.split, "drop": args.drop,
            "documents": len(docs), "collections_untranslated": args.collections,
            "threshold": summary["documents"].get("threshold"),
            "documents_matched": summary["documents"]["pairs"], "documents_matched_right": right_docs,
            "documents_unmatched": [summary["documents"].get("unmatched_src"),
                                    summary["documents"].get("unmatched_tgt")],
            "src_sentences": stats["src_sentences"], "tgt_sentences": stats["tgt_sentences"], "gold_blocks": n_gold,
            "aligned_groups": summary["candidates"]["candidates"], "kept": summary["filter"]["kept"],
            "rejected_by": summary["filter"]["rejected_by"],
            "unaligned_src": summary["align"]["unaligned_src_lines"],
            "unaligned_tgt": summary["align"]["unaligned_tgt_lines"],
            "precision_strict": round(100 * strict / max(n, 1), 2), "precision_lax": round(100 * lax / max(n, 1), 2),
            "yield_of_gold": round(100 * strict / max(n_gold, 1), 2), "seconds": round(seconds, 1)}


if __name__ == "__main__":
    main()
