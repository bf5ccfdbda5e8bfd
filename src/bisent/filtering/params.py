"""Parameter checks of step constructors: a ValueError naming the parameter, turned into a one-line
error naming the configuration file and step by the pipeline builder."""

from __future__ import annotations

import math
from typing import Any, Sequence


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


def check_choice(name: str, value: Any, choices: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise ValueError."""
    if value not in choices:
        raise ValueError(f"parameter '{name}' must be one of {', '.join(map(str, choices))}, got {value!r}")
    return value


def check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"parameter '{name}' must be true or false, got {value!r}")
    return value
