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

:func:`filter_file` streams a ``src<TAB>tgt`` file in chunks, accounts for
every input line (bad rows are rejected with a ``bad_row:*`` reason, never
fatal), checkpoints after each chunk so a rerun after a kill continues where
it stopped, and renames the outputs into place only at the end.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import heapq
import importlib
import inspect
import json
import lzma
import math
import os
import time
from pathlib import Path
from typing import IO, Any, Callable, ClassVar, Iterable, Iterator, NamedTuple, Sequence

import numpy as np
import yaml
from tqdm.auto import tqdm

from ..errors import BisentError
from ..io import atomic_write, check_readable

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
                           "bisent.filtering.mlp"]


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
        reasons: list[str | None] = [None] * n
        scores: list[Value | None] = [None] * n
        alive = list(range(n))
        for step in self.steps:
            if not alive:
                break
            batch = [pairs[i] for i in alive]
            values = self._score(step, batch)
            survivors = []
            for i, v in zip(alive, values):
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


# ---------------------------------------------------------------------------
# Streaming a TSV file: bad rows, chunks, checkpoints, resume
# ---------------------------------------------------------------------------

#: A side longer than this (bytes) is a bad row, not a sentence.
MAX_SIDE_BYTES = 1 << 20
#: Per kept line, kept for a two-pass selection: line number, score, words counted.
RECORD = np.dtype([("lineno", "<i8"), ("score", "<f8"), ("words", "<i8")])
STATE_VERSION = 1


