"""Blocked exact kNN (merged neighbour lists, resumable state) and the index chosen by size; no Ray needed."""

import sys

import numpy as np
import pytest

from bisent.cli import main
from bisent.encoders import get_encoder
from bisent.encoders.shards import RowView, Shards, embed_file
from bisent.errors import BisentError
from bisent.io import remove_state_dir
from bisent.mining.blocks import BlockScorer, LocalExecutor, knn_block, knn_blocks, merge_topk
from bisent.mining.index import EXACT_MAX_PAIRS, TWOSTAGE_MAX_PAIRS, choose_index, knn_approx, knn_both
from bisent.mining.retrieval import mine
from bisent.mining.scoring import Scorer
from conftest import unit_rows

FIELDS = ("fwd_sim", "fwd_idx", "bwd_sim", "bwd_idx")


def same_knn(a, b) -> bool:
    return all(np.array_equal(getattr(a, f), getattr(b, f)) for f in FIELDS)


def one_pass(x, y, k, block):
    """knn_both with the tiles a job of ``block`` rows uses (the same sgemm shapes, hence the same bits)."""
    t = min(block, 4096)
    return knn_both(x, y, k, block_rows=t, block_cols=t)


def test_merge_is_the_top_k_of_the_union_under_a_total_order():
    rng = np.random.default_rng(0)
    for _ in range(200):
        r, ka, kb, k = 3, int(rng.integers(1, 6)), int(rng.integers(1, 6)), int(rng.integers(1, 6))
        sa = rng.integers(0, 3, (r, ka)).astype(np.float32)       # few values: many ties
        sb = rng.integers(0, 3, (r, kb)).astype(np.float32)
        ia = np.stack([rng.choice(50, ka, replace=False) for _ in range(r)])
        ib = np.stack([rng.choice(np.arange(50, 100), kb, replace=False) for _ in range(r)])
        s, i = merge_topk(sa, ia, sb, ib, k)
        s2, i2 = merge_topk(sb, ib, sa, ia, k)
        assert np.array_equal(s, s2) and np.array_equal(i, i2)    # order of folding does not matter
        for row in range(r):
            pool = sorted(zip(np.r_[sa[row], sb[row]], np.r_[ia[row], ib[row]]), key=lambda p: (-p[0], p[1]))[:k]
            assert list(zip(s[row], i[row])) == pool


