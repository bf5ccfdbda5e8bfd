"""The paired comparison of two encoders' recovery errors (bisent.evaluate.paired_gap / exact_sign_p)."""

import math

import numpy as np
import pytest

from bisent.evaluate import exact_sign_p, paired_gap, pairs_fingerprint, recovery_error, recovery_misses
from conftest import unit_rows


def _sign_p_by_counting(a, b):
    n, m = a + b, min(a, b)
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(m + 1)) / 2 ** n)


@pytest.mark.parametrize("a,b", [(0, 5), (1, 9), (9, 1), (3, 4), (5, 5), (12, 30), (140, 190), (0, 1)])
def test_exact_sign_p_equals_counting(a, b):
    assert exact_sign_p(a, b) == pytest.approx(_sign_p_by_counting(a, b), rel=1e-9)


def test_exact_sign_p_edges():
    assert exact_sign_p(0, 0) == 1.0
    assert exact_sign_p(0, 5) == pytest.approx(2 / 32)
    assert exact_sign_p(0, 40) < 1e-10


def test_paired_gap_counts_only_discordant_items():
    # 300 items: both wrong on 90; only the system on 8; only the reference on 3 -> 5 items = 1.67 points behind
    ref = np.zeros(300, bool)
    miss = np.zeros(300, bool)
    miss[:90] = ref[:90] = True
    miss[90:98] = True
    ref[98:101] = True
    g = paired_gap(miss, ref)
    assert (g["only_this_wrong"], g["only_ref_wrong"]) == (8, 3)
    assert g["gap"] == pytest.approx(100 * 5 / 300, abs=0.01)
    lo, hi = g["gap_ci95"]
    assert lo < 0 < g["gap"] < hi                   # 5 of 300 items: the interval holds no gap at all
    assert g["p"] == pytest.approx(_sign_p_by_counting(8, 3), rel=1e-2) and g["p"] > 0.2   # 3 significant digits
    same = paired_gap(miss, miss)
    assert same["gap"] == 0 and same["gap_ci95"] == [0, 0] and same["p"] == 1.0


def test_recovery_error_is_the_share_of_misses():
    rng = np.random.default_rng(0)
    x = unit_rows(rng, 50, 8)
    y = x + 1.2 * unit_rows(rng, 50, 8)
    for kind in ("cosine", "csls"):
        a, b = recovery_misses(x, y, kind)
        assert a.shape == b.shape == (50,) and a.dtype == bool
        assert 0 < a.sum() < 50
        assert recovery_error(x, y, kind) == (a.mean(), b.mean())


def test_pairs_fingerprint_names_texts_and_order():
    a = [("cat", "Katze"), ("dog", "Hund")]
    assert pairs_fingerprint(a) == pairs_fingerprint(list(a)) and len(pairs_fingerprint(a)) == 12
    assert pairs_fingerprint(a) != pairs_fingerprint(a[::-1])
    assert pairs_fingerprint(a) != pairs_fingerprint([("cat", "Katze"), ("dog", "Hunde")])


def test_paired_gap_of_no_items_is_no_gap():
    g = paired_gap(np.zeros(0, bool), np.zeros(0, bool))
    assert g["gap"] == 0 and g["p"] == 1.0 and g["only_this_wrong"] == g["only_ref_wrong"] == 0
