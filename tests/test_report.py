"""Reports, calibration without gold, explanations: behaviour on toy runs, size bounds, a real browser."""

import html as html_lib
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from bisent.cli import main
from bisent.encoders import get_encoder
from bisent.errors import BisentError
from bisent.mining.retrieval import mine
from bisent.mining.scoring import Scorer
from bisent.report import (
    RecordingScorer,
    calibrate,
    explain_pair,
    mining_negatives,
    records_from_folder,
    render,
    report_folder,
    synthetic_pairs,
)
from bisent.report.explain import filter_decision
from bisent.report.record import filter_record, mining_record
from conftest import unit_rows


def svgs(html: str) -> list[str]:
    return re.findall(r"<svg .*?</svg>", html, flags=re.S)


def no_fetch(html: str) -> bool:
    """Nothing the page would fetch: no src/href/url() pointing anywhere (SVG namespaces are not fetches)."""
    refs = re.findall(r"""(?:src|href)\s*=\s*["']([^"'#][^"']*)["']|url\(\s*['"]?([^)'"#][^)'"]*)""", html)
    return not [r for pair in refs for r in pair if r] and "<script" not in html


# ---------------------------------------------------------------------------
# Calibration
# ---------------------------------------------------------------------------

def test_calibration_recovers_known_precision():
    rng = np.random.default_rng(0)
    n_neg, n_pos = 70_000, 30_000
    observed = np.concatenate([rng.normal(0, 1, n_neg), rng.normal(3, 0.7, n_pos)])
    truth = np.concatenate([np.zeros(n_neg, bool), np.ones(n_pos, bool)])
    # the synthetic negatives sit 0.15 off the real ones: the fitted shift must absorb it
    cal = calibrate(observed, rng.normal(0.15, 1, 5000))
    assert abs(cal.pi0 - 0.7) < 0.03
    for t in (1.0, 1.5, 2.0, 2.5, 3.0):
        measured = truth[observed >= t].mean()
        assert abs(cal.precision_at(t) - measured) < 0.04, (t, cal.precision_at(t), measured)
    t95 = cal.threshold_for(0.95)
    assert truth[observed >= t95].mean() >= 0.92
    assert np.all(np.diff(cal.precision) >= 0)
    assert cal.threshold_for(1.01) is None


def test_calibration_not_fooled_by_all_negatives():
    rng = np.random.default_rng(1)
    cal = calibrate(rng.normal(0, 1, 20_000), rng.normal(0, 1, 3000))
    assert cal.pi0 > 0.85
    assert cal.precision_at(0.0) < 0.15


def test_calibration_storey_share_when_false_pairs_are_few():
    """Few false pairs under a skewed true-pair score: EM lets the Gaussian take the low tail, Storey's share does
    not."""
    rng = np.random.default_rng(3)
    n_false, n_true = 800, 9200
    observed = np.concatenate([rng.normal(0, 1, n_false), 1.8 + rng.gamma(1.5, 1.2, n_true)])
    truth = np.concatenate([np.zeros(n_false, bool), np.ones(n_true, bool)])
    negatives = rng.normal(0, 1, 3000)
    storey, em = calibrate(observed, negatives), calibrate(observed, negatives, pi0="em")
    assert abs(storey.pi0 - 0.08) < 0.02
    assert em.pi0 < 0.05                                              # the failure Storey's share fixes
    lowest = observed.min()
    assert abs(storey.precision_at(lowest) - truth.mean()) < 0.02
    assert abs(em.precision_at(lowest) - truth.mean()) > 0.03
    with pytest.raises(ValueError, match="pi0"):
        calibrate(observed, negatives, pi0="oracle")
    with pytest.raises(ValueError, match="lam"):
        calibrate(observed, negatives, lam=1.0)


def test_mining_negatives_estimate_planted_pairs():
    rng = np.random.default_rng(2)
    d, n_pairs, n_only = 64, 300, 600
    x = unit_rows(rng, n_pairs + n_only, d)
    y_pairs = x[:n_pairs] + 0.9 * unit_rows(rng, n_pairs, d)      # translations: noisy copies
    y = np.concatenate([y_pairs / np.linalg.norm(y_pairs, axis=1, keepdims=True), unit_rows(rng, n_only, d)])
    rec = RecordingScorer(Scorer("ratio", 4))
    pairs = mine(x, y, rec, retrieval="max")
    sc = np.array([p.score for p in pairs])
    ok = np.array([p.src == p.tgt and p.src < n_pairs for p in pairs])
    neg = mining_negatives(rec.cands_, "ratio", np.array([p.src for p in pairs]), np.array([p.tgt for p in pairs]), sc)
    assert len(neg) > 100
    cal = calibrate(sc, neg)
    for q in (0.5, 0.7, 0.8):
        t = np.quantile(sc, q)
        assert abs(cal.precision_at(t) - ok[sc >= t].mean()) < 0.1


def test_split_calibration_recovers_a_planted_false_share():
    """Mining split by mutuality: non-mutual pairs (all false here) counted as they are, the false share of the
    mutual ones recovered from negatives that sit ``d`` below the real false pairs, as the orphans' do."""
    from bisent.report import calibrate_split

    rng = np.random.default_rng(5)
    for true_m, false_m, false_n in ((300, 200, 500), (200, 200, 600), (500, 60, 200)):
        d = 0.03
        scores = np.concatenate([rng.normal(1.5, 0.12, true_m),        # true pairs: mutual
                                 rng.normal(1.1, 0.06, false_m),       # false mutual pairs
                                 rng.normal(0.95, 0.08, false_n)])     # false non-mutual pairs
        mutual = np.arange(len(scores)) < true_m + false_m
        correct = np.arange(len(scores)) < true_m
        neg_m, neg_n = rng.normal(1.1 - d, 0.06, 400), rng.normal(0.95 - d, 0.08, 600)
        rate = false_m / (false_m + false_n)                            # the share of false pairs that are mutual
        cal = calibrate_split(scores, mutual, np.concatenate([neg_m, neg_n]),
                              np.arange(1000) < 400, mutual_rate=rate)
        assert abs(cal.pi0 - (1 - correct.mean())) < 0.05
        assert abs(cal.shift - d) < 0.01
        for q in (0.3, 0.5, 0.7, 0.8):
            t = np.quantile(scores, q)
            assert abs(cal.precision_at(t) - correct[scores >= t].mean()) < 0.05, (true_m, false_m, q)
        storey = calibrate_split(scores, mutual, np.concatenate([neg_m, neg_n]), np.arange(1000) < 400)
        assert abs(storey.pi0 - (1 - correct.mean())) < 0.05                     # Storey's count alone
    assert np.all(np.diff(cal.precision) >= 0) and np.all(np.diff(cal.thresholds) > 0)


