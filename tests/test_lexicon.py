"""The teacher-mined word lexicon (bisent.training.lexicon, `bisent data lexicon`)."""

from __future__ import annotations

import json

import pytest

from bisent.encoders import get_encoder
from bisent.errors import BisentError
from bisent.training.data import resolve_bitext
from bisent.training.lexicon import mine_lexicon, write_lexicons

EN = ["house", "dog", "water", "bread", "tree", "window", "mountain", "cheese", "laugh", "river", "moon", "radio"]
IT = ["fiume", "cane", "pane", "finestra", "ridere", "albero", "acqua", "luna", "montagna", "formaggio", "casa",
      "radio"]
GOLD = dict(zip(EN, ["casa", "cane", "acqua", "pane", "albero", "finestra", "montagna", "formaggio", "ridere",
                     "fiume", "luna", "radio"]))


def test_use_m3_pairs_most_words_with_their_translations_and_every_mutual_pair_is_counted():
    counts: dict = {}
    pairs = mine_lexicon(EN, IT, get_encoder("use-m3"), "it", threshold=0.0, held_folded={"cane"}, counts=counts)
    right = [(e, x) for _, e, x in pairs if GOLD[e] == x]
    assert len(right) >= 8, pairs                                   # 11 can be paired (radio is the same string)
    assert len(right) >= len(pairs) - 1, pairs
    assert all(x not in ("radio", "cane") for _, _, x in pairs)     # same string; held out
    assert counts["same"] == 1 and counts["held_out"] == 1
    assert counts["mutual"] == len(pairs) + counts["same"] + counts["held_out"] + counts.get("below_threshold", 0)
    scores = [s for s, _, _ in pairs]
    assert scores == sorted(scores, reverse=True)
    high = mine_lexicon(EN, IT, get_encoder("use-m3"), "it", threshold=scores[len(scores) // 2] + 1e-6)
    assert len(high) < len(pairs) and all(s > scores[len(scores) // 2] for s, _, _ in high)
    assert counts["words"] == len(IT) == sum(counts.get(k, 0) for k in ("kept", "same", "below_threshold",
                                                                         "held_out", "unpaired", "repeated"))
    empty: dict = {}
    assert mine_lexicon([], IT, get_encoder("char-ngram"), "it", counts=empty) == [] and empty["mutual"] == 0
    assert empty["unpaired"] == len(IT) and empty["kept"] == 0
    twice: dict = {}
    mine_lexicon(EN, IT + IT[:3], get_encoder("char-ngram"), "it", threshold=0.0, counts=twice)
    assert twice["repeated"] == 3 and twice["words"] == len(IT) + 3


def test_write_lexicons_writes_bitext_that_training_reads_as_the_lexicon_domain(tmp_path):
    (tmp_path / "words.en.txt").write_text("".join(w + "\n" for w in EN), encoding="utf-8")
    (tmp_path / "words.it.txt").write_text("".join(w + "\n" for w in IT), encoding="utf-8")
    stats = write_lexicons(tmp_path, get_encoder("use-m3"), threshold=0.0, held_folded=set())
    bt = resolve_bitext(str(tmp_path / "lexicon.en-it.tsv"))
    assert bt.langs == ("en", "it") and set(bt.domains) == {"lexicon"}
    assert len(bt.pairs) == stats["languages"]["it"]["kept"] >= 8
    assert json.loads((tmp_path / "lexicon.json").read_text())["languages"]["it"]["kept"] == len(bt.pairs)
    assert not list(tmp_path.glob("*.tmp*"))


def test_data_lexicon_bad_input_is_a_one_line_error_and_leaves_the_word_lists_as_they_were(tmp_path, capsys):
    from bisent.cli import main

    assert main(["data", "lexicon", str(tmp_path)]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "words.en.txt: no English word list" in err and "Traceback" not in err
    (tmp_path / "words.en.txt").write_text("house\ndog\n", encoding="utf-8")
    (tmp_path / "words.it.txt").write_bytes(b"casa\ncan\xffe\n")                  # not UTF-8 on line 2
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert main(["data", "lexicon", "-e", "char-ngram", str(tmp_path)]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "words.it.txt:2" in err and "Traceback" not in err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before                # nothing written
    (tmp_path / "words.it.txt").write_text("casa\ncane\ncasa\n", encoding="utf-8")
    assert main(["data", "lexicon", "-e", "char-ngram", "--threshold", "0", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "en-it: 3 words:" in out and out.rstrip().splitlines()[0].endswith("1 repeated")
    it = json.loads((tmp_path / "lexicon.json").read_text())["languages"]["it"]
    assert it["repeated"] == 1 and it["words"] == 3 == sum(it.get(k, 0) for k in (
        "kept", "same", "below_threshold", "held_out", "unpaired", "repeated"))


def test_a_collection_without_word_lists_or_with_an_empty_line_gets_a_one_line_error(tmp_path):
    with pytest.raises(BisentError, match="no English word list"):
        write_lexicons(tmp_path, get_encoder("char-ngram"), held_folded=set())
    (tmp_path / "words.en.txt").write_text("a\nb\n", encoding="utf-8")
    with pytest.raises(BisentError, match=r"no words\.XX\.txt"):
        write_lexicons(tmp_path, get_encoder("char-ngram"), held_folded=set())
    (tmp_path / "words.it.txt").write_text("a\n\nb\n", encoding="utf-8")
    with pytest.raises(BisentError, match=r"words\.it\.txt:2: empty line") as e:
        write_lexicons(tmp_path, get_encoder("char-ngram"), held_folded=set())
    assert "\n" not in str(e.value)
