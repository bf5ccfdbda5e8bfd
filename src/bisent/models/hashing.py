"""Hashed word and character n-gram features, vectorised in NumPy (no torch, no vocabulary).

Text is lower-cased (optional) and cut into tokens ``\\w+`` and single
punctuation marks; each token is wrapped as ``<token>`` (fastText's word
boundaries). Features, each hashed into ``buckets`` ids:

- ``word``: the whole wrapped token;
- ``bigram``: two consecutive wrapped tokens ``<a><b>`` (``word_ngrams >= 2``);
- ``char n``: every character n-gram of a wrapped token, ``n_min <= n <= n_max``;
  with ``cjk_n_min`` > 0, a token holding a Han, kana or Hangul character also gets its
  ``cjk_n_min <= n < n_min`` grams (n = 1: its characters alone, without the marks), because
  unspaced Chinese or Japanese text is one long token whose words are one or two characters;
- ``translit``: a token holding a Cyrillic letter also gets the word and character n-gram
  features of its Latin transliteration (:data:`CYRILLIC_LATIN`, as English spells Russian
  names: ``байкал`` -> ``baikal``), the same ids an English token of that spelling has. Latin
  script languages share n-grams with English in names and loanwords (Afghanistan,
  Afganistán); Russian shares none without it.

Why vectorised: a Python loop over ~300 n-grams per sentence would cap an
encoder at a few thousand sentences/s. Here every span ``[a, b)`` of the
concatenated batch is hashed at once with a polynomial prefix hash modulo
2**64 (NumPy's uint64 arithmetic wraps): with ``H[k] = sum_{j<k} c_j P^j``,
``hash(a, b) = (H[b] - H[a]) * P^-a = sum_{j=a}^{b-1} c_j P^(j-a)``, which
does not depend on where the span sits. A per-kind salt and a splitmix64
finaliser then spread it over the buckets. The hash is a pure function of the
text and the configuration, the same on every machine and in every process.

``hash_seed`` N > 0 mixes every feature's hash once more with N before it is
bucketed: the features are the same, but which of them share a bucket is not.
Students of one recipe and different seeds otherwise share every collision, so
an ensemble of them cannot average those errors out (:mod:`bisent.models.ensemble`).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace
from typing import NamedTuple

import numpy as np

from .keys import Field

#: the recipe keys of the hashed features (a ``model`` section's share; :class:`HashConfig` checks them together)
HASH_FIELDS = {
    "buckets": Field(1 << 18, int, minimum=2),      # hashed feature ids (one table for every kind of feature)
    "n_min": Field(3, int, minimum=1),              # character n-grams of each <token>, n_min <= n <= n_max
    "n_max": Field(5, int, minimum=0),
    "lowercase": Field(True, bool),
    "max_tokens": Field(128, int, minimum=1),       # tokens kept per sentence
    "cjk_n_min": Field(0, int, minimum=0),        # 0: off; else tokens with CJK characters also get n-grams from this n
    "translit": Field(False, bool),                 # Cyrillic tokens also get their Latin transliteration's features
    "hash_seed": Field(0, int, minimum=0),          # 0: as always; N: other features share a bucket (ensemble members)
}

_TOKEN = re.compile(r"\w+|[^\w\s]")
_P = np.uint64(0x100000001B3)                       # odd, so invertible modulo 2**64
_P_INV = np.uint64(pow(int(_P), -1, 2 ** 64))
_SALT_WORD, _SALT_BIGRAM, _SALT_CHAR = 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
_SALT_SEED = 0xD1B54A32D192ED03                     # hash_seed N mixes with N * this (mod 2**64)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_Q = np.uint64(0xD6E8FEB86659FD93)                  # combines two token hashes into a bigram hash
_BOW, _EOW = 0x110000, 0x110001                     # beyond Unicode: "<" and ">" around each token
_BMP_CLASSES: np.ndarray | None = None


def _class_of(ch: str) -> int:
    """0: white space, 1: word character (``\\w``), 2: anything else (a one-character token)."""
    return 1 if (ch.isalnum() or ch == "_") else 0 if ch.isspace() else 2


def _classes(cp: np.ndarray) -> np.ndarray:
    """Class of every code point (uint8), from a table of the Basic Multilingual Plane built once."""
    global _BMP_CLASSES
    if _BMP_CLASSES is None:
        _BMP_CLASSES = np.fromiter((_class_of(chr(i)) for i in range(0x10000)), dtype=np.uint8, count=0x10000)
    out = _BMP_CLASSES[np.minimum(cp, 0xFFFF)]
    astral = np.flatnonzero(cp > 0xFFFF)
    if len(astral):
        out[astral] = [_class_of(chr(int(x))) for x in cp[astral]]
    return out


#: Han (with extensions and compatibility ideographs), hiragana, katakana (with half-width forms), Hangul
_CJK_RANGES = ((0x1100, 0x11FF), (0x3040, 0x30FF), (0x3130, 0x318F), (0x31F0, 0x31FF), (0x3400, 0x4DBF),
               (0x4E00, 0x9FFF), (0xAC00, 0xD7AF), (0xF900, 0xFAFF), (0xFF66, 0xFF9F), (0x20000, 0x3134F))


def _in_ranges(cp: np.ndarray, ranges) -> np.ndarray:
    """``(C,)`` bool: the code point lies in one of ``ranges`` (inclusive ``(lo, hi)`` pairs)."""
    out = np.zeros(len(cp), dtype=bool)
    for lo, hi in ranges:
        out |= (cp >= lo) & (cp <= hi)
    return out


def _tokens_holding(hit: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """``(T,)`` bool: token ``[starts, ends)`` holds a code point where ``hit`` (C,) is true."""
    seen = np.concatenate([[0], np.cumsum(hit, dtype=np.int64)])
    return seen[ends] > seen[starts]


#: Cyrillic letters (Russian, Ukrainian, Belarusian, Bulgarian, Serbian, Macedonian) -> Latin, after BGN/PCGN
#: without diacritics; hard and soft signs drop; capitals give capitalised Latin.
_CYRILLIC_LOWER = {
    "а": "a", "б": "b", "в": "v", "г": "g", "д": "d", "е": "e", "ё": "e", "ж": "zh", "з": "z", "и": "i",
    "й": "i", "к": "k", "л": "l", "м": "m", "н": "n", "о": "o", "п": "p", "р": "r", "с": "s", "т": "t",
    "у": "u", "ф": "f", "х": "kh", "ц": "ts", "ч": "ch", "ш": "sh", "щ": "shch", "ъ": "", "ы": "y", "ь": "",
    "э": "e", "ю": "yu", "я": "ya", "і": "i", "ї": "i", "є": "ye", "ґ": "g", "ў": "u", "ђ": "dj", "ј": "j",
    "љ": "lj", "њ": "nj", "ћ": "c", "џ": "dz", "ѓ": "gj", "ќ": "kj", "ѕ": "dz"}
CYRILLIC_LATIN = str.maketrans({**_CYRILLIC_LOWER, **{k.upper(): v.capitalize() for k, v in _CYRILLIC_LOWER.items()}})
_CYRILLIC_RANGES = ((0x0400, 0x04FF),)


def _translit_tables() -> tuple[np.ndarray, np.ndarray]:
    """:data:`CYRILLIC_LATIN` as arrays over code points ``0..M-1``: Latin length ``(M,)`` (-1: not mapped)
    and Latin code points ``(M, K)``, K the longest spelling (4, "shch")."""
    size, width = max(CYRILLIC_LATIN) + 1, max(len(v) for v in CYRILLIC_LATIN.values())
    length = np.full(size, -1, dtype=np.int64)
    chars = np.zeros((size, width), dtype=np.uint32)
    for k, v in CYRILLIC_LATIN.items():
        length[k] = len(v)
        chars[k, : len(v)] = [ord(ch) for ch in v]
    return length, chars


_TL_LEN, _TL_CHARS = _translit_tables()


def _transliterate(cp: np.ndarray) -> np.ndarray:
    """``cp`` (C,) code points with every :data:`CYRILLIC_LATIN` letter replaced by its Latin spelling
    (0 to 4 code points), others kept: ``str.translate`` on arrays, ``(C',)`` uint32."""
    near = np.minimum(cp, len(_TL_LEN) - 1)
    n = np.where(cp < len(_TL_LEN), _TL_LEN[near], -1)                       # (C,) -1: kept as it is
    rows = _TL_CHARS[near]                                                  # (C, K) the Latin spellings
    kept = np.flatnonzero(n < 0)
    rows[kept, 0] = cp[kept]
    n[kept] = 1
    return rows[np.arange(rows.shape[1]) < n[:, None]]                      # row by row: (C',)


def _powers(base: np.uint64, n: int, cache: dict) -> np.ndarray:
    """``base**0 .. base**(n-1)`` modulo 2**64, grown on demand and kept."""
    have = cache.get(int(base))
    if have is None or len(have) < n:
        size = max(n, 2 * (0 if have is None else len(have)), 4096)
        p = np.full(size, base, dtype=np.uint64)
        p[0] = 1
        have = np.cumprod(p, dtype=np.uint64)       # wraps modulo 2**64
        cache[int(base)] = have
    return have[:n]


_POW_CACHE: dict[int, np.ndarray] = {}


def _mix(h: np.ndarray, salt: int) -> np.ndarray:
    """splitmix64 finaliser of ``h ^ salt`` (uint64 in, uint64 out)."""
    h = h ^ np.uint64(salt)
    h = (h ^ (h >> np.uint64(30))) * _M1
    h = (h ^ (h >> np.uint64(27))) * _M2
    return h ^ (h >> np.uint64(31))


def _bucket(h: np.ndarray, buckets: int) -> np.ndarray:
    """Map uint64 hashes onto ``[0, buckets)`` by their top 32 bits (Lemire's multiply-shift; no division)."""
    return (((h >> np.uint64(32)) * np.uint64(buckets)) >> np.uint64(32)).astype(np.int64)


class Features(NamedTuple):
    """Hashed features of a batch, grouped by row: ``ids[offsets[r]:offsets[r+1]]`` belong to row ``r``.

    A row is a sentence (:meth:`HashFeaturizer.bags`) or a token (:meth:`HashFeaturizer.tokens`).
    """

    ids: np.ndarray        # (M,) int64 bucket ids
    offsets: np.ndarray    # (R,) int64 start of each row in ids
    counts: np.ndarray     # (R,) int64 features per row (0 for an empty row)


class _Spans(NamedTuple):
    """The tokens of a batch (see :meth:`HashFeaturizer._spans`); T tokens after the ``max_tokens`` cut."""

    prefix: np.ndarray       # (W + 1,) uint64 prefix hashes of the wrapped text
    ipw: np.ndarray          # (W + 1,) inverse powers
    starts: np.ndarray       # (T,) start of "<token>" in the wrapped text
    ends: np.ndarray         # (T,) exclusive end of "<token>"
    sent_of_tok: np.ndarray  # (T,) sentence of each token
    n_tok: np.ndarray        # (B,) tokens per sentence
    cjk: np.ndarray          # (T,) bool: the token holds a CJK character (only looked for with cjk_n_min)
    cyr: np.ndarray          # (T,) bool: the token holds a Cyrillic letter (only looked for with translit)
    cp: np.ndarray           # (C,) uint32 code points of the batch as one (lower-cased) string, newline-joined
    raw: np.ndarray          # (T, 2) each token's [start, end) in ``cp``


class HashConfigError(ValueError):
    """An invalid :class:`HashConfig` setting: ``key`` names it, ``problem`` says what is wrong with it; the
    message is ``'key' problem``."""

    def __init__(self, key: str, problem: str):
        super().__init__(f"'{key}' {problem}")
        self.key, self.problem = key, problem


@dataclass(frozen=True)
class HashConfig:
    """What the features are; stored in a model's ``config.json`` so loading hashes the same way."""

    buckets: int = 1 << 18
    n_min: int = 3
    n_max: int = 5
    word_ngrams: int = 2          # 1: words only; 2: words and bigrams
    lowercase: bool = True
    max_tokens: int = 128         # tokens kept per sentence
    cjk_n_min: int = 0            # 0: off; else the shortest character n-gram of a token holding CJK characters
    translit: bool = False        # Cyrillic tokens also get the features of their Latin transliteration
    hash_seed: int = 0            # 0: the hashes as always; N: each mixed with N before bucketing (other collisions)

    def to_dict(self) -> dict:
        return asdict(self)

    def check(self) -> None:
        """Raise :class:`HashConfigError` (a ``ValueError``) naming the first key that is not a valid setting."""
        for key, low in (("buckets", 2), ("n_min", 1), ("n_max", 0), ("word_ngrams", 0), ("max_tokens", 1),
                         ("hash_seed", 0)):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise HashConfigError(key, f"must be a whole number >= {low}, got {v!r}")
        if self.hash_seed >= 2 ** 63:
            raise HashConfigError("hash_seed", f"must be below 2**63, got {self.hash_seed}")
        if self.buckets >= 2 ** 32:
            raise HashConfigError("buckets", f"must be below 2**32, got {self.buckets}")
        if self.n_max < self.n_min - 1:
            raise HashConfigError("n_max", f"({self.n_max}) must be at least 'n_min' - 1 ({self.n_min - 1})")
        v = self.cjk_n_min
        if isinstance(v, bool) or not isinstance(v, int) or v < 0 or (v and v >= self.n_min):
            raise HashConfigError("cjk_n_min", "must be 0 (off) or a whole number from 1 to n_min - 1 "
                                  f"({self.n_min - 1}), got {v!r}")
        for key in ("lowercase", "translit"):
            if not isinstance(getattr(self, key), bool):
                raise HashConfigError(key, f"must be true or false, got {getattr(self, key)!r}")


class HashFeaturizer:
    """Sentences -> hashed feature ids (see the module docstring)."""

    def __init__(self, config: HashConfig | None = None, **kw):
        self.config = config or HashConfig(**kw)
        self.config.check()
        self._latin: HashFeaturizer | None = None          # hashes transliterations (translit)

    def _ids(self, h: np.ndarray) -> np.ndarray:
        """Bucket ids ``(n,)`` int64 of salted feature hashes ``h`` (n,) uint64, mixed with ``hash_seed`` first."""
        seed = self.config.hash_seed
        return _bucket(_mix(h, (_SALT_SEED * seed) % 2 ** 64) if seed else h, self.config.buckets)

    def tokenize(self, texts: list[str]) -> list[list[str]]:
        """Tokens per text: ``\\w+`` runs and single punctuation marks, lower-cased if configured."""
        c = self.config
        return [_TOKEN.findall(t.lower() if c.lowercase else t)[: c.max_tokens] for t in texts]

    def _spans(self, texts: list[str]) -> _Spans:
        """Find every token of the batch with array operations; return prefix hashes of the wrapped text
        and per token (start, end) in it, its sentence, and the tokens per sentence (:class:`_Spans`).

        The batch is one string (sentences joined by newlines); each code point
        is classed as word (``\\w``), space (``\\s``) or other (a token of its
        own), exactly as the regex ``\\w+|[^\\w\\s]`` would; then two marker
        code points standing for ``<`` and ``>`` are inserted around every token.
        """
        big = "\n".join(texts)
        if big.count("\n") != len(texts) - 1:                                       # a text holds a newline
            big = "\n".join(" ".join(t.splitlines()) for t in texts)
        if self.config.lowercase:
            big = big.lower()
        cp = np.frombuffer(big.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)  # (C,) code points
        return self._spans_of(cp, len(texts))

    def _spans_of(self, cp: np.ndarray, n_texts: int) -> _Spans:
        """:meth:`_spans` of ``n_texts`` texts given as code points ``cp`` (C,), newline (10) between texts."""
        c = self.config
        cls = _classes(cp)                                                            # (C,) 0 space, 1 word, 2 other
        word, other = cls == 1, cls == 2
        prev_word = np.concatenate([[False], word[:-1]])
        next_word = np.concatenate([word[1:], [False]])
        starts = np.flatnonzero((word & ~prev_word) | other)                           # (T,) token starts in cp
        ends = np.flatnonzero((word & ~next_word) | other) + 1                         # (T,) exclusive ends
        sent_of_tok = np.searchsorted(np.flatnonzero(cp == 10), starts)               # newlines before the token
        # wrap: token t gets "<" at starts[t] + 2t and ">" at ends[t] + 2t + 1
        T = len(starts)
        two_t = 2 * np.arange(T, dtype=np.int64)
        marks = np.zeros(len(cp) + 1, dtype=np.int64)
        np.add.at(marks, starts, 1)
        np.add.at(marks, ends, 1)
        shift = np.cumsum(marks[:-1])                                                 # markers placed before cp[i]
        wrapped = np.empty(len(cp) + 2 * T, dtype=np.uint64)
        wrapped[np.arange(len(cp)) + shift] = cp
        starts_w, ends_w = starts + two_t, ends + two_t + 2                            # spans of "<tok>"
        wrapped[starts_w] = _BOW
        wrapped[ends_w - 1] = _EOW
        n_tok = np.bincount(sent_of_tok, minlength=n_texts).astype(np.int64)
        none = np.zeros(T, dtype=bool)
        cjk = _tokens_holding(_in_ranges(cp, _CJK_RANGES), starts, ends) if c.cjk_n_min else none       # (T,)
        cyr = _tokens_holding(_in_ranges(cp, _CYRILLIC_RANGES), starts, ends) if c.translit else none   # (T,)
        raw = np.stack([starts, ends], axis=1)                                         # (T, 2)
        if T and n_tok.max() > c.max_tokens:                                           # keep the first max_tokens
            rank = np.arange(T) - np.repeat(np.cumsum(n_tok) - n_tok, n_tok)
            keep = rank < c.max_tokens
            starts_w, ends_w, sent_of_tok, cjk, cyr, raw = (starts_w[keep], ends_w[keep], sent_of_tok[keep], cjk[keep],
                                                            cyr[keep], raw[keep])
            n_tok = np.minimum(n_tok, c.max_tokens)
        pw = _powers(_P, len(wrapped) + 1, _POW_CACHE)
        prefix = np.zeros(len(wrapped) + 1, dtype=np.uint64)
        np.cumsum(wrapped * pw[: len(wrapped)], dtype=np.uint64, out=prefix[1:])       # H[k], wraps
        ipw = _powers(_P_INV, len(wrapped) + 1, _POW_CACHE)
        return _Spans(prefix, ipw, starts_w, ends_w, sent_of_tok, n_tok, cjk, cyr, cp, raw)

    @staticmethod
    def _hash(prefix: np.ndarray, ipw: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return (prefix[b] - prefix[a]) * ipw[a]                                     # (n,) uint64, position-free

    def _char_grams(self, prefix, ipw, starts, ends, cjk) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Hashes (uint64, salted) of the character n-grams of every wrapped token ``[starts, ends)`` (T,), and
        the token each belongs to: ``n_min..n_max`` for all, ``cjk_n_min..n_min - 1`` for tokens with ``cjk``."""
        c = self.config
        tok_range = np.arange(len(starts), dtype=np.int64)
        plans = [(n, starts, ends, tok_range) for n in range(c.n_min, c.n_max + 1)]
        if c.cjk_n_min and cjk.any():
            sel = np.flatnonzero(cjk)
            plans += [(n, starts[sel] + (n == 1), ends[sel] - (n == 1), sel) for n in range(c.cjk_n_min, c.n_min)]
        ids, owners = [], []
        for n, s, e, own in plans:
            cnt = np.maximum(e - s - n + 1, 0)                                      # n-grams per token
            total = int(cnt.sum())
            if total == 0:
                continue
            owner = np.repeat(np.arange(len(s), dtype=np.int64), cnt)               # (total,) index into s
            first_of = np.cumsum(cnt) - cnt
            a = s[owner] + (np.arange(total, dtype=np.int64) - first_of[owner])
            ids.append(_mix(self._hash(prefix, ipw, a, a + n), _SALT_CHAR + n))
            owners.append(own[owner])
        return ids, owners

    def _translit(self, sp: _Spans) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Hashes (uint64, salted) of the whole-token and character n-gram features of the Latin transliteration
        of every Cyrillic token of ``sp``, and the token each belongs to (empty lists when there is none)."""
        sel = np.flatnonzero(sp.cyr)
        if not len(sel):
            return [], []
        if self._latin is None:                   # the same features, Latin input, no recursion
            self._latin = HashFeaturizer(replace(self.config, translit=False, cjk_n_min=0, lowercase=False))
        a, b = sp.raw[sel, 0], sp.raw[sel, 1]
        span = b - a + 1                                          # each token and the newline after it
        pos = np.arange(int(span.sum()) - 1, dtype=np.int64)      # (C',) the tokens newline-joined
        tok = np.repeat(np.arange(len(sel), dtype=np.int64), span)[:-1]
        off = pos - (np.cumsum(span) - span)[tok]                 # offset in its token; b - a: the newline
        joined = np.where(off < (b - a)[tok], sp.cp[np.minimum(a[tok] + off, len(sp.cp) - 1)], 10)
        lt = self._latin._spans_of(_transliterate(joined.astype(np.uint32)), len(sel))  # each one \w+ token or empty
        ids, owners = self._latin._char_grams(lt.prefix, lt.ipw, lt.starts, lt.ends, lt.cjk)
        ids.append(_mix(self._hash(lt.prefix, lt.ipw, lt.starts, lt.ends), _SALT_WORD))
        owners.append(np.arange(len(lt.starts), dtype=np.int64))
        return ids, [sel[lt.sent_of_tok[o]] for o in owners]

    def _all(self, texts: list[str]):
        """Every feature of the batch: (salted uint64 hashes, token index, sentence index, token count per
        sentence); :meth:`_ids` buckets the hashes."""
        c = self.config
        sp = self._spans(texts)
        prefix, ipw, starts, ends, sent_of_tok, n_tok = sp.prefix, sp.ipw, sp.starts, sp.ends, sp.sent_of_tok, sp.n_tok
        T = len(starts)
        ids, tok_idx = [], []
        tok_range = np.arange(T, dtype=np.int64)
        # whole tokens
        whole = self._hash(prefix, ipw, starts, ends)
        ids.append(_mix(whole, _SALT_WORD))
        tok_idx.append(tok_range)
        # bigrams of consecutive tokens in the same sentence (attached to the first token); white space
        # between them does not matter: the bigram hash combines the two token hashes
        if c.word_ngrams >= 2 and T > 1:
            first = np.flatnonzero(sent_of_tok[:-1] == sent_of_tok[1:])
            ids.append(_mix(whole[first] * _Q + whole[first + 1], _SALT_BIGRAM))
            tok_idx.append(first)
        # character n-grams inside each wrapped token
        grams, owners = self._char_grams(prefix, ipw, starts, ends, sp.cjk)
        ids += grams
        tok_idx += owners
        if c.translit:
            grams, owners = self._translit(sp)
            ids += grams
            tok_idx += owners
        return np.concatenate(ids), np.concatenate(tok_idx), sent_of_tok, n_tok

    @staticmethod
    def _group(ids: np.ndarray, rows: np.ndarray, n_rows: int) -> Features:
        small = rows.astype(np.int16) if n_rows < 2 ** 15 else rows                  # int16 sorts by radix, O(n)
        order = np.argsort(small, kind="stable")
        counts = np.bincount(rows, minlength=n_rows).astype(np.int64)
        offsets = np.cumsum(counts) - counts
        return Features(ids[order], offsets, counts)

    def bags(self, texts: list[str]) -> Features:
        """One bag of features per sentence (the DAN's input)."""
        return self.bucketed(self.raw_bags(texts))

    def raw_bags(self, texts: list[str]) -> Features:
        """:meth:`bags` before bucketing: ``ids`` are the salted uint64 hashes, the same for every ``hash_seed``
        and ``buckets``, so featurizers that differ only there share them (:meth:`bucketed`)."""
        ids, tok, sent_of_tok, _ = self._all(texts)
        return self._group(ids, sent_of_tok[tok] if len(tok) else tok, len(texts))

    def bucketed(self, raw: Features) -> Features:
        """:meth:`bags` from :meth:`raw_bags` of a featurizer that may differ in ``hash_seed`` and ``buckets``."""
        return Features(self._ids(raw.ids), raw.offsets, raw.counts)

    def shared_key(self) -> HashConfig:
        """What :meth:`raw_bags` depends on: the configuration but ``hash_seed`` and ``buckets``."""
        return replace(self.config, hash_seed=0, buckets=2)

    def tokens(self, texts: list[str]) -> tuple[Features, np.ndarray, np.ndarray]:
        """Per token: the whole-token id and a bag of its character n-grams (bigrams left out).

        Returns ``(char n-gram bags, one row per token)``, ``word ids (T,)`` and
        ``tokens per sentence (B,)``; the Transformer sums word and n-gram embeddings per token. With
        ``translit``, a Cyrillic token's bag also holds its transliteration's word and n-gram ids.
        """
        c = self.config
        sp = self._spans(texts)
        prefix, ipw, starts, ends, n_tok = sp.prefix, sp.ipw, sp.starts, sp.ends, sp.n_tok
        T = len(starts)
        words = self._ids(_mix(self._hash(prefix, ipw, starts, ends), _SALT_WORD))
        ids, tok_idx = self._char_grams(prefix, ipw, starts, ends, sp.cjk)
        if c.translit:                                      # the transliteration's word id joins the token's bag
            more, owners = self._translit(sp)
            ids += more
            tok_idx += owners
        if ids:
            grams = self._ids(np.concatenate(ids))
            owners = np.concatenate(tok_idx)
        else:
            grams, owners = np.zeros(0, np.int64), np.zeros(0, np.int64)
        return self._group(grams, owners, T), words, n_tok
