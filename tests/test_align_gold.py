"""Alignment against human gold folders (vecalign / Bleualign layout), --precision, bad alignment input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bisent.align import score_alignments
from bisent.bench.align import load_gold_dir, run_gold
from bisent.cli import main
from bisent.errors import BisentError
from bisent.report.runs import unalign_below

EN = ["The cat sits on the mat.", "It is raining today.", "I like green apples.", "Open the file menu.",
      "Click the Save button.", "The dog barks loudly.", "Close the window now.", "Print the page twice."]
DE = ["Die Katze sitzt auf der Matte.", "Heute regnet es.", "Ich mag grüne Äpfel.", "Öffnen Sie das Menü Datei.",
      "Klicken Sie auf Speichern.", "Der Hund bellt laut.", "Schließen Sie jetzt das Fenster.",
      "Drucken Sie die Seite zweimal."]
BLEUALIGN = Path(os.environ.get("BISENT_BLEUALIGN_DIR", "bleualign-dev"))   # a folder of *.de, *.fr, *.defr


def write(path, lines):
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return path


def gold_folder(tmp_path):
    """A two-document gold folder; the second document's target merges two sentences (a 2-1 gold block)."""
    d = tmp_path / "gold"
    d.mkdir()
    write(d / "a.en", EN[:4])
    write(d / "a.de", DE[:4])
    write(d / "a.ende", [f"[{k}]:[{k}]" for k in range(4)])
    write(d / "b.en", EN[4:])
    write(d / "b.de", [DE[4], DE[5] + " " + DE[6], DE[7]])
    write(d / "b.ende", ["[0]:[0]", "[1,2]:[1]", "[3]:[2]"])
    return d


def test_gold_folder_is_read_and_scored(tmp_path):
    docs = load_gold_dir(gold_folder(tmp_path), "en", "de")
    assert [d.name for d in docs] == ["a", "b"] and docs[1].gold[1] == ((1, 2), (1,))
    rows = []
    out = run_gold(tmp_path / "gold", "en", "de", ["char-ngram"], lambda r: rows.append(r) or r, progress=False,
                   peers=False)
    assert rows == out and [r["encoder"] for r in out] == ["gale-church", "char-ngram"]
    r = out[1]
    assert (r["n_docs"], r["src_sentences"], r["tgt_sentences"], r["gold_blocks"], r["gold_1_1"]) == (2, 8, 7, 7, 6)
    assert r["source"] == "gold:gold" and 0 <= r["strict_f1"] <= 100 and r["lax_f1"] >= r["strict_f1"]


