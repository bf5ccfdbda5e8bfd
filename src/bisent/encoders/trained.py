"""Loading encoders that bisent trained: a model directory (``config.json`` + safetensors).

A model directory holds ``config.json`` with an ``"architecture"`` key, the
weights as ``*.safetensors`` and whatever tokenizer files the architecture
names. Training modules register a loader per architecture with
:func:`register_architecture`; :func:`load_model_dir` dispatches on it. Never pickle.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from ..errors import BisentError
from ..safeload import read_json
from .base import Encoder

#: architecture name -> function(model_dir: Path, config: dict) -> Encoder
ARCHITECTURES: dict[str, Callable[[Path, dict], Encoder]] = {}


def register_architecture(name: str):
    """Decorator: make ``load_model_dir`` build encoders of this architecture with the decorated function."""

    def deco(fn):
        ARCHITECTURES[name] = fn
        return fn

    return deco


def read_config(model_dir) -> dict:
    """Read ``model_dir/config.json`` with one-line errors for a missing or corrupt file."""
    path = Path(model_dir) / "config.json"
    if not path.is_file():
        raise BisentError(f"{path}: missing (a bisent model directory holds config.json and *.safetensors)")
    config = read_json(path, "a bisent model directory holds config.json and *.safetensors")
    if not isinstance(config, dict) or "architecture" not in config:
        raise BisentError(f"{path}: no 'architecture' key")
    if not isinstance(config["architecture"], str):
        raise BisentError(f"{path}: 'architecture' must be a name, got {json.dumps(config['architecture'])}")
    if "model" in config and not isinstance(config["model"], dict):
        raise BisentError(f"{path}: 'model' must be an object of hyper-parameters")
    return config


def load_model_dir(model_dir) -> Encoder:
    """Build the encoder stored in ``model_dir``."""
    model_dir = Path(model_dir)
    config = read_config(model_dir)
    arch = config["architecture"]
    if arch not in ARCHITECTURES:
        _import_architectures()
    if arch not in ARCHITECTURES:
        raise BisentError(f"{model_dir / 'config.json'}: unknown architecture '{arch}' (known: "
                          f"{', '.join(sorted(ARCHITECTURES)) or 'none'})")
    try:
        return ARCHITECTURES[arch](model_dir, config)
    except (TypeError, ValueError, KeyError) as e:  # a hand-edited config.json: one line, never a traceback
        what = f"no key {e}" if isinstance(e, KeyError) else " ".join(str(e).split())
        raise BisentError(f"{model_dir / 'config.json'}: not a valid '{arch}' model: {what}") from None


def _import_architectures() -> None:
    """Import the modules that register trained architectures (they need torch, so lazily)."""
    import importlib

    for mod in ("bisent.models",):
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name not in (mod, "torch"):
                raise
