"""Mining parallel sentences: candidates from kNN both ways, a retrieval rule, a threshold.

Retrieval modes (Artetxe & Schwenk 2019, section 3):

- ``fwd``: every source takes its best-scoring target candidate;
- ``bwd``: every target takes its best-scoring source candidate;
- ``intersect``: only pairs found both ways;
- ``max``: pool the forward and backward best candidates, sort by score, and
  accept greedily while neither side was used yet (one-to-one).

Then pairs scoring below the threshold are dropped and the rest sorted best
first. :func:`mine` works on vectors; :func:`mine_texts` embeds and
de-duplicates sentences first so that a repeated sentence is mined once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .scoring import Candidates, Scorer

RETRIEVALS = ("max", "fwd", "bwd", "intersect")


@dataclass(frozen=True)
class MinedPair:
    score: float
    src: int  # row of the source collection
    tgt: int  # row of the target collection


def best_candidates(c: Candidates) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The best-scoring candidate each way: (fwd_best (n,), fwd_score (n,), bwd_best (m,), bwd_score (m,))."""
    n, m = len(c.fwd_idx), len(c.bwd_idx)
    if c.fwd_score.shape[1] == 0 or c.bwd_score.shape[1] == 0:
        z = np.zeros(0, np.int64)
        return z, np.zeros(0, np.float32), z, np.zeros(0, np.float32)
    fa = c.fwd_score.argmax(axis=1)
    ba = c.bwd_score.argmax(axis=1)
    return (c.fwd_idx[np.arange(n), fa], c.fwd_score[np.arange(n), fa],
            c.bwd_idx[np.arange(m), ba], c.bwd_score[np.arange(m), ba])


def retrieve(c: Candidates, mode: str = "max") -> list[MinedPair]:
    """Apply a retrieval rule to scored candidates; pairs in no particular order."""
    if mode not in RETRIEVALS:
        raise ValueError(f"unknown retrieval '{mode}' (one of {', '.join(RETRIEVALS)})")
    fb, fs, bb, bs = best_candidates(c)
    n, m = len(fb), len(bb)
    if n == 0 or m == 0:
        return []
    if mode == "fwd":
        return [MinedPair(float(fs[i]), i, int(fb[i])) for i in range(n)]
    if mode == "bwd":
        return [MinedPair(float(bs[j]), int(bb[j]), j) for j in range(m)]
    if mode == "intersect":
        return [MinedPair(float(fs[i]), i, int(fb[i])) for i in range(n) if bb[fb[i]] == i]
    # max: pool both directions, greedy one-to-one by score (stable order: forward first on ties)
    src = np.concatenate([np.arange(n), bb])
    tgt = np.concatenate([fb, np.arange(m)])
    score = np.concatenate([fs, bs])
    used_s = np.zeros(n, dtype=bool)
    used_t = np.zeros(m, dtype=bool)
    out = []
    for p in np.argsort(-score, kind="stable"):
        i, j = src[p], tgt[p]
        if not used_s[i] and not used_t[j]:
            used_s[i] = used_t[j] = True
            out.append(MinedPair(float(score[p]), int(i), int(j)))
    return out


def mine(x, y, scorer: Scorer | None = None, *, retrieval: str = "max", threshold: float | None = None,
         src_valid: np.ndarray | None = None, tgt_valid: np.ndarray | None = None,
         progress: bool | None = None) -> list[MinedPair]:
    """Mine pairs between sources ``x`` (n, d) and targets ``y`` (m, d): best first.

    ``scorer`` defaults to the ratio margin with k = 4. Rows where
    ``src_valid``/``tgt_valid`` is False (e.g. rejected, all-zero lines) take
    no part; indices in the result are rows of the full ``x`` and ``y``.
    """
    scorer = scorer or Scorer("ratio", 4)
    x = np.asarray(x) if not hasattr(x, "blocks") else x.load()
    y = np.asarray(y) if not hasattr(y, "blocks") else y.load()
    src_rows = np.flatnonzero(src_valid) if src_valid is not None else np.arange(len(x))
    tgt_rows = np.flatnonzero(tgt_valid) if tgt_valid is not None else np.arange(len(y))
    xs = x if len(src_rows) == len(x) else x[src_rows]
    ys = y if len(tgt_rows) == len(y) else y[tgt_rows]
    cands = scorer.fit(ys).score(xs, progress=progress)
    pairs = retrieve(cands, retrieval)
    if threshold is not None:
        pairs = [p for p in pairs if p.score >= threshold]
    pairs.sort(key=lambda p: (-p.score, p.src, p.tgt))
    return [MinedPair(p.score, int(src_rows[p.src]), int(tgt_rows[p.tgt])) for p in pairs]


