"""Document-retrieval benchmark (Guo et al. 2019): P@1 over held-out pages from averaged sentence embeddings.

A page's embedding is the unit-normalised mean of its sentence embeddings,
plain (``pooling: mean``) or after centring each side (``pooling: centred``).
``given``: the paragraphs as the help pages give them; ``resplit``: the page's
text joined and re-split into sentences by a real sentence splitter
(``sentencex``), which changes the units that are averaged. P@1 is the share
of pages whose nearest page in the other language is their translation, both ways.
"""

from __future__ import annotations

import itertools

import numpy as np
from sentencex import segment

from ..datasets.libreoffice import load_documents
from ..encoders.base import l2_normalise
from ..evaluate import retrieval_p_at
from .common import Recorder

#: document pooling: plain mean of the sentence embeddings, or mean of the centred ones (the default)
POOLINGS = ("mean", "centred")


def resplit(paragraphs: list[str], lang: str) -> list[str]:
    """Join a page's paragraphs and split the text into sentences."""
    text = " ".join(paragraphs)
    return [s.strip() for s in segment(lang, text) if s.strip()] or [text]


def doc_embeddings(docs: list[list[str]], enc, lang: str, progress=None, *, center: bool = True) -> np.ndarray:
    """(n_docs, d): unit mean of each document's sentence embeddings (all sentences embedded in one call).

    ``center``: subtract the mean sentence embedding of this side's collection
    first. The sentences of one language share a direction of their own (a
    language offset: strong in max-pooled RNN states and in me5-small); a page
    mean keeps it whole while the page-specific part shrinks as sentences are
    averaged, so across languages it drowns the topic. Centring each side
    removes it and lifts page retrieval for every encoder measured (en-de P@1
    src->tgt: me5-small 71 -> 95, the Kim 2019 model 41 -> 81).
    """
    flat = [s for d in docs for s in d]
    owner = np.repeat(np.arange(len(docs)), [len(d) for d in docs])
    v = enc.encode(flat, lang, progress=progress).astype(np.float64)    # (n_sentences, d)
    if center:
        v -= v.mean(axis=0)
    sums = np.zeros((len(docs), v.shape[1]), dtype=np.float64)
    np.add.at(sums, owner, v)
    return l2_normalise(sums.astype(np.float32))


def run(src_lang: str, tgt_lang: str, encoders: list, record: Recorder, *, limit: int | None = None,
        split: str = "test", progress: bool | None = None) -> list[dict]:
    docs = [d for d in load_documents(src_lang, tgt_lang, split=split) if d.src and d.tgt]
    if limit:
        docs = docs[:limit]
    views = {
        "given": ([[p.text for p in d.src] for d in docs], [[p.text for p in d.tgt] for d in docs]),
        "resplit": ([resplit([p.text for p in d.src], src_lang) for d in docs],
                    [resplit([p.text for p in d.tgt], tgt_lang) for d in docs]),
    }
    out = []
    for enc in encoders:
        for (view, (s_docs, t_docs)), pooling in itertools.product(views.items(), POOLINGS):
            a = doc_embeddings(s_docs, enc, src_lang, progress, center=pooling == "centred")
            b = doc_embeddings(t_docs, enc, tgt_lang, progress, center=pooling == "centred")
            p_st, p_ts = retrieval_p_at(a, b, 1)
            out.append(record({"pair": f"{src_lang}-{tgt_lang}", "encoder": enc.name, "encoder_id": enc.id,
                               "view": view, "pooling": pooling, "n_docs": len(docs), "split": split,
                               "mean_units_src": round(float(np.mean([len(d) for d in s_docs])), 1),
                               "p_at_1_src_tgt": round(100 * p_st, 2), "p_at_1_tgt_src": round(100 * p_ts, 2)}))
    return out
