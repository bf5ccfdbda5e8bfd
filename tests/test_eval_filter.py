"""``bisent eval filter KEPT REJECTED LABELS``: precision/recall of a filter run against labelled pairs."""

from __future__ import annotations

import json

from bisent.cli import main
from bisent.evaluate import filter_prf

NOISY = [("the red house", "das rote Haus"), ("green tea", "grüner Tee"),
         ("a short one", "ein sehr sehr langer Satz mit viel zu vielen Wörtern darin"),
         ("good morning", "guten Morgen"), ("the cat", "the cat")]


def _run_filter(tmp_path):
    (tmp_path / "noisy.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in NOISY))
    (tmp_path / "steps.yaml").write_text("- {type: length_ratio, max_ratio: 1.8}\n- {type: overlap}\n")
    assert main(["filter", tmp_path / "noisy.tsv", "-l", "en", "-L", "de", "-c", tmp_path / "steps.yaml",
                 "-o", tmp_path / "kept.tsv", "--rejected", tmp_path / "rejected.tsv"]) == 0


def test_counts_of_a_filter_run(tmp_path, capsys):
    _run_filter(tmp_path)
    # the filter keeps 1, 2, 4 and rejects 3 (length ratio) and 5 (a copy); the person says 2 is not parallel,
    # and that 3 was (a mistake of the filter); one label names a pair the run never saw
    (tmp_path / "labels.tsv").write_text("the red house\tdas rote Haus\t1\ngreen tea\tgrüner  Tee\t0\n"
                                         "good morning\tguten Morgen\t1\na short one\tein sehr sehr langer Satz mit "
                                         "viel zu vielen Wörtern darin\t1\nthe cat\tthe cat\t0\nnew\tneu\t1\n")
    capsys.readouterr()
    assert main(["eval", "filter", tmp_path / "kept.tsv", tmp_path / "rejected.tsv", tmp_path / "labels.tsv",
                 "--json"]) == 0
    out = capsys.readouterr()
    r = json.loads(out.out)
    assert (r["tp"], r["fp"], r["fn"], r["tn"], r["not_found"]) == (2, 1, 1, 1, 1)
    assert r["precision"] == 2 / 3 and r["recall"] == 2 / 3 and r["rejected_correct"] == 0.5
    assert "1 of 6 labelled pairs are in neither" in out.err
    assert main(["eval", "filter", tmp_path / "kept.tsv", tmp_path / "rejected.tsv", tmp_path / "labels.tsv"]) == 0
    assert capsys.readouterr().out.startswith("P=66.67 R=66.67 F1=66.67 rejected_correct=50.00")


def test_review_labels_are_read(tmp_path, capsys):
    _run_filter(tmp_path)
    log = tmp_path / "labels.jsonl"
    events = [{"i": 0, "label": "y", "src": "the red house", "tgt": "das rote Haus"},
              {"i": 1, "label": "p", "src": "green tea", "tgt": "grüner Tee"},
              {"i": 2, "label": "s", "src": "the cat", "tgt": "the cat"}]
    log.write_text(json.dumps({"bisent_review": 1, "run": "x", "seed": 0}) + "\n" + "".join(json.dumps(e) + "\n"
                                                                                      for e in events))
    assert main(["eval", "filter", tmp_path / "kept.tsv", tmp_path / "rejected.tsv", log, "--json"]) == 0, \
        capsys.readouterr().err
    r = json.loads(capsys.readouterr().out)
    assert (r["labelled"], r["tp"], r["fp"]) == (2, 1, 1)


def test_bad_labels_are_one_line_errors(tmp_path, capsys):
    _run_filter(tmp_path)
    (tmp_path / "labels.tsv").write_text("the red house\tdas rote Haus\tyes\n")
    assert main(["eval", "filter", tmp_path / "kept.tsv", tmp_path / "rejected.tsv", tmp_path / "labels.tsv"]) == 2
    assert "labels.tsv:1: expected src<TAB>tgt<TAB>label" in capsys.readouterr().err
    (tmp_path / "labels.tsv").write_text("x\ty\t1\n")
    assert main(["eval", "filter", tmp_path / "kept.tsv", tmp_path / "rejected.tsv", tmp_path / "labels.tsv"]) == 2
    assert "none of the 1 labelled pairs" in capsys.readouterr().err


def test_no_pair_found_gives_no_precision():
    r = filter_prf(set(), set(), [("a", "b", True)])
    assert r["precision"] is None and r["recall"] is None and r["not_found"] == 1
