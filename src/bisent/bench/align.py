"""Sentence-alignment benchmark: strict / lax P/R/F1 on translated help pages re-split into sentences.

Two sources (:data:`bisent.datasets.align_gold.SOURCES`): LibreOffice help,
whose gold follows from the paragraph ids, and GNOME help, whose gold follows
from the block positions of itstool-translated Mallard pages
(:mod:`bisent.datasets.align_gold`). Each
encoder aligns every page of the split with :class:`SentenceAligner` at its
default settings (chosen on dev pages); Gale-Church's length model is measured
in the same run. Four views (:data:`VIEWS`): ``clean`` (the pages as
translated: nearly all 1-1), ``drop10`` (a tenth of the paragraphs lose their
translation on one side: what real document pairs look like, and where a
length model breaks), ``merge10`` (a tenth of neighbouring paragraph pairs
merged into one line on one side: 2-1, 1-2, 3-1, 1-3 blocks) and
``drop10-merge10`` (both: the hardest). A fifth view, ``paragraphs``
(:func:`run_paragraphs`, LibreOffice help only), keeps every paragraph of the pages that hold a
non-1-1 one (m-n paragraphs whose inner gold is unknown, untranslated paragraphs) and scores
paragraph consistency beside the exact part. ``limit`` caps the pages (me5-small embeds ~45 sentences/s on
one CPU thread and the groups of 1-3 sentences triple the texts: give it fewer pages).

``gold`` (``bisent bench align --gold DIR``): instead of help pages, a folder of
human-aligned documents in the vecalign / Bleualign layout: ``NAME.SRC`` and
``NAME.TGT`` (one sentence per line) and ``NAME.SRCTGT`` (e.g. ``dev.de``,
``dev.fr``, ``dev.defr``), the gold as ``[i, ...]:[j, ...]`` lines of 0-based
line numbers (:func:`load_gold_dir`). Scored as vecalign's ``score.py``
(:func:`bisent.align.score_alignments`), summed over the folder's documents.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import NamedTuple

from ..align import GALE_CHURCH, SentenceAligner, line_blocks, read_alignment, read_document, score_alignments
from ..align.files import Document
from ..datasets.align_gold import MANY, SOURCES, UNTRANSLATED, load_align_task, load_paragraph_task
from ..errors import BisentError
from .common import Recorder


class GoldDoc(NamedTuple):
    """One human-aligned document pair of a gold folder: both sides and the gold blocks (0-based lines)."""

    name: str
    src: Document
    tgt: Document
    gold: list[tuple[tuple[int, ...], tuple[int, ...]]]


def load_gold_dir(folder, src_lang: str, tgt_lang: str) -> list[GoldDoc]:
    """Every ``NAME.SRC`` of ``folder`` (name order) with its ``NAME.TGT`` and gold ``NAME.SRCTGT``.

    A missing partner file, a gold block outside the documents or a gold that
    does not account for every non-empty line once is a one-line error.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise BisentError(f"{folder}: no such folder")
    docs = []
    for src_path in sorted(folder.glob(f"*.{src_lang}")):
        stem = src_path.name[:-len(src_lang) - 1]
        tgt_path, gold_path = folder / f"{stem}.{tgt_lang}", folder / f"{stem}.{src_lang}{tgt_lang}"
        for p in (tgt_path, gold_path):
            if not p.is_file():
                raise BisentError(f"{p}: no such file (the partner of {src_path.name})")
        src, tgt = read_document(src_path, src_lang), read_document(tgt_path, tgt_lang)
        gold = read_alignment(gold_path)
        for side, doc, k in (("source", src, 0), ("target", tgt, 1)):
            seen = sorted(i for b in gold for i in b[k])
            bad = [i for i in seen if not 0 <= i < doc.n_lines]
            if bad:     # a line in two blocks is refused by read_alignment itself
                raise BisentError(f"{gold_path}: {side} line {bad[0]} is outside {doc.n_lines} lines")
        docs.append(GoldDoc(stem, src, tgt, gold))
    if not docs:
        raise BisentError(f"{folder}: no *.{src_lang} documents (expected NAME.{src_lang}, NAME.{tgt_lang}, "
                          f"NAME.{src_lang}{tgt_lang})")
    return docs


