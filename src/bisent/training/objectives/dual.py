"""The set-up shared by the dual-encoder objectives (:mod:`.guo2019`, :mod:`.distill`).

One language pair is one stream of :class:`PairSpec` pairs in
:class:`bisent.training.data.Batches` (full batches only: in-batch
negatives); the model is any module of :mod:`bisent.models.dual` (or one
with the same ``featurize`` / ``forward``), built from the recipe's seed;
the loss of a sub-batch is the sum of the objective's ``terms`` (each
``term(sb, x, y, x_hard, y_hard) -> (weighted scalar, log parts)``),
averaged over the pairs of the batch. Hard negatives (``objectives.hard_negatives``,
Guo et al. 2018, Yang et al. 2019) are mined here, with the current model or, for distillation
(``objectives.hard_source: teacher``), once from the teacher's rows of the sources.
"""

from __future__ import annotations

import hashlib
import math
import sys
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from ...encoders.cache import enabled as cache_enabled
from ...errors import BisentError
from ...mining.index import build_index, ivf_lists
from ...models.dual import TorchDualEncoder, build_dual, save_dual
from ...models.keys import NUM, Field
from ...progress import progress_bar
from ..data import Batches, Bitext, DualSubBatch, Monotext, PairSpec, all_text, fingerprint
from ..teacher import teacher_embeddings
from . import Setup
from .common import data_languages, tokenizer_fingerprint, tokenizer_for

#: the sections every dual objective (guo2019, distill) reads besides the model's (models/dual.py)
RECIPE_SECTIONS: dict[str, dict[str, Field]] = {
    "data": {
        "batch_size": Field(128, int, minimum=2),   # K pairs per step, split between the language pairs
        "max_pairs": Field(None, int, nullable=True, minimum=1),  # use the first N pairs of each language pair
        "mono_weight": Field(1.0, NUM, minimum=0),  # batch share of each --mono language vs one language pair
                                                    # (distill)
        "vocab_weight": Field(None, NUM, nullable=True, minimum=0),  # ... of each vocab.XX.txt stream; null:
                                                                     # mono_weight
        "words_weight": Field(None, NUM, nullable=True, minimum=0),  # ... of each words.XX.txt stream; null:
                                                                     # mono_weight
        # null: every word list gets words_weight; N: a list of W words gets words_weight * max(1, W / N), so each
        # word of a longer list is seen as often as one of an N-word list (raise batch_size so the other streams keep
        # their rows)
        "words_ref_size": Field(None, int, nullable=True, minimum=1),
        # one stream per (language pair, domain) of `bisent data general`'s files when either is set, sharing the pair's
        # batch share in proportion to weight * rows ** (1 / temperature) (weight: 1 for a domain not named; temperature
        # null: equal base shares, 1: shares as the rows, 2: as their square roots); both null: one stream per pair
        "domain_weights": Field(None, dict, nullable=True),
        "domain_temperature": Field(None, NUM, nullable=True, minimum=1),
        # {domain: share}: that domain's rows of each pair form a stream of their own (named `en-it lexicon`) with that
        # batch share against a language pair's 1, beside the pair's stream of its other rows (`bisent data lexicon`)
        "stream_domains": Field(None, dict, nullable=True),
    },
    "optim": {
        "embed_lr_mult": Field(1.0, NUM, minimum=0),  # learning-rate multiplier of hashed embedding tables
    },
    "objectives": {
        "ranking": Field(1.0, NUM, minimum=0),       # weight of the bidirectional ranking loss (Eq. 1-2)
        "scale": Field(20.0, NUM, minimum=0),        # s: logits are s * (cos - m on the diagonal)
        "margin": Field(0.3, NUM, minimum=0),        # m, additive margin (paper: 0.3)
        "hard_negatives": Field(False, bool),        # append mined hard negatives to the in-batch ones
        "hard_every": Field(1000, int, minimum=1),   # re-mine them with the current model every N steps
        # model: mined with the model being trained (every hard_every steps); teacher (distill): each source's
        # nearest other source by the teacher's rows, mined once before step 1
        "hard_source": Field("model", str, ("model", "teacher")),
        "distill": Field(0.0, NUM, minimum=0),       # weight of the teacher loss (objective: distill)
        "teacher": Field("me5-small", str),          # registered encoder or model directory
        "distill_loss": Field("mse", str, ("mse", "cosine")),
        # weight of the teacher-contrastive term (distill): each text's student vector must pick its own teacher row
        # (a translation: its source's) out of the sub-batch's, a softmax at contrast_scale over cosines
        "contrast": Field(0.0, NUM, minimum=0),
        "contrast_scale": Field(20.0, NUM, minimum=0),
        # the teacher rows of harder negatives join the term: a pair's mined hard sources (hard_negatives), and for each
        # text of a monolingual stream or word list its nearest other text by the teacher (mined once, cached)
        "contrast_hard": Field(False, bool),
        "teacher_batch": Field(64, int, minimum=1),  # sentences per teacher call (its persistent cache is used)
        "teacher_workers": Field(1, int, minimum=1),  # processes that fill the teacher's cache first (many cores)
    },
    "train": {
        "half_weights": Field(False, bool),         # store the model's weights as float16 (half the directory)
        "int8_weights": Field(False, bool),         # large tables as int8 rows + a scale each, the rest float16
    },
}


