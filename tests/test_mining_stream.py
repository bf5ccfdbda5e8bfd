"""One mining path: vectors folders stream into the blocked kNN and mine exactly like arrays and like text."""

import numpy as np

from bisent.encoders import get_encoder
from bisent.encoders.shards import RowView, Shards, embed_file, encode_fp16
from bisent.mining.retrieval import mine, mine_files
from bisent.mining.scoring import Scorer

WORDS = "red blue green house car tea apple river stone cloud window paper lamp bird".split()


def sentences(seed: int, n: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(3, 7)))) for _ in range(n)]


def corpora(tmp_path):
    """Two files sharing some lines, with repeats and empty lines; vectors folders of several shards."""
    common = sentences(0, 60)
    src = sentences(1, 90) + common + common[:7] + [""]
    tgt = [""] + common[::-1] + sentences(2, 70) + src[:3]
    enc = get_encoder("char-ngram")
    paths = []
    for name, lines in (("src.txt", src), ("tgt.txt", tgt)):
        p = tmp_path / name
        p.write_text("\n".join(lines) + "\n", encoding="utf-8")
        embed_file(p, "en", enc, tmp_path / f"{name}.vec", shard_rows=37, progress=False)
        paths.append(p)
    return enc, paths


def test_shards_stream_and_mine_exactly_like_arrays(tmp_path, monkeypatch):
    _, (src, tgt) = corpora(tmp_path)
    sx, sy = Shards(tmp_path / "src.txt.vec"), Shards(tmp_path / "tgt.txt.vec")
    xa, ya = sx.load(), sy.load()
    assert len(sx) > 100 and len(sx.manifest["shards"]) > 3
    scorer = Scorer("ratio", 4, block_rows=23, block_cols=17)   # blocks far smaller than the corpus
    want = mine(xa, ya, scorer, src_valid=sx.valid_mask(), tgt_valid=sy.valid_mask())

    def no_load(self):
        raise AssertionError("mining must stream shards, not load them")

    monkeypatch.setattr(Shards, "load", no_load)
    got = mine(sx, sy, scorer, src_valid=sx.valid_mask(), tgt_valid=sy.valid_mask())
    assert len(want) > 50
    assert [(p.score, p.src, p.tgt) for p in got] == [(p.score, p.src, p.tgt) for p in want]


def test_row_view_blocks_equal_fancy_indexing(tmp_path):
    corpora(tmp_path)
    sh = Shards(tmp_path / "src.txt.vec")
    rows = np.flatnonzero(np.random.default_rng(3).random(len(sh)) < 0.6)
    view = RowView(sh, rows)
    blocks = list(view.blocks(10))
    assert [s for s, _ in blocks] == list(range(0, len(rows), 10))
    np.testing.assert_array_equal(np.concatenate([b for _, b in blocks]), sh.load()[rows])


def test_text_and_vector_inputs_mine_the_same_file(tmp_path):
    enc, (src, tgt) = corpora(tmp_path)
    a = mine_files(src, tgt, "en", "en", enc, tmp_path / "a.tsv", with_ids=True)
    b = mine_files(src, tgt, "en", "en", None, tmp_path / "b.tsv", with_ids=True,
                   src_vectors=tmp_path / "src.txt.vec", tgt_vectors=tmp_path / "tgt.txt.vec")
    assert a == {**b, "output": a["output"]} and a["pairs"] > 50
    assert (tmp_path / "a.tsv").read_bytes() == (tmp_path / "b.tsv").read_bytes()


def test_encode_fp16_in_chunks_equals_one_call():
    enc = get_encoder("char-ngram")
    texts = sentences(5, 50)
    np.testing.assert_array_equal(encode_fp16(enc, texts, "en", chunk=7),
                                  enc.encode(texts, "en").astype(np.float16))
