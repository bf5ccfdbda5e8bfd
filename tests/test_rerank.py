"""Re-ranking document candidates by sentence alignment (bisent.mining.rerank)."""

import json

import numpy as np
import pytest

from bisent.cli import main
from bisent.documents import make_document, mine_documents
from bisent.encoders.base import l2_normalise
from bisent.evaluate import retrieval_p_at_n
from bisent.mining.index import knn_both
from bisent.mining.rerank import SentenceTable, coverage, rerank, rerank_knn


def table(docs):
    """A SentenceTable from lists of (already unit) sentence vectors."""
    offsets = np.cumsum([0] + [len(d) for d in docs])
    vecs = np.concatenate([np.asarray(d, np.float32) for d in docs if len(d)]) if any(len(d) for d in docs) else \
        np.zeros((0, 4), np.float32)
    return SentenceTable(vecs.astype(np.float16), offsets)


def test_coverage_by_hand():
    s = l2_normalise(np.array([[1, 0, 0], [0, 1, 0]], np.float32))
    t = l2_normalise(np.array([[1, 0, 0], [0, 0.6, 0.8], [0, 0, 1]], np.float32))
    c = s @ t.T
    want = 0.5 * (np.mean([c[0].max(), c[1].max()]) + np.mean([c[:, j].max() for j in range(3)]))
    assert coverage(s, t) == pytest.approx(want)            # (1 + 0.6) / 2 one way, (1 + 0.6 + 0.8) / 3 the other
    assert coverage(s, t) == pytest.approx(coverage(t, s))   # symmetric
    assert coverage(s, t[:0]) == 0.0


def _near_duplicates(rng, d=32):
    """Source doc [x1, x2]; target A = the same sentences (the translation); target B = two sentences that
    each mix x1 and x2, so B's mean points exactly where A's does: a document vector cannot tell them apart."""
    x1, x2 = l2_normalise(rng.normal(size=(2, d)).astype(np.float32))
    m = l2_normalise((x1 + x2)[None])[0]
    b1, b2 = l2_normalise(np.stack([m + 0.05 * (x1 - x2), m - 0.05 * (x1 - x2)]))
    return [[x1, x2]], [[b1, b2], [x1, x2]]                 # target 0 is the decoy, target 1 the translation


def test_rerank_separates_what_the_document_vector_cannot():
    src_docs, tgt_docs = _near_duplicates(np.random.default_rng(0))
    a = l2_normalise(np.array([np.mean(d, axis=0) for d in src_docs], np.float32))
    b = l2_normalise(np.array([np.mean(d, axis=0) for d in tgt_docs], np.float32))
    knn = knn_both(a, b, 2)
    assert abs(knn.fwd_sim[0, 0] - knn.fwd_sim[0, 1]) < 1e-5        # the document cosines tie
    sim, idx = rerank(knn.fwd_sim, knn.fwd_idx, table(src_docs), table(tgt_docs), k=1)
    assert idx[0, 0] == 1 and sim.shape == (1, 1)
    both = rerank_knn(knn, table(src_docs), table(tgt_docs))
    assert both.fwd_idx[0, 0] == 1 and both.bwd_idx.shape == (2, 1)
    # weight 0 changes no order
    assert np.array_equal(rerank(knn.fwd_sim, knn.fwd_idx, table(src_docs), table(tgt_docs), weight=0)[1], knn.fwd_idx)


