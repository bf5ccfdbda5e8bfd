"""Partial translations without a trained model: every sentence of each side must have a counterpart.

A glued pair (one side holds an extra sentence) and a truncated pair (one
side stops half-way) can score a fair cosine as wholes. This step splits
each side into *units* — its sentences by ``sentencex``, or, for a side of
one sentence of at least ``split_words`` words, its two halves by words —
embeds them with the pipeline's encoder (the embedding cache keeps a second
run cheap) and gives each unit its *coverage*: the best cosine between the
unit and the other side, whole or any of its units. A translated unit finds
its counterpart; an inserted sentence or the lost half of a truncated side
does not. The pair's value is the worst unit's coverage with where it is::

    - {type: coverage, encoder: use-m3, min_coverage: 0.15, mismatch_coverage: 0.3}

Value: ``[coverage, side, unit, mismatch, cut]``: side 0 is the source, 1 the
target; ``unit`` is the 1-based index of the failing unit among that side's
units (the sentence, or 1 / 2 for the first / second half); ``mismatch`` is
how many sentences one side has more than the other; ``cut`` the words cut
(below). A side of one short sentence is one unit, the whole side, and a pair
of two such sides scores their cosine. Rejected: coverage below
``min_coverage``, or, when the sentence counts differ (the mark of a glued
pair), below ``mismatch_coverage`` (None: no stricter bound).

``cut: true`` repairs a glued pair instead of rejecting it, as the ``repair``
step does: when the failing unit is the first or last sentence of the side
with more sentences, the pair without that sentence is scored again, and if
it passes it goes on to the next steps in its place (the kept output carries
the cut text; ``cut`` counts the words dropped, ``side`` and ``unit`` name
the sentence).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..encoders import DEFAULT_ENCODER
from . import vectors
from .embedding import EmbeddingStep
from .params import check_bool, check_number
from .records import Pair
from .steps import register_step


def sentences(text: str, lang: str) -> list[str]:
    """A side's sentences by ``sentencex`` (whitespace normalised)."""
    from sentencex import segment

    text = " ".join(text.split())
    return [s.strip() for s in segment(lang, text) if s.strip()] if text else []


def split_units(text: str, lang: str, split_words: int = 8) -> list[str]:
    """A side's units: its sentences (``sentencex``), or the two word-halves of one long sentence."""
    return units_of(sentences(text, lang), split_words)


def units_of(sents: list[str], split_words: int = 8) -> list[str]:
    """Units from a side's sentences: the sentences, or a single long one's two halves by words."""
    if len(sents) != 1:
        return sents
    text = sents[0]
    words = text.split()
    if split_words and len(words) >= split_words:
        half = (len(words) + 1) // 2
        return [" ".join(words[:half]), " ".join(words[half:])]
    return [text]