def check_recipe(recipe: dict, raw: dict, src: str) -> None:
    """Cross-key rules of the dual recipes; the ``distill`` objective weighs the teacher 1 unless told otherwise."""
    obj = recipe["objectives"]
    given = raw.get("objectives") or {}
    if recipe["objective"] == "distill":
        if "distill" not in given:
            obj["distill"] = 1.0
        if "ranking" not in given:
            obj["ranking"] = 0.0
        if obj["distill"] <= 0:
            raise BisentError(f"{src}: objectives.distill: must be > 0 for objective: distill")
    elif obj["distill"] > 0 or obj["contrast"] > 0:
        key = "distill" if obj["distill"] > 0 else "contrast"
        raise BisentError(f"{src}: objectives.{key}: the guo2019 objective has no teacher; use objective: distill")
    if obj["ranking"] <= 0 and obj["distill"] <= 0:
        raise BisentError(f"{src}: objectives: ranking and distill are both 0: nothing to train")
    if obj["contrast_hard"] and obj["contrast"] <= 0:
        raise BisentError(f"{src}: objectives.contrast_hard: needs objectives.contrast > 0 (the term it adds to)")
    for key in ("domain_weights", "stream_domains"):                   # at load, not minutes later at train start
        for d, w in (recipe["data"].get(key) or {}).items():
            if not isinstance(w, (int, float)) or isinstance(w, bool) or not math.isfinite(w) or w < 0:
                raise BisentError(f"{src}: data.{key}.{d}: {w!r} is not a number >= 0")

#: default output size of hashed students when no teacher fixes it
DEFAULT_DIM = 384
#: teacher-mined hard negatives: exact nearest rows up to this many sentences a stream, IVF above
EXACT_ROWS = 20_000
#: the search behind teacher-mined hard negatives, part of their cache key (change it when the search changes)
HARD_MINING = f"nearest other source v1: exact <= {EXACT_ROWS}, else ivf 4 sqrt(n) lists, nprobe 16, k 8"


