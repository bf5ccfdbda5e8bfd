"""Model directories of the dual encoders, without torch: ``config.json`` + ``model.safetensors``.

``config.json`` holds ``architecture``, ``format_version``, ``model`` (every
keyword the module's constructor takes: ``cls(**config["model"])`` rebuilds
it) and whatever the architecture adds (``base`` for an adapter,
``training`` with the recipe). The weights are float32 tensors in
safetensors, read here as NumPy arrays so that the NumPy encoders (DAN,
adapter) load without torch. The content hash over the weights file and the
``model`` section goes into the encoder ``id``, so the embedding cache never
mixes two models.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from ..errors import BisentError
from ..io import atomic_write

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
FORMAT_VERSION = 1


def write_model_dir(out_dir, architecture: str, hp: dict, tensors: dict[str, np.ndarray],
                    extra: dict | None = None) -> None:
    """Write ``model.safetensors`` (float32, C order) then ``config.json``, each atomically."""
    from safetensors.numpy import save

    out_dir = Path(out_dir)
    arrays = {k: np.ascontiguousarray(v) for k, v in tensors.items()}
    with atomic_write(out_dir / WEIGHTS_FILE, "wb") as f:
        f.write(save(arrays, metadata={"architecture": architecture}))
    config = {"architecture": architecture, "format_version": FORMAT_VERSION, "model": hp, **(extra or {})}
    with atomic_write(out_dir / CONFIG_FILE) as f:
        json.dump(config, f, indent=2)
        f.write("\n")


def read_weights(model_dir, config: dict, expected: set[str] | None = None) -> tuple[dict[str, np.ndarray], str]:
    """Read the weights as NumPy arrays and the content hash; one-line errors name the broken file."""
    from safetensors import SafetensorError
    from safetensors.numpy import load

    model_dir = Path(model_dir)
    path = model_dir / WEIGHTS_FILE
    if not isinstance(config.get("model"), dict):
        raise BisentError(f"{model_dir / CONFIG_FILE}: no 'model' section")
    if not path.is_file():
        raise BisentError(f"{path}: missing (the model directory needs its weights)")
    data = path.read_bytes()
    try:
        tensors = load(data)
    except (SafetensorError, ValueError, RuntimeError, OSError) as e:
        raise BisentError(f"{path}: corrupt safetensors file ({' '.join(str(e).split())[:120]})") from None
    if expected is not None and set(tensors) != expected:
        missing, unexpected = sorted(expected - set(tensors)), sorted(set(tensors) - expected)
        raise BisentError(f"{path}: weights do not match config.json (missing {missing}, unexpected {unexpected})")
    return tensors, content_hash(data, config["model"])


def content_hash(weights: bytes, hp: dict, *extra: bytes) -> str:
    """sha256 over the weights, the hyper-parameters and any extra files (a tokenizer)."""
    h = hashlib.sha256()
    for part in (weights, json.dumps(hp, sort_keys=True).encode(), *extra):
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()


def check_shape(path, name: str, array: np.ndarray, shape: tuple[int, ...]) -> None:
    if tuple(array.shape) != tuple(shape):
        raise BisentError(f"{path}: tensor '{name}' has shape {tuple(array.shape)}, config.json implies {tuple(shape)}")