def format_value(value: Value | None) -> str:
    """A value as text for the rejected file: ``0.5``, ``3,81`` for lists, empty for None."""
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ",".join(format_value(v) for v in value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def parse_row(raw: bytes, max_side_bytes: int = MAX_SIDE_BYTES) -> tuple[Pair | None, str | None, float | None]:
    """Split one input line (newline removed) into a pair, or say why it is a bad row.

    Returns ``(pair, None, None)`` or ``(None, reason, detail)`` where detail is a
    number: the NUL's or bad byte's 1-based column, the column count, the side's bytes.
    """
    line = raw[:-1] if raw.endswith(b"\r") else raw
    nul = line.find(b"\x00")
    if nul >= 0:
        return None, "bad_row:nul", float(nul + 1)
    cols = line.split(b"\t")
    if len(cols) != 2:
        return None, "bad_row:columns", float(len(cols))
    for col in cols:
        if len(col) > max_side_bytes:
            return None, "bad_row:too_long", float(len(col))
    sides = []
    offset = 0
    for col in cols:
        try:
            sides.append(col.decode("utf-8").strip())
        except UnicodeDecodeError as e:
            return None, "bad_row:utf8", float(offset + e.start + 1)
        offset += len(col) + 1
    return (sides[0], sides[1]), None, None


def _show_line(raw: bytes) -> str:
    """The original line as text for the rejected file: bad bytes and NULs as ``\\xNN`` escapes,
    a final CR (of a CRLF file) dropped."""
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    return raw.decode("utf-8", errors="backslashreplace").replace("\x00", "\\x00")


def _compress(path: Path, data: bytes) -> bytes:
    """``data`` as one gzip member / xz stream for ``.gz`` / ``.xz`` names (concatenations stay readable)."""
    if path.name.endswith(".gz"):
        return gzip.compress(data, compresslevel=6, mtime=0)
    if path.name.endswith(".xz"):
        return lzma.compress(data)
    return data


class _Partial:
    """An output being built: ``.NAME.partial`` beside the final path, appended in chunks."""

    def __init__(self, final: Path, suffix: str = "partial"):
        self.final = final
        self.path = final.parent / f".{final.name}.{suffix}"
        self.f: IO[bytes] | None = None

    def open(self, size: int) -> None:
        """Open for appending after truncating to ``size`` bytes (0: start afresh)."""
        self.final.parent.mkdir(parents=True, exist_ok=True)
        if size and (not self.path.exists() or self.path.stat().st_size < size):
            raise BisentError(f"{self.path}: partial output is missing or shorter than its checkpoint; "
                              f"start over with resume=False")
        self.f = open(self.path, "r+b" if size else "wb")
        self.f.truncate(size)
        self.f.seek(size)

    def write(self, data: bytes) -> None:
        if data:
            assert self.f is not None
            self.f.write(_compress(self.final, data))

    def sync(self) -> int:
        assert self.f is not None
        self.f.flush()
        os.fsync(self.f.fileno())
        return self.f.tell()

    def close(self) -> None:
        if self.f is not None:
            self.f.close()
            self.f = None

    def finish(self) -> None:
        """Rename into place (an empty compressed output gets a valid empty member first)."""
        self.close()
        if self.path.exists():
            if self.path.stat().st_size == 0 and _compress(self.final, b"") != b"":
                self.path.write_bytes(_compress(self.final, b""))
            os.replace(self.path, self.final)

    def remove(self) -> None:
        self.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def _fingerprint(in_path: Path, pipeline: FilterPipeline, src_lang, tgt_lang, max_side_bytes,
                 outputs: Sequence[Path]) -> str:
    st = in_path.stat()
    desc = {"input": str(in_path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
            "pipeline": pipeline.describe(), "src_lang": src_lang, "tgt_lang": tgt_lang,
            "max_side_bytes": max_side_bytes, "outputs": [str(p.resolve()) for p in outputs]}
    return hashlib.sha256(json.dumps(desc, sort_keys=True, default=str).encode()).hexdigest()


def _write_json(path: Path, data: dict) -> None:
    with atomic_write(path) as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")


def filter_file(in_tsv, out_kept, out_rejected, src_lang: str, tgt_lang: str, config,
                summary_path=None, *, chunk_size: int = 10_000, max_side_bytes: int = MAX_SIDE_BYTES,
                resume: bool = True, progress: bool = True) -> dict:
    """Filter a ``src<TAB>tgt`` file (plain, .gz or .xz) into kept and rejected files; return the summary.

    - kept lines are written byte for byte as they were read;
    - rejected lines as ``lineno<TAB>reason<TAB>score<TAB>original line`` (bad bytes
      and NULs shown as ``\\xNN``); reasons are step names, ``bad_row:nul|columns|
      too_long|utf8`` (score: byte column, column count, side bytes) or ``select:<mode>``;
    - outputs ending in ``.gz`` / ``.xz`` are compressed;
    - the summary (also written to ``summary_path`` as JSON) counts lines per reason;
      ``kept + rejected == input lines`` is checked.

    Progress is checkpointed after every ``chunk_size`` lines (partial outputs
    ``.NAME.partial`` beside each output, state in ``.KEPTNAME.filter-state/``). A
    rerun with the same arguments after a kill continues from the last checkpoint
    and produces the same output as an uninterrupted run; ``resume=False``
    starts over. Outputs appear (renamed into place) only when the run completes.

    When a step needs a sample of the input (a margin with ``background: sample``),
    a first pass over the file draws it (:func:`background_sample`, deterministic,
    so a resumed run draws the same one again).
    """
    t0 = time.perf_counter()
    in_path = check_readable(in_tsv)
    out_kept, out_rejected = Path(out_kept), Path(out_rejected)
    if out_kept.resolve() == out_rejected.resolve():
        raise BisentError(f"{out_kept}: the kept and rejected outputs must be different files")
    if in_path.resolve() in (out_kept.resolve(), out_rejected.resolve()):
        raise BisentError(f"{in_path}: an output would overwrite the input")
    check_number("chunk_size", chunk_size, low=1, integer=True)
    check_number("max_side_bytes", max_side_bytes, low=1, integer=True)
    pipeline = as_pipeline(config, src_lang, tgt_lang)
    sel = pipeline.selection
    two_pass = sel is not None and not sel.streaming

    kept_p, rej_p = _Partial(out_kept), _Partial(out_rejected)
    rec_p = _Partial(out_kept, "records")  # (lineno, score, words) per kept line, for two-pass selection
    state_dir = out_kept.parent / f".{out_kept.name}.filter-state"
    state_path = state_dir / "state.json"
    fp = _fingerprint(in_path, pipeline, src_lang, tgt_lang, max_side_bytes, [out_kept, out_rejected])

    state = None
    if resume and state_path.exists():
        try:
            state = json.loads(state_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            state = None
        if state is not None and (state.get("version") != STATE_VERSION or state.get("fingerprint") != fp):
            raise BisentError(f"{state_path}: an unfinished run with a different input, configuration or "
                              f"outputs is in progress there; remove that folder or pass resume=False")
    if state is None:
        for p in (kept_p, rej_p, rec_p):
            p.remove()
        if state_dir.exists():
            for f in state_dir.iterdir():
                f.unlink()
        state_dir.mkdir(parents=True, exist_ok=True)
        state = {"version": STATE_VERSION, "fingerprint": fp, "phase": "scoring", "lines": 0, "offset": 0,
                 "kept": 0, "rejected_by": {}, "sizes": {"kept": 0, "rejected": 0, "records": 0},
                 "steps": {}, "seconds": 0.0}
    for step in pipeline.steps:
        step.reset()
        if state["phase"] != "done" and step.name in state["steps"]:
            step.load_state(state_dir, state["steps"][step.name])
    seconds_before = state["seconds"]

    def checkpoint() -> None:
        state["sizes"] = {"kept": kept_p.sync(), "rejected": rej_p.sync(), "records": rec_p.sync()}
        for step in pipeline.steps:
            marker = step.save_state(state_dir)
            if marker is not None:
                state["steps"][step.name] = marker
        state["seconds"] = seconds_before + time.perf_counter() - t0
        _write_json(state_path, state)

    if state["phase"] != "done":
        try:
            kept_p.open(state["sizes"]["kept"])
            rej_p.open(state["sizes"]["rejected"])
            rec_p.open(state["sizes"]["records"])
            if state["phase"] == "scoring":
                if pipeline.sample_size:
                    pipeline.prepare(_sample_rows(in_path, max_side_bytes, progress))
                _score_pass(in_path, pipeline, state, kept_p, rej_p, rec_p, checkpoint, two_pass,
                            chunk_size, max_side_bytes, progress)
                state["phase"] = "scored"
                checkpoint()
            if two_pass:
                from .selection import select_pass
                rec_p.close()
                kept_p.close()
                n_sel, n_rej = select_pass(pipeline, kept_p.path, rec_p.path, out_kept, rej_p, progress=progress)
                rej_p.sync()
                state["kept"] = n_sel
                if n_rej:
                    state["rejected_by"][sel.reason] = n_rej
        finally:
            for p in (kept_p, rej_p, rec_p):
                p.close()
        state["summary"] = _summary(in_path, out_kept, out_rejected, pipeline, state,
                                    seconds_before + time.perf_counter() - t0)
        state["phase"] = "done"
        _write_json(state_path, state)

    # Finish: every rename below is idempotent, so a kill here is completed by a rerun.
    summary = state["summary"]
    if two_pass:
        _Partial(out_kept, "selected").finish()
        kept_p.remove()
    else:
        kept_p.finish()
    rec_p.remove()
    rej_p.finish()
    if summary_path is not None:
        _write_json(Path(summary_path), summary)
    state_path.unlink()  # first: without it a rerun starts afresh rather than resuming a half-removed state
    for f in state_dir.iterdir():
        f.unlink()
    state_dir.rmdir()
    return summary


def _summary(in_path, out_kept, out_rejected, pipeline, state, seconds) -> dict:
    rejected = sum(state["rejected_by"].values())
    summary = {"input": str(in_path), "kept_file": str(out_kept), "rejected_file": str(out_rejected),
               "lines": state["lines"], "kept": state["kept"], "rejected": rejected,
               "rejected_by": dict(sorted(state["rejected_by"].items())),
               "pipeline": pipeline.describe(), "seconds": round(seconds, 3)}
    if summary["kept"] + summary["rejected"] != summary["lines"]:
        raise RuntimeError(f"filter accounting is off: {summary['kept']} kept + {summary['rejected']} rejected "
                           f"!= {summary['lines']} input lines")
    return summary


def _open_input(in_path: Path) -> tuple[IO[bytes], IO[bytes]]:
    """(raw file, decompressed stream) of a plain, .gz or .xz input."""
    raw_file = open(in_path, "rb")
    if in_path.name.endswith(".gz"):
        return raw_file, gzip.GzipFile(fileobj=raw_file, mode="rb")
    if in_path.name.endswith(".xz"):
        return raw_file, lzma.LZMAFile(raw_file, "rb")
    return raw_file, raw_file


def _sample_rows(in_path: Path, max_side_bytes: int, progress: bool) -> Iterator[Pair]:
    """The pre-pass for steps that need a sample: every well-formed pair of the file, in order."""
    raw_file, stream = _open_input(in_path)
    total = os.fstat(raw_file.fileno()).st_size
    bar = tqdm(total=total, unit="B", unit_scale=True, desc=f"sample {in_path.name}", disable=not progress,
               leave=False)
    try:
        with stream:
            for lineno, raw in enumerate(stream, 1):
                pair, _, _ = parse_row(raw[:-1] if raw.endswith(b"\n") else raw, max_side_bytes)
                if pair is not None:
                    if lineno == 1 and pair[0].startswith("\ufeff"):
                        pair = (pair[0][1:].strip(), pair[1])
                    yield pair
                if lineno % 65536 == 0:
                    bar.update(raw_file.tell() - bar.n)
    except (OSError, EOFError, lzma.LZMAError) as e:
        raise BisentError(f"{in_path}: cannot read ({e.__class__.__name__}: {e})") from None
    finally:
        bar.close()
        raw_file.close()


def _score_pass(in_path: Path, pipeline: FilterPipeline, state: dict, kept_p: _Partial, rej_p: _Partial,
                rec_p: _Partial, checkpoint: Callable[[], None], two_pass: bool, chunk_size: int,
                max_side_bytes: int, progress: bool) -> None:
    """Pass one: read chunks from the last checkpoint, score, append outputs, checkpoint each chunk."""
    sel = pipeline.selection
    raw_file, stream = _open_input(in_path)
    total = os.fstat(raw_file.fileno()).st_size
    bar = tqdm(total=total, unit="B", unit_scale=True, desc=f"filter {in_path.name}", disable=not progress,
               leave=False)
    try:
        with stream:
            stream.seek(state["offset"])
            bar.update(raw_file.tell())
            lineno, offset = state["lines"], state["offset"]
            while True:
                rows: list[tuple[int, bytes]] = []
                for raw in stream:
                    offset += len(raw)
                    lineno += 1
                    rows.append((lineno, raw[:-1] if raw.endswith(b"\n") else raw))
                    if len(rows) >= chunk_size:
                        break
                if not rows:
                    break
                _process_chunk(rows, pipeline, state, kept_p, rej_p, rec_p, two_pass, sel, max_side_bytes)
                state["lines"], state["offset"] = lineno, offset
                checkpoint()
                bar.update(raw_file.tell() - bar.n)
    except (OSError, EOFError, lzma.LZMAError) as e:
        raise BisentError(f"{in_path}: cannot read ({e.__class__.__name__}: {e})") from None
    finally:
        bar.close()
        raw_file.close()


def _process_chunk(rows, pipeline, state, kept_p, rej_p, rec_p, two_pass, sel, max_side_bytes) -> None:
    counts = state["rejected_by"]
    pairs: list[Pair] = []
    where: list[int] = []  # index into rows of each pair
    rejected: dict[int, tuple[str, Value | None]] = {}
    for i, (lineno, raw) in enumerate(rows):
        pair, reason, detail = parse_row(raw, max_side_bytes)
        if pair is None:
            rejected[i] = (reason, detail)
        else:
            if lineno == 1 and pair[0].startswith("\ufeff"):
                pair = (pair[0][1:].strip(), pair[1])
            pairs.append(pair)
            where.append(i)
    kept: list[int] = []
    scores: dict[int, Value | None] = {}
    for i, res in zip(where, pipeline.process(pairs)):
        res = pipeline.apply_streaming_selection(res)
        if res.kept:
            kept.append(i)
            scores[i] = res.score
        else:
            rejected[i] = (res.reason, res.score)
    kept_p.write(b"".join(rows[i][1] + b"\n" for i in kept))
    out = []
    for i in sorted(rejected):
        reason, value = rejected[i]
        counts[reason] = counts.get(reason, 0) + 1
        lineno, raw = rows[i]
        out.append(f"{lineno}\t{reason}\t{format_value(value)}\t{_show_line(raw)}\n".encode("utf-8"))
    rej_p.write(b"".join(out))
    state["kept"] += len(kept)
    if two_pass and kept:
        pair_of = dict(zip(where, pairs))
        rec = np.empty(len(kept), dtype=RECORD)
        rec["lineno"] = [rows[i][0] for i in kept]
        rec["score"] = [sel.scalar(scores[i], pipeline.score_step) for i in kept]
        rec["words"] = [sel.words(pair_of[i]) for i in kept]
        rec_p.f.write(rec.tobytes())
