"""benchmarks/filter_clean.py: the length ratio yielding to word coverage, decided from every step's values."""

from __future__ import annotations

import numpy as np
import pytest

from filter_clean import DEFAULT, decide, factors, first_rejecting, length_yield


def values(z, cov, mismatch, cosine, leave_out=-0.1, margin=1.2):
    """Step values of ``len(z)`` pairs that every step but the length ratio, leave_out and the margin accepts."""
    n = len(z)
    return {"duplicate": [0.0] * n, "empty": [10.0] * n, "length": [[5.0, 5.0]] * n, "overlap": [0.1] * n,
            "script": [[1.0, 1.0]] * n, "langid": [[0.9, 0.9]] * n, "_other_lang": [[0.0, 0.0]] * n,
            "numbers": [0.0] * n, "_spelled": [0.0] * n, "length_ratio": list(z),
            "coverage": [[c, 0.0, 1.0, float(m), 0.0] for c, m in zip(cov, mismatch)],
            "leave_out": [[g, 0.0, 1.0] for g in np.broadcast_to(leave_out, n)],
            "margin": list(np.broadcast_to(margin, n)), "cosine": list(cosine)}


PAIRS = [("a b c", "x y z")] * 4


def kept(v, family, x):
    f = factors(v, PAIRS)
    f["max_z"] = {**f["max_z"], DEFAULT["max_z"]: f["max_z"][DEFAULT["max_z"]] | length_yield(v, family, x)}
    return decide(f, DEFAULT).tolist()


def test_length_ratio_yields_only_to_a_covered_pair():
    # a free translation (far in length, well covered), a glued pair (far, sentence counts differ), a truncated
    # pair (far, a half uncovered), a pair within the length band
    v = values(z=[3.5, 4.0, -3.0, 1.0], cov=[0.7, 0.65, 0.2, 0.3], mismatch=[0, 1, 0, 0], cosine=[0.8, 0.7, 0.6, 0.5])
    assert kept(v, "none", None) == [False, False, False, True]
    assert kept(v, "cov", 0.6) == [True, True, False, True]
    assert kept(v, "cov_same_count", 0.6) == [True, False, False, True]
    assert kept(v, "off", None) == [True, True, True, True]
    # coverage over cosine: 0.875, 0.93, 0.33; |z| above 5 never yields
    assert kept(v, "cov_over_cos", 0.8) == [True, True, False, True]
    far = values(z=[6.0, 1.0, 1.0, 1.0], cov=[0.8] * 4, mismatch=[0] * 4, cosine=[0.8] * 4)
    assert kept(far, "cov_over_cos", 0.8) == [False, True, True, True]
    # relative to the input's own median coverage (0.475 here)
    assert kept(v, "cov_median", 1.0) == [True, True, False, True]
    with pytest.raises(ValueError, match="unknown length yield"):
        length_yield(v, "cosine", 0.5)


def test_first_rejecting_counts_each_pair_once_in_the_recipe_order():
    v = values(z=[3.5, 1.0, 1.0, 1.0], cov=[0.7] * 4, mismatch=[0] * 4, cosine=[0.8, 0.8, 0.8, 0.2],
               leave_out=[0.2, 0.2, -0.1, -0.1], margin=[1.2, 1.2, 0.5, 1.2])
    f = factors(v, PAIRS)
    # pair 0: length ratio (and leave_out after it), pair 1: leave_out, pair 2: margin, pair 3: cosine
    assert first_rejecting(f, DEFAULT) == {"length_ratio": 1, "leave_out": 1, "margin": 1, "cosine": 1}
    f["max_z"] = {**f["max_z"], DEFAULT["max_z"]: f["max_z"][DEFAULT["max_z"]] | length_yield(v, "cov", 0.6)}
    assert first_rejecting(f, DEFAULT) == {"leave_out": 2, "margin": 1, "cosine": 1}


def test_two_signal_rule_takes_the_least_noise_near_the_lowest_worst_set():
    from filter_clean import pick_two_signals, two_signal_keep

    def row(setting, clean, noise, within=True):
        return {"setting": setting, "clean_rejected": dict(zip(("bible", "gettext", "libreoffice"), clean)),
                "noise_kept_n": {"glued": noise}, "noise_within_caps": within}

    rows = [row(None, (4.5, 6.0, 4.9), 80),
            row({"s": "lowest worst"}, (2.6, 3.6, 2.6), 107),
            row({"s": "within 0.2, less noise"}, (3.0, 3.8, 2.7), 99),
            row({"s": "0.27 above"}, (2.0, 3.87, 2.0), 90),
            row({"s": "over a cap"}, (1.0, 1.0, 1.0), 50, within=False)]
    assert pick_two_signals(rows)["setting"] == {"s": "within 0.2, less noise"}
    assert pick_two_signals(rows[:1] + rows[4:]) is None             # nothing within the caps but the default
    # [gain, side, unit, z, longer_gain, longer_units]: decided by the leave_out step's own accept
    joint = [[0.0, -1, 0, 3.6, 0.0, 1], [-0.05, 1, 2, 3.0, -0.05, 2], [0.07, 1, 1, 0.2, 0.07, 2],
             [0.0, 1, 2, 6.0, -0.1, 2]]
    setting = {"hard_z": 5.0, "length_z": 2.5, "length_gain": -0.02, "toward_z": 1.0, "hard_gain": 0.1}
    hard, lo = two_signal_keep(joint, setting)
    assert hard.tolist() == [True, True, True, False] and lo.tolist() == [False, True, True, True]
    hard, _ = two_signal_keep(joint, {**setting, "hard_z": None})
    assert hard.all()
