"""Each score equals a direct NumPy transcription of its formula."""

import numpy as np
import pytest

from bisent.mining.scoring import CSLSScorer, MarginScorer, Scorer
from conftest import unit_rows


def direct(x, y, k, kind):
    """Dense transcription of the formulas in bisent.mining.scoring's docstring (no blocking, no FAISS)."""
    s = x @ y.T
    kx, ky = min(k, len(y)), min(k, len(x))
    r_x = np.sort(s, axis=1)[:, ::-1][:, :kx].mean(axis=1)          # mean cos of NN_k(x) among targets
    r_y = np.sort(s.T, axis=1)[:, ::-1][:, :ky].mean(axis=1)        # mean cos of NN_k(y) among sources
    m = r_x[:, None] / 2 + r_y[None, :] / 2                          # Σ cos / 2k + Σ cos / 2k
    return {
        "cosine": s, "absolute": s, "distance": s - m, "ratio": s / m,
        "csls": 2 * s - r_x[:, None] - r_y[None, :],
        "euclidean": -np.linalg.norm(x[:, None, :] - y[None, :, :], axis=2),
    }[kind]


@pytest.mark.parametrize("kind", ["cosine", "euclidean", "csls", "absolute", "distance", "ratio"])
@pytest.mark.parametrize("k", [1, 4])
def test_candidate_scores_equal_direct_formula(kind, k):
    rng = np.random.default_rng(7)
    x, y = unit_rows(rng, 60, 12), unit_rows(rng, 45, 12)
    full = direct(x, y, k, kind)
    c = Scorer(kind, k).fit(y).score(x)
    np.testing.assert_allclose(c.fwd_score, full[np.arange(60)[:, None], c.fwd_idx], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(c.bwd_score, full[c.bwd_idx, np.arange(45)[:, None]], rtol=1e-4, atol=1e-5)


def test_score_pairs_with_background_equals_direct():
    rng = np.random.default_rng(8)
    x, y = unit_rows(rng, 30, 10), unit_rows(rng, 30, 10)
    bg_src, bg_tgt = unit_rows(rng, 200, 10), unit_rows(rng, 150, 10)
    got = MarginScorer(k=4, kind="ratio").fit(bg_tgt, sources=bg_src).score_pairs(x, y)
    cos = np.sum(x * y, axis=1)
    r_x = np.sort(x @ bg_tgt.T, axis=1)[:, -4:].mean(axis=1)
    r_y = np.sort(y @ bg_src.T, axis=1)[:, -4:].mean(axis=1)
    np.testing.assert_allclose(got, cos / ((r_x + r_y) / 2), rtol=1e-5)
    got_csls = CSLSScorer(k=4).fit(bg_tgt, sources=bg_src).score_pairs(x, y)
    np.testing.assert_allclose(got_csls, 2 * cos - r_x - r_y, rtol=1e-5, atol=1e-6)


def test_unknown_kind_rejected():
    with pytest.raises(ValueError):
        Scorer("dot")
    with pytest.raises(ValueError):
        MarginScorer(kind="csls")
