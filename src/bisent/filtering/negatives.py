"""Negatives for Kim et al. (2019)'s MLP similarity: which pairs the classifier learns to reject.

Negatives, by strategy (§5.2, Table 5):

- ``random``: the clean pairs re-paired at random (each source with another pair's target);
- ``sample``: random lines of a noisy corpus, without scoring (Table 5's "random sampling");
- ``worst:X`` (X in 20, 40, 60, 80, 100): sort a noisy corpus by cosine, best
  first, cut at X %, and take the ``n`` pairs just above the cut (Table 5's
  "X % worst": 100 = the very worst pairs, 20 = pairs still in the best fifth);
  ``n`` is at most a fifth of the corpus so the five bands do not overlap;
- ``synthetic``: the clean pairs with the noise of :mod:`bisent.datasets.noise`
  (misaligned, neighbour, untranslated, truncated, glued; third language when
  a third-language side is given).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..errors import BisentError
from .records import Pair

STRATEGIES = ("random", "sample", "worst", "synthetic")
WORST_LEVELS = (20, 40, 60, 80, 100)


def parse_strategy(spec: str) -> tuple[str, int | None]:
    """``"random"`` -> ("random", None); ``"worst:40"`` -> ("worst", 40); mistakes are one-line errors."""
    name, _, arg = str(spec).partition(":")
    if name not in STRATEGIES:
        raise BisentError(f"unknown negatives '{spec}' (random, sample, worst:X with X in "
                          f"{'/'.join(map(str, WORST_LEVELS))}, synthetic)")
    if name == "worst":
        if not arg.isdigit() or int(arg) not in WORST_LEVELS:
            raise BisentError(f"negatives '{spec}': give the level as worst:X with X one of the five bands "
                              f"{', '.join(map(str, WORST_LEVELS))} (a fifth of the noisy corpus each)")
        return name, int(arg)
    if arg:
        raise BisentError(f"negatives '{spec}': '{name}' takes no ':{arg}'")
    return name, None


def random_pairing(clean: Sequence[Pair], n: int, seed: int = 0) -> list[Pair]:
    """``n`` pairs (source of one clean pair, target of another): a shuffled cycle, no pair with its own target."""
    if len(clean) < 2:
        raise BisentError("random negatives need at least 2 clean pairs")
    order = np.random.default_rng(seed).permutation(len(clean))
    out = []
    for j in range(n):
        shift = 1 + (j // len(clean)) % (len(clean) - 1)   # another shift on every round through the pairs
        i, o = order[j % len(clean)], order[(j + shift) % len(clean)]
        out.append((clean[i][0], clean[o][1]))
    return out


def worst_band(cosines: np.ndarray, level: int, n: int) -> np.ndarray:
    """Indices of the ``n`` pairs just above the top-``level`` % cut of ``cosines`` sorted best first."""
    order = np.argsort(-np.asarray(cosines, dtype=np.float64), kind="stable")
    cut = int(round(level / 100 * len(order)))
    return np.sort(order[max(0, cut - n):cut])


def synthetic_noise(clean: Sequence[Pair], n: int, *, docs: Sequence[str] | None = None,
                    third: Sequence[str | None] | None = None, seed: int = 0) -> list[Pair]:
    """``n`` noisy pairs built from the clean ones with :func:`bisent.datasets.noise.make_noisy_set`.

    ``docs`` (one id per pair, pairs in page order) says which pairs are neighbours;
    without it, blocks of consecutive lines stand for documents. ``third`` (one
    text or None per pair): the source's paragraph in a third language.
    """
    from ..datasets.noise import make_noisy_set

    @dataclass(frozen=True)
    class _P:
        doc: str
        pid: str
        src: str
        tgt: str

    if docs is None:
        block = max(1, min(50, len(clean) // 4))
        docs = [f"block{i // block}" for i in range(len(clean))]
    if len(set(docs)) < 2:
        raise BisentError("synthetic negatives need clean pairs from at least 2 documents (or 8 lines)")
    items = [_P(str(d), str(i), s, t) for i, ((s, t), d) in enumerate(zip(clean, docs))]
    third_map = None
    if third is not None:
        third_map = {(p.doc, p.pid): x for p, x in zip(items, third) if x}
    noisy = make_noisy_set(items, third_map or None, clean_share=0.0, seed=seed, limit=min(n, len(items)))
    return [(it.src, it.tgt) for it in noisy]


def choose_negatives(strategy: str, clean: Sequence[Pair], *, noisy: Sequence[Pair] | None = None,
                     noisy_cos: np.ndarray | None = None, n: int | None = None, docs=None, third=None,
                     seed: int = 0) -> list[Pair]:
    """The negative pairs for ``strategy`` (see the module docstring); ``n`` defaults to the clean count
    (``worst:X``: at most a fifth of the noisy corpus; ``sample``: at most all of it)."""
    name, level = parse_strategy(strategy)
    n = len(clean) if n is None else int(n)
    if name == "random":
        return random_pairing(clean, n, seed)
    if name == "synthetic":
        return synthetic_noise(clean, n, docs=docs, third=third, seed=seed)
    if not noisy:
        raise BisentError(f"negatives '{strategy}' need a noisy corpus (--noisy NOISY.tsv)")
    if name == "sample":
        idx = np.sort(np.random.default_rng(seed).permutation(len(noisy))[:n])
    else:
        if noisy_cos is None or len(noisy_cos) != len(noisy):
            raise ValueError("worst:X needs the cosine of every noisy pair")
        idx = worst_band(noisy_cos, level, min(n, max(1, len(noisy) // 5)))
    return [noisy[i] for i in idx]


__all__ = ["STRATEGIES", "WORST_LEVELS", "parse_strategy", "random_pairing", "worst_band", "synthetic_noise",
           "choose_negatives"]