def run_gold(folder, src_lang: str, tgt_lang: str, encoders: list, record: Recorder, *,
             progress: bool | None = None, peers: bool = True, **aligner_options) -> list[dict]:
    """Strict / lax P/R/F1 of Gale-Church and each encoder (and, with ``peers``, the installed peer aligners
    fed the same embeddings) on the documents of a gold folder."""
    docs = load_gold_dir(folder, src_lang, tgt_lang)
    gold = [d.gold for d in docs]
    stats = {"n_docs": len(docs), "src_sentences": sum(len(d.src.sentences) for d in docs),
             "tgt_sentences": sum(len(d.tgt.sentences) for d in docs),
             "gold_blocks": sum(len(d.gold) for d in docs),
             "gold_1_1": sum(len(s) == 1 and len(t) == 1 for d in docs for s, t in d.gold)}
    out = []
    for enc in [GALE_CHURCH] + list(encoders):
        for name, enc_id, blocks, options, t0 in _aligned(enc, [(d.src.sentences, d.tgt.sentences) for d in docs],
                                                          src_lang, tgt_lang, progress, aligner_options, peers):
            hyp = [[(b.src, b.tgt) for b in line_blocks(bl, d.src, d.tgt)] for bl, d in zip(blocks, docs)]
            out.append(_gold_row(record, folder, src_lang, tgt_lang, name, enc_id, stats, hyp, gold, options, t0))
    return out


#: Peer aligners on PyPI measured beside bisent when installed (vecalign's DP, fed bisent's embeddings).
PEERS = ("sentalign",)


class _SidedEncoder:
    """What a peer that embeds without a language sees: bisent's encoder, told each call's language in
    the order the peer embeds (``langs``: one per call)."""

    def __init__(self, encoder, langs: list[str]):
        self.encoder, self.langs = encoder, list(langs)

    def encode(self, texts):
        return self.encoder.encode(list(texts), self.langs.pop(0), progress=False)


def run_peer(name: str, docs: list[tuple[list[str], list[str]]], encoder, src_lang: str, tgt_lang: str,
             max_size: int | None = None):
    """Sentence blocks of each document (``(source sentences, target sentences)``) by peer ``name`` at its own
    defaults (``max_size``: its largest group a + b instead, e.g. bisent's, so that both search the same block
    shapes over the same embeddings), with ``encoder``'s embeddings; with its version and start time. None when
    the peer is not installed."""
    import importlib.metadata

    if name != "sentalign":
        raise ValueError(f"unknown peer {name!r}")
    try:
        from sentalign import sentalign
    except ImportError:
        return None
    import inspect

    from ..align.aligner import Block

    size = max_size or inspect.signature(sentalign).parameters["alignment_max_size"].default
    t0 = time.perf_counter()
    out = []
    for src, tgt in docs:   # sentalign embeds the groups of 1..size sentences of the source, then of the target
        res = sentalign(src, tgt, encoder=_SidedEncoder(encoder, [src_lang] * size + [tgt_lang] * size),
                        alignment_max_size=size)
        out.append([Block(tuple(a.src_indices), tuple(a.tgt_indices)) for a in res.alignments])
    return out, importlib.metadata.version("sentalign"), t0


def _aligned(enc, docs: list[tuple[list[str], list[str]]], src_lang: str, tgt_lang: str, progress,
             aligner_options: dict, peers: bool):
    """The blocks of each document (``(source sentences, target sentences)``) by the aligner of ``enc`` (or
    Gale-Church), then, with ``peers``, by each installed peer fed the same encoder: yields ``(name, encoder id,
    blocks per document, aligner options, start time)`` per aligner."""
    aligner = SentenceAligner(enc, progress=progress, **aligner_options)
    t0 = time.perf_counter()
    blocks = [aligner.align(src, tgt, src_lang, tgt_lang).blocks for src, tgt in docs]
    yield aligner.name, getattr(aligner.encoder, "id", GALE_CHURCH), blocks, aligner_options, t0
    if peers and aligner.encoder is not None:
        for peer in PEERS:
            res = run_peer(peer, docs, aligner.encoder, src_lang, tgt_lang, max_size=aligner.max_size)
            if res is not None:
                blocks, version, t0 = res
                yield (f"{peer}+{aligner.name}", f"{peer}-{version}+{aligner.encoder.id}", blocks,
                       {"max_size": aligner.max_size}, t0)


