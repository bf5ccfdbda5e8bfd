"""Language codes, written one way everywhere: ``" PT_br"`` -> ``"pt-br"``, base ``"pt"``.

The one normaliser behind the encoders' language checks, the filter steps
(scripts, language id, the MLP scorer's languages) and the dataset builders.
"""

from __future__ import annotations

import re

#: a language code as bisent writes one (after :func:`normalise_lang`): ``de``, ``pt-br``, ``zh-cn``, ``sr-latn``
CODE = re.compile(r"[a-z]{2,3}(-[a-z0-9]{2,8})*")


def normalise_lang(code: str) -> str:
    """``" PT_br "`` -> ``"pt-br"``: stripped, lower case, ``-`` separators; ValueError when empty."""
    if not isinstance(code, str) or not code.strip():
        raise ValueError(f"a language code is required, got {code!r}")
    return code.strip().lower().replace("_", "-")


def base_lang(code: str) -> str:
    """``"en-US"`` / ``"pt_BR"`` -> ``"en"`` / ``"pt"`` (lower case, region dropped)."""
    return normalise_lang(code).split("-")[0]


def same_language(a: str, b: str) -> bool:
    """True when two codes name the same base language (``en-GB`` and ``en``)."""
    return base_lang(a) == base_lang(b)


def supported(code: str, languages) -> bool:
    """True when ``languages`` (a set of normalised codes, or None for any) holds ``code`` or its base."""
    if languages is None:
        return True
    code = normalise_lang(code)
    return code in languages or code.split("-")[0] in languages


def check_code(code: str) -> str:
    """``code`` normalised if it looks like a language code (``de``, ``pt-br``), else ValueError: the dataset
    builders name cache folders after it and look packages up by it, so ``../x`` or ``de fr`` never get that far."""
    norm = normalise_lang(code)
    if not CODE.fullmatch(norm):
        raise ValueError(f"{code!r} is not a language code (like de, pt-br, zh-cn)")
    return norm


#: the shape of a BCP 47 language tag (RFC 5646: language with extended subtags, script, region, variants,
#: extensions, private use), in lower case with ``-`` separators: ``de``, ``pt-br``, ``zh-hant-tw``, ``sr-latn``,
#: ``de-ch-1996``, ``en-x-legal``
BCP47 = re.compile(r"""
    (?:[a-z]{2,3}(?:-[a-z]{3}){0,3}|[a-z]{4,8})      # language (and extended language subtags)
    (?:-[a-z]{4})?                                  # script
    (?:-(?:[a-z]{2}|[0-9]{3}))?                     # region
    (?:-(?:[a-z0-9]{5,8}|[0-9][a-z0-9]{3}))*        # variants
    (?:-[0-9a-wy-z](?:-[a-z0-9]{2,8})+)*            # extensions
    (?:-x(?:-[a-z0-9]{1,8})+)?                      # private use
    """, re.X)


def check_bcp47(code: str) -> str:
    """``code`` normalised (:func:`normalise_lang`) when it has the shape of a BCP 47 language tag, else
    ValueError. Every command checks its language options so: a code is never a path nor shell text
    (``../../x``, ``en; rm -rf /``), and a typo is caught before any work."""
    norm = normalise_lang(code)
    if len(norm) > 64 or not BCP47.fullmatch(norm):
        shown = code if len(code) <= 40 else code[:40] + "..."
        raise ValueError(f"{shown!r} is not a language code (a BCP 47 tag like en, de, pt-br, zh-hant)")
    return norm
