"""bisent data vocab: the word types of a corpus per language (datasets/vocab.py)."""

import json
from collections import Counter

from bisent.cli import main
from bisent.datasets.vocab import segment, vocabulary, word_counts, words_of


def test_word_types_once_each_in_their_most_frequent_form_most_frequent_first():
    texts = ["Le chien et le chat.", "le chien, s'abonner au sous-marin", "LE 2026 chien 42"]
    c = word_counts(texts)
    assert c["le"] == 2 and c["Le"] == 1 and c["LE"] == 1 and "2026" not in c and "42" not in c
    assert c["s'abonner"] == 1 and c["sous-marin"] == 1
    words = vocabulary(c)
    assert words[:2] == ["le", "chien"]                          # 4 and 3 occurrences
    assert len(words) == len({w.casefold() for w in words}) == 7
    assert vocabulary(c, min_count=2) == ["le", "chien"]
    assert vocabulary(c, max_words=1) == ["le"]
    assert vocabulary(Counter({"Paris": 2, "paris": 1})) == ["Paris"]


def test_chinese_and_japanese_runs_are_cut_into_words_other_languages_are_not():
    """Han/kana runs are split into wordfreq's words by their frequencies (not kept whole, not cut greedily:
    the greedy longest match reads 我喜欢 as 我喜 + 欢); Latin inside a run and other languages stay as they were."""
    assert words_of("我喜欢吃苹果和香蕉。", "zh-cn") == ["我", "喜欢", "吃", "苹果", "和", "香蕉"]
    assert words_of("Windows键盘 2024", "zh") == ["Windows", "键盘"]
    assert words_of("ファイルを保存します", "ja") == ["ファイル", "を", "保存", "し", "ます"]
    assert words_of("我喜欢吃苹果", "en") == ["我喜欢吃苹果"] and words_of("설정을 저장", "ko") == ["설정을", "저장"]
    assert words_of("le sous-marin 42", "fr") == ["le", "sous-marin"]
    lexicon = {"ab": -1.0, "abc": -9.0, "cd": -1.0}
    assert segment("abcd", lexicon) == ["ab", "cd"]                 # -2 beats abc + d (-9 + unknown)
    assert segment("xyz", lexicon) == ["x", "y", "z"] and segment("", lexicon) == []
    assert "".join(segment("打开文件管理器，然后点击", {"文件": -5.0})) == "打开文件管理器，然后点击"


def test_data_vocab_writes_a_file_per_language_from_bitext_and_text(tmp_path, capsys):
    (tmp_path / "train.en-fr.tsv").write_text("the dog\tle chien\nthe cat\tle chat\n", encoding="utf-8")
    (tmp_path / "mono.fr.txt").write_text("un chien noir\n\nle chien\n", encoding="utf-8")
    out = tmp_path / "v"
    assert main(["data", "vocab", "--train", str(tmp_path / "train.en-fr.tsv"),
                 "--mono", str(tmp_path / "mono.fr.txt"), "-o", str(out)]) == 0
    assert (out / "vocab.en.txt").read_text(encoding="utf-8").split() == ["the", "cat", "dog"]
    assert (out / "vocab.fr.txt").read_text(encoding="utf-8").split() == ["chien", "le", "chat", "noir", "un"]
    stats = json.loads((out / "stats.json").read_text())
    assert stats["languages"]["fr"] == {"texts": 4, "empty_lines": 1, "tokens": 9, "types": 5, "written": 5,
                                        "segmented": False}
    assert stats["languages"]["en"]["empty_lines"] == 0
    assert "fr: 4 texts (1 empty lines left out), 9 words, 5 types, 5 written" in capsys.readouterr().out
    assert not [p for p in out.iterdir() if p.name.startswith(".")]      # no temp file left behind


def test_data_vocab_bad_input_is_a_one_line_error(tmp_path, capsys):
    bad = tmp_path / "train.en-fr.tsv"
    bad.write_text("the dog\tle chien\nno tab on this line\n", encoding="utf-8")
    assert main(["data", "vocab", "--train", str(bad), "-o", str(tmp_path / "v")]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "train.en-fr.tsv" in err and ":2" in err and "Traceback" not in err
    (tmp_path / "notes.txt").write_text("bonjour\n", encoding="utf-8")
    assert main(["data", "vocab", "--mono", str(tmp_path / "notes.txt"), "-o", str(tmp_path / "v")]) != 0
    assert "cannot tell its language" in capsys.readouterr().err
    assert main(["data", "vocab", "-o", str(tmp_path / "v")]) != 0
    assert "at least one --train or --mono" in capsys.readouterr().err
    assert not (tmp_path / "v").exists()


def test_data_vocab_segments_chinese_bitext(tmp_path):
    (tmp_path / "train.en-zh.tsv").write_text("I like apples\t我喜欢苹果\nbananas\t香蕉和苹果\n", encoding="utf-8")
    out = tmp_path / "v"
    assert main(["data", "vocab", "--train", str(tmp_path / "train.en-zh.tsv"), "-o", str(out)]) == 0
    assert (out / "vocab.zh.txt").read_text(encoding="utf-8").split() == ["苹果", "和", "喜欢", "我", "香蕉"]
    stats = json.loads((out / "stats.json").read_text())
    assert stats["languages"]["zh"]["segmented"] and not stats["languages"]["en"]["segmented"]
