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
    given: dict[int, dict] = field(default_factory=dict)            # item -> the last label event of it
    valid_bytes: int | None = None    # the log's length without a last line cut short (None: nothing to cut)

    @property
    def labels(self) -> dict[int, str]:
        return dict(self.history)

    def next_index(self, n_items: int) -> int | None:
        """The first sample item without a label (None: all done)."""
        done = self.labels
        return next((i for i in range(n_items) if i not in done), None)

    def add(self, item, i: int, label: str) -> None:
        if not isinstance(label, str) or label not in LABELS:
            raise BisentError(f"unknown label {label!r} (one of {', '.join(LABELS)})")
        event = {"i": i, "label": label, "key": item.key, "score": item.score, "band": item.band,
                 "src": item.src, "tgt": item.tgt, "time": round(time.time(), 3)}
        self._append(event)
        self.history = [(j, lb) for j, lb in self.history if j != i] + [(i, label)]
        self.given[i] = event

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
        if not self.path.exists():        # the first label: the header goes first, in the same write
            line = (json.dumps({"bisent_review": FORMAT, **self.header}, ensure_ascii=False) + "\n").encode() + line
        elif self.valid_bytes is not None:
            # a last line cut short (a label never answered) goes only now, when the log is written anyway:
            # reading a log never changes it
            with open(self.path, "r+b") as f:
                if os.fstat(f.fileno()).st_size > self.valid_bytes:
                    f.truncate(self.valid_bytes)
            print(f"bisent: {self.path}: removed a last line cut short (a label never answered)", file=sys.stderr)
            self.valid_bytes = None
        with open_append(self.path) as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())


def open_log(path, header: dict, log: LabelLog | None = None) -> LabelLog:
    """The log at ``path``: new with ``header``, or replayed when it exists (its header must match); ``log``: the
    log already read from ``path``.

    A last line cut short (the process killed while writing it, before the page
    was answered) is left out, said so on standard error, and removed from the
    file only when the next label is appended.
    """
    path = Path(path)
    if log is None:
        if not path.exists():
            return LabelLog(path, header)         # written at the first label: looking creates no file
        log = read_log(path)
    if log.header.get("sample_sha256") != header.get("sample_sha256") and all(
            log.header.get(k) == v for k, v in header.items() if k != "sample_sha256"):
        raise BisentError(f"{path}:1: these labels were given on other pairs than the run's output holds now "
                          "(was it rewritten since?); give another --labels file")
    for k, v in header.items():
        if log.header.get(k) != v:
            raise BisentError(f"{path}:1: these labels are of another sample ({k} {log.header.get(k)!r}, now "
                              f"{v!r}); give another --labels file, or the options the labels were drawn with")
    return log


