"""Parallel-vs-sampled accuracy (Zhang et al. 2016, §6.2.2 and Table 2): is a translation scored above random text?

For each held-out source sentence, its reference translation (parallel) is
compared with ``samples`` sampled target "sentences" (non-parallel): each
has a length drawn uniformly from 1 to the reference's length in words
(the paper's footnote 7) and words drawn from the target side of the test
set (all its words, so frequent words are frequent). Accuracy is the share of
(source, sample) comparisons where the parallel pair scores strictly higher
(a tie counts half), averaged over ``evaluations`` rounds of fresh samples.
The paper's setting: 5 evaluations x 3 samples. The samples are seeded, so
every run embeds the same texts and the persistent cache makes reruns cheap.

Scores: cosine for every encoder (on unit vectors the Euclidean similarity of
the paper's Eq. 13 ranks identically); an encoder with a ``pair_scores``
method (BBoWAE: the entropy score of the paper's footnote 6) is also
measured with it.
"""

from __future__ import annotations

import numpy as np

from ..datasets.libreoffice import load_pairs
from ..evaluate import sample_distinct_pairs
from .common import Recorder


def sample_targets(references: list[str], evaluations: int, samples: int, seed: int = 0) -> list[list[list[str]]]:
    """``[evaluation][source][sample]`` texts: lengths U{1..len(reference)}, words from all references' words."""
    words = [r.split() for r in references]
    pool = [w for ws in words for w in ws]
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(evaluations):
        rows = []
        for ws in words:
            lengths = rng.integers(1, max(1, len(ws)) + 1, size=samples)
            rows.append([" ".join(pool[i] for i in rng.integers(0, len(pool), size=n)) for n in lengths])
        out.append(rows)
    return out


def accuracy(parallel: np.ndarray, sampled: np.ndarray) -> float:
    """Share of ``sampled`` (n, s) scores strictly below their row's ``parallel`` (n,) score; ties count half."""
    p = parallel[:, None]
    return float(np.mean((sampled < p) + 0.5 * (sampled == p)))


def run(src_lang: str, tgt_lang: str, encoders: list, record: Recorder, *, limit: int = 500, evaluations: int = 5,
        samples: int = 3, split: str = "test", seed: int = 0, progress: bool | None = None) -> list[dict]:
    pairs = sample_distinct_pairs(load_pairs(src_lang, tgt_lang, split=split), limit=limit)
    src, ref = [p.src for p in pairs], [p.tgt for p in pairs]
    sampled = sample_targets(ref, evaluations, samples, seed)              # [e][i][s]
    flat = [t for ev in sampled for row in ev for t in row]                # e-major, then source, then sample
    out = []
    for enc in encoders:
        scorers = {"cosine": None}
        if hasattr(enc, "pair_scores"):
            scorers["entropy"] = enc.pair_scores
        x = enc.encode(src, src_lang, progress=progress)                                  # (n, D)
        y = enc.encode(ref, tgt_lang, progress=progress)                                  # (n, D)
        z = enc.encode(flat, tgt_lang, progress=progress).reshape(evaluations, len(src), samples, -1)
        for name, fn in scorers.items():
            accs = []
            for e in range(evaluations):
                if fn is None:
                    par = np.einsum("nd,nd->n", x, y)                                     # (n,)
                    smp = np.einsum("nd,nsd->ns", x, z[e])                                # (n, s)
                else:
                    par = fn(src, ref, src_lang, tgt_lang)
                    smp = fn([s for s in src for _ in range(samples)], [t for row in sampled[e] for t in row],
                             src_lang, tgt_lang).reshape(len(src), samples)
                accs.append(accuracy(par, smp))
            out.append(record({"pair": f"{src_lang}-{tgt_lang}", "encoder": enc.name, "encoder_id": enc.id,
                               "score": name, "n": len(src), "evaluations": evaluations, "samples": samples,
                               "split": split, "accuracy": round(100 * float(np.mean(accs)), 2),
                               "accuracy_min": round(100 * min(accs), 2), "accuracy_max": round(100 * max(accs), 2)}))
    return out
