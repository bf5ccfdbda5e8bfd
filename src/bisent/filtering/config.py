"""Filter configurations: reading one (:func:`load_config`), changing its encoder or an embedding step
(:func:`edit_config`), and building steps from it (:func:`build_step`) with one-line errors.

A configuration is a YAML list of steps, or ``{steps: [...], select: {...}}``::

    - type: length
      max_length: 80
    - {name: lid, type: langid, min_prob: 0.5}
    - {type: cosine, encoder: use-m3, accept: {min: 0.7}}   # a plugged-in step
"""

from __future__ import annotations

import copy
import inspect
import os
from typing import Any

from ..errors import BisentError
from ..io import check_readable
from ..recipes import resolve
from ..safeload import read_yaml
from .steps import RESERVED_PREFIXES, Bounds, Step, step_types


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


#: the most steps of a filter configuration (the shipped recipes have under ten)
MAX_STEPS = 200


def build_step(index: int, cfg: Any, source: str, src_lang: str | None, tgt_lang: str | None) -> Step:
    where = f"{source}: step {index + 1}"
    if not isinstance(cfg, dict):
        raise BisentError(f"{where}: expected a mapping with 'type' and parameters, got {type(cfg).__name__}")
    cfg = dict(cfg)
    type_name = cfg.pop("type", None)
    name = cfg.pop("name", None)
    accept = cfg.pop("accept", None)
    params = cfg.pop("params", None) or {}
    if not isinstance(params, dict):
        raise BisentError(f"{where}: 'params' must be a mapping")
    for key in cfg:
        if key in params:
            raise BisentError(f"{where}: parameter '{key}' given twice (in 'params' and beside it)")
    params = {**params, **cfg}
    label = f"{where} '{name or type_name}'"
    if not isinstance(type_name, str) or not type_name:
        raise BisentError(f"{label}: missing 'type' (known: {', '.join(sorted(step_types()))})")
    types = step_types()
    if type_name not in types:
        raise BisentError(f"{label}: unknown step type '{type_name}' (known: {', '.join(sorted(types))})")
    if name is not None and (not isinstance(name, str) or not name.strip() or any(c in name for c in "\t\r\n")
                             or name.startswith(RESERVED_PREFIXES)):
        raise BisentError(f"{label}: 'name' must be a non-empty single-line string not starting with "
                          f"{' or '.join(RESERVED_PREFIXES)}, got {name!r}")
    cls = types[type_name]
    sig = inspect.signature(cls.__init__)
    allowed = {p.name: p for p in sig.parameters.values()
               if p.name not in ("self", "name") and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    for lang_key, lang in (("src_lang", src_lang), ("tgt_lang", tgt_lang)):
        if lang_key in allowed and lang_key not in params and lang is not None:
            params[lang_key] = lang
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise BisentError(f"{label}: unknown parameter '{unknown[0]}' for type {type_name} "
                          f"(parameters: {', '.join(sorted(allowed)) or 'none'})")
    missing = [p for p, spec in allowed.items() if spec.default is inspect.Parameter.empty and p not in params]
    if missing:
        raise BisentError(f"{label}: missing parameter '{missing[0]}' for type {type_name}")
    try:
        step = cls(name=name, **params)
        if accept is not None:
            step.accept_override = Bounds(accept)
    except (ValueError, TypeError, BisentError) as e:
        raise BisentError(f"{label}: {_one_line(e)}") from None
    step.config = {"type": type_name, "name": step.name, **params}
    if accept is not None:
        step.config["accept"] = dict(accept)
    return step


def load_config(config) -> Any:
    """A filter configuration as plain data: a YAML file (a path, or an installed recipe's name such as
    ``filter-default``) read (one-line errors naming file and line), or a
    list / mapping copied, so that :func:`edit_config` and the builder never change the caller's data."""
    if not isinstance(config, (str, os.PathLike)):
        return copy.deepcopy(config)
    return read_yaml(check_readable(resolve(config)))


def takes_encoder(type_name: str) -> bool:
    """True when steps of this type embed with an ``encoder`` parameter (cosine, csls, margin, ...)."""
    cls = step_types().get(type_name) if isinstance(type_name, str) else None
    return cls is not None and "encoder" in inspect.signature(cls.__init__).parameters


def edit_config(config, *, encoder: str | None = None, embedding_step: dict | None = None):
    """A copy of ``config`` (YAML path, list or mapping) as plain data with its embedding steps changed.

    ``encoder``: every step that takes an ``encoder`` (:func:`takes_encoder`) uses this one (e.g. to
    run the default recipe with another encoder: ``bisent filter -e``). ``embedding_step``: those
    steps are replaced by this step mapping, at the place of the first, and a selection that ranked
    by one of them ranks by it (e.g. Kim et al.'s MLP in place of the cosine). The CLI, the filter
    benchmark and ``benchmarks/filter_speed.py`` all change configurations through this.
    """
    data = load_config(config)
    steps = data.get("steps") if isinstance(data, dict) else data
    if not isinstance(steps, list):
        return data   # malformed: the builder says what is wrong
    embedding = [i for i, s in enumerate(steps) if isinstance(s, dict) and takes_encoder(s.get("type"))]
    if encoder is not None:
        for i in embedding:
            params = steps[i].get("params")
            target = params if isinstance(params, dict) and "encoder" in params else steps[i]
            target["encoder"] = encoder
    if embedding_step is not None and embedding:
        names = [steps[i].get("name", steps[i].get("type")) for i in embedding]
        steps[embedding[0]] = dict(embedding_step)
        for i in reversed(embedding[1:]):
            del steps[i]
        select = data.get("select") if isinstance(data, dict) else None
        if isinstance(select, dict) and (select.get("step") is None or select.get("step") in names):
            select["step"] = embedding_step.get("name", embedding_step.get("type"))
    return data
