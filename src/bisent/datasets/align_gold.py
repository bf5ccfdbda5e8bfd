"""A sentence-alignment task with exact gold: translated help pages re-split into sentences.

How gold is derived. A help page exists in both languages and its
paragraphs are paired by its structure: in LibreOffice help (``source =
"libreoffice"``) each paragraph carries the same ``par_id``/``hd_id`` key in
both (:mod:`.libreoffice`); in GNOME help (``"gnome"``, Mallard pages of
``gnome-user-docs``, :mod:`.docsets`) the translation is made by itstool from
PO files, which writes each translated block in place of the English one, so
block ``k`` of the English page is block ``k`` of the translated page (pages
with another block count are left out; every en-de and en-fr page has the
same count) and the key is the position. GNOME pages leave out every block
identical in both languages (a command, a name, an untranslated string);
LibreOffice pages keep them. For one page:

1. take the paragraphs whose key is on both sides, in source page order;
   a paragraph whose target position comes before that of the previous kept
   paragraph is dropped (the task is monotone); paragraphs on one side only
   are dropped too (both counted in the stats);
2. split each kept paragraph into sentences with ``sentencex`` on each side
   (source language rules on the source, target on the target);
   1b. a paragraph with several sentences on both sides is dropped (below);
3. the document is the concatenation of those sentences in page order, one
   per line; paragraph ``k`` split into ``n_k`` source and ``m_k`` target
   sentences is the gold block ``[its source indices]:[its target indices]``,
   an ``n_k``-``m_k`` alignment (1-1 when both are one sentence); except
   that a paragraph left untranslated (its target text is the source text
   itself, and prose: :func:`untranslated`, the paragraph gold's definition)
   is not a translation pair: its sentences are gold 1-0 and 0-1 blocks, as
   in the paragraph gold below. An identical paragraph that is not prose (code,
   a formula, a command line) or is short (a name, a key) stays a gold block.

Paragraph boundaries are sentence boundaries on both sides, so gold never
needs a block that crosses paragraphs; within a paragraph the translator's
merges and splits are what the splitter finds (a 2-1 block when the German
makes one sentence of two English ones). A block is only exact gold when one
side is a single sentence: a paragraph of several sentences on *both* sides
(2-2, 3-3, 2-3, ...) is usually translated sentence by sentence, and its true
alignment inside is unknown. Such paragraphs are therefore left out of the
document (step 1b; counted as ``many_many`` in the stats: about a fifth of the
paragraphs), so every gold block is 1-1, 1-n or n-1 and exact. Pages with
fewer than ``min_paragraphs`` paragraphs left are left out.

Untranslated content (``drop`` > 0): the help is an unusually faithful
translation, where a length model alone does well; real document pairs miss
paragraphs on one side. With ``drop = 0.1`` a tenth of the paragraphs (chosen
by a hash of page and id, so the same every run) lose their translation: half
of them from the target side, half from the source. Their sentences stay in
the document as gold 1-0 / 0-1 blocks (left out of P/R/F1 like every skip,
but an aligner that matches them makes its neighbours wrong).

Merges and splits (``merge`` > 0, step 4): the help's paragraphs are mostly
one sentence on both sides, so the re-split pages are nearly all 1-1. With
``merge = 0.1`` a tenth of the neighbouring pairs of translated paragraphs
(chosen by a hash of page and id) are merged into one paragraph on one side
(hash-chosen): that side's sentences of both are joined into one line, the
other side keeps its sentences. The gold block is exact (one side is one line):
``k``-1 or 1-``k`` with ``k`` the kept side's sentences, at most 3 (the largest
group the aligner considers; a longer pair is not merged). A 2-1 is a merge
seen from the source and a split seen from the target. With ``drop`` as well,
the task has merges, splits and untranslated paragraphs at once.

Splits are the dataset's (by page): tune on ``dev``, report on ``test``.
Deterministic: page order is path order, no sampling.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import NamedTuple

from sentencex import segment

from ..errors import BisentError
from ..io import atomic_write
from .libreoffice import Document, Paragraph, load_documents, normalise_lang


class AlignDoc(NamedTuple):
    """One document pair with gold: sentences of each side and blocks of 0-based indices."""

    name: str
    src: list[str]
    tgt: list[str]
    gold: list[tuple[tuple[int, ...], tuple[int, ...]]]


def split_sentences(text: str, lang: str) -> list[str]:
    """``sentencex`` sentences of one paragraph (the paragraph itself when the splitter yields nothing)."""
    return [s.strip() for s in segment(lang, text) if s.strip()] or [text]


def _hash01(doc: str, pid: str, salt: str = "") -> tuple[float, int]:
    """A deterministic number in [0, 1) and a bit for one paragraph of one page."""
    h = int.from_bytes(hashlib.blake2b(f"{doc}\t{pid}{salt}".encode(), digest_size=8).digest(), "little")
    return (h >> 1) / 2 ** 63, h & 1


def _drop_side(doc: str, pid: str, drop: float) -> int:
    """0: keep both sides; 1: drop the target side; 2: drop the source side (deterministic hash)."""
    if drop <= 0:
        return 0
    u, bit = _hash01(doc, pid)
    return 0 if u >= drop else 1 + bit


def _paragraphs(doc: Document, src_lang: str, tgt_lang: str, drop: float) -> tuple[list, dict]:
    """Steps 1-2: ``[(pid, source sentences, target sentences)]`` of the kept paragraphs (a dropped side
    empty) and counts of the paragraphs left out."""
    tpos = {p.pid: k for k, p in enumerate(doc.tgt)}
    ttext = {p.pid: p.text for p in doc.tgt}
    paras, last, dropped_order, one_side, many = [], -1, 0, 0, 0
    for p in doc.src:
        if p.pid not in tpos:
            one_side += 1
            continue
        if tpos[p.pid] < last:
            dropped_order += 1
            continue
        last = tpos[p.pid]
        s, t = split_sentences(p.text, src_lang), split_sentences(ttext[p.pid], tgt_lang)
        if len(s) > 1 and len(t) > 1:
            many += 1
            continue
        side = _drop_side(doc.doc, p.pid, drop)
        paras.append((p.pid, [] if side == 2 else s, [] if side == 1 else t, untranslated(p.text, ttext[p.pid])))
    one_side += len(doc.tgt) - len(paras) - dropped_order - many
    return paras, {"out_of_order": dropped_order, "one_side": one_side, "many_many": many}


def _merge(doc: str, paras: list, merge: float, max_group: int = 3) -> tuple[list, int]:
    """Step 4: a share ``merge`` of neighbouring paragraph pairs (both translated) becomes one paragraph
    whose sentences on one side (hash-chosen) are joined into one line: an n-1 or 1-n gold block
    (n <= ``max_group``, the largest group the aligner considers)."""
    out, k, merged = [], 0, 0
    while k < len(paras):
        pid, s, t, copy = paras[k]
        u, bit = _hash01(doc, pid, "\tmerge")
        if merge > 0 and u < merge and k + 1 < len(paras):
            _, s2, t2, copy2 = paras[k + 1]
            keep = t + t2 if bit else s + s2              # the side left as it is
            if s and t and s2 and t2 and not (copy or copy2) and len(keep) <= max_group:
                joined = [" ".join(s + s2)] if bit else [" ".join(t + t2)]
                out.append((pid, joined, keep, False) if bit else (pid, keep, joined, False))
                merged, k = merged + 1, k + 2
                continue
        out.append((pid, s, t, copy))
        k += 1
    return out, merged


def page_task(doc: Document, src_lang: str, tgt_lang: str, drop: float = 0.0,
              merge: float = 0.0) -> tuple[AlignDoc, dict]:
    """The gold document of one page and counts of the paragraphs dropped or merged (steps 1-4 above)."""
    paras, counts = _paragraphs(doc, src_lang, tgt_lang, drop)
    paras, counts["merged"] = _merge(doc.doc, paras, merge)
    counts["untranslated"], counts["paragraphs"] = sum(copy for *_, copy in paras), len(paras)
    src, tgt, gold = [], [], []
    for _, s, t, copy in paras:
        if copy:                                  # not a translation pair: each sentence unaligned
            gold += [((i,), ()) for i in range(len(src), len(src) + len(s))]
            gold += [((), (j,)) for j in range(len(tgt), len(tgt) + len(t))]
        else:
            gold.append((tuple(range(len(src), len(src) + len(s))), tuple(range(len(tgt), len(tgt) + len(t)))))
        src += s
        tgt += t
    return AlignDoc(doc.doc, src, tgt, gold), counts


#: page sources whose structure gives paragraph-level gold
SOURCES = ("libreoffice", "gnome")


def gnome_documents(src: str, tgt: str, split: str) -> tuple[list[Document], dict]:
    """GNOME help pages of one split as :class:`Document` s keyed by block position (see above), with
    counts of the pages of unequal block count and of the identical blocks left out."""
    from .docsets import build_docset, load_docset

    ds = load_docset(build_docset("gnome", src, tgt), splits=(split,))
    text = {side: {d["id"]: d["text"] for d in ds[side]} for side in ("src", "tgt")}
    docs, unequal, identical = [], 0, 0
    for s_id, t_id, sp in sorted(ds["gold"]):
        a, b = text["src"][s_id], text["tgt"][t_id]
        if len(a) != len(b):
            unequal += 1
            continue
        keep = [k for k in range(len(a)) if a[k].strip() != b[k].strip()]
        identical += len(a) - len(keep)
        docs.append(Document(s_id, sp, [Paragraph(f"p{k}", a[k]) for k in keep],
                             [Paragraph(f"p{k}", b[k]) for k in keep]))
    return docs, {"pages_unequal_blocks": unequal, "identical": identical}


def load_align_task(src: str = "en", tgt: str = "de", split: str = "test", *, min_paragraphs: int = 2,
                    limit: int | None = None, drop: float = 0.0, merge: float = 0.0,
                    source: str = "libreoffice") -> tuple[list[AlignDoc], dict]:
    """The gold documents of one split (path order) and stats (pages, sentences, block shapes)."""
    src, tgt = normalise_lang(src), normalise_lang(tgt)
    stats = {"pages_kept": 0, "pages_short": 0, "out_of_order": 0, "one_side": 0, "many_many": 0, "merged": 0,
             "untranslated": 0, "paragraphs": 0}
    if source == "libreoffice":
        pages = load_documents(src, tgt, split=split)
    elif source == "gnome":
        pages, extra = gnome_documents(src, tgt, split)
        stats.update(extra)
    else:
        raise BisentError(f"unknown alignment gold source '{source}' (one of {', '.join(SOURCES)})")
    docs = []
    for d in pages:
        task, counts = page_task(d, src, tgt, drop, merge)
        for k, v in counts.items():
            stats[k] += v
        if counts["paragraphs"] < min_paragraphs or not task.src or not task.tgt:
            stats["pages_short"] += 1
            continue
        docs.append(task)
        stats["pages_kept"] += 1
        if limit and len(docs) == limit:
            break
    blocks = [b for d in docs for b in d.gold]
    stats.update(src_sentences=sum(len(d.src) for d in docs), tgt_sentences=sum(len(d.tgt) for d in docs),
                 blocks=len(blocks), blocks_1_1=sum(len(s) == 1 and len(t) == 1 for s, t in blocks))
    return docs, stats


def concatenate(docs: list[AlignDoc], min_sentences: int, name: str = "concat") -> AlignDoc:
    """One long document: pages one after another (cycling through them again if needed) until the
    source side has at least ``min_sentences`` sentences; gold blocks shifted accordingly."""
    if not docs:
        raise ValueError("no documents to concatenate")
    src, tgt, gold, k = [], [], [], 0
    while len(src) < min_sentences:
        d = docs[k % len(docs)]
        gold += [(tuple(i + len(src) for i in s), tuple(j + len(tgt) for j in t)) for s, t in d.gold]
        src, tgt, k = src + d.src, tgt + d.tgt, k + 1
    return AlignDoc(name, src, tgt, gold)


def write_task(docs: list[AlignDoc], out_dir, src_lang: str, tgt_lang: str) -> Path:
    """``NNNN.SRC`` / ``NNNN.TGT`` (one sentence per line), ``NNNN.gold`` per page, and ``pairs.tsv``
    (``src_path<TAB>tgt_path<TAB>gold_path<TAB>page``) listing them."""
    from ..io import format_block

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for k, d in enumerate(docs):
        stem = f"{k:04d}"
        for suffix, lines in ((src_lang, d.src), (tgt_lang, d.tgt), ("gold", [format_block(*b) for b in d.gold])):
            with atomic_write(out / f"{stem}.{suffix}") as f:
                f.write("".join(line + "\n" for line in lines))
        rows.append(f"{stem}.{src_lang}\t{stem}.{tgt_lang}\t{stem}.gold\t{d.name}\n")
    with atomic_write(out / "pairs.tsv") as f:
        f.write("".join(rows))
    return out


# --------------------------------------------------------------------------- paragraph gold (m-n links kept)

#: kinds of paragraph in the paragraph gold: sentence gold exact (one side one sentence), several sentences on
#: both sides (only the paragraph's bounds are known), left in the source language on the target side
EXACT, MANY, UNTRANSLATED = "exact", "many", "untranslated"


class ParagraphDoc(NamedTuple):
    """One page of the paragraph gold: sentences of each side and its paragraphs as ``(source indices, target
    indices, kind)`` (kinds :data:`EXACT`, :data:`MANY`, :data:`UNTRANSLATED`), in page order."""

    name: str
    src: list[str]
    tgt: list[str]
    paragraphs: list[tuple[tuple[int, ...], tuple[int, ...], str]]

    @property
    def gold(self) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
        """The exact sentence gold: the exact paragraphs' blocks, the untranslated sentences as 1-0 / 0-1."""
        out = []
        for s, t, kind in self.paragraphs:
            if kind == EXACT:
                out.append((s, t))
            elif kind == UNTRANSLATED:
                out += [((i,), ()) for i in s] + [((), (j,)) for j in t]
        return out