@pytest.mark.parametrize("n,m,block", [(700, 450, 128), (300, 5, 64), (5, 300, 64), (1000, 1000, 4096)])
def test_blocks_give_the_lists_of_one_pass(n, m, block):
    rng = np.random.default_rng(n + m)
    x, y = unit_rows(rng, n, 64, np.float16), unit_rows(rng, m, 64, np.float16)
    got, counts = knn_blocks(x, y, 4, block=block, progress=False)
    assert same_knn(got, one_pass(x, y, 4, block))
    assert counts == {"blocks": -(-n // block) * -(-m // block), "resumed": 0, "computed": counts["blocks"]}


def _canonical_on_ties() -> bool:
    """True when knn_both keeps, among equal scores, the smaller index (a total order, as merge_topk does)."""
    x = np.ones((1, 4), np.float32) / 2
    y = np.ones((6, 4), np.float32) / 2
    return knn_both(x, y, 2, block_rows=1, block_cols=1).fwd_idx[0].tolist() == [0, 1]


def test_blocks_equal_one_pass_with_exact_ties(tmp_path):
    """Hashed character n-grams of short word strings tie exactly, often; the lists still agree
    (the fused kernel keeps, among equal scores, the smaller index: the order merge_topk uses)."""
    assert _canonical_on_ties()
    rng = np.random.default_rng(1)
    words = "red blue green house car tea apple river stone cloud".split()
    texts = [" ".join(rng.choice(words, size=int(rng.integers(2, 5)))) for _ in range(900)]
    v = get_encoder("char-ngram").encode(texts, "en").astype(np.float16)
    x, y = v[:500], v[500:]
    for block in (128, 256):
        assert same_knn(knn_blocks(x, y, 4, block=block, progress=False)[0], one_pass(x, y, 4, block))


class Crash(Exception):
    pass


def test_state_folder_resumes_only_the_missing_blocks(tmp_path):
    rng = np.random.default_rng(2)
    x, y = unit_rows(rng, 600, 32, np.float16), unit_rows(rng, 500, 32, np.float16)
    want = one_pass(x, y, 4, 128)
    calls = []

    def crashing(*args):
        if len(calls) == 5:
            raise Crash
        calls.append(args[2:4])
        return knn_block(*args)

    state = tmp_path / "state"
    with pytest.raises(Crash):
        knn_blocks(x, y, 4, block=128, state=state, executor=LocalExecutor(crashing), progress=False)
    assert len(list(state.glob("block-*.npz"))) == 5
    got, counts = knn_blocks(x, y, 4, block=128, state=state, progress=False)
    assert counts == {"blocks": 20, "resumed": 5, "computed": 15}
    assert same_knn(got, want)
    # other inputs (or settings) with the same folder: refused, naming what differs; the old blocks are not reused
    y2 = y.copy()
    y2[0] = -y2[0]
    with pytest.raises(BisentError, match=r"state: already holds kNN blocks of other inputs .*different input "
                                          r"target vectors"):
        knn_blocks(x, y2, 4, block=128, state=state, progress=False)
    with pytest.raises(BisentError, match=r"\('k' differs\)"):
        knn_blocks(x, y, 3, block=128, state=state, progress=False)
    remove_state_dir(state)
    got2, counts2 = knn_blocks(x, y2, 4, block=128, state=state, progress=False)
    assert counts2["resumed"] == 0 and same_knn(got2, one_pass(x, y2, 4, 128))


def test_state_folder_folds_blocks_into_merged_lists(tmp_path):
    """Block files are folded into merged.npz as they pile up; a crash after that resumes from both."""
    rng = np.random.default_rng(6)
    x, y = unit_rows(rng, 600, 32, np.float16), unit_rows(rng, 500, 32, np.float16)
    calls = []

    def crashing(*args):
        if len(calls) == 7:
            raise Crash
        calls.append(1)
        return knn_block(*args)

    state = tmp_path / "state"
    with pytest.raises(Crash):
        knn_blocks(x, y, 4, block=128, state=state, compact_blocks=3, executor=LocalExecutor(crashing),
                   progress=False)
    assert (state / "merged.npz").is_file() and len(list(state.glob("block-*.npz"))) < 3
    got, counts = knn_blocks(x, y, 4, block=128, state=state, compact_blocks=3, progress=False)
    assert counts == {"blocks": 20, "resumed": 7, "computed": 13}
    assert same_knn(got, one_pass(x, y, 4, 128))


def test_blocks_read_only_their_rows_of_a_vectors_folder(tmp_path, monkeypatch):
    rng = np.random.default_rng(3)
    texts = [f"sentence {i} {rng.integers(1e9)}" for i in range(700)]
    texts[10] = ""                                                 # a rejected, all-zero row
    f = tmp_path / "s.txt"
    f.write_text("\n".join(texts) + "\n", encoding="utf-8")
    sh = embed_file(f, "en", get_encoder("random"), tmp_path / "v", shard_rows=150, progress=False)
    rows = np.flatnonzero(sh.valid_mask())[::2]
    view = RowView(sh, rows)
    y = unit_rows(rng, 300, sh.dim, np.float16)
    want = one_pass(sh.load()[rows], y, 4, 128)

    def no_load(self):
        raise AssertionError("blocks must read their own rows, not load the folder")

    monkeypatch.setattr(Shards, "load", no_load)
    got, _ = knn_blocks(view, y, 4, block=128, state=tmp_path / "st", progress=False)
    assert same_knn(got, want)


def test_block_scorer_mines_like_the_scorer():
    rng = np.random.default_rng(4)
    x = unit_rows(rng, 400, 48, np.float16)
    y = np.concatenate([x[:200] + 0.3 * unit_rows(rng, 200, 48), unit_rows(rng, 250, 48)])
    y = (y / np.linalg.norm(y, axis=1, keepdims=True)).astype(np.float16)
    want = mine(x, y, Scorer("ratio", 4, block_rows=128, block_cols=128))
    got = mine(x, y, BlockScorer("ratio", 4, block=128))
    assert [(p.score, p.src, p.tgt) for p in got] == [(p.score, p.src, p.tgt) for p in want]
    assert sum(p.src == p.tgt for p in want) > 150                # the planted pairs are found


def test_block_size_must_be_whole_tiles():
    x = np.zeros((10, 4), np.float16)
    with pytest.raises(ValueError, match="multiple"):
        knn_blocks(x, x, 2, block=5000)


def test_choose_index_rule():
    side = int(np.sqrt(EXACT_MAX_PAIRS))
    assert choose_index(side, 512) == ("exact", {})
    assert choose_index(10 * side, 512, n_source=side // 10) == ("exact", {})   # few sources: still cheap
    assert choose_index(side + 1, 512) == ("twostage", {})
    assert choose_index(int(np.sqrt(TWOSTAGE_MAX_PAIRS)), 512) == ("twostage", {})
    assert choose_index(int(np.sqrt(TWOSTAGE_MAX_PAIRS)) + 1, 512) == ("compressed", {})
    assert choose_index(10_000_000, 512) == ("compressed", {})


def test_auto_index_is_exact_on_small_inputs():
    rng = np.random.default_rng(5)
    x, y = unit_rows(rng, 300, 32), unit_rows(rng, 200, 32)
    assert same_knn(Scorer("ratio", 4, knn_method="auto").fit(y).score(x).knn, knn_both(x, y, 4))


def test_ivf_streams_a_vectors_folder_like_an_array(tmp_path):
    texts = [f"line {i}" for i in range(3000)]
    f = tmp_path / "s.txt"
    f.write_text("\n".join(texts) + "\n", encoding="utf-8")
    sh = embed_file(f, "en", get_encoder("random"), tmp_path / "v", shard_rows=700, progress=False)
    x = sh.load()
    for quantizer in ("fp16", "sq8"):
        a = knn_approx(x, x[:1000], 4, method="ivf", quantizer=quantizer)
        b = knn_approx(sh, RowView(sh, np.arange(1000)), 4, method="ivf", quantizer=quantizer)
        assert same_knn(a, b)
        assert (a.fwd_idx[:1000, 0] == np.arange(1000)).mean() > 0.95   # each row finds itself


def test_ray_without_ray_installed_is_a_one_line_error(tmp_path, monkeypatch, capsys):
    src = tmp_path / "a.txt"
    src.write_text("one\ntwo\n", encoding="utf-8")
    monkeypatch.setitem(sys.modules, "ray", None)                  # `import ray` raises ImportError
    code = main(["mine", src, src, "-l", "en", "-L", "en", "-e", "random", "-o", tmp_path / "o.tsv",
                 "--ray", "local"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == ["bisent: error: --ray needs Ray: pip install bisent[ray]"]


def test_ray_refuses_an_approximate_index(tmp_path, capsys):
    src = tmp_path / "a.txt"
    src.write_text("one\ntwo\n", encoding="utf-8")
    code = main(["mine", src, src, "-l", "en", "-L", "en", "-e", "random", "-o", tmp_path / "o.tsv",
                 "--ray", "local", "--index", "ivf"])
    assert code == 2 and "drop --index ivf" in capsys.readouterr().err
