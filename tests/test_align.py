"""Sentence alignment: the DP against brute force, the band against the full DP, metrics, files, bad input."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest

from bisent.align import (
    Band,
    EmbeddingCosts,
    GaleChurchCosts,
    SentenceAligner,
    align_costs,
    alignment_types,
    dp_band,
    project_band,
    read_alignment,
    score_alignments,
)
from bisent.align.costs import group_sums
from bisent.align.store import DiskVectors, LazyGroups
from bisent.cli import main
from bisent.errors import BisentError


class TableCosts:
    """Random step costs, one per (type, lattice point): the DP must find the cheapest path exactly."""

    def __init__(self, n, m, types, seed):
        rng = np.random.default_rng(seed)
        self.n, self.m = n, m
        self.table = {(a, b, i, j): float(rng.uniform(0.0, 1.0)) for a, b in types
                      for i in range(n + 1) for j in range(m + 1)}

    def cost(self, a, b, i, js):
        return np.array([self.table[(a, b, i, int(j))] for j in js])


def brute_force(costs, types):
    """Cheapest cost over every monotone path from (0, 0) to (n, m), by exhaustive recursion."""
    @functools.lru_cache(None)
    def paths(i, j):   # all (cost, path) from (0,0) to (i,j)
        if i == 0 and j == 0:
            return [(0.0, ())]
        out = []
        for a, b in types:
            if i - a >= 0 and j - b >= 0:
                step = costs.table[(a, b, i, j)]
                out += [(c + step, p + ((i - a, i, j - b, j),)) for c, p in paths(i - a, j - b)]
        return out
    return min(paths(costs.n, costs.m))


@pytest.mark.parametrize("n,m", [(1, 1), (1, 3), (2, 2), (3, 2), (4, 4), (2, 5)])
@pytest.mark.parametrize("seed", range(4))
def test_dp_equals_brute_force(n, m, seed):
    types = alignment_types(4)
    costs = TableCosts(n, m, types, seed)
    path, total = dp_band(costs, n, m, types)
    best, best_path = brute_force(costs, types)
    assert total == pytest.approx(best, abs=1e-9)
    assert sum(costs.table[(i1 - i0, j1 - j0, i1, j1)] for i0, i1, j0, j1 in path) == pytest.approx(total)
    assert path[0][0] == 0 and path[0][2] == 0 and path[-1][1] == n and path[-1][3] == m


def planted_m_n(seed: int, d: int = 32):
    """Unit vectors of a 6-sentence source and a 7-sentence target whose gold has 2-1, 1-2, 0-1 and 1-1
    blocks: a target sentence that merges two source ones is their sum, a split source sentence the
    sum of its two target halves (the group embeddings are normalised sums, as concatenations are)."""
    rng = np.random.default_rng(seed)
    unit = lambda v: v / np.linalg.norm(v)
    r = lambda: rng.standard_normal(d)
    near = lambda v: unit(v + 0.2 * np.linalg.norm(v) * unit(r()))
    s0, s1, s2, s4, s5 = (unit(r()) for _ in range(5))
    t2, t3 = unit(r()), unit(r())
    src = [s0, s1, s2, unit(t2 + t3), s4, s5]
    tgt = [near(s0), near(s1 + s2), near(t2), near(t3), unit(r()), near(s4), near(s5)]
    gold = [((0,), (0,)), ((1, 2), (1,)), ((3,), (2, 3)), ((), (4,)), ((4,), (5,)), ((5,), (6,))]
    return np.array(src, np.float32), np.array(tgt, np.float32), gold


class EvaluatedCosts:
    """Every step cost of a cost model, looked up once, for :func:`brute_force`."""

    def __init__(self, costs, types):
        self.n, self.m = costs.n, costs.m
        self.table = {(a, b, i, j): float(costs.cost(a, b, i, np.array([j]))[0]) for a, b in types
                      for i in range(a, self.n + 1) for j in range(b, self.m + 1)}


@pytest.mark.parametrize("seed", range(3))
def test_dp_equals_brute_force_on_documents_with_m_n_gold(seed):
    """The aligner's own costs on a small document with merges, a split and an insertion: the DP's path is
    the cheapest of every monotone path, and it is the planted gold. Merge penalty 0.15: at the default 0.1
    the inserted target sentence joins its neighbours' 1-2 block (a 1-3) for two of the three seeds."""
    src, tgt, gold = planted_m_n(seed)
    types = alignment_types(4)
    costs = EmbeddingCosts(group_sums(src, [1, 2, 3]), group_sums(tgt, [1, 2, 3]), merge_penalty=0.15)
    path, total, _ = align_costs(costs, types)
    best, best_path = brute_force(EvaluatedCosts(costs, types), types)
    assert total == pytest.approx(best, abs=1e-6) and list(best_path) == path    # skips are summed as a cumsum
    assert [(tuple(range(i0, i1)), tuple(range(j0, j1))) for i0, i1, j0, j1 in path] == gold