def test_split_calibration_counts_non_mutual_pairs_as_false():
    """Every non-mutual pair is false; mutual pairs above every negative are all right."""
    from bisent.report import calibrate_split

    scores = np.array([1.0] * 20 + [2.0] * 30 + [3.0] * 50)
    mutual = np.array([False] * 20 + [False] * 30 + [True] * 50)          # 50 non-mutual pairs, 30 of them >= 2
    negatives = np.concatenate([np.linspace(0.9, 1.1, 20), np.linspace(0.5, 1.5, 20)])
    neg_mutual = np.arange(40) < 20
    cal = calibrate_split(scores, mutual, negatives, neg_mutual, grid=[1.0, 2.0, 3.0])
    assert cal.pi0 == 0.5 and cal.kept == [100, 80, 50]
    assert cal.precision == [0.5, 0.625, 1.0]                                 # 50/100, 50/80, 50/50
    with pytest.raises(BisentError, match="at least 10 mutual and non-mutual"):
        calibrate_split(scores[:55], mutual[:55], negatives, neg_mutual)     # 5 mutual pairs
    with pytest.raises(ValueError, match="same lengths"):
        calibrate_split(scores, mutual[:10], negatives, neg_mutual)


def test_orphan_negatives_tell_mutual_pairs():
    """x0 loses y0 and takes y2 (y1 is held): not its nearest after y0, so not mutual; mutual_rate counts
    every orphan that found a free candidate."""
    from types import SimpleNamespace

    from bisent.calibration import mining_calibration, mutual_pairs
    from bisent.mining.scoring import margin

    fwd_idx = np.array([[0, 1, 2], [1, 0, 2], [2, 0, 1]])
    fwd_sim = np.array([[0.9, 0.8, 0.5], [0.9, 0.7, 0.4], [0.3, 0.2, 0.1]], dtype=np.float32)
    bwd_idx = np.array([[0, 1, 2], [1, 0, 2], [0, 1, 2]])
    bwd_sim = np.array([[0.9, 0.7, 0.2], [0.9, 0.8, 0.1], [0.5, 0.4, 0.3]], dtype=np.float32)
    knn = SimpleNamespace(fwd_idx=fwd_idx, fwd_sim=fwd_sim, bwd_idx=bwd_idx, bwd_sim=bwd_sim)
    cands = SimpleNamespace(knn=knn, r_x=fwd_sim.mean(axis=1), r_y=bwd_sim.mean(axis=1))
    ps, pt = np.array([0, 1, 2]), np.array([0, 1, 2])
    assert mutual_pairs(cands, ps, pt).tolist() == [True, True, False]      # y2's nearest source is x0
    sc = margin(np.array([0.9, 0.9, 0.3]), cands.r_x, cands.r_y)
    neg = mining_negatives(cands, "ratio", ps[:2], pt[:2], sc[:2], with_mutual=True)
    plain = mining_negatives(cands, "ratio", ps[:2], pt[:2], sc[:2])
    assert np.array_equal(neg.scores, plain) and len(neg.mutual) == len(plain)
    own = (fwd_sim[0, 1:].sum() + fwd_sim[0, -1]) / 3      # k false neighbours: the k-th as near as the (k-1)-th
    x0 = np.isclose(neg.scores, margin(np.array([0.5]), own, cands.r_y[2])[0])
    assert x0.any() and not neg.mutual[x0].any()                              # y2 is x0's third candidate
    assert 0 <= neg.mutual_rate <= 1
    with pytest.raises(ValueError, match="pi0 must be"):
        mining_calibration(cands, "ratio", ps, pt, sc, pi0="oracle")


def test_mining_calibration_split_and_its_fallback():
    """The estimator before ``joint`` (``pi0="split"``): split by mutuality; all-mutual pairs (intersect) fall back to
    the mixture over all pairs. On isotropic toy vectors it stays within 10 points (benchmarks/README,
    "Calibration against gold": the split is fitted to the LibreOffice dev tasks, and the toy's false
    mutual pairs sit higher than its orphans')."""
    from bisent.calibration import MINING_LAM, mining_calibration, mutual_pairs

    rng = np.random.default_rng(2)
    d, n_pairs, n_only = 64, 300, 600
    x = unit_rows(rng, n_pairs + n_only, d)
    y_pairs = x[:n_pairs] + 0.9 * unit_rows(rng, n_pairs, d)
    y = np.concatenate([y_pairs / np.linalg.norm(y_pairs, axis=1, keepdims=True), unit_rows(rng, n_only, d)])
    rec = RecordingScorer(Scorer("ratio", 4))
    pairs = mine(x, y, rec, retrieval="max")
    sc = np.array([p.score for p in pairs])
    ps, pt = np.array([p.src for p in pairs]), np.array([p.tgt for p in pairs])
    ok = (ps == pt) & (ps < n_pairs)
    cal = mining_calibration(rec.cands_, "ratio", ps, pt, sc, pi0="split")
    old = mining_calibration(rec.cands_, "ratio", ps, pt, sc, pi0="storey")
    assert cal.shift != old.shift and len(cal.thresholds) > 100
    for q in (0.5, 0.7, 0.8):
        t = np.quantile(sc, q)
        assert abs(cal.precision_at(t) - ok[sc >= t].mean()) < 0.1
    mutual = mutual_pairs(rec.cands_, ps, pt)
    both = mining_calibration(rec.cands_, "ratio", ps[mutual], pt[mutual], sc[mutual], pi0="split")
    ref = calibrate(sc[mutual], mining_negatives(rec.cands_, "ratio", ps[mutual], pt[mutual], sc[mutual]),
                    pi0="storey", lam=MINING_LAM, shifts=(0.0,))              # mining's storey
    assert both.precision == ref.precision and both.shift == ref.shift