def test_bench_align_gold_cli(tmp_path, capsys):
    d = gold_folder(tmp_path)
    assert main(["bench", "align", "--pair", "en-de", "--gold", str(d), "--no-anchors", "-e", "char-ngram",
                 "--results", ""]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert [r["encoder"] for r in rows if "+" not in r["encoder"]] == ["gale-church", "char-ngram"]
    assert main(["bench", "align", "--pair", "en-de", "--gold", str(d), "--limit", "3", "--no-anchors",
                 "-e", "char-ngram", "--results", ""]) == 2
    assert "--gold" in capsys.readouterr().err
    assert main(["bench", "mining", "--gold", str(d), "--no-anchors", "-e", "char-ngram", "--results", ""]) == 2


def test_peer_aligner_runs_on_the_same_embeddings(tmp_path):
    pytest.importorskip("sentalign")
    d = gold_folder(tmp_path)
    rows = run_gold(d, "en", "de", ["char-ngram"], lambda r: r, progress=False)
    peer = [r for r in rows if r["encoder"] == "sentalign+char-ngram"]
    assert len(peer) == 1 and peer[0]["encoder_id"].startswith("sentalign-0.3.0+char-ngram")
    assert peer[0]["n_hyp"] >= 3 and 0 <= peer[0]["strict_f1"] <= 100


def test_peer_aligner_runs_on_the_help_views_too(monkeypatch):
    """The help views (``clean``, ``drop10``, ...) record the peer beside each encoder, on the same pages."""
    pytest.importorskip("sentalign")
    from types import SimpleNamespace

    from bisent.bench import align as bench_align

    src = ["Open the file.", "Click OK.", "The dialog closes.", "Save your work."]
    tgt = ["Öffnen Sie die Datei.", "Klicken Sie auf OK.", "Der Dialog schließt sich.", "Speichern Sie Ihre Arbeit."]
    doc = SimpleNamespace(src=src, tgt=tgt, gold=[((i,), (i,)) for i in range(4)])
    stats = {"src_sentences": 4, "tgt_sentences": 4, "blocks": 4, "blocks_1_1": 4, "merged": 0}
    monkeypatch.setattr(bench_align, "load_align_task", lambda *a, **k: ([doc], stats))
    rows = bench_align.run("en", "de", ["char-ngram"], lambda r: r, views=["clean"], sources=["libreoffice"],
                           progress=False)
    assert [r["encoder"] for r in rows] == ["gale-church", "char-ngram", "sentalign+char-ngram"]
    assert rows[2]["view"] == "clean" and rows[2]["encoder_id"].startswith("sentalign-0.3.0+char-ngram")
    assert rows[2]["strict_f1"] == 100.0
    assert [r["encoder"] for r in bench_align.run("en", "de", ["char-ngram"], lambda r: r, views=["clean"],
                                                  sources=["libreoffice"], progress=False, peers=False)] \
        == ["gale-church", "char-ngram"]


def test_bad_gold_folders_are_one_line_errors(tmp_path):
    d = gold_folder(tmp_path)
    with pytest.raises(BisentError, match="no \\*.fr documents"):
        load_gold_dir(d, "fr", "de")
    (d / "b.ende").unlink()
    with pytest.raises(BisentError, match="b.ende: no such file"):
        load_gold_dir(d, "en", "de")
    write(d / "b.ende", ["[0]:[0]", "[1,2]:[1]", "[3]:[5]"])
    with pytest.raises(BisentError, match="target line 5 is outside 3 lines"):
        load_gold_dir(d, "en", "de")
    write(d / "b.ende", ["[0]:[0]", "[0,2]:[1]", "[3]:[2]"])
    with pytest.raises(BisentError, match="source sentence 0 is already in the block of line 1"):
        load_gold_dir(d, "en", "de")
    with pytest.raises(BisentError, match="no such folder"):
        load_gold_dir(tmp_path / "nope", "en", "de")


def test_unalign_below_keeps_every_line_in_one_row(tmp_path):
    tsv = write(tmp_path / "o.tsv", ["1\t1\t0.9000\ta\tA", "2,3\t2\t0.3000\tb c\tB", "4\t\t\td\t", "\t3\tempty\t\t"])
    blk = write(tmp_path / "o.blocks", ["[0]:[0]:0.900000", "[1,2]:[1]:0.300000", "[3]:[]", "[]:[2]"])
    assert unalign_below(tsv, blk, 0.5) == 1
    rows = [r.split("\t") for r in tsv.read_text(encoding="utf-8").splitlines()]
    assert rows == [["1", "1", "0.9000", "a", "A"], ["2,3", "", "", "b c", ""], ["", "2", "", "", "B"],
                    ["4", "", "", "d", ""], ["", "3", "empty", "", ""]]
    assert blk.read_text().splitlines() == ["[0]:[0]:0.900000", "[1,2]:[]", "[]:[1]", "[3]:[]", "[]:[2]"]


def test_precision_keeps_high_blocks_and_accounts_for_every_line(tmp_path, capsys):
    src = write(tmp_path / "a.en", EN * 3)
    tgt = write(tmp_path / "a.de", DE[:5] + ["Etwas ganz anderes steht hier."] + DE[6:] + DE * 2)
    out = tmp_path / "o.tsv"
    args = ["align", str(src), str(tgt), "-l", "en", "-L", "de", "-e", "char-ngram", "-o", str(out)]
    assert main(args + ["--precision", "0.5"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert {"threshold", "estimated_precision", "blocks_below_threshold"} <= set(summary)
    rows = [r.split("\t") for r in out.read_text(encoding="utf-8").splitlines()]
    assert sorted(int(k) for r in rows for k in r[0].split(",") if k) == list(range(1, 25))
    assert sorted(int(k) for r in rows for k in r[1].split(",") if k) == list(range(1, 25))
    assert all(float(r[2]) >= summary["threshold"] for r in rows if r[0] and r[1])
    left = summary["unaligned_after_threshold"]
    assert left["src"] == sum(1 for r in rows if r[0] and not r[1])
    assert left["tgt"] == sum(1 for r in rows if r[1] and not r[0])
    assert main(args[:-4] + ["-e", "gale-church", "-o", str(out), "--precision", "0.9"]) == 2
    assert "Gale-Church" in capsys.readouterr().err


def test_one_side_empty_and_whitespace_documents(tmp_path, capsys):
    blank = write(tmp_path / "blank.de", ["   ", "\t"])
    one = write(tmp_path / "one.en", [EN[0]])
    for extra in ([], ["--split"]):
        assert main(["align", str(one), str(blank), "-l", "en", "-L", "de", "-e", "char-ngram",
                     "-o", str(tmp_path / "o.tsv")] + extra) == 2
        err = capsys.readouterr().err
        assert err.startswith("bisent: error:") and len(err.strip().splitlines()) == 1


@pytest.mark.skipif(not BLEUALIGN.is_dir(), reason="the Bleualign dev document is not on this machine")
def test_bleualign_dev_folder_reads_as_gold():
    (doc,) = load_gold_dir(BLEUALIGN, "de", "fr")
    assert doc.src.n_lines == 468 and doc.tgt.n_lines == 554 and len(doc.gold) == 422
    assert score_alignments([doc.gold], [doc.gold]).strict_f1 == 1.0


@pytest.mark.slow
@pytest.mark.skipif(not BLEUALIGN.is_dir(), reason="the Bleualign dev document is not on this machine")
def test_defaults_reach_85_strict_f1_on_the_bleualign_dev_document():
    """use-m3 at the defaults, as `bisent bench align --gold` scores it (85.86 when the defaults were chosen)."""
    from bisent.align import SentenceAligner, line_blocks

    (doc,) = load_gold_dir(BLEUALIGN, "de", "fr")
    blocks = SentenceAligner("use-m3", progress=False).align(doc.src.sentences, doc.tgt.sentences, "de", "fr").blocks
    hyp = [(b.src, b.tgt) for b in line_blocks(blocks, doc.src, doc.tgt)]
    assert score_alignments([hyp], [doc.gold]).strict_f1 >= 0.85


def test_scores_equal_vecalign_score_py_on_random_alignments():
    """Where sentalign (which ships vecalign's score.py) is installed: the same six figures on random
    monotone alignments with skips and m-n blocks, summed over several documents."""
    score = pytest.importorskip("sentalign.score")
    import random

    rng = random.Random(3)

    def random_alignment(n, m):
        blocks, i, j = [], 0, 0
        while i < n or j < m:
            a, b = rng.choice([(1, 1), (1, 1), (1, 2), (2, 1), (1, 0), (0, 1), (2, 2), (1, 3)])
            a, b = min(a, n - i), min(b, m - j)
            if a or b:
                blocks.append((list(range(i, i + a)), list(range(j, j + b))))
                i, j = i + a, j + b
        return blocks

    gold = [random_alignment(30, 34) for _ in range(4)]
    hyp = [random_alignment(30, 34) for _ in range(4)]
    ref = score.score_multiple(gold_list=gold, test_list=hyp)
    ours = score_alignments(hyp, gold)
    assert ours.strict_p == pytest.approx(ref["precision_strict"]) and ours.lax_p == pytest.approx(ref["precision_lax"])
    assert ours.strict_r == pytest.approx(ref["recall_strict"]) and ours.lax_r == pytest.approx(ref["recall_lax"])
    assert ours.strict_f1 == pytest.approx(ref["f1_strict"]) and ours.lax_f1 == pytest.approx(ref["f1_lax"])


def _paragraph_doc():
    from bisent.datasets.libreoffice import Document, Paragraph

    en = [Paragraph("a", "Open the menu."), Paragraph("b", "Click Save. Then close the dialog."),
          Paragraph("c", "Choose a file. Press Enter. Wait."), Paragraph("d", "This paragraph was never translated."),
          Paragraph("e", "Cmd+X"), Paragraph("f", "Print the page."),
          Paragraph("g", "Dim iCount As Integer = Len(sText) + 1")]
    de = [Paragraph("a", "Öffnen Sie das Menü."), Paragraph("b", "Klicken Sie auf Speichern und schließen Sie."),
          Paragraph("c", "Wählen Sie eine Datei. Drücken Sie die Eingabetaste und warten Sie."),
          Paragraph("d", "This paragraph was never  translated."), Paragraph("e", "Cmd+X"),
          Paragraph("f", "Drucken Sie die Seite."), Paragraph("g", "Dim iCount As Integer = Len(sText) + 1")]
    return Document("page.html", "dev", en, de)


def test_paragraph_gold_keeps_m_n_and_untranslated_paragraphs():
    """Every paragraph kept by kind: exact (1-1, 2-1), many (3-2: inner gold unknown), untranslated (prose left in
    English: 1-0 / 0-1 gold); identical code stays an ordinary paragraph, an identical key name is left out."""
    from bisent.datasets.align_gold import EXACT, MANY, UNTRANSLATED, paragraph_page

    doc, counts = paragraph_page(_paragraph_doc(), "en", "de")
    assert doc.src == ["Open the menu.", "Click Save.", "Then close the dialog.", "Choose a file.", "Press Enter.",
                       "Wait.", "This paragraph was never translated.", "Print the page.",
                       "Dim iCount As Integer = Len(sText) + 1"]
    assert len(doc.tgt) == 7 and doc.tgt[4] == "This paragraph was never  translated."
    assert doc.paragraphs == [((0,), (0,), EXACT), ((1, 2), (1,), EXACT), ((3, 4, 5), (2, 3), MANY),
                              ((6,), (4,), UNTRANSLATED), ((7,), (5,), EXACT), ((8,), (6,), EXACT)]
    assert doc.gold == [((0,), (0,)), ((1, 2), (1,)), ((6,), ()), ((), (4,)), ((7,), (5,)), ((8,), (6,))]
    assert counts["identical_short"] == 1 and counts["many_unequal"] == 1 and counts["exact_1_n"] == 1
    assert counts["untranslated"] == 1 and counts["exact_1_1"] == 3 and counts["identical_kept"] == 1


def test_paragraph_scores_against_a_hand_count():
    from bisent.bench.align import paragraph_scores
    from bisent.datasets.align_gold import paragraph_page

    doc, _ = paragraph_page(_paragraph_doc(), "en", "de")
    perfect = [[(s, t) for s, t, _ in doc.paragraphs[:3]] + [((6,), ()), ((), (4,)), ((7,), (5,)), ((8,), (6,))]]
    sc = paragraph_scores(perfect, [doc])
    assert (sc["strict_f1"], sc["para_error"], sc["untranslated_skipped"]) == (100.0, 0.0, 100.0)
    # 0-0 right; 1-1 and a skip of 2 split the 2-1 paragraph wrongly; 3-2 and 4,5-3 lie inside the m-n
    # paragraph (not scored); 6-4 pairs the untranslated sentence with its copy; 7,8-5,6 crosses paragraphs f|g
    hyp = [[((0,), (0,)), ((1,), (1,)), ((2,), ()), ((3,), (2,)), ((4, 5), (3,)), ((6,), (4,)), ((7, 8), (5, 6))]]
    sc = paragraph_scores(hyp, [doc])
    # exact part: hyp blocks kept = 0-0, 1-1, 2-skip, 6-4, 7,8-5,6 (the two inside paragraph c left out)
    # strict P = 1/5 (0-0); gold with both sides: 0-0, (1,2)-1, 7-5, 8-6 -> strict R = 1/4; lax P = 3/5
    # (0-0, 1-1, 7,8-5,6), lax R = 4/4
    assert (sc["strict_p"], sc["strict_r"], sc["n_hyp"], sc["n_gold"]) == (20.0, 25.0, 5, 4)
    assert (sc["lax_p"], sc["lax_r"]) == (60.0, 100.0)
    # aligned blocks: 0-0, 1-1, 3-2, 4,5-3, 6-4, 7,8-5,6; one crosses (7,8-5,6)
    assert (sc["para_error"], sc["aligned_blocks"], sc["untranslated_skipped"]) == (16.67, 6, 0.0)
    crossing = [[((0, 1), (0,)), ((2,), (1,)), ((3, 4), (2,)), ((5,), (3, 4)), ((6,), ()), ((7,), (5,)),
                 ((8,), (6,))]]
    sc = paragraph_scores(crossing, [doc])
    # aligned blocks 6; crossing: 0,1-0 (a|b), 5-3,4 (c|d); blocks touching the m-n paragraph: 3,4-2 and 5-3,4
    assert (sc["para_error"], sc["para_error_many"], sc["many_blocks"]) == (33.33, 50.0, 2)
    assert sc["untranslated_skipped"] == 50.0       # the source copy skipped, the target copy paired


def _cached(src, tgt):
    from bisent.datasets import libreoffice

    return libreoffice._is_built(libreoffice._cache_folder(src, tgt))


@pytest.mark.skipif(not _cached("en", "es"), reason="LibreOffice help en-es is not built in the cache")
def test_paragraph_gold_on_real_help_pages():
    """A few real en-es pages: every sentence in one paragraph, pages in one split, the same twice, every page
    with a non-1-1 paragraph, untranslated paragraphs identical on both sides."""
    from bisent.datasets.align_gold import MANY, UNTRANSLATED, load_paragraph_task

    dev, stats = load_paragraph_task("en", "es", "dev", limit=4)
    test, _ = load_paragraph_task("en", "es", "test", limit=4)
    assert len(dev) == len(test) == 4 and not {d.name for d in dev} & {d.name for d in test}
    assert load_paragraph_task("en", "es", "dev", limit=4) == (dev, stats)
    for d in dev:
        assert sorted(i for s, _, _ in d.paragraphs for i in s) == list(range(len(d.src)))
        assert sorted(j for _, t, _ in d.paragraphs for j in t) == list(range(len(d.tgt)))
        assert any(k != "exact" or len(s) != 1 or len(t) != 1 for s, t, k in d.paragraphs)
        for s, t, k in d.paragraphs:
            if k == UNTRANSLATED:
                assert " ".join(d.src[i] for i in s).split() == " ".join(d.tgt[j] for j in t).split()
            assert (k == MANY) == (min(len(s), len(t)) > 1 and k != UNTRANSLATED)
    assert stats["pages_kept"] == 4 and stats["paragraphs"] == sum(len(d.paragraphs) for d in dev)


def test_bench_align_paragraphs_view(monkeypatch, capsys):
    """`bisent bench align --view paragraphs`: a record per aligner with the paragraph scores; --view and --no-peers
    only for the align task."""
    from bisent.datasets import align_gold

    monkeypatch.setattr(align_gold, "load_documents", lambda src, tgt, split: [_paragraph_doc()])
    assert main(["bench", "align", "--pair", "en-de", "--split", "dev", "--view", "paragraphs", "--no-anchors",
                 "-e", "char-ngram", "--no-peers", "--results", ""]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert [r["encoder"] for r in rows] == ["gale-church", "char-ngram"]
    for r in rows:
        assert (r["view"], r["split"], r["n_docs"], r["paragraphs"], r["untranslated_sentences"]) == \
            ("paragraphs", "dev", 1, 6, 2)
        assert 0 <= r["para_error"] <= 100 and 0 <= r["strict_f1"] <= 100
    assert main(["bench", "mining", "--view", "clean", "--no-anchors", "-e", "char-ngram"]) == 2
    assert "No such option '--view'" in capsys.readouterr().err
