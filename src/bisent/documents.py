"""Document embeddings and parallel document mining (Guo et al. 2019, ``guo2019`` in references.bib).

A document is an id and its sentences. Every document encoder maps a list of
documents to unit rows ``(n_docs, d)`` (an empty document gets a zero row,
which is never matched):

- :class:`SentenceAvg`: the mean of a sentence encoder's embeddings (§3.1.1),
  by default after centring: each side's mean sentence embedding is
  subtracted first, which removes the per-language offset that otherwise
  drowns the topic (benchmarks/README.md, "Centring");
- :class:`bisent.models.hide.HiDEEncoder`: a feed-forward network on the frozen
  sentence embeddings, applied before (DNN→pooling) or after (pooling→DNN) the mean (§3.2);
- :class:`bisent.models.hide.DocBoWEncoder`: a DAN over the document's hashed unigrams (§3.1.2).

Sentence embeddings are summed per document in chunks of ``chunk`` sentences,
so memory is bounded by one chunk plus ``n_docs × d`` floats however long a
document is. The persistent embedding cache makes a second run free.

Documents come from a JSONL file (one ``{"id": ..., "text": ...}`` per line,
``text`` a string or a list of paragraphs) or a folder of UTF-8 text files
(id = path inside the folder). :func:`read_documents` splits paragraphs into
sentences with ``sentencex`` (``segmentation="sentencex"``) or keeps the
given units (``"given"``: list items, or lines of a string).

Mining (:func:`mine_documents`) is the sentence-level path at document level:
kNN both ways over the document vectors (:mod:`bisent.mining.index`), the margin of
Artetxe & Schwenk (:mod:`bisent.mining.scoring`), one-to-one max-score retrieval
(:mod:`bisent.mining.retrieval`); every source document gets one output row, matched
or with the reason it is not.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np

from .encoders.documents import CHUNK, DocumentEncoder, SentenceAvg, sentence_sums  # noqa: F401  (re-exported)
from .errors import BisentError
from .io import atomic_write
from .safeload import MAX_DEPTH, too_deep
from .values import config_number

SEGMENTATIONS = ("sentencex", "given")

#: default of ``bisent documents mine --threshold`` and of ``bisent run``'s documents stage: the ratio margin a
#: document pair must reach (chosen on dev pages with the cosine floor below, benchmarks/README.md, "Documents: the
#: default threshold")
DEFAULT_THRESHOLD = 1.3
#: default of ``--min-cosine``: the cosine of the two documents' plain (uncentred) mean sentence embeddings a pair
#: must reach as well. A margin compares a pair with its neighbours only, so in a small collection, or among pages
#: of another kind, an unrelated pair can have a high one; the floor holds whatever the neighbours are. Centred
#: vectors do not serve: centring a collection of two kinds of page makes each kind point its own way
DEFAULT_MIN_COSINE = 0.7


# --- documents ----------------------------------------------------------------------------------------

@dataclass
class Document:
    """One document: ``id``, its sentences, where it came from (``file:line`` or a path)."""

    id: str
    sentences: list[str]
    origin: str

    @property
    def reason(self) -> str | None:
        """Why this document cannot be embedded, or None."""
        return None if self.sentences else "empty document"


def split_sentences(paragraphs: Iterable[str], lang: str) -> list[str]:
    """Sentences of each paragraph by ``sentencex`` (paragraph breaks are always sentence breaks)."""
    from sentencex import segment

    out = []
    for p in paragraphs:
        p = " ".join(p.split())
        if p:
            out.extend(s.strip() for s in segment(lang, p) if s.strip())
    return out


def _units(text, origin: str) -> list[str]:
    if isinstance(text, str):
        return [ln for ln in text.splitlines() if ln.strip()]
    if isinstance(text, list) and all(isinstance(t, str) for t in text):
        return [t for t in text if t.strip()]
    raise BisentError(f"{origin}: 'text' must be a string or a list of strings")


def make_document(doc_id: str, text, origin: str, lang: str, segmentation: str = "sentencex") -> Document:
    """A :class:`Document` from raw ``text`` (a string or a list of paragraphs)."""
    if segmentation not in SEGMENTATIONS:
        raise BisentError(f"unknown segmentation '{segmentation}' (one of {', '.join(SEGMENTATIONS)})")
    units = _units(text, origin)
    if segmentation == "given":
        return Document(doc_id, [" ".join(u.split()) for u in units], origin)
    return Document(doc_id, split_sentences(units, lang), origin)


def read_documents(path, lang: str, *, segmentation: str = "sentencex") -> list[Document]:
    """Documents of a JSONL file of ``{"id", "text"}`` objects or of a folder of text files.

    Bad JSON, a missing or duplicate id, a non-text ``text`` or a file that is
    not UTF-8 is a one-line :class:`BisentError` naming the file and line.
    Empty documents are kept (their :attr:`Document.reason` says why they take no part).
    """
    path = Path(path)
    if not path.exists():
        raise BisentError(f"{path}: no such file or folder")
    docs = _read_folder(path, lang, segmentation) if path.is_dir() else _read_jsonl(path, lang, segmentation)
    if not docs:
        what = "text files" if path.is_dir() else "JSONL lines of {id, text}"
        raise BisentError(f"{path}: no documents (expected {what})")
    seen: dict[str, str] = {}
    for d in docs:
        if d.id in seen:
            raise BisentError(f"{d.origin}: duplicate document id '{d.id}' (first at {seen[d.id]})")
        seen[d.id] = d.origin
    return docs


_TOO_DEEP = object()


def _read_jsonl(path: Path, lang: str, segmentation: str) -> list[Document]:
    from .io import iter_raw_lines

    docs = []
    for n, raw in iter_raw_lines(path):
        origin = f"{path}:{n}"
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise BisentError(f"{origin}: not valid UTF-8 (byte 0x{raw[e.start]:02x} "
                              f"at column {e.start + 1})") from None
        if n == 1 and text.startswith("\ufeff"):      # a byte order mark an editor put at the start of the file
            text = text[1:]
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise BisentError(f"{origin}: not a JSON object ({e.msg} at column {e.colno})") from None
        except RecursionError:
            obj = _TOO_DEEP
        if obj is _TOO_DEEP or too_deep(obj):
            raise BisentError(f"{origin}: JSON nested more than {MAX_DEPTH} levels deep")
        if not isinstance(obj, dict) or "text" not in obj:
            raise BisentError(f"{origin}: expected an object with 'id' and 'text'")
        doc_id = obj.get("id")
        if (not isinstance(doc_id, (str, int)) or isinstance(doc_id, bool) or not str(doc_id).strip()
                or "\t" in str(doc_id) or len(str(doc_id).splitlines()) != 1):
            raise BisentError(f"{origin}: 'id' must be a non-empty string without tabs, newlines or carriage returns")
        docs.append(make_document(str(doc_id), obj["text"], origin, lang, segmentation))
    return docs


def collection_files(path) -> list[Path]:
    """The files a collection is read from: a JSONL file itself, or a folder's visible files in id order."""
    path = Path(path)
    if not path.is_dir():
        return [path]
    files = []
    for root, dirs, names in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        files += [Path(root) / n for n in names if not n.startswith(".")]
    return sorted(files, key=lambda f: f.relative_to(path).as_posix())