def test_documents_calibration_estimates_planted_document_pairs():
    """``documents mine`` calibration: the same orphan negatives on document embeddings, empty documents left out."""
    from bisent.report.runs import documents_calibration

    rng = np.random.default_rng(3)
    d, n_pairs, n_only = 64, 300, 600
    a = unit_rows(rng, n_pairs + n_only + 1, d)
    b_pairs = a[:n_pairs] + 0.9 * unit_rows(rng, n_pairs, d)
    b = np.concatenate([b_pairs / np.linalg.norm(b_pairs, axis=1, keepdims=True), unit_rows(rng, n_only, d)])
    src_ok = np.ones(len(a), bool)
    src_ok[-1] = False                                             # an empty document takes no part
    cal = documents_calibration(a, b, src_ok=src_ok)
    pairs = mine(a, b, Scorer("ratio", 4), retrieval="max", src_valid=src_ok)
    sc = np.array([p.score for p in pairs])
    ok = np.array([p.src == p.tgt and p.src < n_pairs for p in pairs])
    assert cal.n_scores == len(pairs) and cal.n_negatives > 100
    for q in (0.5, 0.7, 0.8):
        t = np.quantile(sc, q)
        assert abs(cal.precision_at(t) - ok[sc >= t].mean()) < 0.1
    assert documents_calibration(a[:1], b) is None                 # too few documents to calibrate


def test_orphan_negatives_skip_candidates_held_by_confident_pairs():
    """x0 loses y0; its second candidate y1 is held by the confident pair (x1, y1), so its false partner is y2."""
    from types import SimpleNamespace

    from bisent.mining.scoring import margin

    fwd_idx = np.array([[0, 1, 2], [1, 0, 2], [2, 0, 1]])
    fwd_sim = np.array([[0.9, 0.8, 0.5], [0.9, 0.7, 0.4], [0.3, 0.2, 0.1]], dtype=np.float32)
    bwd_idx = np.array([[0, 1, 2], [1, 0, 2], [0, 1, 2]])
    bwd_sim = np.array([[0.9, 0.7, 0.2], [0.9, 0.8, 0.1], [0.5, 0.4, 0.3]], dtype=np.float32)
    knn = SimpleNamespace(fwd_idx=fwd_idx, fwd_sim=fwd_sim, bwd_idx=bwd_idx, bwd_sim=bwd_sim)
    r_x, r_y = fwd_sim.mean(axis=1), bwd_sim.mean(axis=1)
    cands = SimpleNamespace(knn=knn, r_x=r_x, r_y=r_y)
    ps, pt = np.array([0, 1]), np.array([0, 1])
    sc = margin(np.array([0.9, 0.9]), r_x[:2], r_y[:2])
    neg = mining_negatives(cands, "ratio", ps, pt, sc)
    own = (fwd_sim[0, 1:].sum() + fwd_sim[0, -1]) / 3      # x0's neighbourhood over k false neighbours
    expected = margin(np.array([0.5]), own, r_y[2])                             # x0 with y2, not y1
    assert np.isclose(neg, expected[0]).any()
    assert not np.isclose(neg, margin(np.array([0.8]), own, r_y[1])[0]).any()
    part = mining_negatives(cands, "ratio", ps, pt, sc, fill_neighbourhood=False)   # over the k - 1 it has
    assert np.isclose(part, margin(np.array([0.5]), fwd_sim[0, 1:].mean(), r_y[2])[0]).any()


def test_synthetic_pairs_are_false_pairs():
    pairs = [(f"source {i} with some words here", f"target {i} with some more words here") for i in range(50)]
    syn = synthetic_pairs(pairs, per_kind=20)
    kinds = {k for _, _, k in syn}
    assert kinds == {"shuffled", "neighbour", "truncated", "glued", "copy"}
    real = set(pairs)
    assert all((s, t) not in real for s, t, _ in syn)


# ---------------------------------------------------------------------------
# Records and HTML: empty, one pair, a million pairs
# ---------------------------------------------------------------------------

def test_alignment_negative_texts_are_the_stated_false_blocks():
    from bisent.calibration import alignment_negative_texts

    docs = [[("a0", "b0"), ("a1", "b1"), ("a2", "b2")], [("c0", "d0")]]        # the second has no neighbour
    syn = alignment_negative_texts(docs, kinds=("neighbour", "glued", "glued_source", "shuffled"))
    by = {k: sorted((s, t) for s, t, kk in syn if kk == k) for k in ("neighbour", "glued", "glued_source", "shuffled")}
    assert by["neighbour"] == [("a0", "b1"), ("a1", "b2")]
    assert by["glued"] == [("a0", "b0 b1"), ("a1", "b1 b2")]
    assert by["glued_source"] == [("a0 a1", "b0"), ("a1 a2", "b1")]
    assert all(t != {"a0": "b0", "a1": "b1"}[s] for s, t in by["shuffled"])      # another block's target
    assert alignment_negative_texts([[("x", "y")]]) == []
    with pytest.raises(ValueError, match="unknown negative kind"):
        alignment_negative_texts(docs, kinds=("swapped",))


def test_alignment_calibration_recovers_planted_precision():
    """Aligned documents whose false blocks are unrelated sentences, as the neighbour negatives are: the
    estimated precision of the blocks against the threshold follows the planted one."""
    from bisent.calibration import alignment_negatives

    rng = np.random.default_rng(12)
    enc = get_encoder("char-ngram")
    docs, right = [], []
    for _ in range(40):
        src = _sentences(rng, 12)
        tgt = [s + " ." for s in src]
        wrong = rng.random(12) < 0.3                                         # 30 % of the blocks are false
        other = _sentences(rng, 12)
        docs.append([(s, o if w else t) for s, t, o, w in zip(src, tgt, other, wrong)])
        right += list(~wrong)
    right = np.asarray(right)
    x = enc.encode([s for d in docs for s, _ in d], "en")
    y = enc.encode([t for d in docs for _, t in d], "de")
    scores = np.einsum("nd,nd->n", x, y)                                    # the aligner's block score
    cal = calibrate(scores, alignment_negatives(enc, docs, "en", "de", kinds=("neighbour",)))
    assert abs(cal.pi0 - (1 - right.mean())) < 0.05
    for q in (0.0, 0.1, 0.25, 0.5):
        t = float(np.quantile(scores, q))
        assert abs(cal.precision_at(t) - right[scores >= t].mean()) < 0.05, (q, cal.precision_at(t))


