"""Nested training sets for a learning curve of the seed encoders.

Input: a ``train.en-XX.tsv`` of ``bisent data general`` (``domain:source``, id, en, XX; train splits
only, every dev/test text of the benchmark sets already removed by the builder). Output, in ``--out``:

- ``train.core.tsv``: every pair of the ``--core`` domain (default ``help``: LibreOffice help, the
  22k-pair set the seed recipes were measured on), in file order;
- ``train.N.tsv`` for each ``--size N``: the core plus the first ``N - core`` other pairs in a fixed
  pseudo-random order (blake2b of ``domain:source`` and id), so each set holds every smaller one;
- ``train.all.tsv``: the core plus every other pair;
- ``stats.json``: the sizes and how many pairs of each domain each set holds.

Each (en, XX) pair is kept once (its first occurrence). Deterministic: the same input gives the same
bytes. Usage: ``python benchmarks/curve_data.py general/train.en-de.tsv --size 100000 --out curve``.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from bisent.datasets.pairset import hash_bucket
from bisent.errors import BisentError
from bisent.io import atomic_write


def read_rows(path) -> list[tuple[str, str, str, str]]:
    """The 4-column rows of a general collection file; a malformed line is an error naming it."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 4 or ":" not in parts[0] or not parts[2] or not parts[3]:
                raise BisentError(f"{path}:{n}: expected 'domain:source<TAB>id<TAB>en<TAB>tgt', got {len(parts)} "
                                  f"field(s)")
            rows.append(tuple(parts))
    return rows


def nested_sets(rows: list[tuple], sizes: list[int], core: str = "help") -> dict[str, list[tuple]]:
    """``{"core": ..., "N": ..., "all": ...}``: nested sets, each the core plus a prefix of the rest."""
    seen, kept = set(), []
    for r in rows:
        if (r[2], r[3]) not in seen:
            seen.add((r[2], r[3]))
            kept.append(r)
    inner = [r for r in kept if r[0].split(":", 1)[0] == core]
    if not inner:
        raise BisentError(f"no pairs of the core domain {core!r} (domains: "
                          f"{', '.join(sorted({r[0].split(':', 1)[0] for r in kept}))})")
    rest = sorted((r for r in kept if r[0].split(":", 1)[0] != core),
                  key=lambda r: (hash_bucket(f"{r[0]}\x00{r[1]}", 1 << 62), r[0], r[1]))
    out = {"core": inner}
    for n in sorted(sizes):
        if not len(inner) < n < len(kept):
            raise BisentError(f"--size {n}: must lie between the core ({len(inner)} pairs) and all ({len(kept)})")
        out[str(n)] = inner + rest[:n - len(inner)]
    out["all"] = inner + rest
    return out


def write_sets(sets: dict[str, list[tuple]], out_dir) -> dict:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stats = {"sets": {}, "order": "core domain in file order, then the rest by blake2b(domain:source, id)"}
    for name, rows in sets.items():
        with atomic_write(out_dir / f"train.{name}.tsv") as f:
            f.writelines("\t".join(r) + "\n" for r in rows)
        stats["sets"][name] = {"pairs": len(rows),
                               "domains": dict(sorted(Counter(r[0].split(":", 1)[0] for r in rows).items()))}
    with atomic_write(out_dir / "stats.json") as f:
        f.write(json.dumps(stats, indent=1) + "\n")
    return stats


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("train", help="train.en-XX.tsv of 'bisent data general'")
    ap.add_argument("--size", type=int, action="append", default=[], help="a set size between core and all")
    ap.add_argument("--core", default="help", help="domain every set holds in full (default: help)")
    ap.add_argument("--out", required=True, help="output folder")
    a = ap.parse_args(argv)
    try:
        stats = write_sets(nested_sets(read_rows(a.train), a.size, a.core), a.out)
    except (BisentError, OSError) as e:
        raise SystemExit(f"curve_data: {e}")
    print(json.dumps(stats["sets"]))


if __name__ == "__main__":
    main()
