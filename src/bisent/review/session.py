"""One review: a run's sample, its label log, and the summary the page, the CLI and the report show."""

from __future__ import annotations

from pathlib import Path

from ..errors import BisentError
from .labels import (
    LabelLog,
    band_precision,
    open_log,
    precision_above,
    precision_curve,
    sample_digest,
    threshold_for,
    wilson,
)
from .sample import BANDS, MARGIN, draw, estimated_band_precision
from .scored_run import ReviewRun, load_run

#: precisions the summary gives a threshold for (besides the one asked for)
TARGETS = (0.9, 0.95, 0.98)


class Review:
    """The sample of ``run`` (seeded, stratified) and its labels at ``labels_path``."""

    def __init__(self, run: ReviewRun, labels_path=None, *, seed: int | None = None, bands: int | None = None,
                 per_band: int | None = None, margin: float | None = None):
        self.run = run
        self.labels_path = Path(labels_path) if labels_path is not None else run.labels_path
        given = {"seed": seed, "bands": bands, "per_band": per_band, "margin": margin}
        old, existing = {}, None
        if self.labels_path.exists():        # resume with the options the labels were drawn with
            from .labels import read_log
            existing = read_log(self.labels_path)
            old = existing.header
        opts = {"seed": 0, "bands": BANDS, "per_band": None, "margin": MARGIN}
        for k in opts:
            if given[k] is not None:
                opts[k] = given[k]
            elif k in old:
                opts[k] = old[k]
        self.options = opts
        if len(run.scores) == 0:
            raise BisentError(f"{run.output}: no scored pairs to review")
        self.items, self.bands, self.band_scores = draw(run.keys, run.scores, run.src, run.tgt, bands=opts["bands"],
                                                        per_band=opts["per_band"], margin=opts["margin"],
                                                        seed=opts["seed"], below=run.below)
        header = {"run": run.name, "kind": run.kind, **opts, "sample": len(self.items),
                  "sample_sha256": sample_digest(self.items)}
        self.log: LabelLog = open_log(self.labels_path, header, existing)
        self.estimate = estimated_band_precision(run.calibration, run.scores)

    def label(self, i: int, label: str) -> None:
        if not 0 <= i < len(self.items):
            raise BisentError(f"no sample item {i} (0..{len(self.items) - 1})")
        self.log.add(self.items[i], i, label)

    def undo(self) -> int | None:
        return self.log.undo()

    def next_index(self) -> int | None:
        return self.log.next_index(len(self.items))

    def threshold(self, precision: float) -> dict | None:
        """The threshold the labels give for ``precision`` (:func:`bisent.review.labels.threshold_for`), with
        the no-gold estimate of the precision at it."""
        got = threshold_for(precision, self.items, self.log.labels, self.band_scores)
        cal = self.run.calibration
        if got is not None and cal is not None:
            got["estimated"] = round(cal.precision_at(got["threshold"]), 4)
        if got is not None and got["threshold_interval"][1] is None:
            # the point estimate reaches it, but at no threshold does the interval's bottom: a cut on so few
            # labels may well be below the precision asked for
            got["warning"] = (f"not reached for certain: at {got['threshold']:.4g} the labels give precision "
                              f"{got['measured']:.3f} (95 % interval {got['interval'][0]:.3f}-{got['interval'][1]:.3f})"
                              f" and no threshold's interval lies above {precision:g}; label more pairs "
                              f"({len(self.log.labels)} so far) before relying on this cut")
        return got

    def prf(self, threshold: float | None = None) -> dict:
        """Precision, recall and F1 the labels give (recall: of the true pairs in the reviewed output, the
        labels' estimate of them), at the best-F1 labelled score and at ``threshold``: ``bisent eval ... --labels``."""
        import numpy as np

        labels = self.log.labels
        whole = precision_above(-np.inf, self.items, labels, self.band_scores)
        if whole is None:
            raise BisentError(f"{self.labels_path}: every score band needs a label (parallel, not or partial) "
                              "for recall")
        true_all = whole[0] * whole[2]

        def rows(ts):
            est, lo, hi, kept = precision_curve(ts, self.items, labels, self.band_scores)
            out = []
            for t, p, a, b, k in zip(ts, est, lo, hi, kept):
                if not np.isfinite(p):
                    out.append(None)
                    continue
                r = p * k / true_all if true_all else 0.0
                out.append({"threshold": float(t), "precision": round(float(p), 4),
                            "precision_interval": [round(float(a), 4), round(float(b), 4)],
                            "recall": round(float(r), 4),
                            "f1": round(float(2 * p * r / (p + r)), 4) if p + r else 0.0, "n_mined": int(k),
                            "n_correct": round(float(p * k), 1), "n_gold": round(float(true_all), 1)})
            return out

        cands = sorted({it.score for i, it in enumerate(self.items) if labels.get(i, "s") != "s"})
        out = {"all": {**rows([-np.inf])[0], "threshold": None},
               "best": max((r for r in rows(cands) if r is not None), key=lambda r: (r["f1"], r["threshold"])),
               "labelled": len(labels)}
        if threshold is not None:
            out["at_threshold"] = rows([threshold])[0]
            if out["at_threshold"] is None:
                raise BisentError(f"--threshold {threshold}: a band with pairs above it has no label there")
        return out

    def summary(self, precision: float | None = None) -> dict:
        """Measured precision per band beside the no-gold estimate, and thresholds from the labels."""
        labels = self.log.labels
        cal = self.run.calibration
        out = {"run": self.run.name, "kind": self.run.kind, "labels": str(self.labels_path),
               "sample": len(self.items), "labelled": len(labels), "options": dict(self.options),
               "bands": band_precision(self.items, labels, self.bands, estimate=self.estimate)}
        t0 = self.run.threshold
        if t0 is not None:
            at = precision_above(t0, self.items, labels, self.band_scores)
            out["run_threshold"] = {"threshold": t0, "measured": None if at is None else round(at[0], 4),
                                    "interval": None if at is None else [round(x, 4) for x in at[1]],
                                    "estimated": None if cal is None else round(cal.precision_at(t0), 4)}
        targets = sorted({*TARGETS, *([precision] if precision is not None else [])})
        out["thresholds"] = [{"precision": p, **(self.threshold(p) or {"threshold": None})} for p in targets]
        out["partial"] = self.partial()
        return out

    def partial(self) -> dict:
        """The pairs labelled partial, for the repair step: how many, their share of the judged pairs (Wilson
        interval), and, when the run's pipeline has a ``repair`` step, what `bisent repair` (every shape of
        cut, the step's model and settings) would cut of each. The step itself left them whole: its default
        shapes cut only a whole glued sentence (:data:`bisent.divergence.STEP_DEFAULTS`)."""
        labels = self.log.labels
        judged = [i for i, lb in labels.items() if lb != "s"]
        mine = sorted(i for i in judged if labels[i] == "p")
        lo, hi = wilson(len(mine), len(judged)) if judged else (0.0, 1.0)
        step = _repair_step(self.run.pipeline)
        if step is not None:
            from ..divergence import repair_pair
        pairs = []
        for i in mine:
            it = self.items[i]
            row = {"key": it.key, "score": it.score, "band": it.band, "src": it.src, "tgt": it.tgt}
            if step is not None:
                r = repair_pair(step.model, it.src, it.tgt, n_best=step.n_best, tau=step.tau, rerank=step.rerank,
                                min_gain=step.min_gain, min_word_gain=step.min_word_gain,
                                boundary_cost=step.boundary_cost)
                row["repair"] = {"status": r.status, "src": r.src, "tgt": r.tgt}
            pairs.append(row)
        out = {"labelled": len(mine), "judged": len(judged),
               "share": round(len(mine) / len(judged), 4) if judged else None,
               "interval": [round(lo, 4), round(hi, 4)] if judged else None,
               "repair_step": None if step is None else {"name": step.name, "model": step.config["model"]},
               "pairs": pairs}
        if step is not None:
            out["would_cut"] = sum(p["repair"]["status"] == "cut" for p in pairs)
        return out


def _repair_step(pipeline):
    """The ``repair`` step of a filter pipeline (None: no pipeline, or none in it)."""
    if pipeline is None:
        return None
    from ..filtering.repair import RepairStep

    return next((s for s in pipeline.steps if isinstance(s, RepairStep)), None)


def open_review(path, labels=None, **options) -> Review:
    """The review of the run at ``path`` (its output, record or folder): :class:`Review`."""
    return Review(load_run(path), labels, **options)
