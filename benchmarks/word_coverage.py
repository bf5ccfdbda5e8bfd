"""Recovery error by how often a training collection shows each test item's words: where a student's gap lies.

A distilled student knows a word only if its training text holds it; use-m3 learnt from far more. This splits a
recovery set (the same pairs ``bisent bench recover`` samples) by the *coverage* of each item: how often its
rarest word occurs in the collection's text of one language (``train.en-XX.tsv``'s column of that language,
``mono.XX.txt``, ``words.XX.txt`` of ``bisent data general``), and gives each encoder's error per stratum,
with the items only it or only the reference (use-m3) gets wrong. Words are lowercased ``\\w+`` runs, so the
split means something for languages written with spaces (not Chinese or Japanese).

    python benchmarks/word_coverage.py --collection general --domain dict --pair en-it \\
        -e use-m3 -e models/student-general [--side tgt] [--limit 300] [--examples]
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

import numpy as np

from bisent.bench.common import Recorder, add_results_option, run_encoders
from bisent.bench.recover import encoder_misses
from bisent.errors import BisentError
from bisent.evaluate import paired_gap, pairs_fingerprint, sample_distinct_pairs
from bisent.io import read_lines, read_tsv

WORD = re.compile(r"\w+")
#: lower bounds of the strata: 0 (no word of the item's rarest in the collection), 1-4, 5-49, 50 and more
BINS = (0, 1, 5, 50)


def words_of(text: str) -> list[str]:
    return [w.lower() for w in WORD.findall(text)]


def collection_counts(folder: Path, lang: str) -> Counter:
    """How often each word occurs in the collection's ``lang`` text: that column of every ``train.en-*.tsv``
    (``domain:source, id, en, XX`` rows; for English the ``en`` column of them all), ``mono.LANG.txt`` and
    ``words.LANG.txt``. ``zh-cn`` is read from files named ``zh``."""
    folder = Path(folder)
    code = lang
    if lang != "en" and not any((folder / n).is_file() for n in (f"train.en-{lang}.tsv", f"mono.{lang}.txt",
                                                                 f"words.{lang}.txt")):
        code = lang.split("-")[0]                                               # zh-cn: the collection's zh
    trains = sorted(folder.glob("train.en-*.tsv")) if lang == "en" else [folder / f"train.en-{code}.tsv"]
    texts = [p for p in (folder / f"mono.{code}.txt", folder / f"words.{code}.txt") if p.is_file()]
    if not any(p.is_file() for p in trains) and not texts:
        raise BisentError(f"{folder}: no train.en-{code}.tsv, mono.{code}.txt or words.{code}.txt (a folder of "
                          "'bisent data general')")
    counts: Counter = Counter()
    for path in trains:
        if not path.is_file():
            continue
        for _, cols in read_tsv(path, 4):                                       # domain, id, en, XX
            counts.update(words_of(cols[2] if lang == "en" else cols[3]))
    for path in texts:
        for line in read_lines(path):                                           # as training reads --mono files
            counts.update(words_of(line.text))
    return counts


def coverage(text: str, counts: Counter) -> int:
    """The count of ``text``'s rarest word in the collection (0 if one never occurs; a text without words: 0)."""
    return min((counts[w] for w in words_of(text)), default=0)


def stratum_names(bins: tuple[int, ...] = BINS) -> list[str]:
    """``0``, ``1-4``, ``5-49``, ``50+`` for the default bins."""
    out = []
    for lo, hi in zip(bins, list(bins[1:]) + [None]):
        out.append(f"{lo}+" if hi is None else (str(lo) if hi - 1 == lo else f"{lo}-{hi - 1}"))
    return out


def run(pairs: list, encoders: list, counts: Counter, src_lang: str, tgt_lang: str, record, *, side: str = "tgt",
        score: str = "csls", k: int = 4, bins: tuple[int, ...] = BINS, reference: str = "use-m3",
        domain: str = "", examples: bool = False) -> list[dict]:
    """One record per encoder and stratum: items, error both ways, and beside the reference the items (either
    direction) only this encoder gets wrong and only the reference does. ``side``: whose words count."""
    cov = np.array([coverage(p.tgt if side == "tgt" else p.src, counts) for p in pairs])
    which = np.searchsorted(np.asarray(bins), cov, side="right") - 1            # (n,) stratum of each item
    misses = {name: m[score] for name, m in encoder_misses(pairs, encoders, src_lang, tgt_lang, (score,), k,
                                                           progress=False).items()}   # two (n,) bool arrays
    ref = misses.get(reference)
    out, fingerprint = [], pairs_fingerprint(pairs)
    for enc in encoders:
        st, ts = misses[enc.name]
        for s, name in enumerate(stratum_names(bins)):
            m = which == s
            rec = {"pair": f"{src_lang}-{tgt_lang}", "domain": domain, "set": fingerprint, "encoder": enc.name,
                   "score": score, "side": side, "coverage": name, "n": int(m.sum()),
                   "error_src_tgt": round(100 * float(st[m].mean()), 1) if m.any() else None,
                   "error_tgt_src": round(100 * float(ts[m].mean()), 1) if m.any() else None}
            if ref is not None and enc.name != reference:
                both = (paired_gap(st[m], ref[0][m]), paired_gap(ts[m], ref[1][m]))
                rec["vs"] = reference
                rec["only_this_wrong"] = sum(g["only_this_wrong"] for g in both)
                rec["only_ref_wrong"] = sum(g["only_ref_wrong"] for g in both)
            out.append(record(rec))
        if examples and ref is not None and enc.name != reference:
            for i in np.flatnonzero((st & ~ref[0]) | (ts & ~ref[1])):
                print(f"  {enc.name}: only it wrong, coverage {cov[i]}: {pairs[i].src!r} / {pairs[i].tgt!r}")
    return out


def main(argv=None) -> None:
    from bisent.datasets.domains import split_pairs

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--collection", required=True, type=Path, help="a folder of 'bisent data general'")
    ap.add_argument("--domain", default="dict", help="a bench domain (dict, gettext, gnome, libreoffice)")
    ap.add_argument("--pair", required=True, help="en-XX")
    ap.add_argument("-e", "--encoder", action="append", required=True, help="encoder (repeatable); use-m3 first")
    ap.add_argument("--side", choices=("src", "tgt"), default="tgt", help="whose words count (default: XX's)")
    ap.add_argument("--limit", type=int, default=300, help="pairs sampled, as bench recover --limit")
    ap.add_argument("--score", default="csls")
    ap.add_argument("--examples", action="store_true", help="print the items only each encoder gets wrong")
    add_results_option(ap)
    args = ap.parse_args(argv)
    try:
        src, _, tgt = args.pair.partition("-")
        if not tgt:
            raise BisentError(f"--pair {args.pair!r}: expected SRC-TGT, e.g. en-it")
        counts = collection_counts(args.collection, tgt if args.side == "tgt" else src)
        pairs = sample_distinct_pairs(split_pairs(args.domain, src, tgt, "test"), limit=args.limit)
        record = Recorder("word_coverage", args.results or None, options={"collection": args.collection.name})
        run(pairs, run_encoders(args.encoder, anchors=False), counts, src, tgt, record, side=args.side,
            score=args.score, domain=args.domain, examples=args.examples)
    except BisentError as e:
        raise SystemExit(f"bisent: error: {e}") from None


if __name__ == "__main__":
    main()
