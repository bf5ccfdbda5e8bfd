"""Alignment against human gold folders (vecalign / Bleualign layout), --precision, bad alignment input."""

from __future__ import annotations

import json
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
BLEUALIGN = Path("/work/shared/data/bleualign-dev")


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
