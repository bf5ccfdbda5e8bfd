"""The recipes installed with bisent: training recipes, filter pipelines and run configurations (YAML files here).

Everywhere a recipe or configuration is taken (``bisent train -c``, ``bisent filter -c``, ``bisent run -c``)
:func:`resolve` reads an existing file as given and otherwise looks a NAME (``distill-dan``, ``filter-default``)
up in this folder, so a recipe works from any folder and in a non-editable install. Each file's first line is
a comment describing it (:func:`describe`, listed by ``bisent recipes``). :func:`set_keys` applies ``--set
KEY=VALUE`` overrides to a filter pipeline or run configuration (training recipes have their own in
:mod:`bisent.training.recipe`).
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any, Iterable

from ..errors import BisentError

HERE = Path(__file__).resolve().parent
SUFFIXES = (".yaml", ".yml")


def names() -> list[str]:
    """The installed recipes' names, sorted."""
    return sorted(p.stem for p in HERE.glob("*.yaml"))


def describe(name: str) -> str:
    """The one-line description of installed recipe ``name``: its first line, a comment."""
    with open(HERE / f"{name}.yaml", encoding="utf-8") as f:
        return f.readline().removeprefix("#").strip()


def is_installed(path) -> bool:
    """True when ``path`` is one of the installed recipes (its relative paths then start from the current folder)."""
    return Path(path).resolve().parent == HERE


def resolve(spec) -> Path:
    """The file of a recipe given by path or by name: an existing file as given; else a bare name (with or without
    ``.yaml``) of an installed recipe; else the path as given, for the loader to report it missing."""
    path = Path(spec)
    if path.exists():
        return path
    text = os.fspath(spec)
    if "/" in text or os.sep in text:
        return path
    name = text[: -len(path.suffix)] if path.suffix in SUFFIXES else text
    if (HERE / f"{name}.yaml").is_file():
        return HERE / f"{name}.yaml"
    if path.suffix in SUFFIXES:
        return path
    raise BisentError(f"{text}: no such file, nor an installed recipe (bisent recipes lists them: "
                      f"{', '.join(names())})")


def _child(node, part: str, key: str, source: str):
    """The list index ``part`` names in ``node``: a number, or the step whose name (or sole type) it is."""
    if part.lstrip("-").isdigit() and -len(node) <= int(part) < len(node):
        return int(part)
    named = [i for i, s in enumerate(node) if isinstance(s, dict) and s.get("name") == part]
    typed = [i for i, s in enumerate(node) if isinstance(s, dict) and s.get("type") == part and "name" not in s]
    if len(named) == 1 or (not named and len(typed) == 1):
        return (named or typed)[0]
    why = "more than one step" if len(named) > 1 or len(typed) > 1 else "no step or index"
    raise BisentError(f"{source}: --set {key}: {why} '{part}' (give a step's name, its type or its index)")


def set_keys(data: Any, overrides: dict[str, Any] | Iterable[tuple[str, Any]] | None, source: str = "config") -> Any:
    """A copy of ``data`` with dotted keys set (``{"align.encoder": "me5-small"}``). A part of a key that meets a
    list picks an item by index or a step by ``name`` (or by ``type`` when one step alone has it):
    ``cosine.accept.min``; a missing mapping key is created. Mistakes are one-line errors naming ``source``."""
    data = copy.deepcopy(data)
    items = overrides.items() if isinstance(overrides, dict) else overrides or ()
    for key, value in items:
        parts = key.split(".")
        if not all(parts):
            raise BisentError(f"{source}: --set {key}: empty part in the key")
        node = data
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if isinstance(node, list):
                part = _child(node, part, key, source)
            elif not isinstance(node, dict):
                raise BisentError(f"{source}: --set {key}: '{'.'.join(parts[:i])}' is a value, not a section")
            if last:
                node[part] = value
            else:
                if isinstance(node, dict) and node.get(part) is None:
                    node[part] = {}
                node = node[part]
    return data


__all__ = ["HERE", "describe", "is_installed", "names", "resolve", "set_keys"]
