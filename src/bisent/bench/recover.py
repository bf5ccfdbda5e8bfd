"""Alignment-recovery benchmark (Kim 2019, section 4.1): shuffle held-out pairs, find each sentence's translation.

Error rate in both directions: the share of sources whose best-scoring target
is not their translation (src→tgt), and of targets likewise (tgt→src), with
cosine, Euclidean, CSLS and the ratio margin. Beside use-m3 in the same run, every other encoder's record
also compares the two item by item (``paired_*``; ``benchmarks/gaps.py`` sums them up over the sets).
"""

from __future__ import annotations

from ..datasets.domains import split_pairs
from ..evaluate import paired_gap, pairs_fingerprint, recovery_misses, sample_distinct_pairs
from .common import Recorder

KINDS = ("cosine", "euclidean", "csls", "ratio")


def encoder_misses(pairs: list, encoders: list, src_lang: str, tgt_lang: str, kinds=KINDS, k: int = 4, *,
                   progress: bool | None = None) -> dict[str, dict[str, tuple]]:
    """Per encoder name and score: :func:`bisent.evaluate.recovery_misses` of ``pairs`` (two ``(n,)`` bool
    arrays, src->tgt and tgt->src)."""
    out = {}
    for enc in encoders:
        x = enc.encode([p.src for p in pairs], src_lang, progress=progress)
        y = enc.encode([p.tgt for p in pairs], tgt_lang, progress=progress)
        out[enc.name] = {kind: recovery_misses(x, y, kind, k) for kind in kinds}
    return out


def miss_fields(m_st, m_ts, ref: tuple | None = None, reference: str = "use-m3") -> dict:
    """A record's error fields from ``(n,)`` bool misses both ways and, given the ``reference``'s misses ``ref`` on
    the same items, the item-by-item comparison (``vs``, ``paired_src_tgt``, ``paired_tgt_src``)."""
    out = {"error_src_tgt": round(100 * float(m_st.mean()), 2), "error_tgt_src": round(100 * float(m_ts.mean()), 2)}
    if ref is not None:
        out.update({"vs": reference, "paired_src_tgt": paired_gap(m_st, ref[0]),
                    "paired_tgt_src": paired_gap(m_ts, ref[1])})
    return out


def run(src_lang: str, tgt_lang: str, encoders: list, record: Recorder, *, limit: int = 3000, split: str = "test",
        k: int = 4, progress: bool | None = None, domain: str = "libreoffice", reference: str = "use-m3") -> list[dict]:
    """One record per encoder and score. When the ``reference`` encoder is in the run, every other encoder's
    record also says how it differs from the reference item by item (``vs``, and ``paired_src_tgt`` /
    ``paired_tgt_src``: :func:`bisent.evaluate.paired_gap`), so a gap of a point or two can be told from noise.
    ``set`` fingerprints the pairs (:func:`bisent.evaluate.pairs_fingerprint`), so records of different runs
    are compared only on the same pairs."""
    pairs = sample_distinct_pairs(split_pairs(domain, src_lang, tgt_lang, split), limit=limit)
    misses = encoder_misses(pairs, encoders, src_lang, tgt_lang, KINDS, k, progress=progress)
    ref = misses.get(reference)
    fingerprint = pairs_fingerprint(pairs)
    out = []
    for enc in encoders:
        for kind in KINDS:
            m_st, m_ts = misses[enc.name][kind]
            rec = {"pair": f"{src_lang}-{tgt_lang}", "domain": domain, "encoder": enc.name, "encoder_id": enc.id,
                   "score": kind, "k": k, "n": len(pairs), "split": split, "set": fingerprint,
                   **miss_fields(m_st, m_ts, ref[kind] if ref is not None and enc.name != reference else None,
                                 reference)}
            out.append(record(rec))
    return out
