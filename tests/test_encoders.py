"""The pretrained anchors behind one interface, and the persistent cache."""

import numpy as np
import pytest

from bisent.encoders import get_encoder
from bisent.encoders.base import Encoder
from bisent.errors import BisentError

EN = ["The cat sits on the mat.", "Click the Save button to store the document.", "The train leaves at eight."]
DE = ["Klicken Sie auf Speichern, um das Dokument zu speichern.", "Der Zug fährt um acht Uhr ab.",
      "Die Katze sitzt auf der Matte."]
GOLD = [2, 0, 1]  # EN[i] translates DE[GOLD[i]]


@pytest.mark.parametrize("name,dim", [("use-m3", 512), ("me5-small", 384)])
def test_anchor_rows_are_unit_and_translations_match(name, dim):
    enc = get_encoder(name)
    x, y = enc.encode(EN, "en"), enc.encode(DE, "de")
    assert x.shape == (3, dim) and x.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1, atol=1e-5)
    assert list((x @ y.T).argmax(axis=1)) == GOLD


def test_unknown_language_and_encoder():
    with pytest.raises(BisentError, match="unknown language 'xx'"):
        get_encoder("use-m3").encode(["hi"], "xx")
    with pytest.raises(BisentError, match="unknown encoder 'nope'"):
        get_encoder("nope")


class Counting(Encoder):
    name, dim, batch_size = "counting", 8, 2

    def __init__(self, ident):
        self.id, self.seen = ident, []

    def embed_batch(self, sentences, lang):
        self.seen.append(list(sentences))
        return np.array([[len(s), s.count("a"), 1, 0, 0, 0, 0, ord(s[0])] for s in sentences], np.float32)


def test_cache_dedup_and_length_batches():
    enc = Counting("counting-test-1")
    out = enc.encode(["aaaa", "b", "aaaa", "cc", "dddddd"], "en")
    assert sorted(map(len, sum(enc.seen, []))) == [1, 2, 4, 6]  # the repeat was embedded once
    assert [list(map(len, b)) for b in enc.seen] == [[1, 2], [4, 6]]  # grouped by length
    np.testing.assert_array_equal(out[0], out[2])
    again = Counting("counting-test-1")
    out2 = again.encode(["dddddd", "aaaa", "new one"], "en")
    assert again.seen == [["new one"]]  # the rest came from the persistent cache
    np.testing.assert_array_equal(out2[0], out[4])
    np.testing.assert_array_equal(out2[1], out[0])
