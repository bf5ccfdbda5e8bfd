"""Filter pipelines: steps from a registry, scored in batches, run over TSV files with resume.

A *step* (OpusFilter's filter) has ``score(pairs)`` yielding one value per
pair and ``accept(value)``; ``score_batch(pairs)`` returns the same values as
an array, so costly steps (embeddings) score a whole batch at once. Steps are
registered by type name with :func:`register_step` and built from a YAML list::

    - type: length
      max_length: 80
    - {name: lid, type: langid, min_prob: 0.5}
    - {type: cosine, encoder: use-m3, accept: {min: 0.7}}   # a plugged-in step

A pair goes through the steps in order; the first step that does not accept
it is its reason. Later steps never see it (stateful steps such as
de-duplication only remember pairs that reached them).

:func:`bisent.filtering.files.filter_file` runs a pipeline over a file.
"""

from __future__ import annotations

import hashlib
import heapq
import importlib
import inspect
import math
import os
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterable, Iterator, NamedTuple, Sequence

import numpy as np
import yaml

from ..errors import BisentError
from ..io import check_readable

Pair = tuple[str, str]
#: A step's value for one pair: a number, or a short list of numbers (e.g. one per side).
Value = float | list[float]

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
                           "bisent.filtering.mlp", "bisent.filtering.repair"]


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


# --- parameter checks used by step constructors (a ValueError names the parameter) ---

