"""GNOME help as a benchmark domain: the aligned blocks of ``gnome-user-docs``' Mallard pages.

Translated help that is not LibreOffice's: an out-of-domain test. itstool writes each
translated block in place of the English one, so block ``k`` of an English
page is block ``k`` of its translation (:func:`.align_gold.gnome_documents`
keeps the pages with equal block counts and leaves out the blocks that are
identical in both languages: commands, names, untranslated strings). Each
block pair is one :class:`~bisent.datasets.libreoffice.Pair` (``doc`` = page,
``pid`` = ``p<k>``), split by page as the ``gnome`` document set splits its
pages, whitespace collapsed, and made one-to-one like the other pair sets.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import BisentError
from ..langcodes import normalise_lang
from .libreoffice import SPLITS, Pair
from .pairset import cached_pairs, one_to_one, read_pairs, write_pairs_dataset

FORMAT_VERSION = 1
#: blocks shorter than this (characters, either side) are left out: menu labels and one-word titles
MIN_CHARS = 3


def block_pairs(documents) -> tuple[list[Pair], dict[str, int]]:
    """``Pair`` rows of aligned documents (:class:`~bisent.datasets.libreoffice.Document` with position-keyed
    paragraphs on both sides), whitespace collapsed; returns them with the counts of blocks left out."""
    rows, removed = [], {"short": 0}
    for d in documents:
        for a, b in zip(d.src, d.tgt):
            s, t = " ".join(a.text.split()), " ".join(b.text.split())
            if min(len(s), len(t)) < MIN_CHARS:
                removed["short"] += 1
                continue
            rows.append(Pair(d.doc, a.pid, s, t, d.split))
    return rows, removed


def _build(src: str, tgt: str) -> tuple[list[Pair], dict]:
    from .align_gold import gnome_documents

    rows, removed, extra = [], {"short": 0}, {}
    for split in SPLITS:
        docs, counts = gnome_documents(src, tgt, split)
        got, rem = block_pairs(docs)
        rows += got
        removed["short"] += rem["short"]
        for k, v in counts.items():
            extra[k] = extra.get(k, 0) + v
    rows, removed["duplicate"] = one_to_one(rows)
    removed["identical"] = extra.pop("identical", 0)
    stats = {"dataset": "gnome", "src": src, "tgt": tgt, "removed": removed, **extra,
             "split_rule": "the gnome document set's split of pages (bisent data docs gnome)",
             "filter_rule": (f"blocks paired by position on pages of equal block count; drop blocks identical in "
                             f"both languages or shorter than {MIN_CHARS} characters; each source and target text "
                             "once (test, dev, then train first)")}
    return rows, stats


def build(src: str = "en", tgt: str = "de", *, force: bool = False) -> Path:
    """Fetch, pair and cache the ``src``-``tgt`` GNOME help blocks (unless cached); return the cache folder."""
    src, tgt = normalise_lang(src), normalise_lang(tgt)
    if src == tgt:
        raise BisentError(f"GNOME help pairs need two languages, got {src!r} twice")
    return cached_pairs("gnome", src, tgt, lambda: _build(src, tgt), format_version=FORMAT_VERSION, force=force)


def load_pairs(src: str = "en", tgt: str = "de", split: str | None = None) -> list[Pair]:
    """GNOME help block pairs (doc = page), all splits or one, building them on first use."""
    return read_pairs(build(src, tgt), split)


def write_dataset(src: str, tgt: str, out_dir) -> dict:
    """Write ``train/dev/test.tsv`` (page, block, src, tgt) and ``stats.json`` to ``out_dir``; return the stats."""
    return write_pairs_dataset(build(src, tgt), out_dir)
