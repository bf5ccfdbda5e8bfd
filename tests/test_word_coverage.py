"""benchmarks/word_coverage.py: recovery error by how often training text shows an item."""

from collections import namedtuple

import pytest

from bisent.encoders import get_encoder
from bisent.errors import BisentError
from word_coverage import collection_counts, coverage, run, stratum_names

P = namedtuple("P", "src tgt")


@pytest.fixture
def collection(tmp_path):
    (tmp_path / "train.en-it.tsv").write_text("dict:x\t1\tthe cat\til gatto\nui:y\t2\tOpen the file\tApri il file\n",
                                              encoding="utf-8")
    (tmp_path / "train.en-de.tsv").write_text("dict:x\t1\tthe dog\tder Hund\n", encoding="utf-8")
    (tmp_path / "mono.it.txt").write_text("Il gatto dorme.\n", encoding="utf-8")
    (tmp_path / "words.it.txt").write_text("casa\ngatto\n", encoding="utf-8")
    (tmp_path / "mono.zh.txt").write_text("你好\n", encoding="utf-8")
    return tmp_path


def test_counts_read_the_languages_column_of_every_file(collection):
    it = collection_counts(collection, "it")
    assert it["gatto"] == 3 and it["il"] == 3 and it["casa"] == 1 and it["hund"] == 0 and it["cat"] == 0
    en = collection_counts(collection, "en")                             # the en column of every pair's file
    assert en["the"] == 3 and en["dog"] == 1 and en["gatto"] == 0
    assert collection_counts(collection, "zh-cn")["你好"] == 1              # zh-cn is read from zh files
    assert coverage("Il gatto", it) == 3 and coverage("gatto nero", it) == 0 and coverage("...", it) == 0
    assert stratum_names() == ["0", "1-4", "5-49", "50+"] and stratum_names((0, 1, 2)) == ["0", "1", "2+"]
    assert stratum_names((0, 2, 3)) == ["0-1", "2", "3+"]


def test_bad_collections_are_one_line_errors(collection):
    with pytest.raises(BisentError, match="no train.en-fr.tsv, mono.fr.txt or words.fr.txt"):
        collection_counts(collection, "fr")
    (collection / "train.en-it.tsv").write_text("a\tb\tc\td\nonly\tthree\tcolumns\n", encoding="utf-8")
    with pytest.raises(BisentError, match=r"train.en-it.tsv:2: expected 4 tab-separated columns, found 3"):
        collection_counts(collection, "it")
    (collection / "train.en-it.tsv").unlink()
    (collection / "words.it.txt").write_bytes(b"casa\ngat\xffto\n")                # as training's --mono reader
    with pytest.raises(BisentError, match=r"words.it.txt:2: not valid UTF-8"):
        collection_counts(collection, "it")


def test_strata_split_the_items_and_compare_with_the_reference(collection):
    counts = collection_counts(collection, "it")
    words = ["gatto", "casa", "file", "sole", "luna", "mare", "monte", "fiume", "vento", "neve"]
    pairs = [P(f"the {w}", w) for w in words]
    seen = []
    keep = lambda r: seen.append(r) or r  # noqa: E731
    recs = run(pairs, [get_encoder("char-ngram"), get_encoder("random")], counts, "en", "it", keep,
               reference="char-ngram", bins=(0, 1))
    by = {(r["encoder"], r["coverage"]): r for r in recs}
    assert [by[("char-ngram", c)]["n"] for c in ("0", "1+")] == [7, 3]         # gatto, casa, file are seen
    assert all(by[("char-ngram", c)]["error_src_tgt"] == 0.0 for c in ("0", "1+"))
    assert "vs" not in by[("char-ngram", "0")]
    for c in ("0", "1+"):
        r = by[("random", c)]
        assert r["vs"] == "char-ngram" and r["only_ref_wrong"] == 0
        assert r["only_this_wrong"] == round(r["n"] * (r["error_src_tgt"] + r["error_tgt_src"]) / 100)
    assert by[("random", "0")]["only_this_wrong"] > 0
    side = run(pairs[:3], [get_encoder("char-ngram")], collection_counts(collection, "en"), "en", "it", keep,
               side="src", bins=(0, 1))
    assert {x["coverage"]: x["n"] for x in side} == {"0": 2, "1+": 1}              # "file" is in "Open the file"
    assert len(seen) == len(recs) + len(side)
