"""Training data: parallel TSV and monolingual text in, length-bucketed mixed batches out.

- :class:`Bitext` / :class:`Monotext` hold sentences with their language codes
  (read from files by :func:`read_bitext` / :func:`read_monotext`, or built in
  memory, e.g. from ``bisent.datasets``).
- An objective (``training/objectives/``) turns them into :class:`StreamSpec` s:
  one stream per (objective, input language, output language), each with a
  weight. Kim et al.: translation src->tgt and autoencoding tgt->tgt, 1:1.
- :class:`Batches` (the one batch iterator, seq2seq and dual objectives alike)
  draws every step a batch holding each stream's share of ``batch_size``
  examples. Within a stream (:class:`BucketSampler`), an epoch is a seeded
  shuffle cut into chunks of ``bucket_batches`` batches, each chunk sorted by
  length (little padding) and the batches shuffled again. Everything is a
  function of ``(seed, stream, epoch)``, so the iterator position
  ``{epoch, pos}`` per stream is all a checkpoint needs to continue with the
  very same batches. :func:`token_batches` builds it for tokenised streams.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..errors import BisentError, where
from ..io import line_problem, read_lines
from ..models.rnn import pad
from ..models.tokenizer import BOS, EOS, PAD, UNK, Tokenizer


@dataclass
class Bitext:
    """Sentence pairs ``(src, tgt)`` in languages ``src_lang`` -> ``tgt_lang``."""

    src_lang: str
    tgt_lang: str
    pairs: list[tuple[str, str]]
    source: str = "<memory>"
    #: per pair, the domain of a ``domain:source<TAB>id<TAB>src<TAB>tgt`` line (``bisent data general``); else None
    domains: list[str] | None = None

    @property
    def langs(self) -> tuple[str, str]:
        return self.src_lang, self.tgt_lang


@dataclass
class Monotext:
    """Sentences in one language; ``kind`` ``"words"`` for a word list (``words.XX.txt``) and ``"vocab"`` for a
    corpus's words (``vocab.XX.txt``), each a stream of its own."""

    lang: str
    sentences: list[str]
    source: str = "<memory>"
    kind: str = "mono"
    empty_lines: int = 0      # lines of the file left out because they were empty


_PAIR_IN_NAME = re.compile(r"(?:^|[._])([a-z]{2,3}(?:_[A-Za-z]{2,4})?)-([a-z]{2,3}(?:_[A-Za-z]{2,4})?)(?:[._]|$)")
_LANG_IN_NAME = re.compile(r"[._]([a-z]{2,3}(?:_[A-Za-z]{2,4})?)(?:\.txt)?(?:\.gz|\.xz)?$")


def split_spec(spec: str) -> tuple[str | None, str]:
    """``"en-de=path.tsv"`` -> ``("en-de", "path.tsv")``; ``"path.tsv"`` -> ``(None, "path.tsv")``."""
    head, sep, tail = spec.partition("=")
    if sep and re.fullmatch(r"[A-Za-z_]{2,8}(-[A-Za-z_]{2,8})?", head):
        return head, tail
    return None, spec


def pair_from_name(path) -> tuple[str, str] | None:
    """Languages from a file name like ``train.en-de.tsv``, else from its folder (``en-de/train.tsv``,
    as ``bisent data libreoffice -o en-de`` writes it); None if neither names them."""
    for name in (Path(path).name, Path(path).parent.name):
        m = _PAIR_IN_NAME.search(name)
        if m:
            return m.group(1), m.group(2)
    return None


def lang_from_name(path) -> str | None:
    """Language from a file name like ``news.de.txt`` or ``mono.de``; None if it names none."""
    m = _LANG_IN_NAME.search(Path(path).name)
    return m.group(1) if m and m.group(1) not in ("txt", "tsv", "gz", "xz", "tok") else None


