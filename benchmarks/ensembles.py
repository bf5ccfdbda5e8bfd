"""Which students to join: recovery errors of ensembles of trained students, from each member's embeddings.

``bisent ensemble`` joins members into one directory, and ``bisent bench recover`` then embeds every set with every
member again for each choice of members. Here each member embeds the recovery test sets once, through the persistent
cache (a member benchmarked before is read back), and every ensemble asked for is the normalised mean of its members'
unit rows: what ``bisent ensemble`` computes, but from the rows as the cache stores them (float16), so a figure can
differ from a built ensemble's by an item on a set. Records shaped like ``bisent bench recover``'s (CSLS, beside
use-m3, with the item-by-item comparison) are appended to ``--out`` for ``benchmarks/gaps.py``. Build the ensemble
worth keeping and measure it with ``bisent bench recover``: that is the record to publish.

    python benchmarks/ensembles.py --out FILE NAME=DIR[,DIR...] ... [--set DOMAIN:PAIR ...]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from tqdm import tqdm

from bisent.bench.recover import miss_fields
from bisent.encoders.base import l2_normalise
from bisent.errors import BisentError
from bisent.evaluate import pairs_fingerprint, recovery_misses, sample_distinct_pairs

#: the out-of-domain and LibreOffice sets of the general student's tables (benchmarks/README.md), as DOMAIN:en-XX
SETS = tuple(f"{d}:en-{p}" for d, ps in (
    ("libreoffice", "de es fr it ja ko nl pl pt ru tr zh-cn"), ("gettext", "ar de es fr it ja ko nl pl pt ru tr zh-cn"),
    ("gnome", "de es fr it ja ko nl pl pt ru zh-cn"), ("dict", "ar de es fr it ja nl pl pt ru tr")) for p in ps.split())


def parse_ensembles(specs: list[str]) -> dict[str, list[str]]:
    """``NAME=DIR[,DIR...]`` -> {name: member dirs}; a one-line error for a malformed or repeated name."""
    out: dict[str, list[str]] = {}
    for spec in specs:
        name, eq, members = spec.partition("=")
        dirs = [m for m in members.split(",") if m]
        if not eq or not name or not dirs:
            raise BisentError(f"{spec!r}: expected NAME=DIR[,DIR...] (an ensemble's name and its members)")
        if name in out or name == "use-m3":
            raise BisentError(f"{spec!r}: the name {name!r} is {'taken' if name in out else 'the reference'}")
        out[name] = dirs
    return out


def joined(rows: list[np.ndarray]) -> np.ndarray:
    """The ensemble's rows: the normalised sum of its members' unit rows, each ``(n, d)`` -> ``(n, d)``."""
    return l2_normalise(sum(l2_normalise(r) for r in rows))


def set_records(domain: str, src: str, tgt: str, ensembles: dict[str, list[str]], encoders: dict, reference,
                k: int = 4) -> list[dict]:
    """One CSLS record per ensemble on one test set, and the reference's, as ``bisent bench recover`` writes them."""
    from bisent.datasets.domains import split_pairs

    pairs = sample_distinct_pairs(split_pairs(domain, src, tgt, "test"), limit=100_000)
    texts = [p.src for p in pairs], [p.tgt for p in pairs]

    def embed(enc):
        return enc.encode(texts[0], src, progress=False), enc.encode(texts[1], tgt, progress=False)

    ref = recovery_misses(*embed(reference), "csls", k)
    rows = {m: embed(encoders[m]) for m in sorted({m for ms in ensembles.values() for m in ms})}
    base = {"task": "recover", "pair": f"{src}-{tgt}", "domain": domain, "score": "csls", "k": k, "n": len(pairs),
            "split": "test", "set": pairs_fingerprint(pairs)}
    out = [{**base, "encoder": reference.name, "encoder_id": reference.id, **miss_fields(*ref)}]
    for name, members in ensembles.items():
        x, y = joined([rows[m][0] for m in members]), joined([rows[m][1] for m in members])
        st, ts = recovery_misses(x, y, "csls", k)
        out.append({**base, "encoder": name, "members": members, "from": "cached member rows (float16)",
                    **miss_fields(st, ts, ref, reference.name)})
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ensembles", nargs="+", metavar="NAME=DIR[,DIR...]", help="an ensemble to measure and its members")
    ap.add_argument("--out", type=Path, required=True, help="JSONL file the records are appended to")
    ap.add_argument("--set", dest="sets", action="append", metavar="DOMAIN:en-XX",
                    help="a test set (repeatable; default the 47 of the general student's tables)")
    args = ap.parse_args(argv)
    try:
        from bisent.encoders import get_encoder

        ensembles = parse_ensembles(args.ensembles)
        sets = []
        for s in args.sets or SETS:
            domain, _, pair = s.partition(":")
            src, _, tgt = pair.partition("-")
            if not domain or not src or not tgt:
                raise BisentError(f"--set {s!r}: expected DOMAIN:SRC-TGT, e.g. dict:en-it")
            sets.append((domain, src, tgt))
        encoders = {m: get_encoder(m) for ms in ensembles.values() for m in ms}
        reference = get_encoder("use-m3")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "a", encoding="utf-8") as f:      # appended set by set: a stopped run keeps what it did
            for domain, src, tgt in tqdm(sets, desc="ensembles", unit="set"):
                for rec in set_records(domain, src, tgt, ensembles, encoders, reference):
                    f.write(json.dumps(rec, ensure_ascii=False) + "\n")
                f.flush()
    except BisentError as e:
        raise SystemExit(f"bisent: error: {e}") from None


if __name__ == "__main__":
    main()
