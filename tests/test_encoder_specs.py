"""Encoder specs beyond one name: ensembles (``a+b``, weighted), declared languages, cache keys of model files."""

import json

import numpy as np
import pytest

from bisent.cli import main
from bisent.encoders import covering, get_encoder, is_encoder, resolve
from bisent.encoders.ensemble import Ensemble, parse_spec
from bisent.encoders.files import files_hash
from bisent.errors import BisentError

TEXTS = ["open the file menu", "print two copies", "insert a table", "the dog barks"]


def test_an_ensemble_concatenates_weighted_unit_vectors_and_its_cosine_is_the_weighted_mean(monkeypatch):
    monkeypatch.setenv("BISENT_NO_EMBED_CACHE", "1")
    assert parse_spec("char-ngram:3+random") == [("char-ngram", 3.0), ("random", 1.0)]
    ens = get_encoder("char-ngram:3+random")
    assert isinstance(ens, Ensemble) and ens.dim == 1024 + 256 and ens.languages is None
    assert ens.id == "ensemble(char-ngram/1024-3-5-v1:0.75,random/256-v1:0.25)"
    v = ens.encode(TEXTS, "en")
    a, b = get_encoder("char-ngram").encode(TEXTS, "en"), get_encoder("random").encode(TEXTS, "en")
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1, atol=1e-6)
    np.testing.assert_allclose(v @ v.T, 0.75 * (a @ a.T) + 0.25 * (b @ b.T), atol=1e-6)
    np.testing.assert_allclose(v[:, :1024], np.sqrt(0.75) * a, atol=1e-6)
    assert get_encoder("char-ngram+random").id != ens.id          # equal weights: another encoder, other rows


def test_ensemble_specs_resolve_wherever_an_encoder_is_asked_for(tmp_path, capsys):
    assert resolve("char-ngram+random") == "char-ngram+random" and is_encoder("use-m3:0.6+me5-small:0.4")
    for spec, msg in [("char-ngram+nope", "unknown encoder 'nope'"), ("char-ngram+", "an empty member"),
                      ("char-ngram:0+random", "weight '0' of char-ngram must be a positive number"),
                      ("random+random", "a member is named twice")]:
        with pytest.raises(BisentError, match=msg):
            get_encoder(spec)
        assert not is_encoder(spec)
    (tmp_path / "en.txt").write_text("open the file menu\nprint two copies\n")
    (tmp_path / "de.txt").write_text("zwei Kopien drucken\ndas Menü Datei öffnen\n")
    assert main(["mine", str(tmp_path / "en.txt"), str(tmp_path / "de.txt"), "-l", "en", "-L", "de", "-e",
                 "char-ngram:2+random", "--threshold", "none", "-o", str(tmp_path / "m.tsv")]) in (0, None)
    assert len((tmp_path / "m.tsv").read_text().splitlines()) == 2


def test_an_unsupported_language_names_the_registered_encoders_that_cover_it(tmp_path, capsys):
    assert covering("et") == ["me5-small"] and covering("de") == ["use-m3", "me5-small"]
    (tmp_path / "a.txt").write_text("tere\n")
    assert main(["mine", str(tmp_path / "a.txt"), str(tmp_path / "a.txt"), "-l", "en", "-L", "et", "--threshold",
                 "none", "-o", str(tmp_path / "m.tsv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]     # (the source side may be embedded first)
    assert err.startswith("bisent: error: encoder use-m3: unknown language 'et'")
    assert err.endswith("registered encoders that cover it: me5-small)")
    with pytest.raises(BisentError, match="unknown language 'xx' .*no registered encoder lists it"):
        get_encoder("use-m3").check_lang("xx")


def test_a_card_declares_the_languages_of_a_vectors_source(tmp_path):
    (tmp_path / "t.txt").write_text("hello\n")
    np.save(tmp_path / "t.npy", np.ones((1, 4), np.float32))
    card = tmp_path / "card.json"
    card.write_text(json.dumps({"languages": ["en", "ET"], "files": [{"text": "t.txt", "vectors": "t.npy"}]}))
    enc = get_encoder(card)
    assert enc.languages == {"en", "et"} and enc.check_lang("et-EE") == "et-ee"
    with pytest.raises(BisentError, match="encoder card: unknown language 'de' \\(it supports: en, et; registered "
                                          "encoders that cover it: use-m3, me5-small\\)"):
        enc.encode(["hello"], "de")


def test_two_models_under_one_name_never_share_cached_rows(tmp_path):
    """The cache key of a model read from files holds a hash of its files: same name, other bytes, other key."""
    ids = []
    for n in (1, 2):
        folder = tmp_path / f"copy{n}" / "model"
        folder.mkdir(parents=True)
        (folder / "t.txt").write_text("hello\n")
        np.save(folder / "t.npy", np.full((1, 4), float(n), np.float32))
        (folder / "vectors.json").write_text(json.dumps({"files": [{"text": "t.txt", "vectors": "t.npy"}]}))
        ids.append(get_encoder(folder).id)
    assert ids[0].startswith("vectors/model-") and ids[0] != ids[1]
    assert files_hash(tmp_path / "copy1" / "model") != files_hash(tmp_path / "copy2" / "model")


def test_a_filter_step_takes_an_ensemble_spec(monkeypatch):
    from bisent.filtering import FilterPipeline

    monkeypatch.setenv("BISENT_NO_EMBED_CACHE", "1")
    pipe = FilterPipeline.from_config([{"type": "cosine", "encoder": "char-ngram+random", "accept": {"min": -1}}],
                                      src_lang="en", tgt_lang="de")
    ens = get_encoder("char-ngram+random")
    results = pipe.process([("open the file menu", "das Menü Datei öffnen")])
    want = float(ens.encode(["open the file menu"], "en")[0] @ ens.encode(["das Menü Datei öffnen"], "de")[0])
    assert len(results) == 1 and abs(results[0].score - want) < 1e-5