def noisy_parallel(n, d=48, noise=0.6, seed=0, merge_every=7, drop_every=11):
    """Unit vectors of a source document and a target document that merges and drops sentences."""
    rng = np.random.default_rng(seed)
    src = rng.standard_normal((n, d)).astype(np.float32)
    tgt, gold, i = [], [], 0
    while i < n:
        if i % drop_every == 5:
            gold.append(((i,), ()))
            i += 1
            continue
        k = 2 if (i % merge_every == 3 and i + 1 < n) else 1
        v = src[i:i + k].sum(axis=0) + noise * rng.standard_normal(d).astype(np.float32)
        gold.append((tuple(range(i, i + k)), (len(tgt),)))
        tgt.append(v)
        i += k
    norm = lambda x: x / np.linalg.norm(x, axis=1, keepdims=True)
    return norm(src), norm(np.array(tgt)), gold


def test_coarse_to_fine_equals_full_dp_and_band_is_small():
    src, tgt, gold = noisy_parallel(400)
    types = alignment_types(4)
    costs = EmbeddingCosts(group_sums(src, [1, 2, 3]), group_sums(tgt, [1, 2, 3]))
    full_path, full_cost, full_cells = align_costs(costs, types, exact_cells=10 ** 9)
    path, cost, cells = align_costs(costs, types, width=10, exact_cells=2_000)
    assert path == full_path and cost == pytest.approx(full_cost)
    assert cells < full_cells / 4
    # and the alignment is the planted one
    hyp = [(tuple(range(i0, i1)), tuple(range(j0, j1))) for i0, i1, j0, j1 in path]
    s = score_alignments([hyp], [gold])
    assert s.strict_f1 > 0.85 and s.lax_f1 > 0.98   # a drop beside a merge is ambiguous in this toy


def test_lazy_groups_window_by_window_give_the_same_alignment():
    """Group vectors made chunk by chunk as the band reaches them (a few chunks kept): same path as whole arrays."""
    src, tgt, _ = noisy_parallel(400, seed=1)
    types = alignment_types(4)
    full = EmbeddingCosts(group_sums(src, [1, 2, 3]), group_sums(tgt, [1, 2, 3]))
    full_path, full_cost, _ = align_costs(full, types, exact_cells=10 ** 9)

    def lazy(units):
        out = group_sums(units, [1])
        for a in (2, 3):
            out[a] = LazyGroups(lambda k0, k1, a=a: group_sums(units[k0:k1 + a - 1], [a])[a], len(units) - a + 1)
        return out
    costs = EmbeddingCosts(lazy(src), lazy(tgt), chunk=32, keep=2)
    path, cost, _ = align_costs(costs, types, width=10, exact_cells=2_000)
    assert path == full_path and cost == pytest.approx(full_cost)
    assert len(costs._chunks) <= 2 * 4                      # never more than `keep` chunks per side and size


def test_disk_vectors_read_windows_and_rows():
    from bisent.align.store import DiskVectors

    rng = np.random.default_rng(0)
    x = rng.normal(size=(37, 8)).astype(np.float16)
    v = DiskVectors.write([x[:10], x[10:11], x[11:]])
    assert len(v) == 37 and v.dim == 8
    assert np.array_equal(v[5:20], x[5:20]) and np.array_equal(v.make(30, 99), x[30:])
    idx = np.array([36, 0, 5, 5, 12])
    assert np.array_equal(v.take(idx), x[idx]) and np.array_equal(v[idx], x[idx])
    assert v[40:50].shape == (0, 8)
    with pytest.raises(IndexError):
        v.take([37])
    with pytest.raises(ValueError):
        DiskVectors.write([x, x[:, :4]])


