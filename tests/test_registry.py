"""The encoder registry: names, dims, languages and resolution in one place; one language-code normaliser."""

import json

import numpy as np
import pytest

from bisent.cli import main
from bisent.encoders import REGISTRY, Encoder, get_encoder, is_encoder, register_architecture, resolve
from bisent.errors import BisentError
from bisent.filtering import FilterPipeline
from bisent.langcodes import base_lang, normalise_lang, same_language, supported


def test_registry_knows_dims_and_languages_without_building_and_agrees_with_the_encoder():
    assert list(REGISTRY)[:4] == ["use-m3", "me5-small", "char-ngram", "random"]
    assert (REGISTRY["use-m3"].dim, REGISTRY["me5-small"].dim) == (512, 384)
    assert "de" in REGISTRY["use-m3"].languages and REGISTRY["char-ngram"].languages is None
    for name in ("char-ngram", "random"):
        enc = get_encoder(name)
        assert (enc.dim, enc.languages) == (REGISTRY[name].dim, REGISTRY[name].languages)
        assert get_encoder(enc) is enc


def test_bisent_encoders_lists_the_registry(capsys):
    assert main(["encoders"]) in (0, None)
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split()[0] for ln in lines[:len(REGISTRY)]] == list(REGISTRY) and lines[len(REGISTRY)] == ""
    assert lines[2].startswith("char-ngram   1024-d, any language") and "(default)" in lines[0]
    rest = "\n".join(lines[len(REGISTRY):])
    assert "sentence-transformers" in rest and "model.onnx" in rest and "use-m3+me5-small" in rest


def test_names_and_directories_resolve_in_one_place(tmp_path):
    assert resolve("char-ngram") == "char-ngram" and resolve(tmp_path) == str(tmp_path)
    assert is_encoder("random") and is_encoder(str(tmp_path)) and not is_encoder("nope") and not is_encoder(3)
    with pytest.raises(BisentError, match="unknown encoder 'nope' \\(registered: use-m3, me5-small"):
        resolve("nope")
    with pytest.raises(BisentError, match="no/such/dir: no such model directory"):
        get_encoder("no/such/dir")
    # the filter configuration checker asks the same registry, and loads nothing
    with pytest.raises(BisentError, match="parameter 'encoder' must be one of use-m3, me5-small, char-ngram"):
        FilterPipeline.from_config([{"type": "cosine", "encoder": "nope"}], src_lang="en", tgt_lang="de")
    pipe = FilterPipeline.from_config([{"type": "cosine", "encoder": str(tmp_path)}], src_lang="en", tgt_lang="de")
    assert pipe.steps[0]._encoder is None


class _Toy(Encoder):
    name, dim, languages = "toy", 3, frozenset({"en", "pt-br"})

    def embed_batch(self, sentences, lang):
        return np.ones((len(sentences), 3), np.float32)


def test_a_new_trained_architecture_loads_from_its_directory(tmp_path):
    register_architecture("toy-test-arch")(lambda model_dir, config: _Toy())
    (tmp_path / "config.json").write_text(json.dumps({"architecture": "toy-test-arch"}))
    enc = get_encoder(tmp_path)
    assert isinstance(enc, _Toy) and get_encoder(str(tmp_path)) is enc


def test_one_language_code_normaliser():
    assert normalise_lang(" PT_br ") == "pt-br" and base_lang("en-US") == "en"
    assert same_language("en_GB", "EN") and not same_language("de", "en")
    assert supported("pt_BR", {"pt"}) and supported("pt-BR", {"pt-br"}) and not supported("fr", {"en"})
    assert supported("xx", None)
    with pytest.raises(ValueError, match="a language code is required"):
        base_lang(" ")
    toy = _Toy()
    assert toy.check_lang("EN_us") == "en-us" and toy.check_lang("PT_BR") == "pt-br"
    with pytest.raises(BisentError, match="encoder toy: unknown language 'fr' \\(it supports: en, pt-br; registered "
                                          "encoders that cover it: use-m3, "):
        toy.check_lang("fr")