def _long_enough(text: str) -> bool:
    """An identical paragraph worth keeping (not a name, a key or a number): the help pages' pair filter's
    thresholds."""
    from .libreoffice import MIN_CHARS, MIN_WORDS

    return sum(c.isalpha() for c in text) >= MIN_CHARS and len(text.split()) >= MIN_WORDS


_WORD_RE = re.compile(r"[(\"']?[^\W\d_]+(?:[-'][^\W\d_]+)*[)\"']?[,.;:!?]?[)\"']?")


def _prose(text: str) -> bool:
    """Whether a paragraph identical on both sides is prose a reader wanted translated, not code, a formula or a
    command line that stays the same in every language: at least 4 words, 80 % of its tokens words, ending as a
    sentence ends."""
    tokens = text.split()
    words = sum(bool(_WORD_RE.fullmatch(t)) for t in tokens)
    return len(tokens) >= 4 and words >= 0.8 * len(tokens) and text.rstrip()[-1:] in ".!?:"


def _identical(src_text: str, tgt_text: str) -> bool:
    """Whether two paragraphs are the same text, whitespace and case aside."""
    return " ".join(src_text.split()).casefold() == " ".join(tgt_text.split()).casefold()


def untranslated(src_text: str, tgt_text: str) -> bool:
    """Whether a paragraph pair is an untranslated copy, not a translation: the target text is the source text
    itself (whitespace and case aside), long enough for the pair filter and prose (:func:`_prose`). The paragraph
    gold's ``untranslated`` kind and the 1-0 / 0-1 gold of such paragraphs in :func:`page_task`."""
    return _identical(src_text, tgt_text) and _long_enough(src_text) and _prose(src_text)


