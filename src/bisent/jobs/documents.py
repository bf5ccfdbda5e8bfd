"""The document mining job: each document of one collection matched to one of the other
(``bisent documents mine``; Guo et al. 2019).

Reads both collections, embeds them (Sentence-Avg, HiDE or Document BoW, :mod:`bisent.documents`), optionally
re-ranks the nearest documents by how well their sentences align (:mod:`bisent.mining.rerank`), writes one row
per source document, and the report record. The reading and embedding helpers serve ``bisent eval docs`` too.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import BisentError
from ..mining.rerank import WEIGHT
from .common import check_paths, fspaths

#: the encoder of the documents unless told otherwise (Sentence-Avg of this sentence encoder)
DEFAULT_ENCODER = "use-m3"


def _paths(kw: dict) -> dict:
    """OUTPUT.report.json beside the matches when ``report`` is given."""
    return {"writes": {"--output record": f"{kw['output']}.report.json" if kw["report"] else None}}


#: the paths of a document mining run, for :func:`bisent.paths.guarded` and :func:`bisent.jobs.common.check_paths`
PATHS = {"reads": ("src_docs", "tgt_docs"), "writes": ("output", "report"), "derived": _paths}


def load_rerank_encoder(depth: int, name: str | None):
    """The re-ranking's own sentence encoder, loaded before any document is embedded (a bad name fails at once),
    or None (no re-ranking, or the document encoder's own)."""
    from ..encoders import get_encoder

    return get_encoder(name) if depth and name else None


def rerank_tables(src, tgt, enc, src_lang, tgt_lang, depth, weight, sent, progress=None):
    """``(src_table, tgt_table, depth, weight)`` for :func:`bisent.documents.mine_documents`, or None (off);
    ``sent``: the re-ranking's sentence encoder (None: the document encoder's own)."""
    if not depth:
        return None
    from ..mining.rerank import sentence_tables

    tables = sentence_tables([d.sentences for d in src], [d.sentences for d in tgt], enc, src_lang, tgt_lang,
                             encoder=sent, progress=progress)
    if tables is None:
        raise BisentError(f"--rerank: the document model {enc.name} has no sentence encoder of its own; "
                          "give one with --rerank-encoder (e.g. use-m3)")
    return (*tables, depth, weight)


def embed_collections(src_docs, tgt_docs, src_lang, tgt_lang, encoder, segmentation, *, centred=True, progress=None,
                      check=None):
    """Read both collections and embed them: ``(src docs, tgt docs, encoder, a (n, d), b (m, d))``.

    ``check(src, tgt)``, when given, runs after reading and before the (slow) embedding, so a bad gold
    file or mined file fails in seconds, not after an hour of encoding."""
    from ..documents import get_document_encoder, read_documents

    src = read_documents(src_docs, src_lang, segmentation=segmentation)
    tgt = read_documents(tgt_docs, tgt_lang, segmentation=segmentation)
    if check is not None:
        check(src, tgt)
    enc = get_document_encoder(encoder, centred=centred)
    a = enc.encode_documents([d.sentences for d in src], src_lang, progress=progress)
    b = enc.encode_documents([d.sentences for d in tgt], tgt_lang, progress=progress)
    return src, tgt, enc, a, b


def documents(src_docs, tgt_docs, *, src_lang: str, tgt_lang: str, output, encoder: str = DEFAULT_ENCODER,
              segmentation: str = "sentencex", plain_mean: bool = False, score: str = "ratio", k: int = 4,
              threshold: float | str | None = None, min_cosine: float | str | None = None,
              progress: bool | None = None, report=None, rerank_depth: int = 0,
              rerank_weight: float = WEIGHT, rerank_encoder: str | None = None) -> dict:
    """Match each document of ``src_docs`` to one of ``tgt_docs`` (JSONL of ``{"id", "text"}`` or folders of text
    files) into the TSV ``output``, as ``bisent documents mine`` does; returns the summary it prints.

    ``threshold`` (ratio margin) and ``min_cosine`` (cosine of the plain mean sentence embeddings): pairs below
    either are reported unmatched (None: the defaults chosen on dev pages; ``"none"``: off); ``rerank_depth``:
    re-score the DEPTH nearest documents each way by sentence alignment (0: off).
    """
    from ..documents import match_settings, mine_documents, plain_means, write_matches

    src_docs, tgt_docs, output, report = fspaths(src_docs, tgt_docs, output, report)
    check_paths(PATHS, locals())
    sent = load_rerank_encoder(rerank_depth, rerank_encoder)
    src, tgt, enc, a, b = embed_collections(src_docs, tgt_docs, src_lang, tgt_lang, encoder, segmentation,
                                            centred=not plain_mean, progress=progress)
    rr = rerank_tables(src, tgt, enc, src_lang, tgt_lang, rerank_depth, rerank_weight, sent, progress)
    threshold, min_cosine, settings = match_settings(threshold, min_cosine)
    counts = write_matches(mine_documents(src, tgt, a, b, k=k, score=score, threshold=threshold, rerank=rr,
                                          min_cosine=min_cosine,
                                          plain=plain_means(enc, src, tgt, src_lang, tgt_lang)), output)
    summary = {"src_documents": len(src), "tgt_documents": len(tgt), **counts, "encoder": enc.name, **settings,
               "output": output}
    if rr:
        summary["rerank"] = {"depth": rerank_depth, "weight": rerank_weight}
    if report:
        params = {"encoder": enc.name, "score": score, "k": k, "src_lang": src_lang, "tgt_lang": tgt_lang,
                  "segmentation": segmentation, "src_docs": str(Path(src_docs).resolve()),
                  "tgt_docs": str(Path(tgt_docs).resolve())}
        summary.update(_report(src, tgt, a, b, output, report, rr, threshold, score, k, params, summary))
    return summary


def _report(src, tgt, a, b, output, report, rr, threshold, score, k, params, summary) -> dict:
    """The record ``OUTPUT.report.json`` (calibrated when the scores are plain document scores) and the report."""
    from ..report.record import SUFFIX, docs_record
    from ..report.runs import documents_calibration, write_report

    # the calibration models the plain document score; re-ranked scores are another scale: none then
    cal = None if rr else documents_calibration(a, b, src_ok=[d.reason is None for d in src],
                                                tgt_ok=[d.reason is None for d in tgt], score=score, k=k)
    rec = docs_record(output, src_text={d.id: " ".join(d.sentences) for d in src},
                      tgt_text={d.id: " ".join(d.sentences) for d in tgt}, threshold=threshold, params=params,
                      summary=summary, calibration=cal)
    return write_report(rec, f"{output}{SUFFIX}", report, title=f"bisent documents mine: {output}")


__all__ = ["DEFAULT_ENCODER", "PATHS", "documents", "embed_collections", "load_rerank_encoder", "rerank_tables"]
