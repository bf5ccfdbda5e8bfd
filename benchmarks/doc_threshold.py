"""Document matching's default threshold: precision and recall of each candidate rule on collections with
unrelated pages mixed in.

Dev and test tasks are built from LibreOffice help pages of one split (``bisent data libreoffice``; the
pages' own paragraphs): of ``pages`` help pages, a share ``overlap`` keep their translation (the gold
pairs), the others appear on one side only (half source-only, half target-only: same-site pages without a
counterpart); with ``--foreign`` each side also gets as many unrelated pages of another domain (gettext UI
messages of one package, ten to a page, the two sides from different packages). Each task is mined as
``bisent docs mine`` does (centred Sentence-Avg, kNN both ways, ratio margin, one-to-one), and every
candidate rule decides which of the matches stand: a margin threshold, a cosine floor, or both. A match is
right when it is a gold pair. One record per task and rule: precision and recall (%), with the counts.

Usage: python benchmarks/doc_threshold.py --split dev --pair en-de [-e use-m3]
"""

from __future__ import annotations

import argparse
import random

import numpy as np

from bisent.bench.common import Recorder, add_results_option

MARGINS = (None, 1.0, 1.05, 1.1, 1.2, 1.3)
COSINES = (None, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
#: floors on the cosine of the plain (uncentred) means: centring on a small collection of two kinds of page
#: makes each kind point its own way, so unrelated pages of one kind look alike
PLAIN = (None, 0.6, 0.7, 0.75, 0.8, 0.85)
SIZES = (6, 20, 80, 200)
OVERLAPS = (0.25, 0.5, 0.9)


def foreign_pages(src: str, tgt: str, n: int, seed: int, split: str) -> tuple[list[list[str]], list[list[str]]]:
    """``n`` pages per side of gettext UI messages of ``split`` (ten to a page), the sides from different
    packages."""
    from bisent.datasets.gettext import load_pairs

    by_pkg: dict[str, list] = {}
    for p in load_pairs(src, tgt, split=split):
        by_pkg.setdefault(p.doc.split("/")[0], []).append(p)
    pkgs = sorted(by_pkg)
    random.Random(seed).shuffle(pkgs)
    half = len(pkgs) // 2
    pages = []
    for side, group in ((0, pkgs[:half]), (1, pkgs[half:])):
        texts = [(p.src if side == 0 else p.tgt) for g in group for p in by_pkg[g]]
        pages.append([texts[i:i + 10] for i in range(0, min(len(texts), 10 * n), 10)][:n])
    return pages[0], pages[1]


def make_task(docs, pages: int, overlap: float, seed: int, foreign=None):
    """(src pages, tgt pages, gold set of (src row, tgt row), foreign rows (src set, tgt set)) of one task; pages
    are lists of paragraphs."""
    rng = random.Random(seed)
    chosen = rng.sample(docs, min(pages, len(docs)))
    n_gold = max(1, round(overlap * len(chosen)))
    src, tgt, gold = [], [], set()
    for i, d in enumerate(chosen):
        s, t = [p.text for p in d.src], [p.text for p in d.tgt]
        if i < n_gold:
            gold.add((len(src), len(tgt)))
            src.append(s)
            tgt.append(t)
        elif i % 2:
            src.append(s)
        else:
            tgt.append(t)
    n_src, n_tgt = len(src), len(tgt)
    if foreign is not None:
        fs, ft = foreign
        src += fs[:len(chosen)]
        tgt += ft[:len(chosen)]
    order_t = list(range(len(tgt)))
    rng.shuffle(order_t)
    where = {old: new for new, old in enumerate(order_t)}
    tgt = [tgt[i] for i in order_t]
    gold = {(s, where[t]) for s, t in gold}
    return src, tgt, gold, (set(range(n_src, len(src))), {where[t] for t in range(n_tgt, len(tgt))})


def evaluate(matches, gold: set, margin, cosine, plain=None, foreign=(set(), set())) -> tuple[int, int, int]:
    """(matches the rule keeps, of them right, of them pairing a page with an unrelated page of another kind)."""
    kept = right = unrelated = 0
    for s, t, score, cos, raw in matches:
        if (margin is None or score >= margin) and (cosine is None or cos >= cosine) \
                and (plain is None or raw >= plain):
            kept += 1
            right += (s, t) in gold
            unrelated += (s in foreign[0]) != (t in foreign[1]) or (s in foreign[0] and t in foreign[1])
    return kept, right, unrelated


def run_task(enc, src_pages, tgt_pages, src_lang, tgt_lang, plain_enc=None):
    """Every one-to-one match ``bisent docs mine`` makes with no threshold: (src row, tgt row, margin, cosine,
    cosine of the plain means)."""
    from bisent.documents import Document, mine_documents

    a = enc.encode_documents(src_pages, src_lang, progress=False)   # (n, d)
    b = enc.encode_documents(tgt_pages, tgt_lang, progress=False)   # (m, d)
    sd = [Document(str(i), p, "") for i, p in enumerate(src_pages)]
    td = [Document(str(i), p, "") for i, p in enumerate(tgt_pages)]
    pa = plain_enc.encode_documents(src_pages, src_lang, progress=False) if plain_enc else a
    pb = plain_enc.encode_documents(tgt_pages, tgt_lang, progress=False) if plain_enc else b
    out = []
    for i, m in enumerate(mine_documents(sd, td, a, b)):
        if m.reason is None:
            j = int(m.tgt_id)
            out.append((i, j, m.score, m.cosine, float(pa[i] @ pb[j])))
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--split", default="dev", choices=("dev", "test"))
    ap.add_argument("--pair", default="en-de")
    ap.add_argument("-e", "--encoder", default="use-m3")
    ap.add_argument("--seeds", type=int, default=3, help="tasks per size and overlap")
    add_results_option(ap)
    args = ap.parse_args(argv)
    from bisent.datasets.libreoffice import load_documents
    from bisent.documents import get_document_encoder

    src_lang, tgt_lang = args.pair.split("-")
    docs = [d for d in load_documents(src_lang, tgt_lang, split=args.split) if d.src and d.tgt]
    enc = get_document_encoder(args.encoder)
    plain_enc = get_document_encoder(args.encoder, centred=False)
    record = Recorder("doc_threshold", args.results or None, echo=lambda line: print(line, flush=True))
    totals: dict = {}
    for foreign in (False, True):
        for pages in SIZES:
            for overlap in OVERLAPS:
                for seed in range(args.seeds):
                    fp = foreign_pages(src_lang, tgt_lang, pages, seed, args.split) if foreign else None
                    src, tgt, gold, foreign_rows = make_task(docs, pages, overlap, seed, fp)
                    matches = run_task(enc, src, tgt, src_lang, tgt_lang, plain_enc)
                    task = f"{'foreign' if foreign else 'site'}/{pages}/{overlap}"
                    for margin in MARGINS:
                        for cosine in COSINES:
                            for plain in PLAIN:
                                kept, right, unrelated = evaluate(matches, gold, margin, cosine, plain,
                                                                  foreign_rows)
                                t = totals.setdefault((task, margin, cosine, plain), [0, 0, 0, 0])
                                t[0] += kept
                                t[1] += right
                                t[2] += len(gold)
                                t[3] += unrelated
    for (task, margin, cosine, plain), (kept, right, n_gold, unrelated) in sorted(totals.items(),
                                                                                 key=lambda kv: str(kv[0])):
        record({"task": "doc_threshold", "split": args.split, "pair": args.pair, "encoder": args.encoder,
                "collection": task, "margin": margin, "cosine": cosine, "plain_cosine": plain, "kept": kept,
                "right": right,
                "gold": n_gold, "unrelated": unrelated, "precision": round(100 * right / kept, 2) if kept else None,
                "unrelated_share": round(100 * unrelated / kept, 2) if kept else None,
                "recall": round(100 * right / n_gold, 2) if n_gold else None})
    summary = {}
    for (task, margin, cosine, plain), (kept, right, n_gold, unrelated) in totals.items():
        s = summary.setdefault((margin, cosine, plain), {"worst_precision": 100.0, "recall": [], "unrelated": 0.0})
        if kept:
            s["worst_precision"] = min(s["worst_precision"], 100 * right / kept)
            s["unrelated"] = max(s["unrelated"], 100 * unrelated / kept)
        s["recall"].append(100 * right / n_gold)
    for (margin, cosine, plain), s in sorted(summary.items(), key=lambda kv: str(kv[0])):
        print(f"margin {margin} cosine {cosine} plain {plain}: worst precision {s['worst_precision']:.2f}, "
              f"mean recall {np.mean(s['recall']):.2f}, worst recall {min(s['recall']):.2f}, "
              f"worst share of unrelated pairs {s['unrelated']:.2f}", flush=True)


if __name__ == "__main__":
    main()