def _gold_row(record, folder, src_lang, tgt_lang, name, enc_id, stats, hyp, gold, options, t0) -> dict:
    sc = score_alignments(hyp, gold)
    return record({"pair": f"{src_lang}-{tgt_lang}", "source": f"gold:{Path(folder).name}", "encoder": name,
                   "encoder_id": enc_id, "view": "gold", "split": "gold", **stats, **sc.as_dict(),
                   "aligner": options, "seconds": round(time.perf_counter() - t0, 1)})


def run(src_lang: str, tgt_lang: str, encoders: list, record: Recorder, *, limit: int | None = None,
        split: str = "test", progress: bool | None = None, sources=SOURCES, gold=None, views=None,
        peers: bool = True, **aligner_options) -> list[dict]:
    if gold is not None:
        if limit is not None or split != "test" or views:
            raise BisentError("--gold: the folder's documents are aligned whole (no --limit, --split or --view)")
        return run_gold(gold, src_lang, tgt_lang, encoders, record, progress=progress, peers=peers,
                        **aligner_options)
    views = list(views or ALL_VIEWS)
    out = []
    for source in sources:
        for view in views:
            if view == PARAGRAPHS:
                if source != "libreoffice":     # GNOME pages: identical blocks already left out, few m-n ones
                    continue
                out += run_paragraphs(source, src_lang, tgt_lang, encoders, record, split=split, limit=limit,
                                      progress=progress, peers=peers, **aligner_options)
                continue
            drop, merge = VIEWS[view]
            docs, stats = load_align_task(src_lang, tgt_lang, split, limit=limit, drop=drop, merge=merge,
                                          source=source)
            for enc in [GALE_CHURCH] + list(encoders):
                out += _run_one(enc, view, docs, stats, src_lang, tgt_lang, split, record, progress,
                                aligner_options, source, peers)
    return out


def paragraph_scores(hyp, docs) -> dict:
    """Scores of hypothesis blocks (one list of ``(src, tgt)`` a document) on the paragraph gold
    (:func:`bisent.datasets.align_gold.load_paragraph_task`).

    - ``strict_*`` / ``lax_*``: vecalign's P/R/F1 against the exact sentence gold
      (exact paragraphs, untranslated sentences as 1-0 / 0-1), the hypothesis
      blocks that lie inside one ``many`` paragraph left out (their gold is unknown);
    - ``para_error``: % of the aligned hypothesis blocks (both sides non-empty) whose
      sentences are not all in one paragraph pair: certainly wrong whatever the
      alignment inside paragraphs; ``para_error_many``: the same over the blocks
      that touch a ``many`` paragraph (where the exact gold says nothing);
    - ``untranslated_skipped``: % of the sentences of untranslated paragraphs (both
      sides) left unaligned (1-0 / 0-1), as the gold has them.
    """
    aligned = crossing = many_blocks = many_crossing = untranslated = skipped = 0
    exact = []
    for blocks, d in zip(hyp, docs, strict=True):
        kind = [k for *_, k in d.paragraphs]
        ps = {i: k for k, (s, _, _) in enumerate(d.paragraphs) for i in s}
        pt = {j: k for k, (_, t, _) in enumerate(d.paragraphs) for j in t}
        keep = []
        for s, t, *_ in blocks:
            paras = {ps[i] for i in s} | {pt[j] for j in t}
            if s and t:
                cross = len(paras) > 1
                aligned, crossing = aligned + 1, crossing + cross
                if any(kind[k] == MANY for k in paras):
                    many_blocks, many_crossing = many_blocks + 1, many_crossing + cross
            else:
                skipped += sum(kind[ps[i]] == UNTRANSLATED for i in s) + sum(kind[pt[j]] == UNTRANSLATED for j in t)
            if not (len(paras) == 1 and kind[next(iter(paras))] == MANY):
                keep.append((tuple(s), tuple(t)))
        exact.append(keep)
        untranslated += sum(len(s) + len(t) for s, t, k in d.paragraphs if k == UNTRANSLATED)
    sc = score_alignments(exact, [d.gold for d in docs])

    def pct(a: int, b: int) -> float:
        return round(100 * a / b, 2) if b else 0.0

    return {**sc.as_dict(), "para_error": pct(crossing, aligned), "para_error_many": pct(many_crossing, many_blocks),
            "aligned_blocks": aligned, "many_blocks": many_blocks, "untranslated_sentences": untranslated,
            "untranslated_skipped": pct(skipped, untranslated)}