@register_step("coverage")
class CoverageStep(EmbeddingStep):
    """The worst unit's best cosine with the other side (see the module doc); below ``min_coverage`` rejected."""

    value_names = ("coverage", "side", "unit", "mismatch", "cut")

    def __init__(self, *, name: str | None = None, src_lang: str, tgt_lang: str, encoder: str = DEFAULT_ENCODER,
                 min_coverage: float = 0.3, mismatch_coverage: float | None = None, split_words: int = 8,
                 cut: bool = False, batch_size: int | None = None):
        super().__init__(name=name, src_lang=src_lang, tgt_lang=tgt_lang, encoder=encoder, batch_size=batch_size)
        self.min_coverage = check_number("min_coverage", min_coverage, low=-1, high=1)
        self.mismatch_coverage = None if mismatch_coverage is None else \
            check_number("mismatch_coverage", mismatch_coverage, low=-1, high=1)
        self.split_words = check_number("split_words", split_words, low=0, integer=True)
        if self.split_words == 1:
            raise ValueError("parameter 'split_words' must be 0 (never split a sentence) or at least 2, got 1")
        self.cut = check_bool("cut", cut)
        self.fixed: dict[Pair, Pair] = {}

    def units(self, pairs: Sequence[Pair]) -> tuple[list[list[str]], list[list[str]], list[int]]:
        """Each pair's source and target units, and how many sentences the sides differ by."""
        src_sents = [sentences(s, self.src_lang) for s, _ in pairs]
        tgt_sents = [sentences(t, self.tgt_lang) for _, t in pairs]
        return ([units_of(u, self.split_words) for u in src_sents], [units_of(u, self.split_words) for u in tgt_sents],
                [abs(len(a) - len(b)) for a, b in zip(src_sents, tgt_sents)])

    def score_batch(self, pairs: Sequence[Pair]) -> np.ndarray:
        out = self._coverage(pairs)
        if not self.cut:
            return out
        if len(self.fixed) > 200_000:                                    # cuts of earlier chunks, already applied
            self.fixed.clear()
        todo: list[tuple[int, Pair, int]] = []                           # (pair, the pair cut, words cut)
        langs = (self.src_lang, self.tgt_lang)
        for i, v in enumerate(out):
            if not v[3] or self.accept(v):
                continue
            side, unit = int(v[1]), int(v[2])
            sents = sentences(pairs[i][side], langs[side])        # two or more: its units are its sentences
            if len(sents) <= len(sentences(pairs[i][1 - side], langs[1 - side])) or unit not in (1, len(sents)):
                continue
            rest = " ".join(sents[:unit - 1] + sents[unit:])
            todo.append((i, (rest, pairs[i][1]) if side == 0 else (pairs[i][0], rest), len(sents[unit - 1].split())))
        if todo:
            again = self._coverage([p for _, p, _ in todo])
            for (i, cut_pair, words), v in zip(todo, again):
                v[3] = out[i, 3]                              # a cut pair meets the bound of a glued one
                if self.accept(v):
                    self.fixed[pairs[i]] = cut_pair
                    out[i, 0], out[i, 4] = v[0], words              # side, unit, mismatch: as found
        return out

    def rewrite(self, pair: Pair) -> Pair:
        """The pair with its unmatched sentence cut (or the pair itself)."""
        return self.fixed.get(pair, pair) if self.cut else pair

    def _coverage(self, pairs: Sequence[Pair]) -> np.ndarray:
        out = np.zeros((len(pairs), 5), dtype=np.float64)
        if not pairs:
            return out
        src_units, tgt_units, mismatch = self.units(pairs)
        out[:, 3] = mismatch
        # each side's items: the whole first (a side's units are compared with the other side whole), then its units
        src_items = [[" ".join(s.split())] + u for (s, _), u in zip(pairs, src_units)]
        tgt_items = [[" ".join(t.split())] + u for (_, t), u in zip(pairs, tgt_units)]
        a = vectors.encode(self.encoder, [u for items in src_items for u in items], self.src_lang)
        b = vectors.encode(self.encoder, [u for items in tgt_items for u in items], self.tgt_lang)
        ns = np.array([len(items) for items in src_items])
        nt = np.array([len(items) for items in tgt_items])
        a_at, b_at = np.cumsum(ns) - ns, np.cumsum(nt) - nt
        empty = (ns == 1) | (nt == 1)                   # a side with no unit (nothing but spaces)
        for i in np.flatnonzero(empty):
            out[i, :3] = (-1.0, 0 if ns[i] == 1 else 1, 1)
        # pairs of the same shape (units per side) at once: sims (g, 1 + src units, 1 + tgt units)
        for i_s, i_t in sorted(set(zip(ns[~empty].tolist(), nt[~empty].tolist()))):
            idx = np.flatnonzero((ns == i_s) & (nt == i_t) & ~empty)
            sims = np.einsum("gid,gjd->gij", a[a_at[idx, None] + np.arange(i_s)], b[b_at[idx, None] + np.arange(i_t)])
            src_cov = sims[:, 1:, :].max(axis=2)      # each source unit: its best match among the target and its units
            tgt_cov = sims[:, :, 1:].max(axis=1)
            s_i, t_i = src_cov.argmin(axis=1), tgt_cov.argmin(axis=1)
            s_v, t_v = src_cov[np.arange(len(idx)), s_i], tgt_cov[np.arange(len(idx)), t_i]
            src_worse = s_v <= t_v
            out[idx, 0] = np.where(src_worse, s_v, t_v)
            out[idx, 1] = np.where(src_worse, 0, 1)
            out[idx, 2] = np.where(src_worse, s_i, t_i) + 1
        return out

    def accept(self, value) -> bool:
        cov = value[0]
        if cov != cov or cov < self.min_coverage:
            return False
        return not (value[3] and self.mismatch_coverage is not None and cov < self.mismatch_coverage)


