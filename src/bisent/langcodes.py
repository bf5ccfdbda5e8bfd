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
