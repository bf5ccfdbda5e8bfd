"""Parameter checks of step constructors: a ValueError naming the parameter, turned into a one-line
error naming the configuration file and step by the pipeline builder."""

from __future__ import annotations

from typing import Any, Sequence

from ..values import check_number  # noqa: F401  (re-exported: the steps check their numbers with it)


def check_choice(name: str, value: Any, choices: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise ValueError."""
    if value not in choices:
        raise ValueError(f"parameter '{name}' must be one of {', '.join(map(str, choices))}, got {value!r}")
    return value


def check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"parameter '{name}' must be true or false, got {value!r}")
    return value