def test_report_of_an_empty_run(tmp_path):
    (tmp_path / "mined.tsv").write_text("")
    out = report_folder(tmp_path, tmp_path / "r.html")
    html = out.read_text()
    assert len(svgs(html)) >= 2 and "no scores in this run" in html and no_fetch(html)


def test_report_of_a_one_pair_mining_run(tmp_path):
    src, tgt = tmp_path / "a.txt", tmp_path / "b.txt"
    src.write_text("the red house\n")
    tgt.write_text("the red house.\n")
    out = tmp_path / "run" / "mined.tsv"
    assert main(["mine", src, tgt, "-l", "en", "-L", "de", "-e", "char-ngram", "-o", out, "--threshold", "none",
                 "--report", tmp_path / "run" / "report.html"]) == 0
    rec = json.loads((tmp_path / "run" / "mined.tsv.report.json").read_text())
    assert rec["counts"]["retrieved"] == 1 and rec["calibration"] is None
    assert rec["samples"][0]["rows"][0]["src"] == "the red house"
    html = (tmp_path / "run" / "report.html").read_text()
    assert "the red house" in html and no_fetch(html)


class _Texts:
    """A million (src, tgt) rows without holding a million strings."""

    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        return (f"source sentence number {i} " * 20, f"Zielsatz Nummer {i} " * 20)


def test_report_of_a_million_pairs_stays_small(tmp_path):
    rng = np.random.default_rng(3)
    n = 1_000_000
    scores = np.concatenate([rng.normal(1.0, 0.08, 700_000), rng.normal(1.35, 0.12, 300_000)])
    dirs = np.where(rng.random(n) < 0.7, "both ways", np.where(rng.random(n) < 0.5, "forward only", "backward only"))
    cal = calibrate(scores, rng.normal(1.0, 0.08, 5000))
    rec = mining_record(scores, _Texts(), threshold=cal.threshold_for(0.95), directions=dirs, calibration=cal)
    path = render([("million", rec)], tmp_path / "r.html")
    size = path.stat().st_size
    assert size < 2_000_000, size
    html = path.read_text()
    assert len(svgs(html)) == 3 and "1,000,000" in html and no_fetch(html)
    assert len(json.dumps(rec)) < 200_000


def test_filter_record_counts_and_samples():
    rejected = [(1, "length_ratio", 2.5, "a b c", "x"), (2, "cosine", 0.1, "hello", "bye"),
                (4, "cosine", 0.2, "p", "q")]
    rec = filter_record({"lines": 5, "kept": 2, "rejected": 3, "rejected_by": {"length_ratio": 1, "cosine": 2}},
                        rejected, score_step="cosine", kept_scores=np.array([0.8, 0.9]),
                        kept_texts=[("one", "eins"), ("two", "zwei")], threshold=0.3)
    assert rec["counts"] == {"kept": 2, "length_ratio": 1, "cosine": 2}
    assert sum(sum(v) for v in rec["histogram"]["series"].values()) == 4
    decided = {r["decided"] for b in rec["samples"] for r in b["rows"]}
    assert decided == {"kept", "cosine"}
    assert rec["rejected_samples"]["length_ratio"][0]["src"] == "a b c"
    assert "steps" not in rec["samples"][0]["rows"][0]
    told = filter_record({"lines": 5, "kept": 2, "rejected": 3}, rejected, score_step="cosine",
                         kept_scores=np.array([0.8, 0.9]), kept_texts=[("one", "eins"), ("two", "zwei")],
                         explain=lambda a, b: f"why {a}")
    assert {r["steps"] for b in told["samples"] for r in b["rows"]} == {"why one", "why two", "why hello", "why p"}
    assert told["rejected_samples"]["length_ratio"][0]["steps"] == "why a b c"


def test_report_folder_without_records_reads_filter_outputs(tmp_path):
    (tmp_path / "rejected.tsv").write_text("2\tcosine\t0.1\thello\tbye\n3\tempty\t\t\t\n")
    (tmp_path / "summary.json").write_text(json.dumps({
        "kept_file": "kept.tsv", "rejected_file": str(tmp_path / "rejected.tsv"), "lines": 3, "kept": 1, "rejected": 2,
        "rejected_by": {"cosine": 1, "empty": 1}, "pipeline": {"steps": [{"type": "empty"}, {"type": "cosine"}]}}))
    ((name, rec),) = records_from_folder(tmp_path)
    assert rec["kind"] == "filter" and rec["counts"] == {"kept": 1, "cosine": 1, "empty": 1}


def test_report_errors_are_one_line(tmp_path, capsys):
    assert main(["report", tmp_path / "nowhere", "-o", tmp_path / "r.html"]) == 2
    (tmp_path / "bad.tsv").write_text("0.5\tonly two\n")
    (tmp_path / "x.report.json").write_text("[1, 2]")
    assert main(["report", tmp_path, "-o", tmp_path / "r.html"]) == 2
    assert "expected a JSON object" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# mine / filter with --report and --precision
# ---------------------------------------------------------------------------

LETTERS = list("abcdefghijklmnopqrstuvwxyz")


def _sentences(rng, n):
    """Sentences of 8 random 5-letter words (a large vocabulary: unrelated sentences share little)."""
    return [" ".join("".join(rng.choice(LETTERS, 5)) for _ in range(8)) for _ in range(n)]


