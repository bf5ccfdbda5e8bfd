"""The alignment cost's two added terms: Gale & Church's length term and the copy detector."""

from __future__ import annotations

import numpy as np
import pytest

from bisent.align import EmbeddingCosts, GaleChurchCosts, SentenceAligner, align_costs, alignment_types
from bisent.align.copies import copy_pairs, is_prose
from bisent.align.costs import COPY_COST, group_sums, length_cost
from bisent.cli import main
from test_align import EvaluatedCosts, blocks_of, brute_force, planted_m_n, write

EN = ["The cat sits on the mat.", "It is raining today in the north.", "I like green apples very much.",
      "Open the file menu first.", "Click the Save button now.", "The dog barks loudly at night."]
DE = ["Die Katze sitzt auf der Matte.", "Heute regnet es im Norden.", "Ich mag grüne Äpfel sehr.",
      "Öffnen Sie zuerst das Menü Datei.", "Klicken Sie jetzt auf Speichern.", "Der Hund bellt nachts laut."]


def test_length_cost_is_zero_where_lengths_agree_and_grows_with_the_gap():
    assert length_cost(np.array([50.0]), np.array([50.0]))[0] == pytest.approx(0.0, abs=1e-6)
    gaps = length_cost(np.full(4, 50.0), np.array([50.0, 60.0, 80.0, 120.0]))
    assert np.all(np.diff(gaps) > 0)
    # z = 10 / sqrt(6.8 * 55): -log 2 (1 - Phi(z)) by hand through math.erfc
    import math
    z = 10 / math.sqrt(6.8 * 55)
    assert length_cost(np.array([50.0]), np.array([60.0]))[0] == pytest.approx(-math.log(math.erfc(z / 2 ** .5)),
                                                                                rel=1e-5)
    # the ratio c scales the target: 100 characters against 50 cost nothing at c = 2
    assert length_cost(np.array([50.0]), np.array([100.0]), c=2.0)[0] == pytest.approx(0.0, abs=1e-6)
    # Gale-Church's own cost is the same term plus its prior
    gc = GaleChurchCosts([50, 40], [60, 40])
    assert gc.cost(1, 1, 1, np.array([1]))[0] == pytest.approx(length_cost(50.0, 60.0) - math.log(0.89))


def test_length_term_is_added_to_every_aligned_step_and_to_the_skip_calibration():
    src, tgt, _ = planted_m_n(0)
    ls, lt = [40, 30, 35, 60, 45, 50], [42, 70, 28, 30, 20, 44, 52]
    plain = EmbeddingCosts(group_sums(src, [1, 2, 3]), group_sums(tgt, [1, 2, 3]))
    lengthy = EmbeddingCosts(group_sums(src, [1, 2, 3]), group_sums(tgt, [1, 2, 3]), lengths=(ls, lt),
                             length_weight=0.5)
    js = np.arange(2, 8)
    ratio = sum(lt) / sum(ls)
    expect = plain.cost(2, 1, 3, js) + 0.5 * length_cost(ls[1] + ls[2], np.array([lt[j - 1] for j in js]), ratio)
    assert lengthy.cost(2, 1, 3, js) == pytest.approx(expect)
    assert lengthy.skip > plain.skip                   # the skip quantile is taken of the same sum
    with pytest.raises(ValueError, match="lengths of 5 / 7 sentences"):
        EmbeddingCosts(group_sums(src, [1]), group_sums(tgt, [1]), lengths=(ls[:5], lt), length_weight=0.1)


@pytest.mark.parametrize("seed", range(3))
def test_dp_with_both_terms_equals_brute_force(seed):
    """The length term and a copy pair in the cost: the DP still finds the cheapest of every monotone path,
    and no aligned block of it holds the copied sentences."""
    src, tgt, _ = planted_m_n(seed)
    rng = np.random.default_rng(seed)
    ls, lt = rng.integers(10, 80, 6), rng.integers(10, 80, 7)
    costs = EmbeddingCosts(group_sums(src, [1, 2, 3]), group_sums(tgt, [1, 2, 3]), lengths=(ls, lt),
                           length_weight=0.2, copies=np.array([[4, 5]]))
    types = alignment_types(4)
    path, total, _ = align_costs(costs, types)
    best, best_path = brute_force(EvaluatedCosts(costs, types), types)
    assert total == pytest.approx(best, abs=1e-6) and list(best_path) == path
    assert total < COPY_COST
    assert all(not (i0 <= 4 < i1 and j1 > j0) and not (j0 <= 5 < j1 and i1 > i0) for i0, i1, j0, j1 in path)


