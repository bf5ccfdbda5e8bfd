"""The labels a person gives, as an append-only JSONL log, and what they say about precision.

The log's first line is a header naming the sample (run, seed, bands, pairs
per band and a digest of the sampled pairs), so a review resumes only on the
sample it was started on. Every later line is one event as given: a label
(``y`` parallel, ``n`` not, ``p`` partial, ``s`` skip) of sample item ``i``,
with its key, score, band and texts (the log is data on its own), or an undo.
Each line is appended in one write and synced before the page is answered, so
killing the server loses no label the page showed as taken.

Measured precision is ``y / (y + n + p)`` (partial counts as not parallel;
skips are left out) with Wilson's interval, finite-population corrected: a
band labelled in full has no sampling error left.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import BisentError
from ..io import open_append

LABELS = {"y": "parallel", "n": "not parallel", "p": "partial", "s": "skipped"}
FORMAT = 1
NL = b"\n"
Z95 = 1.959964


def wilson(k: int, n: int, *, population: int | None = None, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval of ``k`` successes in ``n`` draws (without replacement from ``population``)."""
    if n <= 0:
        return (0.0, 1.0)
    p = k / n
    if population is not None and population > 1:
        if n >= population:
            return (p, p)
        n = n * (population - 1) / (population - n)      # effective size: the variance's finite-population factor
    d = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / d
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, mid - half), min(1.0, mid + half))


def sample_digest(items) -> str:
    """A digest of the sampled pairs (keys and texts): a log resumes only on the same sample."""
    h = hashlib.sha256()
    for it in items:
        h.update(json.dumps([it.key, it.src, it.tgt], ensure_ascii=False).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


@dataclass
class LabelLog:
    """The labels of one sample: replayed from the log at ``path``, appended to as they are given."""

    path: Path
    header: dict
    history: list[tuple[int, str]] = field(default_factory=list)   # labels in effect, in the order given

    @property
    def labels(self) -> dict[int, str]:
        return dict(self.history)

    def next_index(self, n_items: int) -> int | None:
        """The first sample item without a label (None: all done)."""
        done = self.labels
        return next((i for i in range(n_items) if i not in done), None)

    def add(self, item, i: int, label: str) -> None:
        if label not in LABELS:
            raise BisentError(f"unknown label {label!r} (one of {', '.join(LABELS)})")
        self._append({"i": i, "label": label, "key": item.key, "score": item.score, "band": item.band,
                      "src": item.src, "tgt": item.tgt, "time": round(time.time(), 3)})
        self.history = [(j, lb) for j, lb in self.history if j != i] + [(i, label)]

    def undo(self) -> int | None:
        """Take back the last label in effect; returns its item (None: nothing to undo)."""
        if not self.history:
            return None
        i = self.history[-1][0]
        self._append({"undo": i, "time": round(time.time(), 3)})
        self.history.pop()
        return i

    def _append(self, event: dict) -> None:
        line = (json.dumps(event, ensure_ascii=False) + "\n").encode("utf-8")
        with open_append(self.path) as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())


def open_log(path, header: dict) -> LabelLog:
    """The log at ``path``: created with ``header``, or replayed when it exists (its header must match).

    A last line cut short (the process killed while writing it, before the page
    was answered) is removed, and said so on standard error.
    """
    path = Path(path)
    if not path.exists():
        log = LabelLog(path, header)
        log._append({"bisent_review": FORMAT, **header})
        return log
    log = read_log(path, repair=True)
    for k, v in header.items():
        if log.header.get(k) != v:
            raise BisentError(f"{path}:1: these labels are of another sample ({k} {log.header.get(k)!r}, now "
                              f"{v!r}); give another --labels file, or the options the labels were drawn with")
    return log