def _item(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


#: the options a header may hold, each with the check its value passes (those the command line allows)
_HEADER = {
    "seed": _item,
    "bands": lambda v: _item(v) and 1 <= v <= 50,
    "per_band": lambda v: v is None or _item(v) and v >= 1,
    "margin": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 0.005 <= v <= 0.5,
    "sample": lambda v: _item(v) and v >= 0,
}


def _check_header(header: dict, path) -> None:
    """The sample options of a header, as the command line would take them (a damaged or hand-edited header is a
    one-line error, not a traceback when the sample is drawn again)."""
    for key, ok in _HEADER.items():
        if key in header and not ok(header[key]):
            raise BisentError(f"{path}:1: the header's {key} {str(header[key])[:40]!r} is not one bisent review "
                              "writes")


def read_log(path) -> LabelLog:
    """Replay the log at ``path`` (header, labels, undos) without changing it; a bad line is a one-line error
    naming it. A last line cut short is left out with a warning (:attr:`LabelLog.valid_bytes` says where it
    starts)."""
    from ..safeload import json_text

    path = Path(path)
    try:
        if not path.is_file():
            raise BisentError(f"{path}: not a regular file" if path.exists() else f"{path}: no such file")
        data = path.read_bytes()
    except OSError as e:
        raise BisentError(f"{path}: cannot read ({e.strerror or e})") from None
    cut = len(data)
    if data and not data.endswith(NL):
        cut = data.rfind(NL) + 1
    lines = data[:cut].split(NL)[:-1] if cut else []
    if not lines:
        raise BisentError(f"{path}:1: " + ("a line cut short, and nothing before it; not a labels file of bisent "
                                           "review" if data else "empty; not a labels file of bisent review"))
    events = []
    for n, line in enumerate(lines, 1):
        ev = json_text(line, path, n)
        if not isinstance(ev, dict):
            raise BisentError(f"{path}:{n}: expected a JSON object")
        events.append((n, ev))
    n, header = events[0]
    if header.get("bisent_review") != FORMAT:
        raise BisentError(f"{path}:1: not a labels file of bisent review (no header line)")
    _check_header(header, path)
    sample = header.get("sample")
    log = LabelLog(path, {k: v for k, v in header.items() if k != "bisent_review"})
    for n, ev in events[1:]:
        i = ev.get("undo", ev.get("i"))
        if _item(i) and _item(sample) and not 0 <= i < sample:
            raise BisentError(f"{path}:{n}: item {i} is not in the sample (items 0..{sample - 1})")
        if "undo" in ev:
            if not log.history or log.history[-1][0] != ev["undo"] or not _item(ev["undo"]):
                raise BisentError(f"{path}:{n}: undo of item {ev['undo']!r}, which is not the last label")
            log.history.pop()
        elif _item(ev.get("i")) and isinstance(ev.get("label"), str) and ev["label"] in LABELS:
            log.history = [(j, lb) for j, lb in log.history if j != ev["i"]] + [(ev["i"], ev["label"])]
            log.given[ev["i"]] = ev
        else:
            raise BisentError(f"{path}:{n}: expected a label {{\"i\": N, \"label\": y|n|p|s}} or {{\"undo\": N}}")
    if cut < len(data):
        log.valid_bytes = cut
        print(f"bisent: warning: {path}:{len(lines) + 1}: a last line cut short (a label never answered) is left "
              "out", file=sys.stderr)
    return log


def labelled_pairs(path) -> list[dict]:
    """The labels in effect in a log, each with its key, score, band, texts and ``parallel`` (True for ``y``;
    ``p`` partial is not parallel); skips are left out. For ``bisent eval ... --labels``."""
    log = read_log(path)
    for i, lb in log.history:
        if lb != "s" and not (isinstance(log.given[i].get("src"), str) and isinstance(log.given[i].get("tgt"), str)):
            raise BisentError(f"{path}: the label of item {i} holds no src and tgt texts")
    return [{**log.given[i], "parallel": lb == "y"} for i, lb in log.history if lb != "s"]


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


def precision_curve(ts, items, labels: dict[int, str], band_scores: list[np.ndarray]):
    """Precision of keeping every pair scoring >= t, for each t of ``ts``, stratified by band:
    ``(estimate, lo, hi, kept)`` arrays (NaN where undefined).

    Each band contributes its pairs scoring >= t, weighted by their count, at
    the precision of its labelled pairs scoring >= t. The interval is the
    stratified Agresti-Coull one: each band's variance from its share moved
    towards 1/2 by z²/2 labels (so a band all parallel still has one), finite-
    population corrected (a band labelled in full adds none). NaN where a band
    with pairs above t has no labelled pair there.
    """
    ts = np.asarray(ts, dtype=np.float64)
    z2 = Z95 * Z95
    total = np.zeros(len(ts))
    num = np.zeros(len(ts))
    parts = []
    bad = np.zeros(len(ts), bool)
    for b, scores in enumerate(band_scores):
        pop = np.sort(np.asarray(scores, dtype=np.float64))
        judged = [(it.score, labels[i] == "y") for i, it in enumerate(items)
                  if it.band == b and labels.get(i, "s") != "s"]
        ls = np.asarray([j[0] for j in judged], dtype=np.float64)
        order = np.argsort(ls, kind="stable")
        ls, ly = ls[order], np.asarray([j[1] for j in judged], dtype=np.float64)[order]
        cum_y = np.concatenate([np.cumsum(ly[::-1])[::-1], [0.0]])        # parallel labels at index and above
        big = len(pop) - np.searchsorted(pop, ts, side="left")            # the band's pairs >= t
        at = np.searchsorted(ls, ts, side="left")
        n = len(ls) - at                                                   # its labels >= t
        yes = cum_y[at]
        bad |= (big > 0) & (n == 0)
        p = np.divide(yes, n, out=np.zeros(len(ts)), where=n > 0)
        total += big
        num += big * p
        parts.append((big, yes, n))
    est = np.divide(num, total, out=np.full(len(ts), np.nan), where=total > 0)
    var = np.zeros(len(ts))
    for big, yes, n in parts:
        fpc = np.divide(big - n, big - 1, out=np.zeros(len(ts)), where=big > 1).clip(0, None)
        p = (yes + z2 / 2) / (n + z2)
        w = np.divide(big, total, out=np.zeros(len(ts)), where=total > 0)
        var += w ** 2 * p * (1 - p) / (n + z2) * fpc
    half = Z95 * np.sqrt(var)
    est[bad] = np.nan
    return est, np.clip(est - half, 0, 1), np.clip(est + half, 0, 1), total.astype(np.int64)


def precision_above(t: float, items, labels: dict[int, str], band_scores: list[np.ndarray]):
    """:func:`precision_curve` at one threshold: ``(estimate, (lo, hi), kept)``, or None where undefined."""
    est, lo, hi, kept = precision_curve([t], items, labels, band_scores)
    if not np.isfinite(est[0]):
        return None
    return float(est[0]), (float(lo[0]), float(hi[0])), int(kept[0])


def threshold_for(precision: float, items, labels: dict[int, str], band_scores: list[np.ndarray]) -> dict | None:
    """The lowest labelled score whose pairs above reach ``precision``, with the precision's interval there
    and the thresholds' interval: from the lowest where the interval's top reaches it (optimistic) to the
    lowest where its bottom does (conservative; None where none does). None: no labels, or never reached."""
    cands = np.asarray(sorted({it.score for i, it in enumerate(items) if labels.get(i, "s") != "s"}))
    if not len(cands):
        return None
    est, lo, hi, kept = precision_curve(cands, items, labels, band_scores)
    ok = np.isfinite(est)

    def first(mask):
        idx = np.flatnonzero(ok & mask)
        return int(idx[0]) if len(idx) else None

    k = first(est >= precision)
    if k is None:
        return None
    opt, cons = first(hi >= precision), first(lo >= precision)
    return {"precision": precision, "threshold": float(cands[k]), "measured": round(float(est[k]), 4),
            "interval": [round(float(lo[k]), 4), round(float(hi[k]), 4)], "kept": int(kept[k]),
            "threshold_interval": [float(cands[opt]), None if cons is None else float(cands[cons])]}
