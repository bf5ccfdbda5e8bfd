"""Checks of numbers from configuration files and library calls: finite, in range, of the right kind.

The CLI's option types (``bisent.cli.options``) apply the same rules to command-line values; a config
value goes through :func:`check_number` (a ``ValueError`` naming the parameter) or :func:`config_number`
(a one-line :class:`BisentError` naming the file and key).
"""

from __future__ import annotations

import math
from typing import Any

from .errors import BisentError


def check_number(name: str, value: Any, *, low: float | None = None, high: float | None = None,
                 integer: bool = False, low_open: bool = False) -> float:
    """Return ``value`` if it is a number (an int when ``integer``) within bounds, else raise ValueError."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and not (
        isinstance(value, float) and not math.isfinite(value))  # .nan and .inf are not settings
    if ok and integer and not (isinstance(value, int) or float(value).is_integer()):
        ok = False
    if ok and low is not None and (value < low or (low_open and value == low)):
        ok = False
    if ok and high is not None and value > high:
        ok = False
    if not ok:
        what = "an integer" if integer else "a number"
        rng = []
        if low is not None:
            rng.append(f"{'>' if low_open else '>='} {low:g}")
        if high is not None:
            rng.append(f"<= {high:g}")
        raise ValueError(f"parameter '{name}' must be {what}{' ' + ' and '.join(rng) if rng else ''}, got {value!r}")
    return int(value) if integer else float(value)


def config_number(source, key: str, value: Any, **bounds) -> float:
    """:func:`check_number` with the problem as a one-line error naming ``source`` (a file) and ``key``."""
    try:
        return check_number(key, value, **bounds)
    except ValueError as e:
        raise BisentError(f"{source}: {e}") from None


def config_bool(source, key: str, value: Any) -> bool:
    """``value`` if it is true or false, else a one-line error naming ``source`` and ``key``."""
    if not isinstance(value, bool):
        raise BisentError(f"{source}: parameter '{key}' must be true or false, got {value!r}")
    return value
