"""The text domains the benchmarks run on: one function gives a domain's aligned pairs for a language pair.

``libreoffice`` (help paragraphs, the domain every trained model here saw),
``gettext`` (UI messages of Debian packages), ``gnome`` (GNOME help blocks,
help that is not LibreOffice's) and ``dict`` (FreeDict headwords and example
phrases). Each returns :class:`~bisent.datasets.libreoffice.Pair`
rows split by source (help page, package, GNOME page, dictionary entry), so the mining and
recovery benchmarks run unchanged on any of them.
"""

from __future__ import annotations

from ..errors import BisentError
from .libreoffice import Pair

DOMAINS = ("libreoffice", "gettext", "gnome", "dict")


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
    else:
        raise BisentError(f"unknown domain {domain!r}; choose one of {', '.join(DOMAINS)}")
    return load_pairs(src, tgt, split=split)