def paragraph_page(doc: Document, src_lang: str, tgt_lang: str) -> tuple[ParagraphDoc, dict]:
    """The paragraph gold of one page (see :func:`load_paragraph_task`) and its counts."""
    tpos = {p.pid: k for k, p in enumerate(doc.tgt)}
    ttext = {p.pid: p.text for p in doc.tgt}
    counts = dict.fromkeys(("out_of_order", "one_side", "identical_short", "identical_kept", "exact_1_1",
                            "exact_1_n", "many_equal", "many_unequal", "untranslated"), 0)
    src, tgt, paras, last = [], [], [], -1
    for p in doc.src:
        if p.pid not in tpos:
            counts["one_side"] += 1
            continue
        if tpos[p.pid] < last:
            counts["out_of_order"] += 1
            continue
        last, t_text = tpos[p.pid], ttext[p.pid]
        identical = _identical(p.text, t_text)
        if identical and not _long_enough(p.text):
            counts["identical_short"] += 1
            continue
        s, t = split_sentences(p.text, src_lang), split_sentences(t_text, tgt_lang)
        counts["identical_kept"] += identical and not _prose(p.text)
        if untranslated(p.text, t_text):
            kind, count = UNTRANSLATED, "untranslated"
        elif min(len(s), len(t)) == 1:
            kind, count = EXACT, "exact_1_1" if len(s) == len(t) else "exact_1_n"
        else:
            kind, count = MANY, "many_equal" if len(s) == len(t) else "many_unequal"
        counts[count] += 1
        paras.append((tuple(range(len(src), len(src) + len(s))), tuple(range(len(tgt), len(tgt) + len(t))), kind))
        src += s
        tgt += t
    return ParagraphDoc(doc.doc, src, tgt, paras), counts


