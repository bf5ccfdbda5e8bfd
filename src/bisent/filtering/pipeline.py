"""Filter pipelines: an ordered list of steps scored in batches, then an optional selection.

A pair goes through the steps in order; the first step that does not accept
it is its reason. Later steps never see it (stateful steps such as
de-duplication only remember pairs that reached them).

Steps and their registry are in :mod:`.steps`, configurations (YAML, the
encoder / embedding-step transform, building steps) in :mod:`.config`, the
selection rules in :mod:`.selection`, what a run writes in :mod:`.records`;
:func:`bisent.filtering.files.filter_file` runs a pipeline over a file.
"""

from __future__ import annotations

import hashlib
import heapq
import os
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from ..errors import BisentError
from ..safeload import shown_key
from . import vectors
from .config import MAX_STEPS, build_step, load_config
from .params import check_bool, check_choice, check_number
from .records import FilterResult, Pair, Value
from .selection import Selection
from .steps import STEP_MODULES, STEP_TYPES, Bounds, Step, register_step, step_types


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
        return cls.from_config(load_config(path), src_lang=src_lang, tgt_lang=tgt_lang, source=str(path))

    @classmethod
    def from_config(cls, config: Any, *, src_lang: str | None = None, tgt_lang: str | None = None,
                    source: str = "<config>") -> "FilterPipeline":
        """Build from a list of step mappings, or a mapping with ``steps`` and optional ``select``.

        ``src_lang`` / ``tgt_lang`` are passed to steps that take them (langid, script) unless a
        step sets its own. Mistakes raise a one-line :class:`BisentError` naming source and step.
        """
        select_cfg = None
        if isinstance(config, dict):
            extra = sorted(set(config) - {"steps", "select"})
            if extra:
                raise BisentError(f"{source}: unknown top-level key {shown_key(extra[0])} (expected: steps, select)")
            select_cfg = config.get("select")
            config = config.get("steps")
        if not isinstance(config, list):
            raise BisentError(f"{source}: expected a list of steps (or a mapping with 'steps'), "
                              f"got {type(config).__name__}")
        if len(config) > MAX_STEPS:
            raise BisentError(f"{source}: {len(config)} steps, more than the {MAX_STEPS} a configuration may have")
        steps = [build_step(i, c, source, src_lang, tgt_lang) for i, c in enumerate(config)]
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

    def value_names(self, name: str | None) -> tuple[str, ...]:
        """The part names of step ``name``'s list values (empty: bare numbers, or not a step)."""
        return next((tuple(s.value_names) for s in self.steps if s.name == name), ())

    # --- scoring ---

    def process(self, pairs: Sequence[Pair]) -> list[FilterResult]:
        """Run the steps over one batch; results in input order. No selection is applied."""
        n = len(pairs)
        pairs = list(pairs)
        reasons: list[str | None] = [None] * n
        scores: list[Value | None] = [None] * n
        alive = list(range(n))
        with vectors.batch_memo():                                     # a text is embedded once per batch
            for step in self.steps:
                if not alive:
                    break
                alive = self._step(step, pairs, alive, reasons, scores)
        return [FilterResult(pairs[i], reasons[i] is None, reasons[i], scores[i]) for i in range(n)]

    def _step(self, step: Step, pairs: list[Pair], alive: list[int], reasons: list[str | None],
              scores: list[Value | None]) -> list[int]:
        """Score the ``alive`` pairs with ``step``; record the rejected; return the survivors."""
        batch = [pairs[i] for i in alive]
        values = self._score(step, batch)
        survivors = []
        rewrite = getattr(step, "rewrite", None)                      # a step that repairs pairs (repair.py)
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
        return survivors

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


__all__ = ["FilterPipeline", "FilterResult", "Step", "Bounds", "register_step", "step_types", "STEP_TYPES",
           "STEP_MODULES", "Pair", "Value", "as_pipeline", "background_sample", "load_config", "check_number",
           "check_choice", "check_bool"]
