"""Selection after scoring: a threshold, the top N lines, or a budget of target words.

Kim et al. (2019, §4.2) and the WMT 2018 filtering task keep the best-scored
lines up to 10M (or 100M) target words; Artetxe & Schwenk (2019, §4.3) keep the
top-scoring pairs up to a size (10M sentences). In YAML::

    select: {mode: threshold, min: 0.8, step: margin}
    select: {mode: top_n, n: 10000000}
    select: {mode: word_budget, words: 10000000, side: tgt}
    select: {precision: 0.95}

``step`` names the step whose score ranks the lines (default: the last step);
it must give one number per line. Ranking is by score, highest first, ties
broken by input order; NaN ranks last. A kept line that is not selected is
rejected with reason ``select:<mode>`` and its score. A threshold is applied
while streaming; top-N and word budget need a second pass (:func:`select_pass`).

``precision`` (mode ``precision``, implied by the key) is ``bisent filter
--precision`` written in the recipe: keep the pairs above the score step's
threshold whose precision, estimated without gold, is that share. The estimate
needs the finished run, so :func:`bisent.report.finish_filter` applies it
after the steps (rejecting with ``select:precision``), as ``bisent filter``
does; the pipeline itself passes every pair on. ``--precision`` on the command
line overrides it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import BisentError
from ..io import open_binary
from ..progress import progress_bar
from ..safeload import shown_key
from .params import check_choice, check_number
from .records import RECORD, Pair, Value, rejected_line

MODES = ("threshold", "top_n", "word_budget", "precision")


class Selection:
    """One selection rule. Build with :meth:`from_config` or the keyword constructor."""

    def __init__(self, mode: str, *, min: float | None = None, n: int | None = None, words: int | None = None,
                 side: str = "tgt", step: str | None = None, precision: float | None = None):
        self.mode = check_choice("mode", mode, MODES)
        self.step = step
        self.side = check_choice("side", side, ("tgt", "src", "both"))
        self.min = self.n = self.budget = self.precision = None
        if mode == "precision":
            if precision is None:
                raise ValueError("mode precision needs 'precision'")
            self.precision = check_number("precision", precision, low=0, high=1)
        elif precision is not None:
            raise ValueError(f"'precision' is a selection of its own, not part of mode {mode}")
        elif mode == "threshold":
            if min is None:
                raise ValueError("mode threshold needs 'min'")
            self.min = check_number("min", min)
        elif mode == "top_n":
            if n is None:
                raise ValueError("mode top_n needs 'n'")
            self.n = check_number("n", n, low=0, integer=True)
        else:
            if words is None:
                raise ValueError("mode word_budget needs 'words'")
            self.budget = check_number("words", words, low=0, integer=True)
        self.config: dict[str, Any] = {k: v for k, v in {"mode": mode, "min": min, "n": n, "words": words,
                                                         "side": side if mode == "word_budget" else None,
                                                         "precision": precision, "step": step}.items()
                                                if v is not None}

    @classmethod
    def from_config(cls, cfg: Any, *, source: str = "<config>") -> "Selection":
        """From the YAML ``select:`` mapping; mistakes raise a one-line BisentError naming ``source``."""
        if not isinstance(cfg, dict):
            raise BisentError(f"{source}: select: expected a mapping with 'mode', got {type(cfg).__name__}")
        cfg = dict(cfg)
        allowed = {"mode", "min", "n", "words", "side", "step", "precision"}
        unknown = sorted(set(cfg) - allowed)
        if unknown:
            raise BisentError(f"{source}: select: unknown key {shown_key(unknown[0])} (expected: "
                              f"{', '.join(sorted(allowed))})")
        mode = cfg.pop("mode", "precision" if "precision" in cfg else None)
        try:
            return cls(mode, **cfg)
        except (ValueError, TypeError) as e:
            raise BisentError(f"{source}: select: {e}") from None

    @property
    def streaming(self) -> bool:
        """True when each line can be decided alone (threshold), without a second pass."""
        return self.mode in ("threshold", "precision")

    @property
    def reason(self) -> str:
        return f"select:{self.mode}"

    def scalar(self, value: Value | None, step_name: str) -> float:
        """The ranking score of a kept line; a list value is a configuration error."""
        if isinstance(value, (list, tuple)):
            raise BisentError(f"select: step '{step_name}' gives {len(value)} values per line; selection needs "
                              f"a step with one number per line (set 'step:')")
        return math.nan if value is None else float(value)

    def words(self, pair: Pair) -> int:
        """Words counted against a word budget (whitespace tokens of the chosen side)."""
        if self.side == "tgt":
            return len(pair[1].split())
        if self.side == "src":
            return len(pair[0].split())
        return len(pair[0].split()) + len(pair[1].split())

    def passes(self, score: float) -> bool:
        """Threshold decision for one line (NaN fails); a precision target passes every line (applied later)."""
        return True if self.mode == "precision" else score >= self.min  # NaN compares False

    def choose(self, scores: np.ndarray, words: np.ndarray) -> np.ndarray:
        """Boolean mask of the selected lines among ``scores`` (n,) with ``words`` (n,)."""
        scores = np.asarray(scores, dtype=np.float64)
        if self.mode == "precision":
            return np.ones(len(scores), dtype=bool)
        if self.mode == "threshold":
            return scores >= self.min
        order = rank(scores)
        mask = np.zeros(len(scores), dtype=bool)
        if self.mode == "top_n":
            mask[order[:self.n]] = True
        else:
            total = np.cumsum(np.asarray(words, dtype=np.int64)[order])
            mask[order[:int(np.searchsorted(total, self.budget, side="right"))]] = True
        return mask


def precision_target(config) -> float | None:
    """The ``select: {precision: P}`` of a pipeline (a :class:`FilterPipeline`), else None."""
    sel = getattr(config, "selection", None)
    return sel.precision if sel is not None else None


def rank(scores: np.ndarray) -> np.ndarray:
    """Indices by score, highest first; ties in input order; NaN last."""
    key = np.where(np.isnan(scores), -np.inf, scores)
    nan_last = np.isnan(scores).astype(np.int8)
    return np.lexsort((np.arange(len(scores)), -key, nan_last))


def select_pass(pipeline, kept_path: Path, records_path: Path, out, rej_p, *, like: Path,
                progress: bool | None = None, chunk_lines: int = 10_000) -> tuple[int, int]:
    """Second pass for top-N / word budget: pick lines from the scored candidates.

    ``kept_path`` holds the candidate lines (compressed as the name ``like`` says),
    ``records_path`` one :data:`RECORD` per candidate. Selected lines are written
    to ``out``, the others to ``rej_p`` (both opened partial outputs of
    :mod:`.files`, with ``write`` and ``sync``). Returns (selected, rejected).
    """
    sel: Selection = pipeline.selection
    size = records_path.stat().st_size if records_path.exists() else 0
    records = np.fromfile(records_path, dtype=RECORD) if size else np.zeros(0, dtype=RECORD)
    mask = sel.choose(records["score"], records["words"])
    n = 0
    kept_buf: list[bytes] = []
    rej_buf: list[bytes] = []

    def flush() -> None:
        out.write(b"".join(kept_buf))
        rej_p.write(b"".join(rej_buf))
        kept_buf.clear()
        rej_buf.clear()

    if kept_path.exists() and kept_path.stat().st_size:
        reader = open_binary(kept_path, like=like)
        with reader, progress_bar(progress, total=len(records), unit="line", desc="select", leave=False) as bar:
            for raw in reader:
                if n >= len(records):
                    raise RuntimeError(f"{kept_path}: more candidate lines than score records ({len(records)})")
                if mask[n]:
                    kept_buf.append(raw if raw.endswith(b"\n") else raw + b"\n")
                else:
                    rec = records[n]
                    rej_buf.append(rejected_line(int(rec["lineno"]), sel.reason, float(rec["score"]),
                                                 raw[:-1] if raw.endswith(b"\n") else raw))
                n += 1
                if len(kept_buf) + len(rej_buf) >= chunk_lines:
                    flush()
                    bar.update(n - bar.n)
        flush()
    if n != len(records):
        raise RuntimeError(f"{kept_path}: {n} candidate lines but {len(records)} score records")
    out.sync()
    selected = int(mask.sum())
    return selected, len(records) - selected
