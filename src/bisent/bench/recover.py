"""Alignment-recovery benchmark (Kim 2019, section 4.1): shuffle held-out pairs, find each sentence's translation.

Error rate in both directions: the share of sources whose best-scoring target
is not their translation (src→tgt), and of targets likewise (tgt→src), with
cosine, Euclidean, CSLS and the ratio margin.
"""

from __future__ import annotations

from ..datasets.domains import split_pairs
from ..evaluate import recovery_error, sample_distinct_pairs
from .common import Recorder

KINDS = ("cosine", "euclidean", "csls", "ratio")


def run(src_lang: str, tgt_lang: str, encoders: list, record: Recorder, *, limit: int = 3000, split: str = "test",
        k: int = 4, progress: bool | None = None, domain: str = "libreoffice") -> list[dict]:
    pairs = sample_distinct_pairs(split_pairs(domain, src_lang, tgt_lang, split), limit=limit)
    out = []
    for enc in encoders:
        x = enc.encode([p.src for p in pairs], src_lang, progress=progress)
        y = enc.encode([p.tgt for p in pairs], tgt_lang, progress=progress)
        for kind in KINDS:
            e_st, e_ts = recovery_error(x, y, kind, k)
            out.append(record({"pair": f"{src_lang}-{tgt_lang}", "domain": domain, "encoder": enc.name,
                               "encoder_id": enc.id,
                               "score": kind, "k": k, "n": len(pairs), "split": split,
                               "error_src_tgt": round(100 * e_st, 2), "error_tgt_src": round(100 * e_ts, 2)}))
    return out
