"""Vector shards: one row per line, rejected lines accounted for, resume gives the same bytes."""

import gzip
import json
import lzma

import numpy as np
import pytest

from bisent.encoders import get_encoder
from bisent.errors import BisentError
from bisent.mining.vectors import Shards, embed_file

LINES = [f"sentence number {i} about {'apples' if i % 2 else 'pears'}" for i in range(57)]


def write(path, lines, opener=open):
    with opener(path, "wt", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("suffix,opener", [("", open), (".gz", gzip.open), (".xz", lzma.open)])
def test_every_line_gets_a_row(tmp_path, suffix, opener):
    lines = LINES[:10] + [""] + LINES[10:20]
    src = write(tmp_path / f"in.txt{suffix}", lines, opener)
    enc = get_encoder("char-ngram")
    sh = embed_file(src, "en", enc, tmp_path / "vec", shard_rows=6)
    assert len(sh) == 21 and sh.dim == enc.dim
    assert sh.manifest["rejected"] == [{"line": 11, "reason": "empty line"}]
    full = sh.load()
    assert not full[10].any()
    want = enc.encode([t for t in lines if t], "en").astype(np.float16)
    np.testing.assert_array_equal(np.delete(full, 10, axis=0), want)
    assert [b.shape[0] for _, b in sh.blocks(4)] == [4, 4, 4, 4, 4, 1]
    assert not sh.valid_mask()[10] and sh.valid_mask().sum() == 20


def test_resume_after_kill_gives_identical_bytes(tmp_path, monkeypatch):
    src = write(tmp_path / "in.txt", LINES)
    enc = get_encoder("char-ngram")
    ref = embed_file(src, "en", enc, tmp_path / "ref", shard_rows=10)

    calls = {"n": 0}
    real = type(enc).encode

    def dying(self, *a, **kw):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt  # killed while embedding the 4th shard
        return real(self, *a, **kw)

    monkeypatch.setattr(type(enc), "encode", dying)
    with pytest.raises(KeyboardInterrupt):
        embed_file(src, "en", enc, tmp_path / "run", shard_rows=10)
    assert not (tmp_path / "run" / "manifest.json").exists()
    assert len(list((tmp_path / "run").glob("shard-*.npy"))) == 3
    monkeypatch.setattr(type(enc), "encode", real)
    encoded = []
    monkeypatch.setattr(type(enc), "encode", lambda self, s, *a, **kw: encoded.append(len(s))
                        or real(self, s, *a, **kw))
    done = embed_file(src, "en", enc, tmp_path / "run", shard_rows=10)
    assert sum(encoded) == 57 - 30  # only the unfinished shards were embedded again
    for s_ref, s_run in zip(ref.manifest["shards"], done.manifest["shards"]):
        assert (tmp_path / "ref" / s_ref["file"]).read_bytes() == (tmp_path / "run" / s_run["file"]).read_bytes()
    assert (tmp_path / "ref" / "manifest.json").read_bytes() == (tmp_path / "run" / "manifest.json").read_bytes()


def test_manifest_mismatch_is_a_clear_error(tmp_path):
    src = write(tmp_path / "in.txt", LINES[:12])
    embed_file(src, "en", get_encoder("char-ngram"), tmp_path / "v", shard_rows=5)
    m = json.loads((tmp_path / "v" / "manifest.json").read_text())
    m["dim"] = 99
    (tmp_path / "v" / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(BisentError,
                       match=r"shard-00000\.npy: holds float16 \(5, 1024\), but .* says float16 \(5, 99\)"):
        Shards(tmp_path / "v")
    (tmp_path / "v" / "manifest.json").write_text("{not json")
    with pytest.raises(BisentError, match="corrupt JSON"):
        Shards(tmp_path / "v")


def test_other_input_in_same_folder_needs_force(tmp_path):
    a = write(tmp_path / "a.txt", LINES[:5])
    b = write(tmp_path / "b.txt", LINES[5:9])
    enc = get_encoder("char-ngram")
    embed_file(a, "en", enc, tmp_path / "v")
    with pytest.raises(BisentError, match=r"v: already holds vectors of other inputs or settings \(different input "
                                          r"b.txt\); use --force"):
        embed_file(b, "en", enc, tmp_path / "v")
    assert len(embed_file(b, "en", enc, tmp_path / "v", force=True)) == 4
