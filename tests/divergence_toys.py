"""A toy divergence task shared by the tests: word `a<i>` translates to `b<i>`, the target reversed.

A model trained on it for seconds (the `toy_model` fixture in conftest.py) separates divergent from
parallel words; test_divergence and test_run use it.
"""

from __future__ import annotations

import numpy as np

#: a toy run: tiny model, no replace negatives (no word classes to learn), a high learning rate
TOY = {"architecture": "divergence", "model": {"embed_dim": 16, "hidden_dim": 16, "min_count": 1},
       "objectives": {"replace": False, "word_classes": 8}, "train": {"max_steps": 250, "log_every": 50},
       "optim": {"lr": 0.02, "clip": 5.0}, "data": {"batch_size": 16}}


def toy_pairs(n: int, seed: int) -> list[tuple[str, str]]:
    """n pairs of 4-8 words: `a3 a7 a1` against `b1 b7 b3`."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        ids = rng.integers(0, 40, size=rng.integers(4, 9))
        out.append((" ".join(f"a{i}" for i in ids), " ".join(f"b{i}" for i in ids[::-1])))
    return out


def toy_bitext(n: int, seed: int):
    from bisent.training.data import Bitext

    return Bitext("xa", "xb", toy_pairs(n, seed))


def train_toy_model(out):
    """Train TOY on 600 pairs into the folder `out`; returns the model."""
    from bisent.training.loop import train
    from bisent.training.recipe import validate_recipe

    return train(validate_recipe(TOY), [toy_bitext(600, 0)], [], [], out, progress=False).model
