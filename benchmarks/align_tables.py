"""Markdown tables of the sentence-alignment figures (align.jsonl, align_speed.jsonl, road.jsonl); summarise.py prints
them.

Unlike the other tables, runs on a ``--limit`` slice are shown (with their page count): me5-small
embeds too slowly on a CPU for every test page, so the anchors are compared on a slice.
"""

from __future__ import annotations

import json
from pathlib import Path

from mdtable import table


def _records(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()] if path.is_file() else []


def main(res: Path) -> None:
    last = {}
    for r in _records(res / "align.jsonl"):
        last[(r.get("source", "libreoffice"), r["pair"], r["n_docs"], r["view"], r["encoder"])] = r
    print("\n### Sentence alignment (help test pages re-split by sentencex; strict / lax F1 %)\n")
    print(table(["source", "pair", "pages", "view", "encoder", "strict P", "strict R", "strict F1", "lax F1",
                 "gold blocks", "seconds", "commit"],
                [[src, p, n, v, e, f"{r['strict_p']:.2f}", f"{r['strict_r']:.2f}", f"{r['strict_f1']:.2f}",
                  f"{r['lax_f1']:.2f}", r["n_gold"], r["seconds"], r["commit"]]
                 for (src, p, n, v, e), r in sorted(last.items(),
                                                    key=lambda kv: (kv[0][0], kv[0][1], -kv[0][2], kv[0][3:]))]))
    speed, fits = {}, {}
    for r in _records(res / "align_speed.jsonl"):
        if r["task"] == "align_speed":
            speed[(r["pair"], r["encoder"], r["n_src"])] = r
        else:
            fits[(r["pair"], r["encoder"])] = r
    if speed:
        print("\n### Alignment time and memory against length (benchmarks/align_speed.py; concatenated test pages)\n")
        print(table(["pair", "encoder", "sentences (src / tgt)", "costs s (embeddings cached)", "DP s",
                     "lattice points / sentence", "peak RSS MB", "strict F1", "commit"],
                    [[p, e, f"{r['n_src']} / {r['n_tgt']}", r["costs_seconds"], r["dp_seconds"],
                      r["cells_per_sentence"], r["peak_rss_mb"], r["strict_f1"], r["commit"]]
                     for (p, e, n), r in sorted(speed.items())]))
        print("\nExponent of DP seconds ~ N^b (least squares on log-log, N >= 1000): " +
              "; ".join(f"{e} ({p}) b = {r['dp_time_exponent']}" for (p, e), r in sorted(fits.items())))
    road = list({(r["pair"], r.get("split", "test"), r.get("collections_untranslated"), r["drop"]): r
                 for r in _records(res / "road.jsonl")}.values())     # the latest run of each setting
    if road:
        print("\n### The road (`bisent run`, benchmarks/road.py): precision of the kept pairs against gold\n")
        print(table(["pair", "pages", "documents", "threshold", "matched (right)", "aligned groups", "kept",
                     "precision strict", "precision lax", "gold blocks kept", "commit"],
                    [[r["pair"], r["documents"],
                      "given pairs" if r.get("collections_untranslated") is None else
                      f"two collections, {int(100 * r['collections_untranslated'])} % untranslated",
                      r.get("threshold", "") or "",
                      "{} ({})".format(r["documents_matched"], r["documents_matched"]
                                       if r["documents_matched_right"] is None else r["documents_matched_right"]),
                      r["aligned_groups"], r["kept"], r["precision_strict"], r["precision_lax"],
                      f"{r['yield_of_gold']} %", r["commit"]] for r in road]))
    sweep = {(r["pair"], r["split"], r["threshold"]): r for r in _records(res / "road_threshold.jsonl")}
    if sweep:
        print("\n### The documents stage's threshold (benchmarks/road.py --sweep, dev pages, 20 % untranslated)\n")
        print(table(["pair", "split", "threshold", "matched", "right", "wrong", "precision", "recall", "F1",
                     "commit"],
                    [[p, sp, t, r["matched"], r["right"], r["wrong"], r["precision"], r["recall"], r["f1"],
                      r["commit"]] for (p, sp, t), r in sorted(sweep.items())]))