def unique_rows(texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """Distinct texts in first-seen order and, for each, the index of its first occurrence."""
    first: dict[str, int] = {}
    for i, t in enumerate(texts):
        first.setdefault(t, i)
    return list(first), np.fromiter(first.values(), dtype=np.int64, count=len(first))


def mine_texts(src: Sequence[str], tgt: Sequence[str], encoder, src_lang: str, tgt_lang: str, *,
               scorer: Scorer | None = None, retrieval: str = "max", threshold: float | None = None,
               progress: bool | None = None) -> list[MinedPair]:
    """Embed two lists of sentences and mine them; repeated sentences are embedded and mined once.

    Indices in the result point at the first occurrence of each sentence.
    """
    su, s_first = unique_rows(src)
    tu, t_first = unique_rows(tgt)
    x = encoder.encode(su, src_lang, progress=progress)
    y = encoder.encode(tu, tgt_lang, progress=progress)
    pairs = mine(x, y, scorer, retrieval=retrieval, threshold=threshold, progress=progress)
    return [MinedPair(p.score, int(s_first[p.src]), int(t_first[p.tgt])) for p in pairs]


def read_collection(path, fmt: str = "plain") -> tuple[list[str], list[str], dict]:
    """Read sentences to mine: ``(texts, ids, counts)``.

    ``plain``: one sentence per line, ids are 1-based line numbers; empty lines
    are skipped and counted; any other bad line is a one-line error.
    ``bucc``: ``id<TAB>sentence`` lines.
    """
    from .io import read_id_sentences, read_lines

    texts, ids, empty = [], [], 0
    if fmt == "bucc":
        for _, ident, text in read_id_sentences(path):
            ids.append(ident)
            texts.append(text)
    elif fmt == "plain":
        for line in read_lines(path):
            if line.problem:
                empty += 1
                continue
            ids.append(str(line.lineno))
            texts.append(line.text)
    else:
        raise ValueError(f"unknown input format '{fmt}' (plain, bucc)")
    return texts, ids, {"lines": len(texts) + empty, "empty": empty}


def mine_files(src_path, tgt_path, src_lang: str, tgt_lang: str, encoder, out_path, *,
               scorer: Scorer | None = None, retrieval: str = "max", threshold: float | None = None,
               fmt: str = "plain", with_ids: bool = False, src_vectors=None, tgt_vectors=None,
               progress: bool | None = None) -> dict:
    """Mine two files into ``out_path`` (TSV ``score, src, tgt[, src_id, tgt_id]``, best first).

    Vectors come from ``encoder`` (through the embedding cache) or from vector
    folders made by ``bisent embed`` for these files. Returns a summary dict.
    """
    from .errors import BisentError
    from .io import atomic_write
    from .vectors import Shards

    src_texts, src_ids, src_counts = read_collection(src_path, fmt)
    tgt_texts, tgt_ids, tgt_counts = read_collection(tgt_path, fmt)
    if (src_vectors is None) != (tgt_vectors is None):
        raise BisentError("give vectors for both sides (--src-vectors and --tgt-vectors) or for neither")
    if src_vectors is not None:
        if fmt != "plain":
            raise BisentError("precomputed vectors go with plain one-sentence-per-line input")
        sx, sy = Shards(src_vectors), Shards(tgt_vectors)
        sx.check_input(src_path)
        sy.check_input(tgt_path)
        if sx.encoder_id != sy.encoder_id:
            raise BisentError(f"{src_vectors} and {tgt_vectors} were made by different encoders "
                              f"({sx.encoder_id} vs {sy.encoder_id})")
        # rows are lines; keep the non-empty first occurrences (same rule as mine_texts)
        xs, ys = sx.load(), sy.load()
        s_rows = np.array([int(i) - 1 for i in src_ids], dtype=np.int64)[unique_rows(src_texts)[1]]
        t_rows = np.array([int(i) - 1 for i in tgt_ids], dtype=np.int64)[unique_rows(tgt_texts)[1]]
        s_valid = np.zeros(len(xs), bool)
        s_valid[s_rows] = True
        t_valid = np.zeros(len(ys), bool)
        t_valid[t_rows] = True
        line_to_idx_s = {int(i) - 1: k for k, i in enumerate(src_ids)}
        line_to_idx_t = {int(i) - 1: k for k, i in enumerate(tgt_ids)}
        raw = mine(xs, ys, scorer, retrieval=retrieval, threshold=threshold, src_valid=s_valid,
                   tgt_valid=t_valid, progress=progress)
        pairs = [MinedPair(p.score, line_to_idx_s[p.src], line_to_idx_t[p.tgt]) for p in raw]
    else:
        pairs = mine_texts(src_texts, tgt_texts, encoder, src_lang, tgt_lang, scorer=scorer,
                           retrieval=retrieval, threshold=threshold, progress=progress)
    with_ids = with_ids or fmt == "bucc"
    with atomic_write(out_path) as f:
        for p in pairs:
            row = [f"{p.score:.6f}", src_texts[p.src], tgt_texts[p.tgt]]
            if with_ids:
                row += [src_ids[p.src], tgt_ids[p.tgt]]
            f.write("\t".join(row) + "\n")
    return {"pairs": len(pairs), "src": src_counts, "tgt": tgt_counts,
            "src_unique": len(unique_rows(src_texts)[0]), "tgt_unique": len(unique_rows(tgt_texts)[0]),
            "output": str(out_path)}