def run_paragraphs(source: str, src_lang: str, tgt_lang: str, encoders: list, record: Recorder, *,
                   split: str = "test", limit: int | None = None, progress: bool | None = None, peers: bool = True,
                   **aligner_options) -> list[dict]:
    """The ``paragraphs`` view: Gale-Church, each encoder and (``peers``) the installed peers fed the same
    embeddings on the paragraph gold of one split, scored by :func:`paragraph_scores`."""
    docs, stats = load_paragraph_task(src_lang, tgt_lang, split, limit=limit, source=source)
    if not docs:
        raise BisentError(f"no {source} pages with paragraph gold in the {split} split of {src_lang}-{tgt_lang}")
    base = {"pair": f"{src_lang}-{tgt_lang}", "source": source, "view": PARAGRAPHS, "split": split,
            "n_docs": len(docs), **{k: v for k, v in stats.items() if k not in ("pages_kept",)}}
    out = []
    for enc in [GALE_CHURCH] + list(encoders):
        for name, enc_id, blocks, options, t0 in _aligned(enc, [(d.src, d.tgt) for d in docs], src_lang, tgt_lang,
                                                          progress, aligner_options, peers):
            hyp = [[(b.src, b.tgt) for b in bl] for bl in blocks]
            out.append(record({**base, "encoder": name, "encoder_id": enc_id, **paragraph_scores(hyp, docs),
                               "aligner": options, "seconds": round(time.perf_counter() - t0, 1)}))
    return out


#: view name -> (share of paragraphs whose translation is removed, share of paragraph pairs merged on one side)
VIEWS = {"clean": (0.0, 0.0), "drop10": (0.1, 0.0), "merge10": (0.0, 0.1), "drop10-merge10": (0.1, 0.1)}
#: the view of the paragraph gold (every paragraph kept, m-n ones scored by paragraph consistency)
PARAGRAPHS = "paragraphs"
ALL_VIEWS = (*VIEWS, PARAGRAPHS)


def _run_one(enc, view, docs, stats, src_lang, tgt_lang, split, record, progress, aligner_options,
             source, peers: bool = False) -> list[dict]:
    """Align every page with one encoder (or Gale-Church) and record strict / lax P/R/F1; with ``peers``, the
    installed peer aligners fed the same encoder's embeddings too."""
    gold = [d.gold for d in docs]
    out = []
    for name, enc_id, blocks, options, t0 in _aligned(enc, [(d.src, d.tgt) for d in docs], src_lang, tgt_lang,
                                                      progress, aligner_options, peers):
        hyp = [[(b.src, b.tgt) for b in bl] for bl in blocks]
        out.append(record({"pair": f"{src_lang}-{tgt_lang}", "source": source, "encoder": name, "view": view,
                           "encoder_id": enc_id, "split": split,
                           "n_docs": len(docs), "src_sentences": stats["src_sentences"],
                           "tgt_sentences": stats["tgt_sentences"], "gold_blocks": stats["blocks"],
                           "gold_1_1": stats["blocks_1_1"], "merged": stats["merged"],
                           **score_alignments(hyp, gold).as_dict(), "aligner": options,
                           "seconds": round(time.perf_counter() - t0, 1)}))
    return out