def pair_specs(bitexts: list[Bitext], recipe: dict) -> list[PairSpec]:
    """One stream per language pair (files of the same pair merged, first file's orientation kept).

    With ``data.domain_weights`` (``{domain: weight}``, 1 for a domain not named) or
    ``data.domain_temperature`` T, one stream per (pair, domain) instead, named ``en-de dict``: the pair
    keeps its batch share, split between its domains in proportion to ``weight * rows ** (1 / T)`` (T null:
    equal base shares; multilingual MT's temperature sampling, here within a pair). Why: in a pair's single
    stream a domain's share is its share of the rows, so taking every UI and help pair shrank the
    dictionary's (en-fr's from a quarter to a tenth) while en-de's stream is 88 % dictionary.
    Rows without a domain (2-column files) form the domain ``""``. A domain named in ``data.stream_domains``
    (``{domain: share}``) is taken out of its pair first: its rows form a stream of their own, ``en-it lexicon``,
    with that share against a pair's 1 (share 0: left out), so a teacher-mined word lexicon (``bisent data
    lexicon``) gets its rows in every batch without shrinking the pair's other domains."""
    temperature = recipe["data"].get("domain_temperature")
    weights = recipe["data"].get("domain_weights")
    if temperature is not None and weights is None:
        weights = {}
    for d, w in (weights or {}).items():
        if not isinstance(w, (int, float)) or isinstance(w, bool) or w < 0:
            raise BisentError(f"data.domain_weights.{d}: {w!r} is not a number >= 0")
    by_pair: dict[tuple[str, str], list[tuple[str, str]]] = {}
    doms: dict[tuple[str, str], list[str]] = {}
    orient: dict[frozenset, tuple[str, str]] = {}
    for b in bitexts:
        if b.src_lang == b.tgt_lang:
            raise BisentError(f"{b.source}: both columns are {b.src_lang}")
        key = orient.setdefault(frozenset(b.langs), b.langs)
        by_pair.setdefault(key, []).extend(p if b.langs == key else (p[1], p[0]) for p in b.pairs)
        doms.setdefault(key, []).extend(b.domains or [""] * len(b.pairs))
    cap = recipe["data"].get("max_pairs")
    own = recipe["data"].get("stream_domains") or {}
    specs = []
    for (a, b), pairs in by_pair.items():
        pairs = pairs[:cap] if cap else pairs
        if own:                                                          # data.stream_domains: streams of their own
            rest, kept_doms = [], []
            sep: dict[str, list[tuple[str, str]]] = {}
            for p, d in zip(pairs, doms[(a, b)]):
                if d in own:
                    sep.setdefault(d, []).append(p)
                else:
                    rest.append(p)
                    kept_doms.append(d)
            for d, g in sep.items():
                if own[d] > 0 and len(g) >= 2:
                    specs.append(PairSpec(f"{a}-{b} {d}", a, b, [p[0] for p in g], [p[1] for p in g], float(own[d])))
                elif own[d] > 0:
                    rest.extend(g)
                    kept_doms.extend([d] * len(g))
            if not rest:
                continue
            pairs, doms[(a, b)] = rest, kept_doms
        if len(pairs) < 2:
            raise BisentError(f"{a}-{b}: {len(pairs)} training pair(s); in-batch ranking needs at least 2")
        if weights is None:
            specs.append(PairSpec(f"{a}-{b}", a, b, [p[0] for p in pairs], [p[1] for p in pairs]))
            continue
        groups: dict[str, list[tuple[str, str]]] = {}
        for p, d in zip(pairs, doms[(a, b)]):
            groups.setdefault(d, []).append(p)
        for d in sorted(groups, key=lambda d: len(groups[d])):           # too few for in-batch ranking: into the
            if len(groups[d]) < 2 and len(groups) > 1:                   # largest domain (sizes as they are now)
                lone = groups.pop(d)
                max(groups.values(), key=len).extend(lone)
        groups = {d: g for d, g in groups.items() if weights.get(d, 1.0) > 0}        # weight 0: left out on purpose
        if not groups:
            raise BisentError(f"{a}-{b}: data.domain_weights gives every domain of this pair weight 0")
        share = {d: weights.get(d, 1.0) * (1.0 if temperature is None else len(g) ** (1.0 / temperature))
                 for d, g in groups.items()}
        total = sum(share.values())
        for d, g in groups.items():
            specs.append(PairSpec(f"{a}-{b} {d}".rstrip(), a, b, [p[0] for p in g], [p[1] for p in g],
                                  share[d] / total))
    return specs


