"""Training recipes: YAML files naming an architecture and its hyper-parameters.

A recipe is a plain nested dict (JSON-serialisable, so it goes into
``config.json`` and the checkpoint unchanged). :func:`load_recipe` fills
in defaults and checks every key against :func:`schema`; a misspelt key, a
wrong type or an unknown choice is a one-line :class:`BisentError` naming the
file and the dotted key, e.g. ``kim.yaml: unknown key 'model.hiden_dim'``.

The schema is assembled, not written here: the keys every run shares (:data:`COMMON`: tokenizer, data,
optim, train, read by the loop), the architecture's ``model`` section from its model module
(``MODEL_CONFIGS`` in ``bisent/models/<name>.py``, a :class:`bisent.models.keys.ModelConfig`), and the
sections its objective reads (``RECIPE_SECTIONS`` in ``training/objectives/<name>.py``, with an optional
``check_recipe(recipe, raw, src)`` for rules across keys).
"""

from __future__ import annotations

import copy
import functools
import importlib
import math
import pkgutil
from typing import Any, Iterable

from ..errors import BisentError
from ..models.keys import NUM, Field, ModelConfig
from ..recipes import resolve
from ..safeload import read_yaml, shown_key, yaml_text
from .objectives import get_objective

#: Keys shared by every architecture (the loop's): section -> key -> Field.
COMMON: dict[str, dict[str, Field]] = {
    "tokenizer": {
        "model_type": Field("bpe", str, ("bpe", "unigram")),
        "vocab_size": Field(8000, int, minimum=8),
        "lowercase": Field(True, bool),
        "character_coverage": Field(1.0, NUM, minimum=0.5),
        "input_sentence_size": Field(1_000_000, int, minimum=0),
    },
    "data": {
        "max_len": Field(60, int, minimum=2),            # subword tokens; longer sentences are truncated
        "batch_size": Field(64, int, minimum=1),         # sentences per step, all objectives together
        "bucket_batches": Field(50, int, minimum=1),     # sort this many batches' worth by length at a time
    },
    "optim": {
        "lr": Field(1e-3, NUM, minimum=0),
        "betas": Field([0.9, 0.999], list),
        "eps": Field(1e-8, NUM, minimum=0),
        "weight_decay": Field(0.0, NUM, minimum=0),
        "clip": Field(1.0, NUM, nullable=True, minimum=0),  # max global gradient norm
        "warmup_steps": Field(0, int, minimum=0),             # linear warm-up, then constant
    },
    "train": {
        "max_steps": Field(10_000, int, minimum=0),
        "max_minutes": Field(None, NUM, nullable=True, minimum=0),
        "log_every": Field(50, int, minimum=1),
        "eval_every": Field(500, int, minimum=1),
        "checkpoint_every": Field(1000, int, minimum=1),
        "dev_max": Field(2000, int, minimum=2),          # dev pairs used per language pair
        "device": Field("auto", str, ("auto", "cpu", "cuda")),
        "threads": Field(None, int, nullable=True, minimum=1),  # CPU threads (null: torch's default); 1 on a busy
                                                                # machine
        "keep_freed_memory": Field(True, bool),    # CPU, glibc: freed blocks reused by the next step (training/heap.py)
    },
}

TOP_LEVEL = {"architecture", "objective", "seed", "languages", *COMMON, "model", "objectives"}


@functools.lru_cache(maxsize=1)
def model_configs() -> dict[str, ModelConfig]:
    """Every architecture's :class:`ModelConfig`, from the ``MODEL_CONFIGS`` of each module of :mod:`bisent.models`."""
    from .. import models

    out: dict[str, ModelConfig] = {}
    for info in pkgutil.iter_modules(models.__path__):
        out.update(getattr(importlib.import_module(f"{models.__name__}.{info.name}"), "MODEL_CONFIGS", {}))
    return out


def architectures() -> tuple[str, ...]:
    """The architectures a recipe may name."""
    return tuple(model_configs())


def objective_of(architecture: str, objective: str | None = None) -> str:
    """The objective module that trains ``architecture`` (``objective``: the recipe's choice, when it has one)."""
    cfg = model_configs()[architecture]
    if cfg.choices:
        return objective or cfg.choices[0]
    return cfg.objective or architecture


def schema(architecture: str, objective: str | None = None) -> dict[str, dict[str, Field]]:
    """All sections and fields of one architecture's recipe (shared sections merged key by key): :data:`COMMON`,
    the model's ``model`` section, then its objective's sections.

    Hashed and document input has no tokenizer and no ``data.max_len`` (``ModelConfig.tokenizer``).
    """
    cfg = model_configs()[architecture]
    out = {k: dict(v) for k, v in COMMON.items()}
    if not cfg.tokenizer:
        del out["tokenizer"]
        del out["data"]["max_len"]
    sections = {"model": cfg.model, **get_objective(objective_of(architecture, objective)).RECIPE_SECTIONS}
    for section, fields in sections.items():
        out[section] = {**out.get(section, {}), **fields}
    return out


def defaults(architecture: str, objective: str | None = None) -> dict:
    """The full default recipe of an architecture."""
    cfg = model_configs()[architecture]
    out: dict[str, Any] = {"architecture": architecture, "seed": 1, "languages": None}
    if cfg.choices or cfg.objective:
        out["objective"] = objective_of(architecture, objective)
    for section, fields in schema(architecture, objective).items():
        out[section] = {k: copy.deepcopy(f.default) for k, f in fields.items()}
    return out