def check_number(name: str, value: Any, *, low: float | None = None, high: float | None = None,
                 integer: bool = False, low_open: bool = False) -> float:
    """Return ``value`` if it is a number (an int when ``integer``) within bounds, else raise ValueError."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and not (
        isinstance(value, float) and math.isnan(value))
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


# ---------------------------------------------------------------------------
# Building a pipeline from a configuration
# ---------------------------------------------------------------------------

class FilterResult(NamedTuple):
    """One pair's outcome: ``reason`` is the rejecting step's name (None when kept); ``score``
    is that step's value, or for a kept pair the value of the pipeline's score step."""

    pair: Pair
    kept: bool
    reason: str | None
    score: Value | None


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _build_step(index: int, cfg: Any, source: str, src_lang: str | None, tgt_lang: str | None) -> Step:
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


def _load_yaml(path) -> Any:
    path = check_readable(path)
    try:
        with open(path, encoding="utf-8") as f:
            return yaml.safe_load(f)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or e
        raise BisentError(f"{path}{at}: invalid YAML: {_one_line(problem)}") from None
    except UnicodeDecodeError:
        raise BisentError(f"{path}: not valid UTF-8") from None


class FilterPipeline:
    """An ordered list of steps, plus an optional selection applied after scoring.

    ``score_step`` names the step whose value a kept pair carries (the
    selection's ``step``, else the last step).
    """

    def __init__(self, steps: Sequence[Step], *, selection=None, source: str = "<config>"):
        if not steps:
            raise BisentError(f"{source}: a pipeline needs at least one step")
        names = [s.name for s in steps]
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup is not None:
            raise BisentError(f"{source}: two steps are named '{dup}' (give one a 'name:')")
        self.steps: list[Step] = list(steps)
        self.source = source
        self.selection = selection
        self.score_step: str = names[-1]
        if selection is not None and selection.step is not None:
            if selection.step not in names:
                raise BisentError(f"{source}: select: no step named '{selection.step}' (steps: {', '.join(names)})")
            self.score_step = selection.step

    @classmethod
    def from_yaml(cls, path, *, src_lang: str | None = None, tgt_lang: str | None = None) -> "FilterPipeline":
        """Build from a YAML file: a list of steps, or ``{steps: [...], select: {...}}``."""
        return cls.from_config(_load_yaml(path), src_lang=src_lang, tgt_lang=tgt_lang, source=str(path))

    @classmethod
    def from_config(cls, config: Any, *, src_lang: str | None = None, tgt_lang: str | None = None,
                    source: str = "<config>") -> "FilterPipeline":
        """Build from a list of step mappings, or a mapping with ``steps`` and optional ``select``.

        ``src_lang`` / ``tgt_lang`` are passed to steps that take them (langid, script) unless a
        step sets its own. Mistakes raise a one-line :class:`BisentError` naming source and step.
        """
        from .selection import Selection

        select_cfg = None
        if isinstance(config, dict):
            extra = sorted(set(config) - {"steps", "select"})
            if extra:
                raise BisentError(f"{source}: unknown top-level key '{extra[0]}' (expected: steps, select)")
            select_cfg = config.get("select")
            config = config.get("steps")
        if not isinstance(config, list):
            raise BisentError(f"{source}: expected a list of steps (or a mapping with 'steps'), "
                              f"got {type(config).__name__}")
        steps = [_build_step(i, c, source, src_lang, tgt_lang) for i, c in enumerate(config)]
        selection = Selection.from_config(select_cfg, source=source) if select_cfg is not None else None
        return cls(steps, selection=selection, source=source)

    # --- a sample of the input for steps that need one (margin backgrounds) ---

    @property
    def sample_size(self) -> int:
        """The largest sample any step wants (0: no step needs one)."""
        return max((step.sample_size() for step in self.steps), default=0)

    def prepare(self, pairs: Iterable[Pair]) -> None:
        """Draw :func:`background_sample` from ``pairs`` (one pass) and give each step that wants one its share.

        Each step gets the first ``step.sample_size()`` pairs of the one sample, so
        steps asking for different sizes get nested samples. :func:`filter_file`
        calls this with a pre-pass over the file; :meth:`run` with its input when
        that is a list. A step whose sample was never prepared uses its first batch.
        """
        size = self.sample_size
        if not size:
            return
        sample = background_sample(pairs, size)
        for step in self.steps:
            n = step.sample_size()
            if n:
                step.fit_sample(sample[:n])

    def describe(self) -> dict:
        """The configuration as plain data (steps in order, selection)."""
        return {"steps": [s.config or _attributes(s) for s in self.steps],
                "select": self.selection.config if self.selection is not None else None}

    # --- scoring ---

    def process(self, pairs: Sequence[Pair]) -> list[FilterResult]:
        """Run the steps over one batch; results in input order. No selection is applied."""
        n = len(pairs)
        pairs = list(pairs)
        reasons: list[str | None] = [None] * n
        scores: list[Value | None] = [None] * n
        alive = list(range(n))
        for step in self.steps:
            if not alive:
                break
            batch = [pairs[i] for i in alive]
            values = self._score(step, batch)
            survivors = []
            rewrite = getattr(step, "rewrite", None)                  # a step that repairs pairs (repair.py)
            for i, v in zip(alive, values):
                if rewrite is not None:
                    pairs[i] = rewrite(pairs[i])
                if step.keep(v):
                    survivors.append(i)
                    if step.name == self.score_step:
                        scores[i] = v
                else:
                    reasons[i] = step.name
                    scores[i] = v
            alive = survivors
        return [FilterResult(pairs[i], reasons[i] is None, reasons[i], scores[i]) for i in range(n)]

    @staticmethod
    def _score(step: Step, batch: list[Pair]) -> list[Value]:
        size = step.batch_size or len(batch)
        out: list[Value] = []
        for start in range(0, len(batch), size):
            part = batch[start:start + size]
            values = step.score_batch(part)
            values = values.tolist() if isinstance(values, np.ndarray) else list(values)
            if len(values) != len(part):
                raise RuntimeError(f"step '{step.name}' returned {len(values)} scores for {len(part)} pairs")
            out.extend(values)
        return out

    def run(self, pairs: Iterable[Pair], *, batch_size: int = 10_000) -> Iterator[FilterResult]:
        """Yield a :class:`FilterResult` per pair, in input order, scoring ``batch_size`` pairs at a time.

        A threshold selection is applied as the pairs stream; top-N and word-budget
        selections hold the results in memory until the end (use :func:`filter_file`
        for corpora larger than memory).
        """
        if self.sample_size and isinstance(pairs, Sequence):
            self.prepare(pairs)
        sel = self.selection
        if sel is None or sel.streaming:
            for batch in _batches(pairs, batch_size):
                for res in self.process(batch):
                    yield self.apply_streaming_selection(res)
            return
        results = [r for batch in _batches(pairs, batch_size) for r in self.process(batch)]
        kept = [i for i, r in enumerate(results) if r.kept]
        chosen = sel.choose(np.array([sel.scalar(results[i].score, self.score_step) for i in kept], dtype=np.float64),
                            np.array([sel.words(results[i].pair) for i in kept], dtype=np.int64))
        for i, ok in zip(kept, chosen):
            if not ok:
                results[i] = results[i]._replace(kept=False, reason=sel.reason)
        yield from results

    def apply_streaming_selection(self, res: FilterResult) -> FilterResult:
        """Apply a threshold selection to one result (a no-op for other selections)."""
        sel = self.selection
        if sel is not None and sel.streaming and res.kept and not sel.passes(sel.scalar(res.score, self.score_step)):
            return res._replace(kept=False, reason=sel.reason)
        return res


def background_sample(pairs: Iterable[Pair], size: int, *, seed: int = 0) -> list[Pair]:
    """A deterministic sample of up to ``size`` distinct pairs, in one streaming pass.

    Bottom-k sampling: every distinct pair gets a 64-bit keyed BLAKE2 hash and
    the ``size`` smallest hashes are kept (a heap of ``size`` entries), so the
    sample depends only on the set of pairs, not on their order or repeats,
    and a smaller sample is a prefix of a larger one. Returned in hash order.
    """
    check_number("size", size, low=0, integer=True)
    key = seed.to_bytes(8, "little")
    heap: list[tuple[int, Pair]] = []  # (-hash, pair): a max-heap of the kept hashes
    kept: set[int] = set()
    for src, tgt in pairs:
        h = int.from_bytes(hashlib.blake2b(f"{src}\t{tgt}".encode("utf-8", "surrogatepass"), digest_size=8,
                                           key=key).digest(), "little")
        if h in kept:
            continue
        if len(heap) < size:
            heapq.heappush(heap, (-h, (src, tgt)))
            kept.add(h)
        elif heap and h < -heap[0][0]:
            old_h, _ = heapq.heapreplace(heap, (-h, (src, tgt)))
            kept.discard(-old_h)
            kept.add(h)
    return [pair for _, pair in sorted(heap, key=lambda e: -e[0])]


def _attributes(step: Step) -> dict:
    """A step built in code (no ``config``): its type, name and public attributes, as plain data."""
    out: dict[str, Any] = {"type": step.type, "name": step.name}
    for key, val in vars(step).items():
        if not key.startswith("_") and key not in ("name", "config", "accept_override"):
            out[key] = val if isinstance(val, (int, float, str, bool, type(None))) else repr(val)
    if step.accept_override is not None:
        out["accept"] = step.accept_override.spec
    return out


def _batches(items: Iterable[Pair], size: int) -> Iterator[list[Pair]]:
    batch: list[Pair] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def as_pipeline(config, src_lang: str | None = None, tgt_lang: str | None = None) -> FilterPipeline:
    """A :class:`FilterPipeline` from a pipeline, a YAML path, or a list/mapping configuration."""
    if isinstance(config, FilterPipeline):
        return config
    if isinstance(config, (str, os.PathLike)):
        return FilterPipeline.from_yaml(config, src_lang=src_lang, tgt_lang=tgt_lang)
    return FilterPipeline.from_config(config, src_lang=src_lang, tgt_lang=tgt_lang)
