"""A frozen pretrained encoder plus a small trained projection, run in NumPy.

``embed(x) = P(base(x))`` where ``base`` is a registered encoder (``use-m3``,
``me5-small``, ...) that is never changed, and ``P`` is linear or a small MLP,
optionally residual (``x + MLP(x)``), trained on in-domain bitext with the
ranking loss (:mod:`bisent.training.objectives.guo2019`). Only ``P`` is stored;
``config.json`` names the base encoder and the ``id`` it had at training time,
so a model directory is a few hundred kilobytes and loads wherever the base
encoder does. The weights are the torch module's names (``layers.{i}.weight``
/ ``.bias``; :class:`bisent.models.dual.Adapter`).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from ..encoders.base import Encoder
from ..encoders.trained import register_architecture
from .modeldir import WEIGHTS_FILE, check_tensors, load

ARCHITECTURE = "adapter"
#: the ``model`` section of an adapter's config.json (the torch module's constructor keywords)
CONFIG_KEYS = ("base", "base_dim", "dim", "hidden", "residual")


def layer_sizes(hp: dict) -> list[int]:
    """``[base_dim, hidden..., dim]``."""
    return [int(hp["base_dim"]), *map(int, hp.get("hidden") or []), int(hp["dim"])]


def apply_layers(x: np.ndarray, layers: list[tuple[np.ndarray, np.ndarray]], residual: bool) -> np.ndarray:
    """``(B, base_dim)`` -> ``(B, dim)``: ReLU between layers, linear output, plus ``x`` when residual."""
    h = x
    for i, (w, b) in enumerate(layers):
        h = h @ w + b
        if i < len(layers) - 1:
            np.maximum(h, 0, out=h)
    return x + h if residual else h


class AdapterEncoder(Encoder):
    """The :class:`Encoder` of an adapter: the base encoder's unit vectors, projected."""

    def __init__(self, hp: dict, tensors: dict[str, np.ndarray], base: Encoder, *, name: str, content_hash: str):
        self.hp, self.base, self.name = dict(hp), base, name
        self.id = f"{ARCHITECTURE}/{content_hash[:20]}/{base.id}"
        self.languages, self.lang_dependent = base.languages, base.lang_dependent
        self.batch_size = base.batch_size
        self.residual = bool(hp.get("residual", False))
        self.layers = [(np.ascontiguousarray(tensors[f"layers.{i}.weight"].T, dtype=np.float32),  # (in, out)
                        tensors[f"layers.{i}.bias"].astype(np.float32)) for i in range(len(layer_sizes(hp)) - 1)]
        self.dim = layer_sizes(hp)[-1]
        self._base_cache: bool | None = None

    def encode(self, sentences, lang, *, batch_size=None, progress=None, cache=None):
        """As :meth:`Encoder.encode`; ``cache`` applies to the base encoder's cache too (honest speed figures)."""
        self._base_cache = cache
        try:
            return super().encode(sentences, lang, batch_size=batch_size, progress=progress, cache=cache)
        finally:
            self._base_cache = None

    def embed_batch(self, sentences: list[str], lang: str) -> np.ndarray:
        x = self.base.encode(sentences, lang, progress=False, cache=self._base_cache)        # (B, base_dim) unit rows
        return apply_layers(x, self.layers, self.residual)                                   # (B, dim)


def expected_shapes(hp: dict) -> dict[str, tuple[int, ...]]:
    sizes = layer_sizes(hp)
    out = {}
    for i in range(len(sizes) - 1):
        out[f"layers.{i}.weight"] = (sizes[i + 1], sizes[i])
        out[f"layers.{i}.bias"] = (sizes[i + 1],)
    return out


@register_architecture(ARCHITECTURE)
def load_encoder(model_dir: Path, config: dict) -> AdapterEncoder:
    """Build the adapter of a model directory over its (registered) base encoder."""
    from ..encoders import get_encoder

    md = load(model_dir, CONFIG_KEYS, architecture=ARCHITECTURE, config=config)
    try:
        shapes = expected_shapes(md.hp)
        base_name = str(md.hp["base"])
    except (KeyError, TypeError, ValueError) as e:
        raise md.error(f"incomplete adapter config ({e})") from None
    check_tensors(md.path / WEIGHTS_FILE, md.tensors, shapes)
    base = get_encoder(base_name)
    if base.dim != int(md.hp["base_dim"]):
        raise md.error(f"base encoder {base_name} gives {base.dim}-d vectors, the adapter expects {md.hp['base_dim']}")
    trained_on = (config.get("base") or {}).get("id")
    if trained_on and trained_on != base.id:
        warnings.warn(f"{model_dir}: trained on {trained_on}, the installed base encoder is {base.id}", stacklevel=2)
    return AdapterEncoder(md.hp, md.tensors, base, name=str(model_dir), content_hash=md.content_hash())