def _check_value(src: str, key: str, f: Field, value: Any) -> Any:
    if value is None:
        if f.nullable:
            return None
        raise BisentError(f"{src}: {key}: may not be null")
    types = f.type if isinstance(f.type, tuple) else (f.type,)
    if float in types and isinstance(value, str):          # YAML 1.1 reads 1e-3 as a string
        try:
            value = float(value)
        except ValueError:
            pass
    if isinstance(value, bool) and bool not in types:
        raise BisentError(f"{src}: {key}: expected {'/'.join(t.__name__ for t in types)}, got {value!r}")
    if not isinstance(value, types):
        raise BisentError(f"{src}: {key}: expected {'/'.join(t.__name__ for t in types)}, got {value!r}")
    if f.choices is not None and value not in f.choices:
        raise BisentError(f"{src}: {key}: '{value}' is not one of {', '.join(map(str, f.choices))}")
    if isinstance(value, float) and not math.isfinite(value):
        raise BisentError(f"{src}: {key}: {value} is not a finite number")
    if f.minimum is not None and isinstance(value, (int, float)) and value < f.minimum:
        raise BisentError(f"{src}: {key}: {value} is below the minimum {f.minimum}")
    if key == "optim.betas" and (len(value) != 2 or not all(isinstance(b, (int, float)) and 0 <= b < 1 for b in value)):
        raise BisentError(f"{src}: {key}: expected two numbers in [0, 1), got {value!r}")
    return float(value) if float in types and int in types and not isinstance(value, bool) else value


def validate_recipe(raw: Any, src: str = "recipe") -> dict:
    """Return a complete, checked recipe from a (partial) nested dict; one-line errors name ``src``."""
    if not isinstance(raw, dict):
        raise BisentError(f"{src}: a recipe is a YAML mapping (key: value), got {type(raw).__name__}")
    arch = raw.get("architecture")
    known = architectures()
    if arch is None:
        raise BisentError(f"{src}: missing key 'architecture' (one of {', '.join(known)})")
    if arch not in known:
        raise BisentError(f"{src}: architecture: unknown '{arch}' (one of {', '.join(known)})")
    cfg = model_configs()[arch]
    for key in raw:
        if key not in TOP_LEVEL:
            raise BisentError(f"{src}: unknown key {shown_key(key)} (known: {', '.join(sorted(TOP_LEVEL))})")
    objective = raw.get("objective")
    if not cfg.choices:
        if objective not in (None, arch):
            raise BisentError(f"{src}: objective: {arch} has its own objective; leave 'objective' out")
        objective = None
    elif "objective" in raw and objective not in cfg.choices:
        raise BisentError(f"{src}: objective: '{objective}' is not one of {', '.join(cfg.choices)}")
    out = defaults(arch, objective)
    sections = schema(arch, objective)
    for key, value in raw.items():
        if key in ("architecture", "objective"):
            continue
        if key == "seed":
            out["seed"] = _check_value(src, "seed", Field(1, int, minimum=0), value)
        elif key == "languages":
            if value is not None and not (isinstance(value, list) and value and all(isinstance(v, str) and v
                                                                                    for v in value)):
                raise BisentError(f"{src}: languages: expected a list of language codes, got {value!r}")
            out["languages"] = value
        else:
            if key not in sections:
                raise BisentError(f"{src}: unknown key '{key}' for architecture {arch} (it has no {key} section)")
            fields = sections[key]
            if value is None:
                continue
            if not isinstance(value, dict):
                raise BisentError(f"{src}: {key}: expected a mapping, got {value!r}")
            for sub, v in value.items():
                if sub not in fields:
                    raise BisentError(f"{src}: unknown key '{key}.{sub}' (known in {key}: {', '.join(fields)})")
                out[key][sub] = _check_value(src, f"{key}.{sub}", fields[sub], v)
    check = getattr(get_objective(objective_of(arch, objective)), "check_recipe", None)
    if check is not None:
        check(out, raw, src)
    if cfg.check is not None:
        cfg.check(out, src)
    return out


def parse_override(text: str) -> tuple[str, Any]:
    """``"model.hidden_dim=64"`` -> ``("model.hidden_dim", 64)`` (the value is read as YAML)."""
    if "=" not in text:
        raise BisentError(f"--set {text}: expected KEY=VALUE, e.g. model.hidden_dim=128")
    key, value = text.split("=", 1)
    return key.strip(), yaml_text(value, f"--set {text}", lines=False)


def apply_overrides(raw: dict, overrides: dict[str, Any] | Iterable[str] | None) -> dict:
    """Return a copy of ``raw`` with dotted keys set (``{"model.hidden_dim": 64}`` or ``["model.hidden_dim=64"]``)."""
    raw = copy.deepcopy(raw)
    if not overrides:
        return raw
    items = overrides.items() if isinstance(overrides, dict) else map(parse_override, overrides)
    for key, value in items:
        node = raw
        parts = key.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                raise BisentError(f"override {key}: '{p}' is not a section")
        node[parts[-1]] = value
    return raw


def load_recipe(path, overrides: dict[str, Any] | Iterable[str] | None = None) -> dict:
    """Read a YAML recipe (a path, or an installed recipe's name), apply dotted overrides, fill in defaults and
    check every key."""
    path = resolve(path)
    if not path.is_file():
        raise BisentError(f"{path}: no such recipe file")
    raw = read_yaml(path)
    if raw is None:
        raise BisentError(f"{path}: recipe is empty")
    if not isinstance(raw, dict):
        raise BisentError(f"{path}: a recipe is a YAML mapping (key: value)")
    return validate_recipe(apply_overrides(raw, overrides), str(path))