def read_bitext(path, src_lang: str, tgt_lang: str) -> Bitext:
    """Read ``src<TAB>tgt`` lines, or the ``doc<TAB>id<TAB>src<TAB>tgt`` lines that ``bisent data
    libreoffice`` writes (told apart by the first line), or TMX, XLIFF, JSONL, Parquet (by suffix), through
    :func:`bisent.io.bitext.iter_units`; any unusable line or unit is a one-line error, and so is an empty side of
    a TSV line."""
    from ..io.bitext import column_text, format_of, iter_units, open_bitext, tsv_layout

    fmt = format_of([path])
    columns = tsv_layout(path) if fmt == "tsv" else None
    bt = open_bitext([path], fmt=fmt, columns=columns, src_lang=src_lang, tgt_lang=tgt_lang)
    pairs, domains = [], []
    for u in iter_units(bt, on_bad="error"):
        if columns is not None:
            head, colon, _ = column_text(bt, u, 0).partition(":")
            domains.append(head if colon else "")
        if fmt == "tsv":
            for lang, text in ((src_lang, u.src), (tgt_lang, u.tgt)):
                problem = line_problem(text.encode("utf-8"))[1]
                if problem:
                    raise BisentError(f"{where(path, u.n)}: {lang} column: {problem}")
        pairs.append((u.src, u.tgt))
    return Bitext(src_lang, tgt_lang, pairs, str(path), domains if any(domains) else None)


def read_monotext(path, lang: str) -> Monotext:
    """Read one sentence per line (empty lines skipped and counted, other bad lines are errors)."""
    sents, empty = [], 0
    for ln in read_lines(path):                      # a line with a problem here is an empty one
        if ln.problem is None:
            sents.append(ln.text)
        else:
            empty += 1
    if not sents:
        raise BisentError(f"{path}: no sentences")
    return Monotext(lang, sents, str(path), empty_lines=empty)


def resolve_bitext(spec: str, default_langs: list[str] | None = None) -> Bitext:
    """Read ``[SRC-TGT=]PATH``; languages from the spec, else the file name, else ``default_langs``."""
    langs, path = split_spec(spec)
    if langs is not None:
        if "-" not in langs:
            raise BisentError(f"{spec}: expected SRC-TGT=PATH, e.g. en-de=train.tsv")
        pair = tuple(langs.split("-", 1))
    else:
        pair = pair_from_name(path) or (tuple(default_langs) if default_langs and len(default_langs) == 2 else None)
    if pair is None:
        raise BisentError(f"{path}: cannot tell its languages: write en-de={path}, name it like train.en-de.tsv, "
                          "or set 'languages: [en, de]' in the recipe")
    _regular(path)
    return read_bitext(path, pair[0], pair[1])


def _regular(path) -> None:
    """A one-line error unless ``path`` is a regular file: training reads its inputs more than once, and a
    device such as ``/dev/zero`` never ends."""
    import os
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError:
        return                                       # missing: the reader says so
    if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        raise BisentError(f"{path}: not a regular file (a device, pipe or socket); copy it into a file first")


def resolve_monotext(spec: str) -> Monotext:
    """Read ``[LANG=]PATH``; the language from the spec, else from the file name (``mono.de.txt``)."""
    lang, path = split_spec(spec)
    lang = lang or lang_from_name(path)
    if lang is None:
        raise BisentError(f"{path}: cannot tell its language: write de={path} or name it like mono.de.txt")
    _regular(path)
    mono = read_monotext(path, lang)
    kind = Path(path).name.split(".")[0]
    if kind in ("words", "vocab"):                  # a word list of 'bisent data general' / 'bisent data vocab'
        mono.kind = kind
    return mono


@dataclass
class StreamSpec:
    """One stream of (input, output) sentence pairs for one objective; ``weight`` is its batch share."""

    name: str                 # e.g. "translation en-de", "autoencoding de"
    objective: str            # "translation" / "autoencoding"
    enc_lang: str             # language of the input (selects the encoder in Kim et al.)
    dec_lang: str             # language of the output (the decoder's language embedding in Artetxe & Schwenk)
    src: list[str]
    tgt: list[str]
    weight: float = 1.0


@dataclass
class SubBatch:
    """One stream's part of a batch, padded with ``PAD`` (0)."""

    name: str
    objective: str
    enc_lang: str
    dec_lang: str
    src: torch.Tensor         # (B, S) int64 input ids
    src_len: torch.Tensor     # (B,) int64, >= 1
    tgt_in: torch.Tensor      # (B, T+1) int64: <s> y_1 .. y_T
    tgt_out: torch.Tensor     # (B, T+1) int64: y_1 .. y_T </s>

    def to(self, device) -> "SubBatch":
        return SubBatch(self.name, self.objective, self.enc_lang, self.dec_lang, self.src.to(device),
                        self.src_len, self.tgt_in.to(device), self.tgt_out.to(device))

    @property
    def n_tokens(self) -> int:
        return int((self.tgt_out != PAD).sum())