def _read_folder(path: Path, lang: str, segmentation: str) -> list[Document]:
    docs = []
    for f in collection_files(path):
        data = f.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            line = data[: e.start].count(b"\n") + 1
            raise BisentError(f"{f}:{line}: not valid UTF-8 (byte 0x{data[e.start]:02x})") from None
        docs.append(make_document(f.relative_to(path).as_posix(), text, str(f), lang, segmentation))
    return docs


# --- document encoders (the interface and Sentence-Avg: bisent/encoders/documents.py) ---------------------

def get_document_encoder(name_or_path: str, *, centred: bool = True) -> DocumentEncoder:
    """A trained document model directory (HiDE, Document BoW), else Sentence-Avg over that sentence encoder."""
    path = Path(str(name_or_path))
    if (path / "config.json").is_file():
        from .encoders.trained import read_config
        from .models.hide import DOC_ARCHITECTURES, load_document_model

        if read_config(path).get("architecture") in DOC_ARCHITECTURES:
            return load_document_model(path)
    from .encoders import get_encoder

    return SentenceAvg(get_encoder(name_or_path), centred=centred)


# --- evaluation and mining ----------------------------------------------------------------------------

@dataclass
class DocMatch:
    """One output row of document mining: a source document, its match or the reason there is none."""

    src_id: str
    tgt_id: str | None
    score: float | None
    cosine: float | None
    reason: str | None
    src_origin: str
    tgt_origin: str | None


def plain_means(encoder, src: list[Document], tgt: list[Document], src_lang: str, tgt_lang: str):
    """``(a (n, d), b (m, d))``: the plain (uncentred) unit means of the documents' sentence embeddings, which the
    cosine floor is on; None for a document model without a sentence encoder (HiDE, Document BoW: no floor).
    The sentence embeddings come from the cache the centred vectors filled."""
    if not isinstance(encoder, SentenceAvg):
        return None
    plain = SentenceAvg(encoder.encoder, centred=False)
    return (plain.encode_documents([d.sentences for d in src], src_lang, progress=False),
            plain.encode_documents([d.sentences for d in tgt], tgt_lang, progress=False))


