"""Filter steps and their registry: the :class:`Step` base class, ``@register_step("type")``, ``accept:`` bounds.

A *step* (OpusFilter's filter) has ``score(pairs)`` yielding one value per
pair and ``accept(value)``; ``score_batch(pairs)`` returns the same values as
an array, so costly steps (embeddings) score a whole batch at once. Steps are
registered by type name with :func:`register_step`; :mod:`.config` builds them
from YAML, :mod:`.pipeline` runs them in order.
"""

from __future__ import annotations

import importlib
import math
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterable, Iterator, Sequence

import numpy as np

from .params import check_number
from .records import Pair, Value

#: Reasons the pipeline itself gives (step names may not start with these).
RESERVED_PREFIXES = ("bad_row:", "select:")

# ---------------------------------------------------------------------------
# Steps and their registry
# ---------------------------------------------------------------------------

#: step type name -> class. Filled by :func:`register_step` when a module is imported.
STEP_TYPES: dict[str, type["Step"]] = {}

#: Modules that register steps; imported before a type is looked up, so a YAML
#: file can name any of them. A new family of steps (e.g. embedding scores in
#: ``bisent.filtering.embedding``) adds its module here.
STEP_MODULES: list[str] = ["bisent.filtering.rules", "bisent.filtering.langid", "bisent.filtering.embedding",
                           "bisent.filtering.mlp_step", "bisent.filtering.repair",
                           "bisent.filtering.coverage"]


def register_step(type_name: str) -> Callable[[type["Step"]], type["Step"]]:
    """Class decorator: make a :class:`Step` subclass available as ``type: <type_name>``."""

    def deco(cls: type[Step]) -> type[Step]:
        if not (isinstance(cls, type) and issubclass(cls, Step)):
            raise TypeError(f"register_step('{type_name}'): {cls!r} is not a Step subclass")
        if cls.score is Step.score and cls.score_batch is Step.score_batch:
            raise TypeError(f"register_step('{type_name}'): {cls.__name__} must define score or score_batch")
        old = STEP_TYPES.get(type_name)
        if old is not None and old.__qualname__ != cls.__qualname__:
            raise ValueError(f"step type '{type_name}' is already registered by {old.__module__}.{old.__qualname__}")
        cls.type = type_name
        STEP_TYPES[type_name] = cls
        return cls

    return deco


def step_types() -> dict[str, type["Step"]]:
    """All registered step types (importing the modules in :data:`STEP_MODULES` first)."""
    for module in STEP_MODULES:
        importlib.import_module(module)
    return STEP_TYPES


class Step:
    """Base class of a filter step.

    Subclasses define ``accept(value)`` and one of ``score(pairs)`` (a
    generator, one value per pair: natural for cheap rules) or
    ``score_batch(pairs)`` (an array of ``len(pairs)`` values, or
    ``(len(pairs), k)``: natural for embedding scores). The base class derives
    the other. Keyword arguments of ``__init__`` are the YAML parameters.
    ``batch_size`` (None: the whole chunk) bounds how many pairs one
    ``score_batch`` call gets. Stateful steps (duplicates) also implement
    :meth:`save_state` / :meth:`load_state` so a resumed run continues with
    the same memory, and set ``stateless = False``.

    A step that needs a sample of the whole input before scoring (a margin's
    background) returns its size from :meth:`sample_size`; the pipeline then
    draws one (:func:`background_sample`: a pre-pass in :func:`filter_file`)
    and hands it to :meth:`fit_sample`.
    """

    type: ClassVar[str] = ""
    batch_size: int | None = None
    #: False when a pair's value depends on the pairs scored before it (duplicates).
    stateless: ClassVar[bool] = True
    #: the names of a list value's parts, as the rejected file and ``--score-all`` write them (``z=3.6,...``);
    #: a value of another length is written as bare numbers
    value_names: tuple[str, ...] = ()

    def __init__(self, *, name: str | None = None):
        self.name: str = name or self.type
        #: bounds from the YAML ``accept:`` key; when set they replace :meth:`accept`.
        self.accept_override: Bounds | None = None
        #: the parameters it was built with (for summaries and resume fingerprints).
        self.config: dict[str, Any] = {}

    def score(self, pairs: Iterable[Pair]) -> Iterator[Value]:
        """Yield one value per pair (default: :meth:`score_batch` over blocks of ``batch_size``)."""
        block: list[Pair] = []
        size = self.batch_size or 10_000
        for pair in pairs:
            block.append(pair)
            if len(block) == size:
                yield from _rows(self.score_batch(block))
                block = []
        if block:
            yield from _rows(self.score_batch(block))

    def score_batch(self, pairs: Sequence[Pair]) -> np.ndarray:
        """Values for a batch: float64 ``(n,)`` or ``(n, k)`` (default: collect :meth:`score`)."""
        return np.asarray(list(self.score(pairs)), dtype=np.float64)

    def accept(self, value: Value) -> bool:
        """True when a pair with this value passes the step."""
        raise NotImplementedError

    def keep(self, value: Value) -> bool:
        """The decision used by the pipeline: the YAML ``accept:`` bounds if given, else :meth:`accept`."""
        if self.accept_override is not None:
            return self.accept_override(value)
        return bool(self.accept(value))

    def reset(self) -> None:
        """Forget what earlier pairs left in memory (stateful steps); :func:`filter_file` calls it first."""

    def sample_size(self) -> int:
        """How many pairs of the input this step wants as a sample before scoring (0: none)."""
        return 0

    def fit_sample(self, pairs: Sequence[Pair]) -> None:
        """Receive the input's sample (at most :meth:`sample_size` distinct pairs, in a fixed order)."""

    def save_state(self, directory: Path) -> dict | None:
        """Persist what the step remembers under ``directory``; return a small JSON marker (None: stateless)."""
        return None

    def load_state(self, directory: Path, marker: dict) -> None:
        """Restore the memory saved by :meth:`save_state` (called on resume with its marker)."""

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(name={self.name!r}, {self.config})"


def _rows(values: np.ndarray) -> Iterator[Value]:
    arr = np.asarray(values, dtype=np.float64)
    return iter(arr.tolist())


class Bounds:
    """``accept: {min: a, max: b, gt: c, lt: d}``: every component of the value within the bounds."""

    KEYS = ("min", "max", "gt", "lt")

    def __init__(self, spec: dict):
        if not isinstance(spec, dict) or not spec:
            raise ValueError(f"'accept' must be a mapping with keys among {', '.join(self.KEYS)}, got {spec!r}")
        for key, val in spec.items():
            if key not in self.KEYS:
                raise ValueError(f"'accept' has unknown key '{key}' (expected: {', '.join(self.KEYS)})")
            check_number(f"accept.{key}", val)
        self.spec = {k: float(v) for k, v in spec.items()}

    def __call__(self, value: Value) -> bool:
        vals = value if isinstance(value, (list, tuple)) else [value]
        s = self.spec
        for v in vals:
            if math.isnan(v):
                return False
            if ("min" in s and v < s["min"]) or ("max" in s and v > s["max"]) \
                    or ("gt" in s and v <= s["gt"]) or ("lt" in s and v >= s["lt"]):
                return False
        return True
