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

from ..encoders.shards import select_rows
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

    ``x`` and ``y`` are arrays or :class:`~bisent.encoders.shards.Shards` (vectors
    folders, streamed into the blocked kNN block by block, never loaded whole).
    ``scorer`` defaults to the ratio margin with k = 4. Rows where
    ``src_valid``/``tgt_valid`` is False (e.g. rejected, all-zero lines) take
    no part; indices in the result are rows of the full ``x`` and ``y``.
    """
    scorer = scorer or Scorer("ratio", 4)
    if not hasattr(x, "blocks"):
        x = np.asarray(x)
    if not hasattr(y, "blocks"):
        y = np.asarray(y)
    src_rows = np.flatnonzero(src_valid) if src_valid is not None else np.arange(len(x))
    tgt_rows = np.flatnonzero(tgt_valid) if tgt_valid is not None else np.arange(len(y))
    cands = scorer.fit(select_rows(y, tgt_rows)).score(select_rows(x, src_rows), progress=progress)
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

    Vectors are kept in float16 (as ``bisent embed`` stores them) and upcast a
    block at a time, so this mines exactly like the same texts' vectors folders.
    Indices in the result point at the first occurrence of each sentence.
    """
    sides = [_Side.embedded(list(texts), encoder, lang, progress)
             for texts, lang in ((src, src_lang), (tgt, tgt_lang))]
    return _mine_sides(*sides, scorer=scorer, retrieval=retrieval, threshold=threshold, progress=progress)


@dataclass
class _Side:
    """One side to mine: its distinct sentences' vectors and where each distinct sentence first occurs.

    ``vectors`` (u, d): one row per distinct sentence (an fp16 array, or a
    :class:`~bisent.encoders.shards.RowView` of a vectors folder); ``first`` (u,): the
    index of that sentence's first occurrence among the side's texts.
    """

    vectors: object
    first: np.ndarray
    encoder_id: str | None = None   # of a vectors folder

    @classmethod
    def embedded(cls, texts: list[str], encoder, lang: str, progress) -> "_Side":
        from ..encoders.shards import encode_fp16

        distinct, first = unique_rows(texts)
        return cls(encode_fp16(encoder, distinct, lang, progress=progress), first)

    @classmethod
    def from_folder(cls, folder, texts: list[str], ids: list[str], path, lang: str) -> "_Side":
        """Rows of a vectors folder made from ``path`` in ``lang`` (row i = line i + 1); ``ids`` are line
        numbers. Vectors of another file or language, or a shard changed since, are refused."""
        from ..encoders.shards import RowView, Shards

        shards = Shards(folder)
        shards.check_input(path)
        shards.check_lang(lang)
        shards.verify()
        first = unique_rows(texts)[1]
        rows = np.array([int(ids[i]) - 1 for i in first], dtype=np.int64)
        return cls(RowView(shards, rows), first, shards.encoder_id)


def _mine_sides(src: _Side, tgt: _Side, **kw) -> list[MinedPair]:
    """Mine two sides; indices in the result point at each sentence's first occurrence."""
    pairs = mine(src.vectors, tgt.vectors, **kw)
    return [MinedPair(p.score, int(src.first[p.src]), int(tgt.first[p.tgt])) for p in pairs]


def read_collection(path, fmt: str = "plain") -> tuple[list[str], list[str], dict]:
    """Read sentences to mine: ``(texts, ids, counts)``.

    ``plain``: one sentence per line, ids are 1-based line numbers; empty lines
    are skipped and counted; any other bad line is a one-line error.
    ``bucc``: ``id<TAB>sentence`` lines.
    """
    from ..io import read_id_sentences, read_lines

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

    Vectors come from ``encoder`` (through the embedding cache, kept in fp16) or
    from vector folders made by ``bisent embed`` for these files (streamed, not
    loaded); either way each distinct sentence is mined once, at its first line.
    Returns a summary dict.
    """
    from ..errors import BisentError
    from ..io import atomic_write

    if (src_vectors is None) != (tgt_vectors is None):
        raise BisentError("give vectors for both sides (--src-vectors and --tgt-vectors) or for neither")
    if src_vectors is not None and fmt != "plain":
        raise BisentError("precomputed vectors go with plain one-sentence-per-line input")
    src_texts, src_ids, src_counts = read_collection(src_path, fmt)
    tgt_texts, tgt_ids, tgt_counts = read_collection(tgt_path, fmt)
    for path, texts in ((src_path, src_texts), (tgt_path, tgt_texts)):
        if not texts:
            raise BisentError(f"{path}: no sentences to mine (every line is empty)")
    if src_vectors is not None:
        sx = _Side.from_folder(src_vectors, src_texts, src_ids, src_path, src_lang)
        sy = _Side.from_folder(tgt_vectors, tgt_texts, tgt_ids, tgt_path, tgt_lang)
        if sx.encoder_id != sy.encoder_id:
            raise BisentError(f"{src_vectors} and {tgt_vectors} were made by different encoders "
                              f"({sx.encoder_id} vs {sy.encoder_id})")
    else:
        sx = _Side.embedded(src_texts, encoder, src_lang, progress)
        sy = _Side.embedded(tgt_texts, encoder, tgt_lang, progress)
    pairs = _mine_sides(sx, sy, scorer=scorer, retrieval=retrieval, threshold=threshold, progress=progress)
    with_ids = with_ids or fmt == "bucc"
    with atomic_write(out_path) as f:
        for p in pairs:
            row = [f"{p.score:.6f}", src_texts[p.src], tgt_texts[p.tgt]]
            if with_ids:
                row += [src_ids[p.src], tgt_ids[p.tgt]]
            f.write("\t".join(row) + "\n")
    return {"pairs": len(pairs), "src": src_counts, "tgt": tgt_counts,
            "src_unique": len(sx.first), "tgt_unique": len(sy.first), "output": str(out_path)}
