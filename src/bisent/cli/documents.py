"""``bisent documents mine``: match the documents of two collections (a thin layer over
:func:`bisent.jobs.documents`); ``bisent eval docs``, ``bisent data docs``.

Document models train through ``bisent train -c hide-dnn-pool`` (``hide-pool-dnn``, ``doc-bow``; the training
loop, objective :mod:`bisent.training.objectives.hide`). ``bisent docs`` is the former name of
``bisent documents`` (it still runs, with a note on stderr).
"""

from __future__ import annotations

import click

from ..datasets.docsets import SOURCES as DOC_SOURCES
from ..errors import BisentError
from ..jobs.documents import DEFAULT_ENCODER, PATHS, embed_collections, load_rerank_encoder, rerank_tables
from ..paths import guarded
from .options import LANG, FiniteFloat, doc_match_options, echo_summary, lang_codes

_SEG_HELP = "Units of a document: 'sentencex' splits each paragraph into sentences; 'given' keeps the paragraphs/lines."


@click.group("documents")
def documents_group():
    """Parallel document mining (Guo et al. 2019): Sentence-Avg, HiDE or Document BoW embeddings, kNN + margin.

    \b
    Examples:
      bisent documents mine en.jsonl de.jsonl -l en -L de -o docs.tsv
    """


def _collections(fn):
    """The options every command over two document collections shares."""
    for opt in reversed([
        click.option("-l", "--src-lang", type=LANG, required=True, help="Language of SRC_DOCS."),
        click.option("-L", "--tgt-lang", type=LANG, required=True, help="Language of TGT_DOCS."),
        click.option("-e", "--encoder", default=DEFAULT_ENCODER, show_default=True,
                     help="A document model directory (HiDE, Document BoW) or a sentence encoder for Sentence-Avg."),
        click.option("--segmentation", type=click.Choice(["sentencex", "given"]), default="sentencex",
                     show_default=True, help=_SEG_HELP)]):
        fn = opt(fn)
    return fn


def _rerank_options(fn):
    """``--rerank DEPTH`` and its weight and sentence encoder (:mod:`bisent.mining.rerank`)."""
    from ..mining.rerank import DEPTH, WEIGHT

    for opt in reversed([
        click.option("--rerank", "rerank_depth", type=click.IntRange(0), default=0, show_default=True,
                     help=f"Re-score the DEPTH nearest documents each way by how well their sentences align "
                          f"(e.g. {DEPTH}; 0: off). Separates near-identical pages a document vector cannot."),
        click.option("--rerank-weight", type=FiniteFloat(min=0), default=WEIGHT, show_default=True,
                     help="Weight of the sentence-alignment coverage added to the document cosine."),
        click.option("--rerank-encoder", default=None,
                     help="Sentence encoder of the re-ranking (default: the document encoder's own, e.g. use-m3 "
                          "for Sentence-Avg or a HiDE's base; Document BoW has none, so give one).")]):
        fn = opt(fn)
    return fn


@documents_group.command("mine")
@click.argument("src_docs", type=click.Path())
@click.argument("tgt_docs", type=click.Path())
@_collections
@click.option("--plain-mean", is_flag=True, help="Sentence-Avg without centring each side first.")
@click.option("--score", type=click.Choice(["ratio", "distance", "absolute", "csls", "cosine"]), default="ratio",
              show_default=True, help="Score of a document pair (margin of Artetxe & Schwenk by default).")
@click.option("-k", type=click.IntRange(1), default=4, show_default=True, help="Neighbourhood size of the margin.")
@doc_match_options
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False),
              help="TSV: src_id, tgt_id, score, cosine, status, src_origin, tgt_origin (one row per source document).")
@click.option("--progress/--no-progress", default=None, help="Show progress bars (default: on a terminal).")
@click.option("--report", type=click.Path(dir_okay=False), default=None,
              help="Also write this HTML report (and OUTPUT.report.json): scores, counts per status, samples.")
@_rerank_options
@guarded(**PATHS)
def mine(**options):
    """Match each document of SRC_DOCS to one of TGT_DOCS (JSONL of {"id", "text"} or folders of text files).

    \b
    Examples:
      bisent documents mine en.jsonl de.jsonl -l en -L de -o docs.tsv
      bisent documents mine en/ de/ -l en -L de -e models/hide -o docs.tsv --rerank 8
    """
    from .. import jobs

    echo_summary(jobs.documents(**options))


def read_doc_matches(path) -> list[tuple[str, str]]:
    """``(src_id, tgt_id)`` of the matched rows of a ``bisent documents mine`` output (header checked)."""
    from ..documents import MINE_COLUMNS
    from ..io import read_tsv

    rows = list(read_tsv(path, len(MINE_COLUMNS)))
    if not rows or rows[0][1] != list(MINE_COLUMNS):
        raise BisentError(f"{path}:1: expected the header {' '.join(MINE_COLUMNS)} of 'bisent documents mine'")
    return [(c[0], c[1]) for _, c in rows[1:] if c[4] == "matched"]


