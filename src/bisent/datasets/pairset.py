"""What the out-of-domain pair builders share: one-to-one deduplication, a cached ``pairs.tsv``, dataset output.

The gettext and FreeDict builders (:mod:`.gettext`, :mod:`.freedict`) each
turn Debian packages into :class:`~bisent.datasets.libreoffice.Pair` rows
(source = package or dictionary entry, split fixed per source). This module
makes the rows one-to-one and caches them under
``cache_dir("datasets", NAME, "SRC-TGT")`` the way the LibreOffice builder does
(``pairs.tsv`` then ``stats.json``, which marks a complete build).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Callable, Iterable

from ..cache import cache_dir
from ..errors import BisentError
from ..io import atomic_dir, atomic_write
from .libreoffice import SPLITS, Pair, read_pair_file

#: Files a pair-set dataset folder holds (an existing folder with only these may be replaced).
DATASET_FILES = frozenset({"train.tsv", "dev.tsv", "test.tsv", "stats.json"})


def hash_bucket(key: str, n: int = 100) -> int:
    """A deterministic bucket of ``key`` in ``range(n)`` (blake2b, 8 bytes), stable across runs and machines."""
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "big") % n


def one_to_one(pairs: Iterable[Pair]) -> tuple[list[Pair], int]:
    """Keep each source text and each target text once; return ``(kept, dropped)``.

    Pairs are visited split by split (test, dev, then train), each in input
    order, so a text that several sources share (gnulib's messages in many
    packages, one example under two headwords) stays in the held-out split
    and leaves train: no test sentence is seen in training, and the gold is
    one-to-one (a source never has two right answers). Output is in input order.
    """
    pairs = list(pairs)
    order = sorted(range(len(pairs)), key=lambda i: (("test", "dev", "train").index(pairs[i].split), i))
    seen_src: set[str] = set()
    seen_tgt: set[str] = set()
    keep: set[int] = set()
    for i in order:
        p = pairs[i]
        if p.src.casefold() in seen_src or p.tgt.casefold() in seen_tgt:
            continue
        seen_src.add(p.src.casefold())
        seen_tgt.add(p.tgt.casefold())
        keep.add(i)
    return [p for i, p in enumerate(pairs) if i in keep], len(pairs) - len(keep)


def split_counts(pairs: list[Pair]) -> dict:
    """Pairs and sources (``doc``) per split, with totals."""
    pc = {s: sum(p.split == s for p in pairs) for s in SPLITS}
    dc = {s: len({p.doc for p in pairs if p.split == s}) for s in SPLITS}
    return {"pairs": {**pc, "total": len(pairs)}, "sources": {**dc, "total": sum(dc.values())}}


def cached_pairs(name: str, src: str, tgt: str, build: Callable[[], tuple[list[Pair], dict]],
                 *, format_version: int, force: bool = False) -> Path:
    """The cache folder of data set ``name`` for ``src``-``tgt``, calling ``build()`` -> ``(pairs, stats)`` if
    needed."""
    folder = cache_dir("datasets", name, f"{src}-{tgt}")
    try:
        built = json.loads((folder / "stats.json").read_text(encoding="utf-8")).get("format") == format_version
    except (OSError, ValueError):
        built = False
    if built and (folder / "pairs.tsv").is_file() and not force:
        return folder
    pairs, stats = build()
    if not pairs:
        raise BisentError(f"{name} {src}-{tgt}: no pairs survived the filters")
    with atomic_write(folder / "pairs.tsv") as f:
        f.writelines(f"{p.doc}\t{p.pid}\t{p.src}\t{p.tgt}\t{p.split}\n" for p in pairs)
    with atomic_write(folder / "stats.json") as f:
        json.dump({"format": format_version, **stats, **split_counts(pairs)}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return folder


def read_pairs(folder: Path, split: str | None = None) -> list[Pair]:
    """The rows of ``folder/pairs.tsv`` (one split or all)."""
    if split is not None and split not in SPLITS:
        raise BisentError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    pairs = read_pair_file(folder / "pairs.tsv")
    return [p for p in pairs if split is None or p.split == split]


def write_pairs_dataset(folder: Path, out_dir) -> dict:
    """Write ``train/dev/test.tsv`` (source, id, src, tgt) and ``stats.json`` of a cached build to ``out_dir``."""
    pairs = read_pairs(folder)
    stats = json.loads((folder / "stats.json").read_text(encoding="utf-8"))
    with atomic_dir(Path(out_dir), replace_names=DATASET_FILES) as tmp:
        for split in SPLITS:
            with open(tmp / f"{split}.tsv", "w", encoding="utf-8", newline="\n") as f:
                f.writelines(f"{p.doc}\t{p.pid}\t{p.src}\t{p.tgt}\n" for p in pairs if p.split == split)
        (tmp / "stats.json").write_text(json.dumps(stats, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return stats