def make_subbatch(spec: StreamSpec, src: list[list[int]], tgt: list[list[int]]) -> SubBatch:
    src_t, src_len = pad(src)                              # (B, S), (B,)
    tgt_in, _ = pad([[BOS] + t for t in tgt])              # (B, T+1)
    tgt_out, _ = pad([t + [EOS] for t in tgt])             # (B, T+1)
    return SubBatch(spec.name, spec.objective, spec.enc_lang, spec.dec_lang, src_t, src_len, tgt_in, tgt_out)


def shares(weights: list[float], total: int) -> list[int]:
    """Split ``total`` sentences by ``weights`` (largest remainder); every stream gets at least one."""
    w = np.asarray(weights, dtype=np.float64)
    raw = w / w.sum() * max(total, len(w))
    n = np.maximum(np.floor(raw).astype(int), 1)
    for i in np.argsort(-(raw - np.floor(raw)), kind="stable"):
        if n.sum() >= max(total, len(w)):
            break
        n[i] += 1
    return n.tolist()


class BucketSampler:
    """Seeded, length-bucketed batches of ``n`` example indices over one stream of examples.

    An epoch is a seeded shuffle cut into chunks of ``bucket_batches`` batches,
    each chunk sorted by ``keys`` (a length; little padding) and the batches
    shuffled again: a pure function of ``(seed, index, epoch)``, so the
    position ``{epoch, pos}`` is all a checkpoint needs to continue with the
    very same batches. ``full_only`` drops the last, short batch of an epoch
    unless it is the only one (in-batch negatives want full batches).
    """

    def __init__(self, name: str, keys: np.ndarray, n: int, *, seed: int, index: int, bucket_batches: int,
                 full_only: bool = False):
        self.name, self.keys, self.n = name, np.asarray(keys), n
        self.seed, self.index, self.bucket_batches, self.full_only = seed, index, bucket_batches, full_only
        self.epoch, self.pos = 0, 0
        self._order: list[np.ndarray] | None = None

    def epoch_batches(self, epoch: int) -> list[np.ndarray]:
        rng = np.random.default_rng([self.seed, self.index, epoch])
        perm = rng.permutation(len(self.keys))
        chunk = self.n * self.bucket_batches
        batches = []
        for c in range(0, len(perm), chunk):
            part = perm[c:c + chunk]
            part = part[np.argsort(self.keys[part], kind="stable")]
            batches += [part[b:b + self.n] for b in range(0, len(part), self.n)]
        if self.full_only:
            batches = [b for b in batches if len(b) == self.n] or batches
        return [batches[i] for i in rng.permutation(len(batches))]

    def next(self) -> np.ndarray:
        if self._order is None:
            self._order = self.epoch_batches(self.epoch)
        idx = self._order[self.pos]
        self.pos += 1
        if self.pos == len(self._order):
            self.epoch, self.pos, self._order = self.epoch + 1, 0, None
        return idx


class Batches:
    """THE batch iterator of every objective: each step one sub-batch per stream.

    ``streams`` are ``(name, length keys (N,), weight)``; each gets its share
    of ``batch_size`` (:func:`shares`) and a :class:`BucketSampler`;
    ``collate(stream index, example indices)`` turns a sampler's indices into
    the objective's sub-batch (anything with ``.to(device)``).
    """

    def __init__(self, streams: list[tuple[str, np.ndarray, float]], collate, *, batch_size: int, seed: int,
                 bucket_batches: int = 50, full_only: bool = False):
        kept = [i for i, s in enumerate(streams) if s[2] > 0]   # a stream of weight 0 is not drawn from
        if not kept:
            raise BisentError("training data: no stream with a positive weight")
        for i in kept:
            if not len(streams[i][1]):
                raise BisentError(f"stream '{streams[i][0]}': no examples")
        sizes = shares([streams[i][2] for i in kept], batch_size)
        self.samplers = [BucketSampler(streams[i][0], streams[i][1], n, seed=seed, index=i,
                                       bucket_batches=bucket_batches, full_only=full_only)
                         for i, n in zip(kept, sizes)]
        self.indices = kept                                     # collate gets the stream's index in ``streams``
        self.collate = collate

    def __iter__(self):
        return self

    def __next__(self) -> list:
        return [self.collate(i, s.next()) for i, s in zip(self.indices, self.samplers)]

    def describe(self) -> list[dict]:
        return [{"name": s.name, "examples": len(s.keys), "per_batch": s.n} for s in self.samplers]

    def state_dict(self) -> dict:
        return {"streams": [{"name": s.name, "epoch": s.epoch, "pos": s.pos} for s in self.samplers]}

    def load_state_dict(self, state: dict) -> None:
        names = [s["name"] for s in state["streams"]]
        if names != [s.name for s in self.samplers]:
            raise BisentError(f"checkpoint: data streams differ (checkpoint: {names})")
        for s, st in zip(self.samplers, state["streams"]):
            s.epoch, s.pos, s._order = int(st["epoch"]), int(st["pos"]), None