def test_sentences_on_disk_give_the_same_alignment_as_arrays():
    """Sentences as DiskVectors (read by chunk, coarse levels written to disk): same path and cost as arrays."""
    from bisent.align.costs import lazy_pooled_groups
    from bisent.align.store import DiskVectors

    src, tgt, _ = noisy_parallel(400, seed=2)
    types = alignment_types(4)
    arrays = EmbeddingCosts(group_sums(src, [1, 2, 3]), group_sums(tgt, [1, 2, 3]))
    on_disk = {}
    for side, units in (("s", src), ("t", tgt)):
        groups = group_sums(units, [1, 2, 3])
        on_disk[side] = {1: DiskVectors.write([groups[1][k:k + 50] for k in range(0, len(groups[1]), 50)]),
                         2: groups[2], 3: groups[3]}
    costs = EmbeddingCosts(on_disk["s"], on_disk["t"], chunk=32, keep=2)
    # norms per chunk of 32 rows: float32 products summed in another order than the whole array's
    assert costs.skip == pytest.approx(arrays.skip, rel=1e-6)
    assert costs.cost(1, 1, 5, np.arange(3, 9)) == pytest.approx(arrays.cost(1, 1, 5, np.arange(3, 9)), rel=1e-6)
    path, cost, _ = align_costs(costs, types, width=10, exact_cells=2_000)
    assert path == align_costs(arrays, types, exact_cells=10 ** 9)[0]
    assert cost == pytest.approx(align_costs(arrays, types, exact_cells=10 ** 9)[1])
    assert len(costs._chunks) <= 2 * 2                      # keep x the one lazy size per side
    coarse = lazy_pooled_groups(on_disk["s"][1], [1, 2], block=16)
    assert isinstance(coarse[1], DiskVectors) and np.array_equal(coarse[1][:], group_sums(
        _pool(on_disk["s"][1][:]), [1])[1])


def _pool(x):
    from bisent.align.costs import _pool_pairs
    return _pool_pairs(x)


def test_aligner_embeds_windows_through_the_encoder_on_long_documents():
    """SentenceAligner above exact_cells embeds the 2- and 3-sentence groups lazily: same blocks as the full DP."""
    rng = np.random.default_rng(0)
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
    src = [" ".join(rng.choice(words, 5)) + f" {k}" for k in range(160)]
    tgt = [s.upper() for k, s in enumerate(src) if k % 13 != 4]
    tgt[20:22] = [tgt[20] + " " + tgt[21]]
    exact = SentenceAligner("char-ngram", exact_cells=10 ** 9)
    lazy = SentenceAligner("char-ngram", exact_cells=2_000)
    costs = lazy.costs(src, tgt, "en", "de")
    assert isinstance(costs.src[2], LazyGroups) and isinstance(costs.tgt[3], LazyGroups)
    assert isinstance(costs.src[1], DiskVectors) and np.array_equal(
        costs.src[1][:], exact.group_embeddings(src, "en", sizes=[1])[1])
    assert [b[:2] for b in lazy.align_costs(costs).blocks] == \
        [b[:2] for b in exact.align(src, tgt, "en", "de").blocks]


@pytest.mark.parametrize("n_src,n_tgt", [(1, 120), (3, 200), (150, 2), (90, 90)])
def test_disk_path_accounts_for_every_sentence_at_any_lengths(n_src, n_tgt):
    """Documents past exact_cells take the on-disk path; one-sentence and very unequal documents too."""
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    rng = np.random.default_rng(n_src)
    src = [" ".join(rng.choice(words, 4)) + f" {k}" for k in range(n_src)]
    tgt = [" ".join(rng.choice(words, 4)) + f" {k}" for k in range(n_tgt)]
    al = SentenceAligner("char-ngram", exact_cells=100)
    assert isinstance(al.costs(src, tgt, "en", "de").src[1], DiskVectors)
    blocks = al.align(src, tgt, "en", "de").blocks
    assert sorted(i for b in blocks for i in b.src) == list(range(n_src))
    assert sorted(j for b in blocks for j in b.tgt) == list(range(n_tgt))
    with pytest.raises(BisentError, match="target document has no sentences"):
        al.align(src, [], "en", "de")