def test_prose_and_copy_pairs_on_hand_made_sentences():
    assert is_prose("This paragraph was left in English by the translator.")
    for text in ("Dim a As Integer", "=SUM(A1:A10)", "LibreOffice Calc", "soffice --headless --convert-to pdf"):
        assert not is_prose(text)
    src = ["Eins.", "This sentence was not translated at all.", "Dim a As Integer", "Zwei."]
    tgt = ["One.", "this  sentence was not translated at all.", "Dim a As Integer", "Two."]
    assert copy_pairs(src, tgt).tolist() == [[1, 1]]          # whitespace and case aside; the code line is no copy
    assert copy_pairs(["Eins."], ["One."]).shape == (0, 2)


def test_untranslated_paragraph_is_left_unaligned_and_the_rest_still_aligns():
    """A German translation that left two English sentences as they were: with the detector they are 1-0 / 0-1
    rows, without it they are aligned with themselves; the translated sentences are 1-1 either way."""
    copied = ["This paragraph was never translated into German.", "Its two sentences stayed in English."]
    src = EN[:3] + copied + EN[3:]
    tgt = DE[:3] + copied + DE[3:]
    kept = SentenceAligner("char-ngram", copies=False).align(src, tgt, "en", "de").blocks
    left = SentenceAligner("char-ngram").align(src, tgt, "en", "de").blocks
    assert {(b.src, b.tgt) for b in kept} >= {((3,), (3,)), ((4,), (4,))}
    assert {(b.src, b.tgt) for b in left} == {((k,), (k,)) for k in (0, 1, 2, 5, 6, 7)} | {
        ((3,), ()), ((4,), ()), ((), (3,)), ((), (4,))}


def test_cli_takes_the_new_options_and_accounts_for_every_line(tmp_path, capsys):
    copied = ["This paragraph was never translated into German."]
    src = write(tmp_path / "a.en", EN[:3] + copied + EN[3:])
    tgt = write(tmp_path / "a.de", DE[:3] + copied + DE[3:])
    out = tmp_path / "o.tsv"
    args = ["align", str(src), str(tgt), "-l", "en", "-L", "de", "-e", "char-ngram", "-o", str(out)]
    assert main(args + ["--length-weight", "0.3"]) == 0
    rows = blocks_of(out)
    assert sorted(k for s, _, _ in rows for k in s) == list(range(1, 8)) and ([4], [], "") in rows
    assert main(args + ["--no-copies", "--length-weight", "0"]) == 0
    assert ([4], [4], "") not in blocks_of(out) and any(s == [4] and t == [4] for s, t, _ in blocks_of(out))
    assert main(args + ["--length-weight", "-1"]) == 2
    assert "--length-weight" in capsys.readouterr().err


def test_f1_interval_counts_as_the_scorer_and_pairs_the_draws():
    from bisent.align import score_alignments
    from bisent.align.interval import f1_interval

    gold = [[((k,), (k,)) for k in range(60)] + [((60, 61), (60,)), ((), (61,))]]
    good = [list(gold[0])]
    bad = [[((k,), (k,)) for k in range(50)] + [((k,), (k + 1,)) for k in range(50, 60)] + [((60,), ()), ((61,), ()),
                                                                                             ((), (60,))]]
    iv = f1_interval([good, bad, bad], gold, size=10, rounds=300)
    assert iv["f1"][0] == 100.0 and iv["f1"][1] == round(100 * score_alignments(bad, gold).strict_f1, 2)
    # its errors sit in 2 of 7 stretches: some draws miss them, so the interval reaches 100
    assert iv["low"][1] < iv["f1"][1] < iv["high"][1] <= 100.0 and iv["low"][0] == iv["high"][0] == 100.0
    assert iv["gap_low"][1] < iv["gap"][1] < 0 <= iv["gap_high"][1] + 1e-9 and iv["gap_high"][0] == 0.0
    assert iv["gap_low"][2] == iv["gap_low"][1]                            # the same draws for every aligner
    assert iv["units"] == 7