def test_mine_precision_cuts_the_output(tmp_path):
    rng = np.random.default_rng(4)
    shared = _sentences(rng, 150)
    src = shared + [f"only source {s}" for s in _sentences(rng, 150)]
    tgt = [s + " ." for s in shared] + [f"nur Ziel {s}" for s in _sentences(rng, 150)]
    (tmp_path / "a.txt").write_text("\n".join(src) + "\n")
    (tmp_path / "b.txt").write_text("\n".join(tgt) + "\n")
    out = tmp_path / "m.tsv"
    assert main(["mine", tmp_path / "a.txt", tmp_path / "b.txt", "-l", "en", "-L", "de", "-e", "char-ngram",
                 "-o", out, "--precision", "0.9"]) == 0
    rec = json.loads((tmp_path / "m.tsv.report.json").read_text())
    rows = [r.split("\t") for r in out.read_text().splitlines()]
    assert rows and all(float(r[0]) >= rec["threshold"] for r in rows)
    assert rec["counts"]["kept"] == len(rows) < rec["counts"]["retrieved"]
    correct = sum(r[2] == r[1] + " ." for r in rows)
    assert correct / len(rows) >= 0.85
    assert main(["mine", tmp_path / "a.txt", tmp_path / "b.txt", "-l", "en", "-L", "de", "-e", "char-ngram",
                 "-o", out, "--precision", "0.9", "--threshold", "1.0"]) == 2


def test_filter_report_and_precision(tmp_path):
    rng = np.random.default_rng(5)
    clean = [(s, s[:-3] + " !") for s in _sentences(rng, 120)]
    noise = [(s, t) for (s, _), (_, t) in zip(clean[:60], reversed(clean[60:]))]
    lines = [f"{a}\t{b}" for a, b in clean + noise] + ["bad row without tab"]
    (tmp_path / "in.tsv").write_text("\n".join(lines) + "\n")
    cfg = tmp_path / "f.yaml"
    cfg.write_text("steps:\n  - type: empty\n  - {name: cos, type: cosine, encoder: char-ngram, accept: {min: 0.05}}\n")
    kept, rej, summ = tmp_path / "kept.tsv", tmp_path / "rej.tsv", tmp_path / "s.json"
    assert main(["filter", tmp_path / "in.tsv", "-l", "en", "-L", "de", "-c", cfg, "-o", kept, "--rejected", rej,
                 "--summary", summ, "--report", tmp_path / "r.html", "--precision", "0.85"]) == 0
    summary = json.loads(summ.read_text())
    n_kept = len(kept.read_text().splitlines())
    n_rej = len(rej.read_text().splitlines())
    assert n_kept + n_rej == len(lines) and summary["kept"] == n_kept
    assert summary["rejected_by"].get("select:precision", 0) > 0
    kept_lines = set(kept.read_text().splitlines())
    clean_share = sum(f"{a}\t{b}" in kept_lines for a, b in clean) / n_kept
    assert clean_share >= 0.85
    html = (tmp_path / "r.html").read_text()
    assert "select:precision" in html and len(svgs(html)) >= 3 and no_fetch(html)
    # every sampled pair says which step decided and with what value
    rec = json.loads((tmp_path / "kept.tsv.report.json").read_text())
    rows = [r for band in rec["samples"] for r in band["rows"]]
    assert rows and all(r["steps"].startswith("empty=") and "cos=" in r["steps"] for r in rows)
    for r in rows:
        assert ("(rejects)" in r["steps"]) == (r["decided"] != "kept"), r
    assert "<th>steps</th>" in html


def _margin_values(steps: str) -> list[str]:
    return [part.split("=", 1)[1] for part in steps.split(", ") if part.startswith("margin=")]