def read_log(path, *, repair: bool = False) -> LabelLog:
    """Replay the log at ``path`` (header, labels, undos); a bad line is a one-line error naming it."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise BisentError(f"{path}: {e.strerror}") from None
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        if not repair:
            raise BisentError(f"{path}:{data.count(NL) + 1}: a line cut short (the review was killed while "
                              "writing it); run `bisent review` on it once to remove it")
        with open(path, "r+b") as f:
            f.truncate(cut)
        print(f"bisent: {path}: removed a last line cut short (a label never answered)", file=sys.stderr)
        data = data[:cut]
    lines = data.decode("utf-8", errors="strict").splitlines() if data else []
    if not lines:
        raise BisentError(f"{path}:1: empty; not a labels file of bisent review")
    events = []
    for n, line in enumerate(lines, 1):
        try:
            ev = json.loads(line)
        except ValueError:
            raise BisentError(f"{path}:{n}: not a JSON line") from None
        if not isinstance(ev, dict):
            raise BisentError(f"{path}:{n}: expected a JSON object")
        events.append((n, ev))
    n, header = events[0]
    if header.get("bisent_review") != FORMAT:
        raise BisentError(f"{path}:1: not a labels file of bisent review (no header line)")
    log = LabelLog(path, {k: v for k, v in header.items() if k != "bisent_review"})
    for n, ev in events[1:]:
        if "undo" in ev:
            if not log.history or log.history[-1][0] != ev["undo"]:
                raise BisentError(f"{path}:{n}: undo of item {ev['undo']}, which is not the last label")
            log.history.pop()
        elif isinstance(ev.get("i"), int) and ev.get("label") in LABELS:
            log.history = [(j, lb) for j, lb in log.history if j != ev["i"]] + [(ev["i"], ev["label"])]
        else:
            raise BisentError(f"{path}:{n}: expected a label {{\"i\": N, \"label\": y|n|p|s}} or {{\"undo\": N}}")
    return log


def labelled_pairs(path) -> list[dict]:
    """The labels in effect in a log, each with its key, score, band, texts and ``parallel`` (True for ``y``;
    ``p`` partial is not parallel); skips are left out. For ``bisent eval ... --labels``."""
    log = read_log(path)
    last = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines()[1:]:
        ev = json.loads(line)
        if "label" in ev:
            last[ev["i"]] = ev
    return [{**last[i], "parallel": lb == "y"} for i, lb in log.history if lb != "s"]


# ---------------------------------------------------------------------------
# What the labels say
# ---------------------------------------------------------------------------

def band_precision(items, labels: dict[int, str], bands: list[dict], *, estimate=None) -> list[dict]:
    """Per band: labels given, measured precision with its interval, and the no-gold estimate beside it.

    ``estimate(lo, hi) -> float | None``: the calibration's precision of the
    pairs scoring in [lo, hi] (:func:`bisent.review.sample.estimated_band_precision`).
    """
    out = []
    for b, band in enumerate(bands):
        got = [labels[i] for i, it in enumerate(items) if it.band == b and i in labels]
        yes, judged = got.count("y"), sum(lb != "s" for lb in got)
        row = {"band": b + 1, "high": band["high"], "low": band["low"], "pairs": band["pairs"],
               "sampled": band["sampled"], "labelled": len(got), "parallel": yes, "partial": got.count("p"),
               "not_parallel": got.count("n"), "skipped": got.count("s"),
               "precision": round(yes / judged, 4) if judged else None,
               "interval": [round(x, 4) for x in wilson(yes, judged, population=band["pairs"])] if judged else None}
        row["estimated"] = None if estimate is None else estimate(band["low"], band["high"])
        out.append(row)
    return out


def precision_above(t: float, items, labels: dict[int, str], band_scores: list[np.ndarray]):
    """Precision of keeping every pair scoring >= ``t``, stratified by band: ``(estimate, (lo, hi), kept)``.

    Each band contributes its pairs scoring >= t, weighted by their count, at
    the precision of its labelled pairs scoring >= t. The interval is the
    stratified Agresti-Coull one: each band's variance from its share moved
    towards 1/2 by z²/2 labels (so a band all parallel still has one), finite-
    population corrected (a band labelled in full adds none). None where a band
    with pairs above ``t`` has no labelled pair there.
    """
    parts = []
    for b, scores in enumerate(band_scores):
        big = int(np.count_nonzero(scores >= t))
        if not big:
            continue
        got = [labels[i] for i, it in enumerate(items) if it.band == b and i in labels and labels[i] != "s"
               and it.score >= t]
        if not got:
            return None
        parts.append((big, got.count("y"), len(got)))
    if not parts:
        return None
    total = sum(p[0] for p in parts)
    est = sum(big * yes / n for big, yes, n in parts) / total
    z2 = Z95 * Z95
    var = 0.0
    for big, yes, n in parts:
        fpc = max(0.0, (big - n) / (big - 1)) if big > 1 else 0.0
        p = (yes + z2 / 2) / (n + z2)
        var += (big / total) ** 2 * p * (1 - p) / (n + z2) * fpc
    half = Z95 * math.sqrt(var)
    return est, (max(0.0, est - half), min(1.0, est + half)), total


def threshold_for(precision: float, items, labels: dict[int, str], band_scores: list[np.ndarray]) -> dict | None:
    """The lowest labelled score whose pairs above reach ``precision``, with the precision's interval there
    and the thresholds' interval: from the lowest where the interval's top reaches it (optimistic) to the
    lowest where its bottom does (conservative; None where none does). None: no labels, or never reached."""
    cands = sorted({it.score for i, it in enumerate(items) if labels.get(i, "s") != "s"})
    curve = [(t, r) for t in cands if (r := precision_above(t, items, labels, band_scores)) is not None]
    point = next(((t, r) for t, r in curve if r[0] >= precision), None)
    if point is None:
        return None
    opt = next(t for t, r in curve if r[1][1] >= precision)
    cons = next((t for t, r in curve if r[1][0] >= precision), None)
    t, (est, (lo, hi), kept) = point
    return {"precision": precision, "threshold": t, "measured": round(est, 4), "interval": [round(lo, 4), round(hi, 4)],
            "kept": kept, "threshold_interval": [opt, cons]}