@click.command("docs")
@click.argument("src_docs", type=click.Path())
@click.argument("tgt_docs", type=click.Path())
@click.argument("gold", type=click.Path(dir_okay=False))
@_collections
@click.option("--split", default=None, help="Only gold rows whose third column is this split (e.g. test).")
@click.option("--mined", type=click.Path(dir_okay=False), default=None,
              help="Also score this 'bisent documents mine' output: precision and recall of its matched pairs.")
@_rerank_options
@guarded(reads=("src_docs", "tgt_docs", "gold", "mined"))
def eval_docs(src_docs, tgt_docs, gold, src_lang, tgt_lang, encoder, segmentation, split, mined, rerank_depth,
              rerank_weight, rerank_encoder):
    """P@1/3/10 of document retrieval both ways: each gold document among ALL documents of the other side.
    SRC_DOCS, TGT_DOCS: the two collections; GOLD: src_id<TAB>tgt_id[<TAB>split] lines.

    \b
    Examples:
      bisent eval docs en.jsonl de.jsonl gold.tsv -l en -L de --split test
    """
    import numpy as np

    from ..datasets.docsets import read_gold
    from ..evaluate import retrieval_p_at_n

    pairs = [(s, t) for s, t, sp in read_gold(gold) if split is None or sp == split]
    if not pairs:
        raise BisentError(f"{gold}: no gold pairs{' in split ' + split if split else ''}")
    got = set(read_doc_matches(mined)) if mined else None
    sent = load_rerank_encoder(rerank_depth, rerank_encoder)
    src, tgt, enc, a, b = embed_collections(src_docs, tgt_docs, src_lang, tgt_lang, encoder, segmentation,
                                            check=_gold_check(gold, pairs))
    s_row = {d.id: i for i, d in enumerate(src)}
    t_row = {d.id: i for i, d in enumerate(tgt)}
    rr = rerank_tables(src, tgt, enc, src_lang, tgt_lang, rerank_depth, rerank_weight, sent)
    out = {"encoder": enc.name, "gold": len(pairs), "src_documents": len(src), "tgt_documents": len(tgt),
           **({"rerank": {"depth": rerank_depth, "weight": rerank_weight}} if rr else {}),
           **retrieval_p_at_n(a, b, np.array([s_row[s] for s, _ in pairs]), np.array([t_row[t] for _, t in pairs]),
                              rerank=rr)}
    if mined:
        want = set(pairs)
        out.update(mined_matched=len(got), mined_correct=len(got & want),
                   mined_precision=round(100 * len(got & want) / max(len(got), 1), 2),
                   mined_recall=round(100 * len(got & want) / len(want), 2))
    echo_summary(out)


def _gold_check(gold, pairs):
    """The check of :func:`bisent.jobs.documents.embed_collections`: every gold pair names documents of the
    collections (before the slow embedding)."""
    def check(src, tgt):
        s_ids, t_ids = {d.id for d in src}, {d.id for d in tgt}
        missing = [(s, t) for s, t in pairs if s not in s_ids or t not in t_ids]
        if missing:
            s, t = missing[0]
            raise BisentError(f"{gold}: {len(missing)} gold pair(s) name documents not in the collections, "
                              f"e.g. {s} -> {t}")

    return check


@click.command("docs")
@click.option("--source", type=click.Choice(DOC_SOURCES), required=True,
              help="Which documentation (see bisent.datasets.docsets: LibreOffice help, the GIMP manual, GNOME help, "
                   "manual pages, HTML manuals cut into sections, ...).")
@click.option("-l", "--src-lang", "src", default="en", show_default=True, callback=lang_codes, help="Source language.")
@click.option("-L", "--tgt-lang", "tgt", default="de", show_default=True, callback=lang_codes, help="Target language.")
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Output folder: src.jsonl, tgt.jsonl ({id, text, split}), gold.tsv, stats.json.")
@guarded(folders=("out_dir",))
def data_docs(source, src, tgt, out_dir):
    """Parallel documents (pages in two languages; unpaired pages kept as distractors) with gold page pairs.

    \b
    Examples:
      bisent data docs --source libreoffice -l en -L de -o data/docs-en-de
    """
    from ..datasets.docsets import write_docset

    st = write_docset(source, src, tgt, out_dir)
    click.echo(f"{source} {st['src']}-{st['tgt']}: {st['documents_src']} {st['src']} pages, {st['documents_tgt']} "
               f"{st['tgt']} pages, gold pairs " + ", ".join(f"{k} {v}" for k, v in st["gold"].items()))
    click.echo(f"wrote {out_dir}")