def mono_specs(monos: list[Monotext], recipe: dict) -> list[PairSpec]:
    """One stream per language of monolingual text (files merged; ``tgt is src``), batch share ``data.mono_weight``;
    word lists (``kind == "words"``) and a corpus's words (``"vocab"``) make one more stream per language each,
    named ``words LANG`` / ``vocab LANG``, with the same share (``data.words_weight`` / ``data.vocab_weight``, if set).
    With ``data.words_ref_size`` N a word list of W > N words gets W / N times its share: its words are then seen
    as often in a run as those of an N-word list (at a fixed share, 100,000 words were each seen 2.5 times in a
    run of the general student, 30,000 about 8)."""
    by_lang: dict[tuple[str, str], list[str]] = {}
    for m in monos:
        by_lang.setdefault((m.kind, m.lang), []).extend(m.sentences)
    data = recipe["data"]
    w = float(data.get("mono_weight", 1.0))
    share = {kind: float(data[f"{kind}_weight"]) for kind in ("words", "vocab")
             if data.get(f"{kind}_weight") is not None}
    ref = data.get("words_ref_size")

    def weight(kind: str, sents: list[str]) -> float:
        base = share.get(kind, w)
        return base * max(1.0, len(sents) / ref) if kind == "words" and ref else base

    return [PairSpec(f"{kind} {lang}", lang, lang, sents, sents, weight(kind, sents))
            for (kind, lang), sents in by_lang.items()]


def _text_ids(texts: list[str]) -> np.ndarray:
    """``(n,)`` int64: equal ids for identical texts."""
    index: dict[str, int] = {}
    return np.fromiter((index.setdefault(t, len(index)) for t in texts), dtype=np.int64, count=len(texts))


def hard_cache_file(teachers: list[torch.Tensor], specs: list[PairSpec]) -> Path:
    """Where teacher-mined hard negatives of these streams are cached: the embedding cache's folder,
    ``hard-negatives/<key>.safetensors``, the key a hash of the search (:data:`HARD_MINING`), each stream's
    source texts and the teacher's ``(N, D)`` rows of them (the rows, not the teacher's name: a row that
    differs, even in its last bit, is another input)."""
    from ...encoders.cache import HARD_NEGATIVES, cache_folder

    h = hashlib.blake2b(HARD_MINING.encode(), digest_size=20)
    for t, spec in zip(teachers, specs):
        rows = np.ascontiguousarray(t.numpy(), dtype=np.float32)
        h.update(np.asarray(rows.shape, dtype=np.int64).tobytes())
        h.update(memoryview(rows).cast("B"))
        for text in spec.src:
            h.update(text.encode("utf-8", "surrogatepass") + b"\0")
    return cache_folder() / HARD_NEGATIVES / f"{h.hexdigest()}.safetensors"


def _read_hard_cache(path: Path, sizes: list[int]) -> list[np.ndarray] | None:
    """The cached ``(N,)`` index arrays, one per stream, or None (missing, unreadable or not these streams)."""
    from safetensors.numpy import load_file

    try:
        tensors = load_file(str(path))
    except FileNotFoundError:
        return None
    except Exception as e:                                                   # a damaged file: mine again
        print(f"warning: hard-negative cache {path.name} unreadable ({type(e).__name__}); mining again",
              file=sys.stderr)
        return None
    arrays = [tensors.get(f"hard.{i}") for i in range(len(sizes))]
    if len(tensors) != len(sizes) or any(a is None or a.shape != (n,) or (n and (a.min() < 0 or a.max() >= n))
                                         for a, n in zip(arrays, sizes)):
        return None
    return [a.astype(np.int64) for a in arrays]


