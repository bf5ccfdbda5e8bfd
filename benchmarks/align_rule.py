"""The rule that keeps or changes the sentence aligner's defaults, applied to dev data only.

The rule (docs/guides/sentence-alignment.md, "How the defaults are chosen", written before any test page
was aligned): each candidate setting is scored on every dev gold set, the Bleualign de-fr dev document and
the paragraph gold of LibreOffice help dev pages (en-de, en-fr, en-es; ``bisent bench align --view
paragraphs``). **A candidate replaces the current defaults only if its mean strict F1 over those sets is at
least 0.5 point higher, its mean paragraph-consistency error is at most 0.5 point higher, and it keeps the
clean help en-de dev pages at 99 strict F1 or more; otherwise the current defaults stay** (a tie goes to what is
already there). Embeddings come from the embedding cache (the bench runs made them); one JSON line per
setting and set, then the decision.

    python benchmarks/align_rule.py --gold /path/to/bleualign-dev --paragraph-limit 15
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from align_tune import align_all, prepare  # noqa: E402

BASE = {"skip_floor": 0.5, "skip_pairs": "off_diagonal", "norm_groups": False, "samples": 20}
CANDIDATES = {
    "current": {"max_size": 5, "skip_quantile": 0.02, "merge_penalty": 0.15},
    "previous": {"max_size": 4, "skip_quantile": 0.1, "merge_penalty": 0.3},
    "issue-flags": {"max_size": 4, "skip_quantile": 0.01, "merge_penalty": 0.0},
    "merge-0.1": {"max_size": 5, "skip_quantile": 0.02, "merge_penalty": 0.1},
    "merge-0.2": {"max_size": 5, "skip_quantile": 0.02, "merge_penalty": 0.2},
    "skip-0.05": {"max_size": 5, "skip_quantile": 0.05, "merge_penalty": 0.15},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gold", required=True, help="gold folder (NAME.de, NAME.fr, NAME.defr)")
    ap.add_argument("--pairs", nargs="+", default=["en-de", "en-fr", "en-es"])
    ap.add_argument("--paragraph-limit", type=int, nargs="+", default=[15],
                    help="dev pages of the paragraph gold per pair (one value, or one per pair)")
    ap.add_argument("--help-limit", type=int, default=60)
    ap.add_argument("-e", "--encoder", default="use-m3")
    args = ap.parse_args()

    from bisent.align import SentenceAligner, line_blocks, score_alignments
    from bisent.align.aligner import Block
    from bisent.bench.align import load_gold_dir, paragraph_scores
    from bisent.datasets.align_gold import load_align_task, load_paragraph_task

    aligner = SentenceAligner(args.encoder, progress=False)
    limits = args.paragraph_limit * len(args.pairs) if len(args.paragraph_limit) == 1 else args.paragraph_limit
    sets = {}
    gdocs = load_gold_dir(args.gold, "de", "fr")
    sets["bleualign-dev"] = ("gold", gdocs, prepare(aligner, [(d.src.sentences, d.tgt.sentences, "de", "fr")
                                                              for d in gdocs], 4))
    for pair, limit in zip(args.pairs, limits):
        s, t = pair.split("-")
        docs, _ = load_paragraph_task(s, t, "dev", limit=limit)
        sets[f"paragraphs-{pair}"] = ("paragraphs", docs, prepare(aligner, [(d.src, d.tgt, s, t) for d in docs], 4))
    docs, _ = load_align_task("en", "de", "dev", limit=args.help_limit)
    sets["help-clean-en-de"] = ("clean", docs, prepare(aligner, [(d.src, d.tgt, "en", "de") for d in docs], 4))
    command = " ".join(["python"] + sys.argv)
    summary = {}
    for name, setting in CANDIDATES.items():
        cfg = {**BASE, **setting}
        f1s, errors, clean = [], [], None
        for set_name, (kind, docs, embs) in sets.items():
            hyp = align_all(embs, cfg, len(docs))
            if kind == "gold":
                lines = [[(b.src, b.tgt) for b in line_blocks([Block(s, t) for s, t in h], d.src, d.tgt)]
                         for h, d in zip(hyp, docs)]
                row = score_alignments(lines, [d.gold for d in docs]).as_dict()
            elif kind == "paragraphs":
                row = paragraph_scores(hyp, docs)
                errors.append(row["para_error"])
            else:
                row = score_alignments(hyp, [d.gold for d in docs]).as_dict()
                clean = row["strict_f1"]
            if kind != "clean":
                f1s.append(row["strict_f1"])
            print(json.dumps({"task": "align_rule", "setting": name, **setting, "set": set_name, "n_docs": len(docs),
                              **row, "encoder": args.encoder, "command": command}), flush=True)
        summary[name] = {"mean_strict_f1": round(sum(f1s) / len(f1s), 2),
                         "mean_para_error": round(sum(errors) / len(errors), 2), "clean_strict_f1": clean}
    cur = summary["current"]
    better = [n for n, s in summary.items() if n != "current" and s["mean_strict_f1"] >= cur["mean_strict_f1"] + 0.5
              and s["mean_para_error"] <= cur["mean_para_error"] + 0.5 and s["clean_strict_f1"] >= 99.0]
    choice = max(better, key=lambda n: summary[n]["mean_strict_f1"]) if better else "current"
    print(json.dumps({"task": "align_rule", "summary": summary, "choice": choice, "encoder": args.encoder,
                      "command": command}), flush=True)


if __name__ == "__main__":
    main()
