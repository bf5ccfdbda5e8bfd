"""Encoders by name: ``get_encoder("use-m3")``, ``get_encoder("me5-small")``, or a model directory path.

Every encoder has ``encode(sentences, lang) -> float32 (n, d)`` with unit rows
(see :class:`bisent.encoders.base.Encoder`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..errors import BisentError
from .base import Encoder, l2_normalise
from .trained import load_model_dir, register_architecture

DEFAULT_ENCODER = "use-m3"


def _use_m3():
    from .pretrained import UseM3
    return UseM3()


def _me5_small():
    from .pretrained import ME5Small
    return ME5Small()


def _char_ngram():
    from .baselines import CharNgramHash
    return CharNgramHash()


def _random():
    from .baselines import RandomEncoder
    return RandomEncoder()


#: registry name -> factory; pretrained anchors first, then the no-learning floors.
REGISTRY: dict[str, Callable[[], Encoder]] = {
    "use-m3": _use_m3,
    "me5-small": _me5_small,
    "char-ngram": _char_ngram,
    "random": _random,
}

_LOADED: dict[str, Encoder] = {}


def get_encoder(name_or_path: str | Path) -> Encoder:
    """Return the encoder registered under ``name_or_path``, or load the model directory at that path.

    Encoders are created once per process and reused.
    """
    key = str(name_or_path)
    if key in _LOADED:
        return _LOADED[key]
    if key in REGISTRY:
        enc = REGISTRY[key]()
    elif Path(key).is_dir():
        enc = load_model_dir(key)
    elif "/" in key or Path(key).suffix:
        raise BisentError(f"{key}: no such model directory")
    else:
        raise BisentError(f"unknown encoder '{key}' (registered: {', '.join(REGISTRY)}; or a model directory path)")
    _LOADED[key] = enc
    return enc


__all__ = ["Encoder", "get_encoder", "REGISTRY", "DEFAULT_ENCODER", "l2_normalise",
           "load_model_dir", "register_architecture"]