def load_paragraph_task(src: str = "en", tgt: str = "de", split: str = "test", *, min_paragraphs: int = 2,
                        limit: int | None = None, source: str = "libreoffice",
                        hard: bool = True) -> tuple[list[ParagraphDoc], dict]:
    """The paragraph gold of one split: every paragraph of a page kept, its sentence gold exact or not.

    Where :func:`load_align_task` leaves out the paragraphs of several sentences
    on both sides (their inner alignment is unknown), this keeps every
    paragraph pair, in page order (steps 1-2 above), as one of three kinds:

    - ``exact``: one side is one sentence (1-1, or 1-n / n-1 where the
      translator merged or split sentences): the block is exact gold;
    - ``many``: several sentences on both sides (2-2, 2-3, ...): the sentence
      alignment inside is unknown, but it lies inside the paragraph, so a
      hypothesis block that crosses a paragraph boundary is certainly wrong
      (the paragraph-consistency error of ``bisent bench align``);
    - ``untranslated``: the target paragraph is the source text itself, and prose
      (:func:`_prose`: left in the source language): its sentences are gold 1-0
      and 0-1 (an aligner that pairs them with their copy aligns text with itself).

    A paragraph identical on both sides that is not prose (code, a formula, a
    command line: the same in every language) stays an ordinary paragraph,
    aligned to itself (``identical_kept``); one shorter than the pair filter's
    minimum (a name, a key) is left out (``identical_short``).

    Pages of the split in path order (the split of :func:`.libreoffice.split_of`: by page,
    deterministic), those with fewer than ``min_paragraphs`` paragraphs left out; with ``hard``
    also those whose paragraphs are all 1-1 (``pages_all_1_1``: the ``clean`` view has them), so
    every page kept holds a merge or split, an m-n paragraph or an untranslated one.
    """
    src, tgt = normalise_lang(src), normalise_lang(tgt)
    if source == "libreoffice":
        pages = load_documents(src, tgt, split=split)
    elif source == "gnome":
        pages, _ = gnome_documents(src, tgt, split)
    else:
        raise BisentError(f"unknown alignment gold source '{source}' (one of {', '.join(SOURCES)})")
    docs, stats = [], {"pages_kept": 0, "pages_short": 0, "pages_all_1_1": 0}
    for d in pages:
        task, counts = paragraph_page(d, src, tgt)
        if len(task.paragraphs) < min_paragraphs or not task.src or not task.tgt:
            stats["pages_short"] += 1
            continue
        if hard and all(k == EXACT and len(s) == len(t) == 1 for s, t, k in task.paragraphs):
            stats["pages_all_1_1"] += 1
            continue
        for k, v in counts.items():
            stats[k] = stats.get(k, 0) + v
        docs.append(task)
        stats["pages_kept"] += 1
        if limit and len(docs) == limit:
            break
    stats.update(src_sentences=sum(len(d.src) for d in docs), tgt_sentences=sum(len(d.tgt) for d in docs),
                 paragraphs=sum(len(d.paragraphs) for d in docs),
                 pages_with_many=sum(any(k == MANY for *_, k in d.paragraphs) for d in docs))
    return docs, stats