def mine_documents(src: list[Document], tgt: list[Document], a: np.ndarray, b: np.ndarray, *, k: int = 4,
                   score: str = "ratio", threshold: float | None = None, rerank=None,
                   min_cosine: float | None = None, plain=None) -> list[DocMatch]:
    """Match source documents to target documents one-to-one; one :class:`DocMatch` per source, in input order.

    ``a (n, d)``, ``b (m, d)``: their unit embeddings. Candidates come from
    kNN both ways with the ``score`` (a margin, CSLS or cosine); retrieval is
    max-score one-to-one. Unmatched sources say why: empty document, its
    candidates all went to better-scoring sources, below the threshold, or
    a cosine below ``min_cosine`` (the command's defaults are
    :data:`DEFAULT_THRESHOLD` and :data:`DEFAULT_MIN_COSINE`; here None is none): the cosine of
    ``plain`` (:func:`plain_means`) when given, else of ``a`` and ``b``.
    ``rerank``: ``(src_table, tgt_table, depth, weight)`` (:mod:`bisent.mining.rerank`)
    re-scores the ``depth`` nearest candidates each way by sentence alignment
    before the margin (the margin's neighbourhoods are then the best k re-scored).
    """
    from .mining.retrieval import mine
    from .mining.scoring import Scorer

    if len(src) != len(a) or len(tgt) != len(b):
        raise ValueError("documents and embeddings differ in number")
    config_number("mine_documents", "k", k, low=1, integer=True)
    if threshold is not None:
        config_number("mine_documents", "threshold", threshold)
    if min_cosine is not None:
        config_number("mine_documents", "min_cosine", min_cosine, low=-1, high=1)
    if rerank is not None:
        config_number("mine_documents", "rerank weight", rerank[3], low=0)
    src_ok = np.array([d.reason is None for d in src], dtype=bool)
    tgt_ok = np.array([d.reason is None for d in tgt], dtype=bool)
    pairs = []
    if src_ok.any() and tgt_ok.any() and rerank is not None:
        pairs = _mine_reranked(a, b, src_ok, tgt_ok, Scorer(score, k), *rerank)
    elif src_ok.any() and tgt_ok.any():
        pairs = mine(a, b, Scorer(score, k), retrieval="max", src_valid=src_ok, tgt_valid=tgt_ok)
    by_src = {p.src: p for p in pairs}
    out = []
    for i, d in enumerate(src):
        p = by_src.get(i)
        if d.reason is not None:
            out.append(DocMatch(d.id, None, None, None, d.reason, d.origin, None))
        elif not tgt_ok.any():
            out.append(DocMatch(d.id, None, None, None, "no target document to match", d.origin, None))
        elif p is None:
            out.append(DocMatch(d.id, None, None, None, "its candidates matched better-scoring source documents",
                                d.origin, None))
        else:
            t = tgt[p.tgt]
            cos = float(a[i] @ b[p.tgt])
            reason = None
            if threshold is not None and p.score < threshold:
                reason = f"score below threshold {threshold:g}"
            elif min_cosine is not None:
                floor_cos = float(plain[0][i] @ plain[1][p.tgt]) if plain is not None else cos
                if floor_cos < min_cosine:
                    reason = f"cosine {floor_cos:.3f} below the floor {min_cosine:g}"
            out.append(DocMatch(d.id, t.id, p.score, cos, reason, d.origin, t.origin))
    return out


def _mine_reranked(a, b, src_ok, tgt_ok, scorer, src_table, tgt_table, depth: int, weight: float):
    """:func:`bisent.mining.retrieval.mine` (max retrieval) with the candidates re-scored by
    :func:`bisent.mining.rerank.rerank_knn`."""
    from .mining.index import knn_both
    from .mining.rerank import rerank_knn
    from .mining.retrieval import MinedPair, retrieve

    rs, rt = np.flatnonzero(src_ok), np.flatnonzero(tgt_ok)
    knn = knn_both(a[rs], b[rt], max(depth, scorer.k))
    knn = rerank_knn(knn, src_table.select(rs), tgt_table.select(rt), k=min(scorer.k, len(rs), len(rt)),
                     weight=weight)
    pairs = retrieve(scorer.candidates(knn), "max")
    pairs.sort(key=lambda p: (-p.score, p.src, p.tgt))
    return [MinedPair(p.score, int(rs[p.src]), int(rt[p.tgt])) for p in pairs]


def match_settings(threshold, min_cosine) -> tuple[float | None, float | None, dict]:
    """The threshold and cosine floor a run uses (None: the defaults; ``"none"``: none) and the summary's
    record of them, so a report says what decided."""
    t = DEFAULT_THRESHOLD if threshold is None else None if threshold == "none" else float(threshold)
    c = DEFAULT_MIN_COSINE if min_cosine is None else None if min_cosine == "none" else float(min_cosine)
    return t, c, {"threshold": t, "min_cosine": c}


#: columns of ``bisent documents mine`` output
MINE_COLUMNS = ("src_id", "tgt_id", "score", "cosine", "status", "src_origin", "tgt_origin")


def write_matches(matches: list[DocMatch], out_path) -> dict[str, int]:
    """Write one TSV row per source document (header first); returns counts per status (both, zeros included)."""
    counts: dict[str, int] = {"matched": 0, "unmatched": 0}
    with atomic_write(out_path) as f:
        f.write("\t".join(MINE_COLUMNS) + "\n")
        for m in matches:
            status = "matched" if m.reason is None else f"unmatched: {m.reason}"
            key = "matched" if m.reason is None else "unmatched"
            counts[key] = counts.get(key, 0) + 1
            f.write("\t".join([m.src_id, m.tgt_id or "", "" if m.score is None else f"{m.score:.6f}",
                               "" if m.cosine is None else f"{m.cosine:.6f}", status, m.src_origin,
                               m.tgt_origin or ""]) + "\n")
    return counts