@register_step("leave_out")
class LeaveOutStep(EmbeddingStep):
    """Partial translations by leaving a unit out: the cosine a pair gains when one side loses its first or last
    unit (its sentences, or the two halves of one long sentence, as the ``coverage`` step splits them).

    A translated unit carries meaning the other side has, so leaving it out lowers the pair's cosine; a sentence
    glued onto one side, or the half of a side that a truncated other side lacks, raises it. The bound is on a
    difference of two cosines of the same pair, so it holds for pairs on the same topic as their neighbours,
    where the coverage of a glued sentence stays high::

        - {type: leave_out, encoder: use-m3, max_gain: 0.04}

    Value: ``[gain, side, unit]`` for the unit whose leaving out gains most (side 0 the source, 1 the target;
    ``unit`` counted from 1 among that side's units; ``[0, -1, 0]`` when neither side has two units). Rejected:
    gain above ``max_gain``.

    **Two signals before rejecting.** A free translation can differ in length, and a short pair can gain a little
    when a half is left out; a glued or truncated pair does both: one side is longer than the input's length band
    allows *and* that longer side gains when it loses a unit. With ``length_z`` and ``toward_z`` the step learns
    the robust z of log(target / source characters) per length band from a sample of the input, as the
    ``length_ratio`` step with ``learned: true`` does, and rejects only where both signals point the same way::

        - {name: length_ratio, type: leave_out, encoder: use-m3, max_gain: null, length_z: 2.5, length_gain: -0.02}
        - {type: leave_out, encoder: use-m3, max_gain: 0.05, toward_z: 1.0, hard_gain: 0.1}

    - ``length_z``: a pair whose |z| is above it is rejected when its longer side gains more than ``length_gain``
      by losing its first or last unit, or has only one unit (a short string: no second signal to ask);
    - ``toward_z``: a gain above ``max_gain`` rejects only when the side that gains is the longer one by a z above
      it, or when the gain is above ``hard_gain`` (None: never on the gain alone);
    - ``max_gain: null``: no bound on the gain (the step then judges lengths only, as in the first line above, so
      that a length and a partial translation are rejected under their own names).

    Value then ``[gain, side, unit, z, longer_gain, longer_units]``: ``z`` the pair's learned length z (positive:
    the target is the longer), ``longer_gain`` the best gain of the longer side (0 when it has one unit) and
    ``longer_units`` its unit count.
    """

    def __init__(self, *, name: str | None = None, src_lang: str, tgt_lang: str, encoder: str = DEFAULT_ENCODER,
                 max_gain: float | None = 0.04, split_words: int = 8, length_z: float | None = None,
                 length_gain: float = 0.0, toward_z: float | None = None, hard_gain: float | None = None,
                 sample: int = 20000, batch_size: int | None = None):
        super().__init__(name=name, src_lang=src_lang, tgt_lang=tgt_lang, encoder=encoder, batch_size=batch_size)
        self.max_gain = None if max_gain is None else check_number("max_gain", max_gain, low=-2, high=2)
        self.split_words = check_number("split_words", split_words, low=0, integer=True)
        if self.split_words == 1:
            raise ValueError("parameter 'split_words' must be 0 (never split a sentence) or at least 2, got 1")
        self.length_z = None if length_z is None else check_number("length_z", length_z, low=0, low_open=True)
        self.length_gain = check_number("length_gain", length_gain, low=-2, high=2)
        self.toward_z = None if toward_z is None else check_number("toward_z", toward_z)
        self.hard_gain = None if hard_gain is None else check_number("hard_gain", hard_gain, low=-2, high=2)
        if self.hard_gain is not None and self.toward_z is None:
            raise ValueError("parameter 'hard_gain' needs 'toward_z' (without it every gain above max_gain rejects)")
        if self.max_gain is None and (self.toward_z is not None or self.length_z is None):
            raise ValueError("max_gain: null (no bound on the gain alone) needs 'length_z' and no 'toward_z'")
        self.sample = check_number("sample", sample, low=1, integer=True)
        self._length = None
        if self.length_z is not None or self.toward_z is not None:    # the input's own length band, learned
            from .rules import LengthRatioFilter

            self._length = LengthRatioFilter(learned=True, unit="char", max_z=self.length_z or 1.0, sample=self.sample)

    # --- the length band (only with length_z / toward_z) ---

    def sample_size(self) -> int:
        return self._length.sample if self._length is not None else 0

    def fit_sample(self, pairs: Sequence[Pair]) -> None:
        if self._length is not None:
            self._length.fit_sample(pairs)

    def reset(self) -> None:
        if self._length is not None:
            self._length.reset()

    @property
    def value_names(self) -> tuple[str, ...]:
        if self._length is None:
            return ("gain", "side", "unit")
        return ("gain", "side", "unit", "z", "longer_gain", "longer_units")

    def score_batch(self, pairs: Sequence[Pair]) -> np.ndarray:
        joint = self._length is not None
        out = np.zeros((len(pairs), 6 if joint else 3), dtype=np.float64)
        out[:, 1] = -1
        if not pairs:
            return out
        whole = [[" ".join(s.split()) for s, _ in pairs], [" ".join(t.split()) for _, t in pairs]]
        langs = (self.src_lang, self.tgt_lang)
        rows = [vectors.encode(self.encoder, whole[side], langs[side]) for side in (0, 1)]
        base = np.sum(rows[0] * rows[1], axis=1)                       # (n,) the pair's cosine
        best = np.full((len(pairs), 2), np.nan)                        # (n, 2) each side's best gain
        units_n = np.ones((len(pairs), 2))                             # (n, 2) each side's unit count
        for side in (0, 1):
            shortened: list[str] = []                                  # the side less its first / last unit
            owner: list[tuple[int, int]] = []                          # (pair, unit left out, 1-based)
            for i, text in enumerate(whole[side]):
                units = split_units(text, langs[side], self.split_words)
                units_n[i, side] = len(units)
                if len(units) >= 2:
                    shortened += [" ".join(units[1:]), " ".join(units[:-1])]
                    owner += [(i, 1), (i, len(units))]
            if not shortened:
                continue
            z = vectors.encode(self.encoder, shortened, langs[side])    # (m, d)
            at = np.array([i for i, _ in owner])
            gains = np.sum(z * rows[1 - side][at], axis=1) - base[at]   # (m,)
            for (i, unit), g in zip(owner, gains):
                if g > out[i, 0] or out[i, 1] < 0:
                    out[i, :3] = (g, side, unit)
                if not g <= best[i, side]:                             # NaN (none yet) or larger
                    best[i, side] = g
        if joint:
            if self._length.stats is None:                             # never prepared: learn from this batch
                self._length.fit_sample(pairs)
            z = self._length.score_batch(pairs)                        # (n,) +: the target is the longer
            longer = (z > 0).astype(int)
            rows_at = np.arange(len(pairs))
            out[:, 3] = z
            out[:, 4] = np.nan_to_num(best[rows_at, longer], nan=0.0)
            out[:, 5] = units_n[rows_at, longer]
        return out

    def describe_rejection(self, value) -> str | None:
        """The two signals a rejected two-signal value showed, in words (None for a one-signal value)."""
        if len(value) < 6 or self.keep(value):
            return None
        gain, side, z, longer_gain, longer_units = value[0], value[1], value[3], value[4], value[5]
        longer = "target" if z > 0 else "source"
        if self.length_z is not None and abs(z) > self.length_z \
                and (longer_units < 2 or longer_gain > self.length_gain):
            why = "it is one unit" if longer_units < 2 else \
                f"it gains {longer_gain:.4g} > length_gain {self.length_gain:.4g} without a unit"
            return f"{self.name} length z {z:.4g} beyond length_z {self.length_z:.4g} ({longer} longer) and {why}"
        gainer = "target" if side == 1 else "source"
        toward = z if side == 1 else -z
        if self.hard_gain is not None and gain > self.hard_gain:
            return f"{self.name} {gainer} gain {gain:.4g} > hard_gain {self.hard_gain:.4g}"
        return (f"{self.name} {gainer} gain {gain:.4g} > max_gain {self.max_gain:.4g} and the {gainer} is longer by "
                f"z {toward:.4g} > toward_z {self.toward_z:.4g}")

    def accept(self, value) -> bool:
        gain = value[0]
        if gain != gain:
            return False
        if len(value) < 6:                                             # one signal: the gain alone
            return self.max_gain is None or gain <= self.max_gain
        side, z, longer_gain, longer_units = value[1], value[3], value[4], value[5]
        if self.length_z is not None and abs(z) > self.length_z \
                and (longer_units < 2 or longer_gain > self.length_gain):
            return False
        if self.max_gain is None or gain <= self.max_gain:
            return True
        if self.toward_z is None:
            return False
        toward = z if side == 1 else -z                                # how much longer the side that gains is
        return not (toward > self.toward_z or (self.hard_gain is not None and gain > self.hard_gain))