def token_batches(specs: list[StreamSpec], tok: Tokenizer, *, batch_size: int, seed: int,
                  bucket_batches: int = 50) -> Batches:
    """:class:`Batches` of the seq2seq objectives: tokenised streams, bucketed by (source, target) length."""
    specs = [s for s in specs if s.weight > 0]
    ids = []
    for spec in specs:
        src = [x or [UNK] for x in tok.encode(spec.src)]
        ids.append((src, src if spec.tgt is spec.src else [y or [UNK] for y in tok.encode(spec.tgt)]))
    streams = [(spec.name, np.array([len(a) * 10_000 + len(b) for a, b in zip(*st)], dtype=np.int64), spec.weight)
               for spec, st in zip(specs, ids)]

    def collate(i: int, idx: np.ndarray) -> SubBatch:
        src, tgt = ids[i]
        return make_subbatch(specs[i], [src[j] for j in idx], [tgt[j] for j in idx])

    return Batches(streams, collate, batch_size=batch_size, seed=seed, bucket_batches=bucket_batches)


def fingerprint(specs: list[StreamSpec]) -> str:
    """A hash of the training examples, to refuse resuming on different data."""
    h = hashlib.blake2b(digest_size=16)
    for s in specs:
        h.update(f"{s.name}\x00{s.weight}\x00{len(s.src)}\x00".encode())
        for a, b in zip(s.src, s.tgt):
            h.update(a.encode())
            h.update(b"\x00")
            h.update(b.encode())
            h.update(b"\x01")
    return h.hexdigest()


def all_text(bitexts: list[Bitext], monos: list[Monotext]) -> list[str]:
    """Every training sentence of every language (the tokenizer's training text)."""
    out = [s for b in bitexts for pair in b.pairs for s in pair]
    out += [s for m in monos for s in m.sentences]
    return out



# --- dual encoders: pairs in, in-batch ranking batches out -------------------------------------------

@dataclass
class PairSpec:
    """The pairs of one language pair for a dual encoder (``src_lang`` -> ``tgt_lang``)."""

    name: str                 # e.g. "en-de"
    src_lang: str
    tgt_lang: str
    src: list[str]
    tgt: list[str]
    weight: float = 1.0


@dataclass
class DualSubBatch:
    """One language pair's part of a dual-encoder batch: K pairs, then the mined hard negatives.

    ``src`` / ``tgt`` are the model's featurized inputs of ``K + H`` texts: the
    K sources (targets) of the pairs, followed by H hard-negative sources
    (targets); the model's output rows split at K.
    """

    name: str
    src_lang: str
    tgt_lang: str
    idx: torch.Tensor                     # (K,) int64 pair indices within the stream
    k: int                                # K
    src: dict[str, torch.Tensor]          # featurized K (+ H) source texts
    tgt: dict[str, torch.Tensor]          # featurized K (+ H) target texts
    src_text_ids: torch.Tensor            # (K + H,) int64: equal ids = identical source texts
    tgt_text_ids: torch.Tensor            # (K + H,) int64: equal ids = identical target texts
    teacher: torch.Tensor | None = None   # (K, D_teacher) teacher embedding of each source
    mono: bool = False                    # monolingual: K texts, no targets (``tgt is src``), teacher rows of them
    teacher_hard: torch.Tensor | None = None  # (H, D_teacher) teacher rows of the H hard-negative sources (mono: texts)

    def to(self, device) -> "DualSubBatch":
        mv = lambda d: {k: v.to(device) for k, v in d.items()}  # noqa: E731
        src = mv(self.src)
        return DualSubBatch(self.name, self.src_lang, self.tgt_lang, self.idx, self.k, src,
                            src if self.mono else mv(self.tgt), self.src_text_ids.to(device),
                            self.tgt_text_ids.to(device), None if self.teacher is None else self.teacher.to(device),
                            self.mono, None if self.teacher_hard is None else self.teacher_hard.to(device))