def test_wide_band_is_the_full_dp():
    types = alignment_types(4)
    costs = TableCosts(6, 5, types, seed=3)
    exact = dp_band(costs, 6, 5, types)
    some_path = [(0, 1, 0, 1), (1, 6, 1, 5)]
    band = project_band(some_path, 6, 5, width=6, factor=1)
    assert band.cells == Band.full(6, 5).cells
    assert dp_band(costs, 6, 5, types, band) == exact
    narrow = project_band([(0, 3, 0, 2), (3, 6, 2, 5)], 6, 5, width=1, factor=1)
    assert narrow.cells < band.cells
    assert dp_band(costs, 6, 5, types, narrow)[1] >= exact[1] - 1e-12


def test_gale_church_prefers_length_matches():
    src = ["a" * 40, "b" * 10, "c" * 12, "d" * 50]
    tgt = ["A" * 42, "B" * 23, "D" * 48]       # the 2nd and 3rd source sentences merged
    path, _, _ = align_costs(GaleChurchCosts(list(map(len, src)), list(map(len, tgt))), alignment_types(4))
    assert [(i1 - i0, j1 - j0) for i0, i1, j0, j1 in path] == [(1, 1), (2, 1), (1, 1)]


def test_strict_and_lax_scores_on_hand_made_cases():
    """Counted by hand as vecalign's score.py counts: hypothesis skips are in precision, not in recall."""
    gold = [((0,), (0,)), ((1, 2), (1,)), ((3,), ()), ((4,), (2,))]
    assert score_alignments([gold], [gold]).strict_f1 == 1.0
    hyp = [((0,), (0,)), ((1,), (1,)), ((2,), ()), ((3,), ()), ((4,), (2,))]
    s = score_alignments([hyp], [gold])
    # precision over 5 blocks: strict right (0)-(0), (3)-() [the gold skip], (4)-(2); lax also (1)-(1);
    # (2)-() is wrong both ways. Recall over the 3 gold blocks with both sides: strict 2, lax 3.
    assert (s.strict_p, s.strict_r) == (pytest.approx(3 / 5), pytest.approx(2 / 3))
    assert (s.lax_p, s.lax_r) == (pytest.approx(4 / 5), 1.0)
    assert s.strict_f1 == pytest.approx(2 * (3 / 5) * (2 / 3) / (3 / 5 + 2 / 3)) and (s.n_hyp, s.n_gold) == (5, 3)
    wrong = [((0,), (1,)), ((1, 2), (0,)), ((3, 4), (2,))]
    w = score_alignments([wrong], [gold])
    assert w.strict_f1 == 0.0 and w.lax_p == pytest.approx(1 / 3) and w.lax_r == pytest.approx(1 / 3)
    assert score_alignments([[]], [gold]).strict_f1 == 0.0
    # summed over documents before dividing: a perfect 1-block document and the 5-block one above
    two = score_alignments([[((0,), (0,))], hyp], [[((0,), (0,))], gold])
    assert (two.strict_p, two.strict_r) == (pytest.approx(4 / 6), pytest.approx(3 / 4))


def write(path, lines):
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return path


EN = ["The cat sits on the mat.", "It is raining today.", "I like green apples.", "Open the file menu.",
      "Click the Save button.", "The dog barks loudly."]
DE = ["Die Katze sitzt auf der Matte.", "Heute regnet es.", "Ich mag grüne Äpfel.", "Öffnen Sie das Menü Datei.",
      "Klicken Sie auf Speichern.", "Der Hund bellt laut."]


def blocks_of(tsv):
    rows = [line.split("\t") for line in tsv.read_text(encoding="utf-8").splitlines()]
    return [([int(x) for x in r[0].split(",") if x], [int(x) for x in r[1].split(",") if x], r[2]) for r in rows]