def test_margin_in_the_report_and_explain_is_the_runs_own(tmp_path, capsys):
    """The steps shown for a pair hold the margin against the input's sample (the run's value), not the pair
    scored against itself alone (1.0 for every pair)."""
    rng = np.random.default_rng(7)
    clean = [(s, s[:-3] + " !") for s in _sentences(rng, 80)]
    (tmp_path / "in.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in clean))
    cfg = tmp_path / "f.yaml"
    cfg.write_text("steps:\n  - type: empty\n"
                   "  - {name: margin, type: margin, kind: ratio, k: 4, encoder: char-ngram, background: sample,\n"
                   "     accept: {min: 0.5}}\n"
                   "  - {name: cos, type: cosine, encoder: char-ngram, accept: {min: 0.05}}\n")
    kept = tmp_path / "kept.tsv"
    assert main(["filter", tmp_path / "in.tsv", "-l", "en", "-L", "de", "-c", cfg, "-o", kept,
                 "--rejected", tmp_path / "rej.tsv", "--report", tmp_path / "r.html"]) == 0
    rec = json.loads((tmp_path / "kept.tsv.report.json").read_text())
    shown = [v for band in rec["samples"] for r in band["rows"] for v in _margin_values(r["steps"])]
    assert shown and all(float(v) > 1.05 for v in shown), shown     # a translation beats its neighbours
    capsys.readouterr()
    assert main(["explain", tmp_path / "in.tsv", "--line", "3", "-l", "en", "-L", "de", "-e", "char-ngram",
                 "-c", cfg, "--json"]) == 0
    steps = json.loads(capsys.readouterr().out)["filter"]["steps"]
    margin = _margin_values(", ".join(steps))
    assert len(margin) == 1 and float(margin[0]) > 1.05, steps
    # two sentences and no background: the margin has nothing to compete with and says so
    assert main(["explain", clean[2][0], clean[2][1], "-l", "en", "-L", "de", "-e", "char-ngram", "-c", cfg,
                 "--json"]) == 0
    steps = json.loads(capsys.readouterr().out)["filter"]["steps"]
    assert any(s.startswith("margin=n/a") for s in steps), steps


def test_filter_precision_in_the_recipe_equals_the_option(tmp_path):
    rng = np.random.default_rng(5)
    clean = [(s, s[:-3] + " !") for s in _sentences(rng, 120)]
    noise = [(s, t) for (s, _), (_, t) in zip(clean[:60], reversed(clean[60:]))]
    (tmp_path / "in.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in clean + noise))
    steps = "steps:\n  - type: empty\n  - {name: cos, type: cosine, encoder: char-ngram, accept: {min: 0.05}}\n"
    (tmp_path / "opt.yaml").write_text(steps)
    (tmp_path / "sel.yaml").write_text(steps + "select: {precision: 0.85}\n")
    out = {}
    for name, extra in (("opt", ["--precision", "0.85"]), ("sel", [])):
        kept, rej = tmp_path / f"{name}.kept.tsv", tmp_path / f"{name}.rej.tsv"
        assert main(["filter", tmp_path / "in.tsv", "-l", "en", "-L", "de", "-c", tmp_path / f"{name}.yaml",
                     "-o", kept, "--rejected", rej, *extra]) == 0
        out[name] = (kept.read_text(), sorted(r.split("\t")[1] for r in rej.read_text().splitlines()))
        assert (tmp_path / f"{name}.kept.tsv.report.json").exists()
    assert out["sel"] == out["opt"] and "select:precision" in out["sel"][1]


# ---------------------------------------------------------------------------
# Explanations
# ---------------------------------------------------------------------------

def test_explain_a_tiny_pair():
    enc = get_encoder("char-ngram")
    bg_s = ["a blue car", "green tea please", "an old wooden boat"]
    bg_t = ["a blue car?", "green tea please!", "no match here at all"]
    ex = explain_pair("the red house", "the red house.", enc, "en", "en", background_src=bg_s, background_tgt=bg_t, k=2)
    x = enc.encode(["the red house"], "en")[0]
    y = enc.encode(["the red house."], "en")[0]
    assert ex["cosine"] == pytest.approx(float(x @ y), abs=1e-5)
    assert ex["src_competitors"][0]["is_pair"] and ex["tgt_competitors"][0]["is_pair"]
    assert ex["r_src"] == pytest.approx(np.mean([c["cosine"] for c in ex["src_competitors"]]), abs=1e-5)
    assert ex["ratio_margin"] == pytest.approx(ex["cosine"] / ((ex["r_src"] + ex["r_tgt"]) / 2), rel=1e-4)
    assert "note" in ex["alignment"]


def test_filter_decision_names_the_step():
    from bisent.filtering import as_pipeline

    pipe = as_pipeline([{"type": "duplicate"}, {"type": "length", "min_length": 1, "max_length": 3, "unit": "word"}],
                       "en", "de")
    short = filter_decision(pipe, "one two", "eins zwei")
    assert short["kept"] and short["reason"] is None
    again = filter_decision(pipe, "one two", "eins zwei")       # not taken for a duplicate of the call before
    assert again["kept"]
    long = filter_decision(pipe, "one two three four five", "eins zwei")
    assert not long["kept"] and long["reason"] == "length"


def test_explain_cli(tmp_path, capsys):
    bg = tmp_path / "bg.tsv"
    bg.write_text("0.9\ta blue car\ta blue car?\n0.5\tgreen tea\tgreen tea!\n")
    assert main(["explain", "the red house", "the red house.", "-l", "en", "-L", "en", "-e", "char-ngram",
                 "--background", bg, "--json", "-o", tmp_path / "e.html"]) == 0
    ex = json.loads(capsys.readouterr().out)
    assert ex["background"] == {"src": 2, "tgt": 2}
    page = html_lib.unescape((tmp_path / "e.html").read_text())
    assert "2 source and 2 target sentences of the background" in page and no_fetch(page)
    assert f"{ex['cosine']:.4f}" in page and "a blue car?" in page and "green tea!" in page   # the competitors


# ---------------------------------------------------------------------------
# A real browser (skipped where no Chromium is installed)
# ---------------------------------------------------------------------------

def chromium_path() -> str | None:
    for name in ("/usr/lib/chromium/chromium-headless-shell", "chromium-headless-shell", "/usr/lib/chromium/chromium",
                 "chromium"):
        found = shutil.which(name) or (name if Path(name).is_file() else None)
        if found:
            return found
    return None


def browser_check(html_path: Path, screenshot: Path | None = None) -> dict:
    """Open ``html_path`` in headless Chromium: console errors, requests made, each plot's size and content."""
    from playwright.sync_api import sync_playwright

    errors, requests = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--no-first-run"])
        page = browser.new_page(viewport={"width": 1100, "height": 1300})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(html_path.resolve().as_uri())
        plots = page.eval_on_selector_all("svg.plot", """els => els.map(e => {
            const r = e.getBoundingClientRect();
            return {w: r.width, h: r.height, shapes: e.querySelectorAll('path, rect, use, text').length};
        })""")
        if screenshot is not None:
            page.screenshot(path=str(screenshot))
        browser.close()
    return {"errors": errors, "requests": requests, "plots": plots}


@pytest.mark.skipif(chromium_path() is None, reason="no Chromium installed (apt-get install chromium-headless-shell)")
def test_report_renders_in_a_browser(tmp_path):
    pytest.importorskip("playwright")
    rng = np.random.default_rng(6)
    scores = np.concatenate([rng.normal(1.0, 0.08, 1400), rng.normal(1.35, 0.12, 600)])
    cal = calibrate(scores, rng.normal(1.0, 0.08, 3000))
    texts = [(f"source {i} <b>not bold</b>", f"Ziel {i} & so") for i in range(len(scores))]
    dirs = np.where(rng.random(len(scores)) < 0.8, "both ways", "forward only")
    mined = mining_record(scores, texts, threshold=1.2, directions=dirs, calibration=cal)
    filt = filter_record({"lines": 4, "kept": 2, "rejected": 2, "rejected_by": {"cosine": 1, "langid": 1}},
                         [(1, "cosine", 0.1, "a", "b"), (3, "langid", 0.01, "c", "d")], score_step="cosine",
                         kept_scores=np.array([0.7, 0.9]), kept_texts=[("e", "f"), ("g", "h")], threshold=0.3)
    path = render([("mined", mined), ("filtered", filt)], tmp_path / "r.html")
    seen = browser_check(path)
    assert seen["errors"] == []
    assert seen["requests"] == [path.resolve().as_uri()]           # nothing fetched but the file itself
    assert len(seen["plots"]) == len(svgs(path.read_text())) >= 6
    for plot in seen["plots"]:
        assert plot["w"] > 100 and plot["h"] > 50 and plot["shapes"] > 10


# ---------------------------------------------------------------------------
# --report on documents mine and align
# ---------------------------------------------------------------------------

def _docs_run(tmp_path) -> Path:
    """``bisent documents mine --report`` on 12 shared and 4 lone documents (char-ngram encoder)."""
    rng = np.random.default_rng(7)
    shared = [_sentences(rng, 3) for _ in range(12)]
    src = [{"id": f"s{i}", "text": d} for i, d in enumerate(shared + [_sentences(rng, 3) for _ in range(4)])]
    tgt = [{"id": f"t{i}", "text": [x + " ." for x in d]} for i, d in enumerate(shared)]
    src.append({"id": "empty", "text": []})
    for name, docs in (("a.jsonl", src), ("b.jsonl", tgt)):
        (tmp_path / name).write_text("".join(json.dumps(d) + "\n" for d in docs))
    assert main(["documents", "mine", tmp_path / "a.jsonl", tmp_path / "b.jsonl", "-l", "en", "-L", "de",
                 "-e", "char-ngram", "--segmentation", "given", "--threshold", "1.05", "-o", tmp_path / "m.tsv",
                 "--report", tmp_path / "docs.html"]) == 0
    return tmp_path / "docs.html"


def test_docs_mine_report(tmp_path):
    html = _docs_run(tmp_path).read_text()
    rec = json.loads((tmp_path / "m.tsv.report.json").read_text())
    rows = [r.split("\t") for r in (tmp_path / "m.tsv").read_text().splitlines()[1:]]
    assert rec["kind"] == "docs" and sum(rec["counts"].values()) == len(rows) == 17
    assert rec["counts"]["matched"] == sum(r[4] == "matched" for r in rows) >= 10
    assert rec["counts"]["unmatched: empty document"] == 1
    assert sum(rec["histogram"]["series"]["matched"]) == rec["counts"]["matched"]
    sampled = [r for band in rec["samples"] for r in band["rows"]]
    assert sampled and all(r["tgt_id"] == "t" + r["src_id"][1:] for r in sampled[:3])   # the best bands are right
    assert all(r["score"] >= 1.05 for r in sampled)                                    # matched pairs only
    assert len(svgs(html)) == 3 and "unmatched: empty document" in html and no_fetch(html)
    assert records_from_folder(tmp_path)[0][1]["kind"] == "docs"                       # `bisent report` reads it


def _align_run(tmp_path) -> Path:
    """``bisent align --report`` on a document whose target merges two sentences and drops one."""
    rng = np.random.default_rng(8)
    src = _sentences(rng, 10)
    tgt = [s + " ." for s in src[:4]] + [src[4] + " " + src[5] + " ."] + [s + " ." for s in src[7:]]
    (tmp_path / "a.txt").write_text("\n".join(src) + "\n")
    (tmp_path / "b.txt").write_text("\n".join(tgt) + "\n")
    assert main(["align", tmp_path / "a.txt", tmp_path / "b.txt", "-l", "en", "-L", "de", "-e", "char-ngram",
                 "-o", tmp_path / "al.tsv", "--report", tmp_path / "align.html"]) == 0
    return tmp_path / "align.html"


def test_align_report(tmp_path):
    html = _align_run(tmp_path).read_text()
    rec = json.loads((tmp_path / "al.tsv.report.json").read_text())
    rows = (tmp_path / "al.tsv").read_text().splitlines()
    counts = rec["counts"]
    assert rec["kind"] == "align" and sum(v for k, v in counts.items() if "-" in k) == len(rows)
    assert counts["1-1"] >= 6 and counts.get("2-1", 0) == 1
    assert counts["unaligned source lines"] == 1 and counts["unaligned target lines"] == 0
    assert sum(rec["histogram"]["series"]["1-1"]) == counts["1-1"]
    assert len(svgs(html)) == 3 and "unaligned source lines" in html and no_fetch(html)
    assert [n for n, _ in records_from_folder(tmp_path)] == ["al.tsv"]     # the aligned TSV is not read as mined
    cal = rec["calibration"]                                                # negatives from the run's own blocks
    assert cal["n_scores"] == sum(v for k, v in counts.items() if k[0] != "0" and k[-1] != "0" and "-" in k)
    assert cal["n_negatives"] >= 10 and "Alignment blocks: on LibreOffice help pages" in html


def test_align_report_of_gale_church_has_no_calibration(tmp_path):
    rng = np.random.default_rng(8)
    src = _sentences(rng, 6)
    (tmp_path / "a.txt").write_text("\n".join(src) + "\n")
    (tmp_path / "b.txt").write_text("\n".join(s + " ." for s in src) + "\n")
    assert main(["align", tmp_path / "a.txt", tmp_path / "b.txt", "-l", "en", "-L", "de", "-e", "gale-church",
                 "-o", tmp_path / "al.tsv", "--report", tmp_path / "align.html"]) == 0
    assert json.loads((tmp_path / "al.tsv.report.json").read_text())["calibration"] is None


def test_align_pairs_report_covers_every_pair(tmp_path):
    rng = np.random.default_rng(9)
    docs = [_sentences(rng, 4) for _ in range(3)]
    for i, d in enumerate(docs):
        (tmp_path / f"{i}.en").write_text("\n".join(d) + "\n")
        (tmp_path / f"{i}.de").write_text("\n".join(s + " ." for s in d[1:]) + "\n")   # first line dropped
    (tmp_path / "pairs.tsv").write_text("".join(f"{i}.en\t{i}.de\n" for i in range(3)))
    out = tmp_path / "out"
    assert main(["align", "--pairs", tmp_path / "pairs.tsv", "-l", "en", "-L", "de", "-e", "char-ngram", "-o", out,
                 "--report", tmp_path / "r.html"]) == 0
    (name, rec), = records_from_folder(out)                                  # `bisent report OUT` reads the record
    counts = rec["counts"]
    blocks = {k: v for k, v in counts.items() if k[0].isdigit()}                # "1-1", "2-1", "1-0", ...
    # every line of the 3 pairs is in the record: 12 source lines (the first of each untranslated:
    # skipped, or merged with its neighbour into a 2-1), 9 target lines
    assert name == "pairs" and sum(int(k.split("-")[0]) * v for k, v in blocks.items()) == 12
    assert sum(int(k.split("-")[1]) * v for k, v in blocks.items()) == 9 and counts["1-1"] >= 6
    assert counts["unaligned source lines"] == blocks.get("1-0", 0)


@pytest.mark.skipif(chromium_path() is None, reason="no Chromium installed (apt-get install chromium-headless-shell)")
def test_docs_and_align_reports_render_in_a_browser(tmp_path):
    pytest.importorskip("playwright")
    (tmp_path / "d").mkdir()
    (tmp_path / "a").mkdir()
    for path in (_docs_run(tmp_path / "d"), _align_run(tmp_path / "a")):
        seen = browser_check(path)
        assert seen["errors"] == [] and seen["requests"] == [path.resolve().as_uri()]
        assert len(seen["plots"]) == 3
        for plot in seen["plots"]:
            assert plot["w"] > 100 and plot["h"] > 50 and plot["shapes"] > 10


# ---------------------------------------------------------------------------
# The word-alignment heat map of `bisent explain --divergence`
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def toy_divergence(toy_model):
    """The folder of the divergence model trained for seconds on the toy task (conftest's toy_model)."""
    return toy_model[1]


def test_explain_draws_the_word_alignment_heat_map(toy_divergence, tmp_path, capsys):
    from bisent.models.divergence import alignment_matrix

    src, tgt = "a3 a17 a8 a25 a31", "b31 b25 b8 b17 b3"
    html_path = tmp_path / "e.html"
    assert main(["explain", src, tgt, "-l", "xa", "-L", "xb", "-e", "char-ngram", "--divergence", toy_divergence,
                 "--json", "-o", html_path]) == 0
    al = json.loads(capsys.readouterr().out)["alignment"]
    assert al["src_words"] == src.split() and al["tgt_words"] == tgt.split()
    S, _, _ = alignment_matrix(toy_divergence, src, tgt)                          # (5, 5)
    np.testing.assert_allclose(al["matrix"], S, atol=1e-4)
    best = np.asarray(al["matrix"]).argmax(axis=1)                               # each a_i's best target word
    assert sum(tgt.split()[j][1:] == w[1:] for w, j in zip(src.split(), best)) >= 4, best   # chance: 1 of 5
    html = html_path.read_text()
    heat = [s for s in svgs(html) if 'aria-label="Word alignment' in s]
    assert len(heat) == 1 and all(w in heat[0] for w in src.split() + tgt.split()) and no_fetch(html)
    if chromium_path() is not None:
        pytest.importorskip("playwright")
        seen = browser_check(html_path)
        assert seen["errors"] == [] and seen["requests"] == [html_path.resolve().as_uri()]
        assert len(seen["plots"]) == 1 and seen["plots"][0]["shapes"] > 10


def test_explain_with_a_pair_the_model_cannot_align_is_one_line_error(toy_divergence, capsys):
    assert main(["explain", "", "b1", "-l", "xa", "-L", "xb", "-e", "char-ngram", "--divergence", toy_divergence]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bisent: error:") and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_run_report_covers_align_and_filter_stages(tmp_path, capsys):
    """``bisent run --report``: one page with the align and filter stages; the filter samples say which step decided."""
    from test_run import make_run, use_collections

    cfg = make_run(tmp_path)
    assert main(["run", "-c", str(cfg), "-o", str(tmp_path / "r"), "--quiet",
                 "--report", str(tmp_path / "run.html")]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["report"] == str(tmp_path / "run.html")
    html = (tmp_path / "run.html").read_text()
    assert "bisent run: r" in html and no_fetch(html) and len(svgs(html)) >= 4
    assert "Alignment blocks: on LibreOffice help pages" in html            # the align stage is calibrated
    rec = json.loads((tmp_path / "r" / "filter" / "kept.tsv.report.json").read_text())
    assert sum(rec["counts"].values()) == summary["candidates"]["candidates"]
    rows = [r for band in rec["samples"] for r in band["rows"]]
    assert rows and all(r["steps"].startswith("duplicate=") for r in rows)
    assert (tmp_path / "r" / "bitext.tsv").read_text() == (tmp_path / "r" / "filter" / "kept.tsv").read_text()
    # documents mined across two collections: the page shows the documents stage too
    use_collections(tmp_path, cfg)
    assert main(["run", "-c", str(cfg), "-o", str(tmp_path / "r2"), "--quiet",
                 "--report", str(tmp_path / "run2.html")]) == 0
    html = (tmp_path / "run2.html").read_text()
    assert "unmatched: empty document" in html and "<th>steps</th>" in html and no_fetch(html)


@pytest.mark.skipif(chromium_path() is None, reason="no Chromium installed (apt-get install chromium-headless-shell)")
def test_run_report_and_calibrated_docs_report_render_in_a_browser(tmp_path, capsys):
    """The ``bisent run --report`` page (align, filter with per-pair steps) and a docs record with a calibration."""
    pytest.importorskip("playwright")
    from bisent.documents import MINE_COLUMNS
    from bisent.report.record import docs_record
    from test_run import make_run

    cfg = make_run(tmp_path)
    assert main(["run", "-c", str(cfg), "-o", str(tmp_path / "r"), "--quiet",
                 "--report", str(tmp_path / "run.html")]) == 0
    rng = np.random.default_rng(4)
    scores = np.concatenate([rng.normal(1.0, 0.05, 60), rng.normal(1.3, 0.08, 240)])
    (tmp_path / "m.tsv").write_text("\t".join(MINE_COLUMNS) + "\n" + "".join(
        f"s{i}\tt{i}\t{s:.4f}\t0.5\tmatched\ts\tt\n" for i, s in enumerate(scores)))
    docs = docs_record(tmp_path / "m.tsv", threshold=1.1, calibration=calibrate(scores, rng.normal(1.0, 0.05, 500)))
    docs_html = render([("docs", docs)], tmp_path / "docs.html")
    assert ("Estimated precision and yield" in docs_html.read_text()
            and "read this curve as optimistic" in docs_html.read_text())
    for path, n_plots in ((tmp_path / "run.html", 4), (docs_html, 2)):
        seen = browser_check(path)
        assert seen["errors"] == [] and seen["requests"] == [path.resolve().as_uri()]
        assert len(seen["plots"]) >= n_plots
        for plot in seen["plots"]:
            assert plot["w"] > 100 and plot["h"] > 50 and plot["shapes"] > 10
    assert "<th>steps</th>" in (tmp_path / "run.html").read_text()
