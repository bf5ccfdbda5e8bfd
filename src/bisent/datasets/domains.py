"""The text domains the benchmarks run on: one function gives a domain's aligned pairs for a language pair.

``libreoffice`` (help paragraphs, the domain every trained model here saw),
``gettext`` (UI messages of Debian packages), ``gnome`` (GNOME help blocks,
help that is not LibreOffice's), ``dict`` (FreeDict headwords and example
phrases) and ``bible`` (verse-aligned Bible translations, literary text from
outside Debian's documentation; en-es). Each returns :class:`~bisent.datasets.libreoffice.Pair`
rows split by source (help page, package, GNOME page, dictionary entry, book), so the mining and
recovery benchmarks run unchanged on any of them.
"""

from __future__ import annotations

from ..errors import BisentError
from .libreoffice import Pair

DOMAINS = ("libreoffice", "gettext", "gnome", "dict", "bible")


def load_domain_pairs(domain: str, src: str, tgt: str, split: str | None = None) -> list[Pair]:
    """Aligned ``src``-``tgt`` pairs of ``domain`` (all splits or one), built and cached on first use."""
    if domain == "libreoffice":
        from .libreoffice import load_pairs
    elif domain == "gettext":
        from .gettext import load_pairs
    elif domain == "gnome":
        from .gnome_help import load_pairs
    elif domain == "dict":
        from .freedict import load_pairs
    elif domain == "bible":
        from .bible import load_pairs
    else:
        raise BisentError(f"unknown domain {domain!r}; choose one of {', '.join(DOMAINS)}")
    return load_pairs(src, tgt, split=split)


def split_pairs(domain: str, src: str, tgt: str, split: str = "test") -> list[Pair]:
    """The ``split`` pairs a benchmark reads; a one-line error when there are none (GNOME help in Turkish, for
    one: its pages are English, so every block is dropped as identical), not an empty result."""
    pairs = load_domain_pairs(domain, src, tgt, split=split)
    if not pairs:
        raise BisentError(f"--domain {domain} --pair {src}-{tgt}: the {split} split holds no pairs "
                          f"({len(load_domain_pairs(domain, src, tgt))} pairs in all); choose another pair or domain")
    return pairs