def test_mining_and_p_at_n_with_rerank():
    rng = np.random.default_rng(1)
    src_s, tgt_s = [], []
    for _ in range(6):                        # six topics, each a translation plus a near-duplicate decoy
        s, (decoy, right) = _near_duplicates(rng)
        src_s.append(s[0])
        tgt_s += [decoy, right]
    a = l2_normalise(np.array([np.mean(d, axis=0) for d in src_s], np.float32))
    b = l2_normalise(np.array([np.mean(d, axis=0) for d in tgt_s], np.float32))
    gold_t = np.arange(6) * 2 + 1
    rr = (table(src_s), table(tgt_s), 4, 1.0)
    assert retrieval_p_at_n(a, b, np.arange(6), gold_t, ns=(1,), rerank=rr)["p@1_src_tgt"] == 100.0
    src = [make_document(f"s{i}", ["x"], f"s{i}", "en", "given") for i in range(6)]
    tgt = [make_document(f"t{j}", ["y"], f"t{j}", "de", "given") for j in range(12)]
    got = {m.src_id: m.tgt_id for m in mine_documents(src, tgt, a, b, k=2, rerank=rr)}
    assert got == {f"s{i}": f"t{2 * i + 1}" for i in range(6)}
    # at weight 0 the re-ranked path is the plain one
    plain = mine_documents(src, tgt, a, b, k=2)
    zero = mine_documents(src, tgt, a, b, k=2, rerank=(rr[0], rr[1], 4, 0.0))
    assert [(m.src_id, m.tgt_id) for m in plain] == [(m.src_id, m.tgt_id) for m in zero]
    assert [m.score for m in plain] == pytest.approx([m.score for m in zero], abs=1e-5)


def test_select_keeps_documents_in_order():
    t = table([[np.eye(4)[0]], [], [np.eye(4)[1], np.eye(4)[2]]])
    sub = t.select(np.array([2, 1]))
    assert sub.doc(0).shape == (2, 4) and sub.doc(1).shape == (0, 4)
    assert np.array_equal(sub.doc(0), t.doc(2))


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_cli_rerank(tmp_path, capsys):
    topics = ["printer paper tray", "network cable router", "formula cell sum", "font size bold"]
    _jsonl(tmp_path / "en.jsonl", [{"id": f"e{i}", "text": f"The {t} guide. More on {t}."}
                                   for i, t in enumerate(topics)])
    _jsonl(tmp_path / "de.jsonl", [{"id": f"d{i}", "text": f"Die {t} Anleitung. Mehr zu {t}."}
                                   for i, t in enumerate(topics)])
    (tmp_path / "gold.tsv").write_text("".join(f"e{i}\td{i}\ttest\n" for i in range(4)), encoding="utf-8")
    out = tmp_path / "pairs.tsv"
    assert main(["documents", "mine", tmp_path / "en.jsonl", tmp_path / "de.jsonl", "-l", "en", "-L", "de",
                 "-e", "char-ngram", "--rerank", "3", "-o", out]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["matched"] == 4 and r["rerank"] == {"depth": 3, "weight": 1.0}
    assert main(["eval", "docs", tmp_path / "en.jsonl", tmp_path / "de.jsonl", tmp_path / "gold.tsv", "-l", "en",
                 "-L", "de", "-e", "char-ngram", "--rerank", "3", "--mined", out]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["p@1_src_tgt"] == 100.0 and r["mined_precision"] == 100.0
    assert main(["documents", "mine", tmp_path / "en.jsonl", tmp_path / "de.jsonl", "-l", "en", "-L", "de",
                 "-e", "char-ngram", "--rerank", "3", "--rerank-encoder", "no-such-encoder", "-o", out]) == 2
    assert "no-such-encoder" in capsys.readouterr().err


def test_coverage_in_blocks_equals_one_product(monkeypatch):
    """Long documents are compared a block of rows at a time (bounded memory); the result is the same."""
    import bisent.mining.rerank as rr

    rng = np.random.default_rng(3)
    s, t = l2_normalise(rng.normal(size=(37, 8)).astype(np.float32)), l2_normalise(rng.normal(size=(23,
                                                                                                    8)).astype(np.float32))
    c = s @ t.T
    want = 0.5 * (c.max(axis=1).mean() + c.max(axis=0).mean())
    monkeypatch.setattr(rr, "BLOCK_CELLS", 50)                 # 2 rows of s per block
    assert rr.coverage(s, t) == pytest.approx(want, abs=1e-6)