def test_cli_accounts_for_every_line_and_eval_scores_it(tmp_path, capsys):
    src = write(tmp_path / "a.en", EN[:3] + [""] + EN[3:])
    tgt = write(tmp_path / "a.de", DE[:2] + [DE[2] + " " + DE[3]] + DE[4:])     # 3rd+4th merged
    out, blk = tmp_path / "out.tsv", tmp_path / "out.blocks"
    assert main(["align", str(src), str(tgt), "-l", "en", "-L", "de", "-e", "char-ngram",
                 "-o", str(out), "--blocks", str(blk)]) == 0
    rows = blocks_of(out)
    assert sorted(k for s, _, _ in rows for k in s) == list(range(1, 8))
    assert sorted(k for _, t, _ in rows for k in t) == list(range(1, 6))
    assert ([4], [], "empty") in rows
    gold = write(tmp_path / "gold", ["[0]:[0]", "[1]:[1]", "[2,4]:[2]", "[3]:[]", "[5]:[3]", "[6]:[4]"])
    assert len(read_alignment(blk)) == len(rows)
    capsys.readouterr()
    assert main(["eval", "align", str(blk), str(gold), "--json"]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert scores["n_gold"] == 5 and scores["n_hyp"] == len(rows)     # skips are in precision (vecalign)
    assert main(["eval", "align", str(gold), str(gold), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["strict_f1"] == 100.0


def test_split_writes_sentence_rows_that_account_for_every_sentence(tmp_path):
    """--split: a row per sentence block, each with its own sentences' texts, lines and (aligned) a score;
    every sentence of both sides in exactly one row, every line in at least one."""
    src_lines = [EN[0] + " " + EN[1], EN[2], "", EN[3] + " " + EN[4] + " " + EN[5]]
    tgt_lines = DE[:3] + [DE[3] + " " + DE[4], DE[5]]
    src, tgt = write(tmp_path / "a.en", src_lines), write(tmp_path / "a.de", tgt_lines)
    out, blk = tmp_path / "o.tsv", tmp_path / "o.blocks"
    assert main(["align", str(src), str(tgt), "-l", "en", "-L", "de", "-e", "char-ngram", "--split", "-o", str(out),
                 "--blocks", str(blk)]) == 0
    rows = [r.split("\t") for r in out.read_text(encoding="utf-8").splitlines()]
    assert all(len(r) == 5 for r in rows)
    src_sents = [s for r in rows for s in (r[3].split(". ") if r[3] else [])]
    tgt_sents = [s for r in rows for s in (r[4].split(". ") if r[4] else [])]
    assert len(src_sents) == 6 and len(tgt_sents) == 6          # each sentence once, not a line's paragraph
    assert sorted(int(k) for r in rows for k in r[0].split(",") if k) == [1, 1, 2, 3, 4, 4, 4]
    assert sorted(int(k) for r in rows for k in r[1].split(",") if k) == [1, 2, 3, 4, 4, 5]
    for r in rows:
        if r[0] and r[1]:
            assert 0.0 <= float(r[2]) <= 1.0 and r[3] and r[4]     # an aligned row always has its score
        elif r[2] != "empty":
            assert r[2] == "" and (r[3] or r[4])
    assert ["3", "", "empty", "", ""] in rows
    # the [i]:[j] file stays at line level: every line once
    lines = read_alignment(blk)
    assert sorted(i for s, _ in lines for i in s) == [0, 1, 2, 3]
    assert sorted(j for _, t in lines for j in t) == [0, 1, 2, 3, 4]


def test_bad_inputs_give_clear_errors_or_reasons(tmp_path, capsys):
    empty = tmp_path / "empty.en"
    empty.write_bytes(b"")
    blank = write(tmp_path / "blank.en", ["", ""])
    one = write(tmp_path / "one.de", [DE[0]])
    many = write(tmp_path / "many.en", EN * 8)
    out = tmp_path / "o.tsv"
    args = ["-l", "en", "-L", "de", "-e", "char-ngram", "-o", str(out)]
    assert main(["align", str(empty), str(one)] + args) == 2
    assert "file is empty" in capsys.readouterr().err
    assert main(["align", str(blank), str(one)] + args) == 2
    assert "no sentences" in capsys.readouterr().err
    # one sentence against 48: every line accounted for, one aligned block at most
    assert main(["align", str(many), str(one)] + args) == 0
    rows = blocks_of(out)
    assert sorted(k for s, _, _ in rows for k in s) == list(range(1, 49)) and sum(1 for _, t, _ in rows if t) == 1
    with pytest.raises(BisentError, match="no sentences"):
        SentenceAligner("char-ngram").align([], ["x"], "en", "de")
    # pairs files: a missing column, a missing file, then a pair that fails among good ones
    bad = tmp_path / "pairs.tsv"
    bad.write_text("one.de\n", encoding="utf-8")
    assert main(["align", "--pairs", str(bad), "-o", str(tmp_path / "d")] + args[:6]) == 2
    assert "pairs.tsv:1: expected src_path<TAB>tgt_path" in capsys.readouterr().err
    bad.write_text("many.en\tone.de\nnope.en\tone.de\n", encoding="utf-8")
    assert main(["align", "--pairs", str(bad), "-o", str(tmp_path / "d")] + args[:6]) == 2
    assert "pairs.tsv:2: no such file: nope.en" in capsys.readouterr().err
    bad.write_text("many.en\tone.de\nblank.en\tone.de\n", encoding="utf-8")
    assert main(["align", "--pairs", str(bad), "-o", str(tmp_path / "d")] + args[:6]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["pairs"] == 2 and summary["aligned"] == 1 and summary["failed"] == 1
    rows = [json.loads(x) for x in (tmp_path / "d" / "summary.jsonl").read_text().splitlines()]
    assert "no sentences" in rows[1]["error"]
    gold = write(tmp_path / "g", ["[0]:[0]", "oops"])
    assert main(["eval", "align", str(gold), str(gold)]) == 2
    assert "g:2: expected a block like [0]:[0,1]" in capsys.readouterr().err


def test_mismatched_encodings_are_one_line_errors_and_a_reason_in_pairs(tmp_path, capsys):
    """Latin-1 and UTF-16 documents: a one-line error naming the file, line and byte; with --pairs the pair's
    reason, and the other pairs aligned with every line in one row."""
    src = write(tmp_path / "a.en", EN)
    (tmp_path / "latin1.de").write_bytes("\n".join(DE).encode("latin-1") + b"\n")
    (tmp_path / "utf16.de").write_bytes("\n".join(DE).encode("utf-16") + b"\n")
    write(tmp_path / "a.de", DE)
    args = ["-l", "en", "-L", "de", "-e", "char-ngram"]
    for name, what in (("latin1.de", "latin1.de:3: not valid UTF-8 (byte 0xfc"), ("utf16.de", "utf16.de:1: not valid")):
        assert main(["align", str(src), str(tmp_path / name), "-o", str(tmp_path / "o.tsv")] + args) == 2
        err = capsys.readouterr().err
        assert what in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    (tmp_path / "pairs.tsv").write_text("a.en\tlatin1.de\na.en\ta.de\n", encoding="utf-8")
    assert main(["align", "--pairs", str(tmp_path / "pairs.tsv"), "-o", str(tmp_path / "d")] + args) == 0
    assert json.loads(capsys.readouterr().out)["failed"] == 1
    rows = [json.loads(x) for x in (tmp_path / "d" / "summary.jsonl").read_text().splitlines()]
    assert "not valid UTF-8" in rows[0]["error"] and "error" not in rows[1]
    done = blocks_of(tmp_path / "d" / "00001.tsv")
    assert sorted(k for s, _, _ in done for k in s) == sorted(k for _, t, _ in done for k in t) == list(range(1, 7))


@pytest.mark.slow
def test_a_100k_line_document_accounts_for_every_line(tmp_path, capsys):
    """100,000 lines against 100,000 (coarse to fine, vectors on disk): every input line in exactly one output row."""
    n = 100_000
    src = write(tmp_path / "big.en", [f"{EN[k % 6][:-1]} number {k}." for k in range(n)])
    tgt = write(tmp_path / "big.de", [f"{DE[k % 6][:-1]} Nummer {k}." for k in range(n) if k % 1000 != 7])
    out = tmp_path / "o.tsv"
    assert main(["align", str(src), str(tgt), "-l", "en", "-L", "de", "-e", "char-ngram", "-o", str(out)]) == 0
    rows = blocks_of(out)
    assert sorted(k for s, _, _ in rows for k in s) == list(range(1, n + 1))
    assert sorted(k for _, t, _ in rows for k in t) == list(range(1, n - n // 1000 + 1))


def test_gold_from_paragraph_ids():
    from bisent.datasets.align_gold import concatenate, page_task
    from bisent.datasets.libreoffice import Document, Paragraph

    doc = Document("p.html", "test",
                   [Paragraph("a", "One. Two."), Paragraph("b", "Three."), Paragraph("c", "Four. Five."),
                    Paragraph("d", "Six."), Paragraph("x", "Only here.")],
                   [Paragraph("a", "Eins und zwei."), Paragraph("b", "Drei."), Paragraph("c", "Vier. Fünf."),
                    Paragraph("d", "Sechs.")])
    task, counts = page_task(doc, "en", "de")
    assert task.src == ["One.", "Two.", "Three.", "Six."] and task.tgt == ["Eins und zwei.", "Drei.", "Sechs."]
    assert task.gold == [((0, 1), (0,)), ((2,), (1,)), ((3,), (2,))]
    assert counts == {"out_of_order": 0, "one_side": 1, "many_many": 1, "merged": 0, "untranslated": 0,
                      "paragraphs": 3}
    long = concatenate([task], 10)
    assert len(long.src) == 12 and long.gold[3] == ((4, 5), (3,))
    dropped, _ = page_task(doc, "en", "de", drop=0.99)
    assert all(not s or not t for s, t in dropped.gold)


def test_untranslated_copy_is_gold_unaligned_in_every_view():
    """A prose paragraph whose target text is the source text itself is not a translation pair: its sentences are
    gold 1-0 / 0-1 in the clean, drop and merge views, as in the paragraph gold; an identical command line and
    an identical short name stay gold blocks; a copy is never merged with its neighbour."""
    from bisent.datasets.align_gold import page_task, paragraph_page, untranslated
    from bisent.datasets.libreoffice import Document, Paragraph

    copy = "This paragraph was never translated into German."
    en = [Paragraph("a", "Open the menu."), Paragraph("b", copy), Paragraph("c", "Copy the file now. Then close it."),
          Paragraph("d", "Print the page."), Paragraph("e", "Dim iCount As Integer = Len(sText) + 1"),
          Paragraph("f", "Writer Help")]
    de = [Paragraph("a", "Öffnen Sie das Menü."), Paragraph("b", "  This paragraph was never  translated into German."),
          Paragraph("c", "Kopieren Sie die Datei und schließen Sie sie."), Paragraph("d", "Drucken Sie die Seite."),
          Paragraph("e", "Dim iCount As Integer = Len(sText) + 1"), Paragraph("f", "Writer Help")]
    doc = Document("u.html", "test", en, de)
    assert untranslated(copy, de[1].text) and not untranslated(en[4].text, de[4].text)
    assert not untranslated(en[5].text, de[5].text) and not untranslated(en[0].text, de[0].text)
    task, counts = page_task(doc, "en", "de")
    assert task.src[1] == copy and task.tgt[1] == de[1].text.strip()
    assert task.gold == [((0,), (0,)), ((1,), ()), ((), (1,)), ((2, 3), (2,)), ((4,), (3,)), ((5,), (4,)),
                         ((6,), (5,))]
    assert counts["untranslated"] == 1 and counts["paragraphs"] == 6
    # the paragraph gold agrees on the copy's sentences
    para, _ = paragraph_page(doc, "en", "de")
    assert [b for b in para.gold if not b[0] or not b[1]] == [((1,), ()), ((), (1,))]
    for drop in (0.0, 0.99):                        # with a side dropped, what is left of the copy stays unaligned
        task, _ = page_task(doc, "en", "de", drop=drop, merge=0.99)
        copies = [k for k, line in enumerate(task.src) if line == copy]
        assert all(((k,), ()) in task.gold for k in copies)
        assert not any(k in s for s, t in task.gold if t for k in copies)   # in no block with a target side


def test_merged_paragraphs_give_n_1_gold_and_keep_every_sentence():
    """merge ~ 1: neighbouring translated paragraphs joined into one line on one side; the words all stay."""
    from bisent.datasets.align_gold import page_task
    from bisent.datasets.libreoffice import Document, Paragraph

    en = [Paragraph(f"p{k}", f"Sentence number {k}.") for k in range(12)] + [Paragraph("q", "One. Two. Three.")]
    de = [Paragraph(f"p{k}", f"Satz Nummer {k}.") for k in range(12)] + [Paragraph("q", "Eins zwei drei.")]
    doc = Document("m.html", "test", en, de)
    plain, _ = page_task(doc, "en", "de")
    task, counts = page_task(doc, "en", "de", merge=0.99)
    assert counts["merged"] >= 4 and len(task.gold) == len(plain.gold) - counts["merged"]
    assert " ".join(task.src).split() == " ".join(plain.src).split()          # nothing lost, order kept
    assert " ".join(task.tgt).split() == " ".join(plain.tgt).split()
    shapes = {(len(s), len(t)) for s, t in task.gold}
    assert shapes <= {(1, 1), (2, 1), (1, 2), (3, 1), (1, 3)} and {(2, 1), (1, 2)} & shapes
    for s, t in task.gold:                                  # a merged side is one line holding both sentences
        if len(s) == 1 and len(t) == 2:
            assert task.src[s[0]].count("Sentence number") == 2
    assert page_task(doc, "en", "de", merge=0.99) == (task, counts)             # deterministic
    both, _ = page_task(doc, "en", "de", drop=0.3, merge=0.5)
    assert sum(map(len, (s for s, _ in both.gold))) == len(both.src)


def test_pairs_from_docs_mine_output(tmp_path, capsys):
    """`bisent documents mine` over two folders, then `bisent align --pairs` on its TSV: matched rows aligned, the rest
    not."""
    for side, lines in (("en", EN), ("de", DE)):
        (tmp_path / side).mkdir()
        for k in range(3):
            write(tmp_path / side / f"doc{k}.txt", lines[2 * k:2 * k + 2])
    write(tmp_path / "en" / "lonely.txt", ["Nothing to see here at all, really nothing."])
    mined = tmp_path / "mined.tsv"
    assert main(["documents", "mine", str(tmp_path / "en"), str(tmp_path / "de"), "-l", "en", "-L", "de",
                 "-e", "char-ngram", "--segmentation", "given", "--min-cosine", "none", "-o", str(mined)]) == 0
    rows = [r.split("\t") for r in mined.read_text(encoding="utf-8").splitlines()]
    assert rows[0][-2:] == ["src_origin", "tgt_origin"] and sum(r[4] == "matched" for r in rows[1:]) == 3
    capsys.readouterr()
    assert main(["align", "--pairs", str(mined), "-l", "en", "-L", "de", "-e", "char-ngram",
                 "-o", str(tmp_path / "d")]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["pairs"] == summary["aligned"] == 3
    done = [json.loads(x) for x in (tmp_path / "d" / "summary.jsonl").read_text().splitlines()]
    assert sorted(r["line"] for r in done) == [k + 1 for k, r in enumerate(rows) if r[4] == "matched"]
    # a JSONL collection's origins are lines, not files: a clear error
    mined.write_text("\t".join(rows[0]) + "\nd0\td0\t1.1\t0.9\tmatched\tc.jsonl:1\tc.jsonl:1\n", encoding="utf-8")
    write(tmp_path / "c.jsonl", ['{"id": "d0", "text": "x"}'])
    assert main(["align", "--pairs", str(mined), "-l", "en", "-L", "de", "-o", str(tmp_path / "e")]) == 2
    assert "mined.tsv:2: no such file: c.jsonl:1 (a line of a JSONL collection" in capsys.readouterr().err


def test_gnome_gold_pairs_blocks_by_position(tmp_path, monkeypatch):
    """GNOME pages: block k <-> block k; identical blocks and pages of unequal block count left out."""
    from bisent.datasets import docsets
    from bisent.datasets.align_gold import load_align_task

    rows = {"src": [{"id": "a", "text": ["Open the window.", "ls -l", "Close it. Then stop."], "split": "test"},
                    {"id": "b", "text": ["One.", "Two."], "split": "test"},
                    {"id": "c", "text": ["Skip.", "Me."], "split": "dev"}],
            "tgt": [{"id": "a", "text": ["Öffne das Fenster.", "ls -l", "Schließe es und halte an."],
                     "split": "test"},
                    {"id": "b", "text": ["Eins."], "split": "test"}, {"id": "c", "text": ["A.", "B."], "split": "dev"}]}
    for side, docs in rows.items():
        (tmp_path / f"{side}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    (tmp_path / "gold.tsv").write_text("a\ta\ttest\nb\tb\ttest\nc\tc\tdev\n", encoding="utf-8")
    monkeypatch.setattr(docsets, "build_docset", lambda source, src, tgt: tmp_path)
    docs, stats = load_align_task("en", "de", "test", source="gnome", min_paragraphs=1)
    assert [d.name for d in docs] == ["a"] and stats["pages_unequal_blocks"] == 1 and stats["identical"] == 1
    assert docs[0].src == ["Open the window.", "Close it.", "Then stop."]
    assert docs[0].gold == [((0,), (0,)), ((1, 2), (1,))]
    with pytest.raises(BisentError, match="unknown alignment gold source 'nope'"):
        load_align_task("en", "de", "test", source="nope")
