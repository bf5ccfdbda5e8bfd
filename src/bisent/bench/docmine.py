"""Parallel document mining at pool scale (Guo et al. 2019, Tables 2, 3 and 5): P@1/3/10 both ways.

The candidate pool of each side is EVERY document of the documentation sources
of :mod:`bisent.datasets.docsets` in that language (LibreOffice help, the GIMP
manual, GNOME help and applications, manual pages, LilyPond, and HTML manuals
cut into sections), all splits; the queries are the gold pairs of the test split. A query must find its translation
among all pages of the other language (distractors from the other packages included).

Views: ``given`` (the pages' own paragraphs) and ``resplit`` (paragraphs cut
into sentences by ``sentencex``). Every document is cut to its first
``max_units`` units of the view (the pool's embedding cost on a shared CPU).

Document encoders: Sentence-Avg (centred) of every sentence encoder of the
run, and each trained document model (HiDE, Document BoW) given with
``-e MODEL_DIR``; anchors use-m3 and me5-small (me5-small on the LibreOffice
test pages alone: :data:`SMALL_POOL`), floor char-ngram. Each record says which sources its queries
come from, so a model trained on LibreOffice is also measured on the others.
"""

from __future__ import annotations

import numpy as np

from ..datasets.docsets import SOURCES, build_docset, load_docset
from ..documents import get_document_encoder, make_document
from ..evaluate import retrieval_p_at_n
from .common import Recorder

VIEWS = {"given": "given", "resplit": "sentencex"}
MAX_UNITS = 16


def load_pool(src_lang: str, tgt_lang: str, view: str, *, sources=SOURCES, max_units: int = MAX_UNITS,
              split: str = "test", limit_distractors: int | None = None, max_queries: int | None = None):
    """Both sides' documents and the gold pairs of ``split``: ``(src_docs, tgt_docs, gold_rows, gold_sources)``.

    ``gold_rows`` (g, 2): rows of each gold pair in ``src_docs`` / ``tgt_docs``.
    ``limit_distractors``: keep only that many other pages per side (a smaller pool, deterministic);
    ``max_queries``: that many gold pairs, evenly spaced over the sources (quick checks).
    """
    raw: dict[str, list[tuple[str, list]]] = {"src": [], "tgt": []}
    row: dict[tuple[str, str], int] = {}
    gold, gsrc = [], []
    for source in sources:
        ds = load_docset(build_docset(source, src_lang, tgt_lang))
        for side in ("src", "tgt"):
            for d in ds[side]:
                row[side, d["id"]] = len(raw[side])
                raw[side].append((d["id"], d["text"]))
        for s_id, t_id, sp in ds["gold"]:
            if sp == split:
                gold.append((row["src", s_id], row["tgt", t_id]))
                gsrc.append(source)
    gold_rows, gsrc = np.array(gold, dtype=np.int64).reshape(-1, 2), np.array(gsrc)
    if max_queries is not None and max_queries < len(gold_rows):
        pick = np.linspace(0, len(gold_rows) - 1, max_queries).astype(np.int64)
        gold_rows, gsrc = gold_rows[pick], gsrc[pick]
    docs = {}
    for k, (side, lang) in enumerate((("src", src_lang), ("tgt", tgt_lang))):
        keep = range(len(raw[side]))
        if limit_distractors is not None:
            queries = set(gold_rows[:, k].tolist())
            others = [i for i in keep if i not in queries]
            keep = sorted(queries | set(np.random.default_rng(0).permutation(others)[:limit_distractors].tolist()))
            remap = {old: new for new, old in enumerate(keep)}
            gold_rows[:, k] = [remap[i] for i in gold_rows[:, k]]
        docs[side] = []
        for i in keep:
            doc = make_document(raw[side][i][0], raw[side][i][1], raw[side][i][0], lang, VIEWS[view])
            doc.sentences = doc.sentences[:max_units]
            docs[side].append(doc)
    return docs["src"], docs["tgt"], gold_rows, gsrc


def evaluate(enc, src_docs, tgt_docs, gold_rows, gold_sources, src_lang, tgt_lang, progress=None,
             rerank: int = 0) -> list[dict]:
    """P@N overall and per query source, for one document encoder on one pool; with ``rerank`` > 0 also
    with that many candidates re-scored by sentence alignment (records with ``rerank``: depth)."""
    a = enc.encode_documents([d.sentences for d in src_docs], src_lang, progress=progress)
    b = enc.encode_documents([d.sentences for d in tgt_docs], tgt_lang, progress=progress)
    settings = [None]
    if rerank:
        from ..mining.rerank import WEIGHT, sentence_tables

        tables = sentence_tables([d.sentences for d in src_docs], [d.sentences for d in tgt_docs], enc, src_lang,
                                 tgt_lang, progress=progress)
        if tables is not None:
            settings.append((*tables, rerank, WEIGHT))
    out = []
    for rr in settings:
        for name in ["all", *dict.fromkeys(gold_sources.tolist())]:
            sel = np.ones(len(gold_rows), bool) if name == "all" else gold_sources == name
            if sel.any():
                out.append({"queries": name, "n_queries": int(sel.sum()),
                            **({"rerank": rr[2], "rerank_weight": rr[3]} if rr else {}),
                            **retrieval_p_at_n(a, b, gold_rows[sel, 0], gold_rows[sel, 1], rerank=rr)})
    return out


def split_models(names) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``-e`` names of a run: (sentence encoders, trained document model directories)."""
    from pathlib import Path

    from ..encoders.trained import read_config
    from ..models.hide import DOC_ARCHITECTURES

    def is_doc(n: str) -> bool:
        return (Path(n) / "config.json").is_file() and read_config(n).get("architecture") in DOC_ARCHITECTURES

    return tuple(n for n in names if not is_doc(n)), tuple(n for n in names if is_doc(n))


#: me5-small embeds ~45 sentences/s on one idle core: it runs on the LibreOffice test pages alone
SMALL_POOL = {"me5-small": {"sources": ("libreoffice",), "limit_distractors": 0}}


def run(src_lang: str, tgt_lang: str, encoders: list, record: Recorder, *, limit: int | None = None,
        doc_models: tuple[str, ...] = (), views=tuple(VIEWS), progress: bool | None = None,
        max_units: int = MAX_UNITS, max_queries: int | None = None, rerank: int = 0,
        split: str = "test") -> list[dict]:
    """Sentence-Avg of every encoder and every document model, in every view; ``limit`` caps distractors per side;
    ``rerank`` > 0: each also with that many candidates re-scored by sentence alignment
    (:mod:`bisent.mining.rerank`)."""
    from .common import ANCHORS

    out = []
    for view in views:
        pools: dict = {}
        for name in [e.name for e in encoders] + list(doc_models):
            opts = {**SMALL_POOL.get(name, {"limit_distractors": limit}), "max_queries": max_queries, "split": split}
            key = repr(opts)
            if key not in pools:
                pools[key] = load_pool(src_lang, tgt_lang, view, max_units=max_units, **opts)
            pool = pools[key]
            denc = get_document_encoder(name)
            for r in evaluate(denc, *pool, src_lang, tgt_lang, progress, rerank=rerank):
                out.append(record({"pair": f"{src_lang}-{tgt_lang}", "encoder": denc.name, "encoder_id": denc.id,
                                   "anchor": name in ANCHORS, "view": view, "max_units": max_units, "gold_split": split,
                                   "pool": "libreoffice test pages" if name in SMALL_POOL else "all sources",
                                   "pool_src": len(pool[0]), "pool_tgt": len(pool[1]), **r}))
    return out