def _write_hard_cache(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write the index arrays to ``path`` (temp file, then renamed); a failure is a warning, not an error."""
    from safetensors.numpy import save

    from ...io import atomic_write

    try:
        with atomic_write(path, "wb") as f:
            f.write(save({k: np.ascontiguousarray(v, dtype=np.int64) for k, v in arrays.items()}))
    except OSError as e:
        print(f"warning: hard-negative cache not written ({path}: {e.strerror or e})", file=sys.stderr)


class HardNegatives:
    """Per language pair, each source's most similar wrong target and each target's most similar wrong source.

    Mined with the current model every ``every`` steps (none before the first
    mining), or once before training from the teacher's rows (:meth:`mine_teacher`); the index arrays
    go into checkpoints, so a resumed run uses the same ones.
    """

    def __init__(self, specs: list[PairSpec], every: int, block: int = 1024):
        self.every, self.block = every, block
        self.src_ids = [_text_ids(s.src) for s in specs]
        self.tgt_ids = [_text_ids(s.tgt) for s in specs]
        self.hard_tgt = [np.full(len(s.src), -1, dtype=np.int64) for s in specs]   # (N,) per stream
        self.hard_src = [np.full(len(s.src), -1, dtype=np.int64) for s in specs]

    @property
    def mined(self) -> bool:
        return bool(self.hard_tgt) and bool((self.hard_tgt[0] >= 0).any())

    def _best_wrong(self, a: np.ndarray, b: np.ndarray, b_ids: np.ndarray,
                    a_ids: np.ndarray | None = None) -> np.ndarray:
        """For each row i of ``a`` (M, D) the row j of ``b`` (N, D) with the highest score and ``b_ids[j] != a_ids[i]``
        (``a_ids`` None: ``a`` is row-aligned with ``b``, ``a_ids = b_ids``)."""
        a_ids = b_ids if a_ids is None else a_ids
        out = np.empty(len(a), dtype=np.int64)
        for s in range(0, len(a), self.block):
            sim = a[s:s + self.block] @ b.T                                          # (blk, N)
            sim[a_ids[s:s + self.block, None] == b_ids[None, :]] = -np.inf           # the true partner and its copies
            out[s:s + self.block] = sim.argmax(axis=1)
        return out

    def _nearest_other(self, t: np.ndarray, ids: np.ndarray, k: int = 8, nprobe: int = 16) -> np.ndarray:
        """For each row of ``t`` (N, D) its most similar row with another id: exact up to ``EXACT_ROWS`` rows,
        above that an IVF index (4 sqrt(N) lists, ``nprobe`` probed) instead of the exact N^2 D (the general
        collection's 13 pairs, 254k en-de sources among them: 3.3 minutes on one core beside other work);
        rows whose ``k`` approximate neighbours all share their id are searched exactly."""
        if len(t) <= EXACT_ROWS:
            return self._best_wrong(t, t, ids)
        index = build_index(t, "ivf", nlist=ivf_lists(len(t)))
        index.nprobe = min(index.nlist, nprobe)
        _, nn = index.search(t, k)                                                   # (N, k), -1 where fewer
        ok = (nn >= 0) & (ids[np.maximum(nn, 0)] != ids[:, None])
        first = ok.argmax(axis=1)
        out = nn[np.arange(len(t)), first]
        lost = np.flatnonzero(~ok.any(axis=1))
        if len(lost):
            out[lost] = self._best_wrong(t[lost], t, ids, ids[lost])
        return out

    def mine(self, encoder, specs: list[PairSpec]) -> dict[str, float]:
        """Embed every training sentence with ``encoder`` and refresh the negatives; returns log fields."""
        report = {}
        for i, spec in enumerate(specs):
            xs = encoder.encode(spec.src, spec.src_lang, cache=False, progress=False)   # (N, D)
            ys = encoder.encode(spec.tgt, spec.tgt_lang, cache=False, progress=False)   # (N, D)
            self.hard_tgt[i] = self._best_wrong(xs, ys, self.tgt_ids[i])
            self.hard_src[i] = self._best_wrong(ys, xs, self.src_ids[i])
            n = len(xs)
            report[f"hard_cos_{spec.name}"] = float(np.mean(np.sum(xs * ys[self.hard_tgt[i]], axis=1)))
            report[f"gold_cos_{spec.name}"] = float(np.mean(np.sum(xs * ys, axis=1)))
            report[f"train_err_{spec.name}"] = float(np.mean(
                np.sum(xs * ys[self.hard_tgt[i]], axis=1) > np.sum(xs * ys, axis=1))) if n else 0.0
        return report

    def mine_teacher(self, teachers: list[torch.Tensor], specs: list[PairSpec], cache: Path | None = None
                     ) -> dict[str, float]:
        """Each source's nearest other source by the teacher, ``(N, D)`` unit rows per stream: that pair's
        source and target are the hard negatives of both sides. Meant for near paraphrases such as 'Signature
        made' / 'make a signature', which the teacher tells apart and a bag of n-grams hardly does. Mined once
        (:meth:`_nearest_other`); returns log fields (mean teacher cosine of the negatives).

        ``cache``: a file (:func:`hard_cache_file`) read instead of mining when it holds every stream, and
        written after mining (temp file, then renamed): the seeds of one collection share the minutes of
        mining (``bisent train --prepare-only`` fills it once, before ``make -j2 student-general``'s seeds)."""
        found, report = self._teacher_nearest(teachers, specs, self.src_ids, cache, "hard negatives (teacher)", "pair")
        for i, j in enumerate(found):
            self.hard_src[i], self.hard_tgt[i] = j, j.copy()
        return report

    def mine_teacher_mono(self, teachers: list[torch.Tensor], specs: list[PairSpec]) -> tuple[list[np.ndarray], dict]:
        """Each text of a monolingual stream (a word list: each word) its nearest other text by the teacher, for
        the teacher-contrastive term (``objectives.contrast_hard``): ``(N,)`` indices per stream, cached as
        :meth:`mine_teacher`'s are (the key is the streams' texts and rows), and log fields."""
        cache = hard_cache_file(teachers, specs) if cache_enabled() else None
        return self._teacher_nearest(teachers, specs, [_text_ids(s.src) for s in specs], cache,
                                     "hard negatives (teacher, monolingual)", "stream")

    def _teacher_nearest(self, teachers: list[torch.Tensor], specs: list[PairSpec], ids: list[np.ndarray],
                         cache: Path | None, desc: str, unit: str) -> tuple[list[np.ndarray], dict]:
        """Per stream, each source's nearest row with another text id by the teacher's ``(N, D)`` rows
        (:meth:`_nearest_other`), read from ``cache`` when it holds every stream, else mined and written there;
        and log fields (mean teacher cosine of the neighbours, whether they came from the cache)."""
        found = _read_hard_cache(cache, [len(s.src) for s in specs]) if cache is not None else None
        out, report = [], {}
        for i, spec in enumerate(progress_bar(False if found is not None else None, specs, desc=desc, unit=unit)):
            t = np.ascontiguousarray(teachers[i].numpy(), dtype=np.float32)          # (N, D)
            out.append(found[i] if found is not None else self._nearest_other(t, ids[i]))
            report[f"hard_cos_{spec.name}"] = float(np.mean(np.sum(t * t[out[-1]], axis=1)))
        if cache is not None and found is None:
            _write_hard_cache(cache, {f"hard.{i}": j for i, j in enumerate(out)})
        if cache is not None:
            report["from_cache"] = found is not None
        return out, report

    def state(self) -> dict[str, torch.Tensor]:
        out = {}
        for i, (t, s) in enumerate(zip(self.hard_tgt, self.hard_src)):
            out[f"hard_tgt.{i}"], out[f"hard_src.{i}"] = torch.from_numpy(t), torch.from_numpy(s)
        return out

    def load_state(self, tensors: dict[str, torch.Tensor]) -> None:
        for i in range(len(self.hard_tgt)):
            if f"hard_tgt.{i}" in tensors:
                self.hard_tgt[i] = tensors[f"hard_tgt.{i}"].numpy().copy()
                self.hard_src[i] = tensors[f"hard_src.{i}"].numpy().copy()



# --- forward and loss ---------------------------------------------------------------------------------

def encode_batch(model, batch: list[DualSubBatch]) -> list[tuple[torch.Tensor, ...]]:
    """Raw model outputs ``(x (K, D), y (K, D), x_hard (H, D), y_hard (H, D))`` of every sub-batch of a step
    (monolingual: ``y`` is ``x``, hard negatives only with ``objectives.contrast_hard``), in one pass where the
    model has ``forward_many`` (the DAN: one lookup of its hashed table a step instead of one per stream and side)."""
    inputs = [f for sb in batch for f in ((sb.src,) if sb.mono else (sb.src, sb.tgt))]
    many = getattr(model, "forward_many", None)
    outs = iter(many(inputs) if many is not None else [model(**f) for f in inputs])
    encoded = []
    for sb in batch:
        xs = next(outs)                                                  # (K + H, D)
        if sb.mono:                                                      # K texts (+ H hard ones: contrast_hard)
            encoded.append((xs[: sb.k], xs[: sb.k], xs[sb.k:], xs[sb.k:]))
            continue
        ys = next(outs)                                                  # (K + H, D)
        encoded.append((xs[: sb.k], ys[: sb.k], xs[sb.k:], ys[sb.k:]))
    return encoded


def make_loss(terms: list[Callable]) -> Callable:
    """The loss over a batch: the sum of ``terms`` per sub-batch, averaged over the batch's pairs."""

    def loss(model, batch: list[DualSubBatch]) -> tuple[torch.Tensor, dict[str, float]]:
        total, n, parts = 0.0, 0, {}
        for sb, (x, y, x_hard, y_hard) in zip(batch, encode_batch(model, batch)):
            term = 0.0
            for t in terms:
                value, p = t(sb, x, y, x_hard, y_hard)
                term = term + value
                parts.update(p)
            total = total + term * sb.k
            n += sb.k
        return total / n, parts

    return loss


# --- set-up -------------------------------------------------------------------------------------------

def build_model(recipe: dict, bitexts: list[Bitext], specs: list[PairSpec], out_dir: Path, state: dict | None,
                info: dict, dim: int | None):
    """The dual model from the recipe's seed (+ its tokenizer for ``bilstm``, frozen base features for ``adapter``)."""
    arch, oc = recipe["architecture"], recipe["objectives"]
    hp = dict(recipe["model"])
    if dim is not None:
        if hp.get("dim") not in (None, dim):
            raise BisentError(f"model.dim {hp['dim']} differs from teacher {oc['teacher']}'s {dim}: leave it null")
        hp["dim"] = dim
    tok = None
    if arch == "bilstm":
        tok = tokenizer_for(recipe, all_text(bitexts, []), out_dir, state)
        hp = {**hp, "vocab_size": tok.vocab_size, "max_len": recipe["data"]["max_len"]}
        info["vocab_size"] = tok.vocab_size
    elif arch == "adapter":
        from ...encoders import get_encoder

        base = get_encoder(hp["base"])
        hp["base_dim"] = base.dim
        info["base"] = [teacher_embeddings(base, texts, lang, batch_size=oc["teacher_batch"])[1]   # cached features
                        for spec in specs for texts, lang in ((spec.src, spec.src_lang), (spec.tgt, spec.tgt_lang))]
    elif hp.get("dim") is None:
        hp["dim"] = DEFAULT_DIM
    torch.manual_seed(recipe["seed"])
    model = build_dual(arch, hp)
    if tok is not None:
        model.tokenizer = tok
    return model, tok


def setup(recipe: dict, bitexts: list[Bitext], monos: list[Monotext], dev: list[Bitext], out_dir: Path, *,
          state: dict | None, device: torch.device, terms: list[Callable],
          teachers: list[torch.Tensor] | None = None, mono_teachers: list[torch.Tensor] | None = None,
          info: dict | None = None) -> Setup:
    """Everything a dual-encoder run needs (:class:`bisent.training.objectives.Setup`).

    ``terms``: the objective's loss terms; ``teachers``: per stream, ``(N, D_teacher)``
    rows of the sources that each sub-batch carries (distillation), which also fix the model's ``dim``;
    ``mono_teachers``: per language of ``monos`` (:func:`mono_specs`), ``(N, D_teacher)`` rows of its
    sentences, without which monolingual text is refused (nothing to learn from it).
    """
    seed, oc = recipe["seed"], recipe["objectives"]
    if monos and mono_teachers is None:
        raise BisentError(f"{monos[0].source}: {recipe['objective']} trains on parallel data only; drop --mono")
    monos_ = mono_specs(monos, recipe) if monos else []
    specs = pair_specs(bitexts, recipe) if bitexts or not monos_ else []
    langs = data_languages(bitexts, recipe) if specs else list(dict.fromkeys(m.src_lang for m in monos_))
    info = {"languages": langs, **(info or {})}
    teachers = (teachers or [None] * len(specs)) + list(mono_teachers or [])
    model, tok = build_model(recipe, bitexts, specs, out_dir, state, info,
                             None if teachers[0] is None else teachers[0].shape[1])
    model = model.to(device)
    encoder = TorchDualEncoder(model, name=f"{out_dir} (training)", content_hash="training")
    hard = HardNegatives(specs, oc["hard_every"]) if oc["hard_negatives"] and specs else None
    from_teacher = hard is not None and oc["hard_source"] == "teacher"
    if from_teacher:
        if teachers[0] is None:
            raise BisentError(f"objectives.hard_source: teacher needs a teacher; objective {recipe['objective']} "
                              "has none (use hard_source: model)")
        if state is None:                                                    # a resumed run loads the checkpoint's
            cache = hard_cache_file(teachers[:len(specs)], specs) if cache_enabled() else None
            info["hard_negatives"] = hard.mine_teacher(teachers[:len(specs)], specs, cache)
    contrast_hard = oc["contrast_hard"] and teachers[0] is not None          # needs contrast > 0 (recipe check)
    mono_hard = None
    if contrast_hard and monos_:                                             # mined once, cached, not checkpointed
        mono_hard, info["mono_hard_negatives"] = HardNegatives([], 1).mine_teacher_mono(teachers[len(specs):], monos_)
    streams_ = specs + monos_                                                # bitext streams, then one per language
    text_ids = [(_text_ids(s.src), _text_ids(s.tgt)) for s in specs] + [(_text_ids(s.src),) * 2 for s in monos_]

    def collate(i: int, idx: np.ndarray) -> DualSubBatch:
        if i >= len(specs):                                                  # monolingual: K texts, featurized once
            spec = streams_[i]
            rows = idx if mono_hard is None else np.concatenate([idx, mono_hard[i - len(specs)][idx]])
            src = model.featurize([spec.src[j] for j in rows], spec.src_lang)             # K (+ H) texts
            ids = torch.from_numpy(text_ids[i][0][rows])
            hard_rows = None if mono_hard is None else teachers[i][torch.from_numpy(rows[len(idx):])]
            return DualSubBatch(spec.name, spec.src_lang, spec.src_lang, torch.from_numpy(idx), len(idx), src, src,
                                ids, ids, teachers[i][torch.from_numpy(idx)], mono=True, teacher_hard=hard_rows)
        spec, rows = specs[i], [idx]
        if hard is not None and hard.mined:
            rows.append(hard.hard_src[i][idx])                               # H = K mined sources / targets
        src_rows = np.concatenate(rows)
        tgt_rows = np.concatenate([idx, hard.hard_tgt[i][idx]]) if len(rows) > 1 else idx
        src = model.featurize([spec.src[j] for j in src_rows], spec.src_lang)
        tgt = model.featurize([spec.tgt[j] for j in tgt_rows], spec.tgt_lang)
        hard_rows = (teachers[i][torch.from_numpy(rows[1])] if contrast_hard and len(rows) > 1 else None)
        return DualSubBatch(spec.name, spec.src_lang, spec.tgt_lang, torch.from_numpy(idx), len(idx), src, tgt,
                            torch.from_numpy(text_ids[i][0][src_rows]), torch.from_numpy(text_ids[i][1][tgt_rows]),
                            None if teachers[i] is None else teachers[i][torch.from_numpy(idx)], teacher_hard=hard_rows)

    streams = [(s.name, np.array([len(a) * 10_000 + len(b) for a, b in zip(s.src, s.tgt)]), s.weight)
               for s in streams_]
    batches = Batches(streams, collate, batch_size=recipe["data"]["batch_size"], seed=seed,
                      bucket_batches=recipe["data"]["bucket_batches"], full_only=True)

    def on_step(step: int) -> dict | None:
        if hard is None or from_teacher or step % hard.every:
            return None
        return {"event": "hard negatives mined", **hard.mine(encoder, specs)}

    def save(at_dir: Path, step: int) -> None:
        save_dual(model, at_dir, extra={"training": {"step": step, "languages": langs, "recipe": recipe}},
                  half=bool(recipe["train"].get("half_weights")), int8=bool(recipe["train"].get("int8_weights")))

    return Setup(model=model, batches=batches, loss=make_loss(terms), encoder=encoder, save_model=save,
                 data_hash=fingerprint(streams_), dev=list(dev), info=info, fingerprints=tokenizer_fingerprint(tok),
                 tokenizer=tok, on_step=on_step if hard is not None else None,
                 state=hard.state if hard is not None else None,
                 load_state=hard.load_state if hard is not None else None)
