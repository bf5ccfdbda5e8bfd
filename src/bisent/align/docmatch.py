"""Sentence-Avg document matching across two collections: the ``documents`` stage of ``bisent run``.

A stand-in until ``bisent docs mine`` (issue 13) is in this tree. Each
document (one sentence per line) is the unit mean of its sentences'
embeddings after centring each side's sentences on that side's mean (the
language offset otherwise drowns the topic; see :mod:`bisent.bench.docs`).
Documents are matched one to one by the ratio margin (k = 4) with mutual
best retrieval (``intersect``) above ``threshold``; every other document is
listed as unmatched with the reason.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..encoders import get_encoder
from ..encoders.base import l2_normalise
from ..errors import BisentError
from ..mining import mine
from ..scoring import MarginScorer
from .files import read_document


def collection_files(path) -> list[Path]:
    """The documents of a collection: the visible files of a folder (sorted), or the paths listed in a file."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
    elif path.is_file():
        files = [p if p.is_absolute() else path.parent / p
                 for p in (Path(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip())]
    else:
        raise BisentError(f"{path}: no such folder or list of documents")
    if not files:
        raise BisentError(f"{path}: no documents")
    return files


def doc_vectors(docs: list[list[str]], enc, lang: str) -> np.ndarray:
    """(n_docs, d): unit mean of each document's centred sentence embeddings."""
    flat = [s for d in docs for s in d]
    v = enc.encode(flat, lang).astype(np.float64)                 # (n_sentences, d)
    v -= v.mean(axis=0)
    owner = np.repeat(np.arange(len(docs)), [len(d) for d in docs])
    sums = np.zeros((len(docs), v.shape[1]))
    np.add.at(sums, owner, v)
    return l2_normalise(sums.astype(np.float32))


def match_documents(src_files, tgt_files, src_lang: str, tgt_lang: str, *, encoder: str = "use-m3",
                    threshold: float = 1.0, k: int = 4) -> tuple[list[tuple[Path, Path, float]], list[tuple[str, Path, str]]]:
    """``(matched [(src, tgt, score)], unmatched [(side, path, reason)])``: every document in one of them."""
    enc = get_encoder(encoder)
    unmatched, sides = [], []
    for side, files, lang in (("src", src_files, src_lang), ("tgt", tgt_files, tgt_lang)):
        docs, ok = [], []
        for f in files:
            try:
                docs.append(read_document(f, lang).sentences)
                ok.append(f)
            except BisentError as e:
                unmatched.append((side, f, f"unreadable: {e}"))
        sides.append((docs, ok, lang))
    (s_docs, s_ok, _), (t_docs, t_ok, _) = sides
    matched = []
    if s_docs and t_docs:
        x, y = doc_vectors(s_docs, enc, src_lang), doc_vectors(t_docs, enc, tgt_lang)
        kk = max(1, min(k, len(s_docs), len(t_docs)))
        pairs = mine(x, y, MarginScorer(k=kk), retrieval="intersect", threshold=threshold)
        matched = sorted(((s_ok[p.src], t_ok[p.tgt], float(p.score)) for p in pairs), key=lambda r: str(r[0]))
    used_s, used_t = {m[0] for m in matched}, {m[1] for m in matched}
    unmatched += [("src", f, "no mutual match above the threshold") for f in s_ok if f not in used_s]
    unmatched += [("tgt", f, "no mutual match above the threshold") for f in t_ok if f not in used_t]
    return matched, unmatched
