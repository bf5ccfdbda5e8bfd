"""Vectors read from files (``vectors.json``: .npy, raw float32/float16, bisent embed shards) in every job."""

import json

import numpy as np
import pytest

from bisent.cli import main
from bisent.encoders import get_encoder
from bisent.errors import BisentError

EN = ["the cat sleeps on the sofa", "open the file menu", "save the document as PDF", "print two copies",
      "the dog barks at night", "insert a table", "close the window", "select all cells"]
DE = ["öffnen Sie das Menü Datei", "die Katze schläft auf dem Sofa", "zwei Kopien drucken", "eine Tabelle einfügen",
      "das Dokument als PDF speichern", "alle Zellen auswählen", "das Fenster schließen", "der Hund bellt nachts"]


def _write(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _card(tmp_path, files, **extra):
    path = tmp_path / "vectors.json"
    path.write_text(json.dumps({"files": files, **extra}))
    return path


@pytest.fixture()
def table(tmp_path):
    """en.txt / de.txt with char-ngram vectors as en.npy (float32) and de.f16 (raw float16)."""
    enc = get_encoder("char-ngram")
    _write(tmp_path, "en.txt", EN)
    _write(tmp_path, "de.txt", DE)
    np.save(tmp_path / "en.npy", enc.encode(EN, "en", cache=False))
    enc.encode(DE, "de", cache=False).astype("<f2").tofile(tmp_path / "de.f16")
    return _card(tmp_path, [{"text": "en.txt", "vectors": "en.npy"},
                            {"text": "de.txt", "vectors": "de.f16", "dtype": "float16"}], dim=1024, name="ngrams")


def test_vectors_are_looked_up_by_their_text(table):
    enc = get_encoder(table)
    assert (enc.dim, enc.name, enc.languages) == (1024, "ngrams", None) and enc.id.startswith("vectors/ngrams-")
    want = get_encoder("char-ngram").encode(EN[:3], "en", cache=False)
    assert np.array_equal(enc.encode(EN[:3], "en"), want)
    got = enc.encode(["  open the   file menu ", ""], "en")     # spaces collapsed; an empty text is a zero row
    assert np.array_equal(got[0], want[1]) and not got[1].any()
    with pytest.raises(BisentError, match="vectors.json: no vector for the en text 'not in the files'"):
        enc.encode(["not in the files"], "en")


def test_mining_from_vector_files_is_byte_identical_to_the_same_vectors_through_embed(table, tmp_path):
    src, tgt = tmp_path / "en.txt", tmp_path / "de.txt"
    common = ["-l", "en", "-L", "de", "--threshold", "none", "--line-numbers"]
    assert main(["mine", str(src), str(tgt), "-e", str(table), "-o", str(tmp_path / "a.tsv"), *common]) in (0, None)
    for side, lang in (("en", "en"), ("de", "de")):
        assert main(["embed", str(tmp_path / f"{side}.txt"), "-l", lang, "-e", str(table), "-o",
                     str(tmp_path / f"v{side}")]) in (0, None)
    assert main(["mine", str(src), str(tgt), "--src-vectors", str(tmp_path / "ven"), "--tgt-vectors",
                 str(tmp_path / "vde"), "-o", str(tmp_path / "b.tsv"), *common]) in (0, None)
    a, b = (tmp_path / "a.tsv").read_bytes(), (tmp_path / "b.tsv").read_bytes()
    assert a == b and len(a.splitlines()) == 8
    assert b"the cat sleeps on the sofa\tdie Katze" in a


def test_a_bisent_embed_folder_is_a_vectors_source(table, tmp_path):
    assert main(["embed", str(tmp_path / "en.txt"), "-l", "en", "-e", "char-ngram", "-o", str(tmp_path / "ven")]) \
        in (0, None)
    card = tmp_path / "shards.json"
    card.write_text(json.dumps({"files": [{"text": "en.txt", "vectors": "ven", "lang": "en"}]}))
    enc = get_encoder(card)
    assert enc.dim == 1024 and enc.languages == {"en"}
    with pytest.raises(BisentError, match="unknown language 'de'"):
        enc.encode(["x"], "de")


def test_mistakes_are_one_line_errors(tmp_path):
    _write(tmp_path, "en.txt", EN)
    np.save(tmp_path / "short.npy", np.ones((3, 4), np.float32))
    with pytest.raises(BisentError, match="short.npy: 3 rows, but .*en.txt has 8 lines"):
        get_encoder(_card(tmp_path, [{"text": "en.txt", "vectors": "short.npy"}]))
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}] * 8, dtype=object))
    with pytest.raises(BisentError, match="objects.npy: holds Python objects \\(a pickle\\), which bisent never loads"):
        get_encoder(_card(tmp_path, [{"text": "en.txt", "vectors": "objects.npy"}]))
    np.ones((8, 5), np.float32).tofile(tmp_path / "raw.f32")
    with pytest.raises(BisentError, match="raw.f32: 160 bytes is not a whole number of float32 rows of 6 dimensions"):
        get_encoder(_card(tmp_path, [{"text": "en.txt", "vectors": "raw.f32"}], dim=6))
    with pytest.raises(BisentError, match="raw.f32: raw vectors need the dimension"):
        get_encoder(_card(tmp_path, [{"text": "en.txt", "vectors": "raw.f32"}]))
    np.save(tmp_path / "wide.npy", np.ones((8, 5), np.float32))
    with pytest.raises(BisentError, match="wide.npy: rows of 5 dimensions, but the card says dim 4"):
        get_encoder(_card(tmp_path, [{"text": "en.txt", "vectors": "wide.npy"}], dim=4))
    np.save(tmp_path / "four.npy", np.ones((8, 4), np.float32))
    with pytest.raises(BisentError, match="wide.npy: rows of 5 dimensions, but .*four.npy has 4"):
        get_encoder(_card(tmp_path, [{"text": "en.txt", "vectors": "four.npy"}, {"text": "en.txt",
                                                                               "vectors": "wide.npy"}]))
    with pytest.raises(BisentError, match="vectors.json: files\\[1\\] needs \"text\" and \"vectors\""):
        get_encoder(_card(tmp_path, [{"text": "en.txt"}]))
