"""Rule-based filters for noisy bitext: cheap checks that run before any embedding.

The ParaCrawl prefilters of Artetxe & Schwenk (2019, §4.3) are here with their
values as defaults: duplicates removed, 3–80 tokens, a source/target length
ratio above 2 rejected, pairs whose sides overlap by 50 % or more rejected
(untranslated copies); language identification is in :mod:`.langid`. Further
OpusFilter-style rules: empty sides, mismatched numbers, URL/markup debris and
letters in the wrong script.

Each rule's ``score`` yields one value per pair (a number, or ``[src, tgt]``)
and ``accept(value)`` decides; tokens are whitespace-separated words (use
``unit: char`` for languages written without spaces).
"""

from __future__ import annotations

import difflib
import hashlib
import math
import re
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np

from ..io import open_append, open_existing
from ..langcodes import base_lang
from .params import check_bool, check_choice, check_number
from .records import Pair
from .steps import Step, register_step


def _length(text: str, unit: str) -> int:
    return len(text.split()) if unit == "word" else len(text.strip())


# ---------------------------------------------------------------------------
# Duplicates (stateful over the stream)
# ---------------------------------------------------------------------------

class _StripTable(dict):
    """``str.translate`` table keeping letters and marks, deleting everything else (filled lazily)."""

    def __missing__(self, codepoint: int):
        keep = unicodedata.category(chr(codepoint))[0] in "LM"
        self[codepoint] = codepoint if keep else None
        return self[codepoint]


_STRIP = _StripTable()


def normalise_for_dedup(text: str) -> str:
    """NFKC, case-folded, with digits, punctuation, symbols and whitespace removed."""
    return unicodedata.normalize("NFKC", text).casefold().translate(_STRIP)


class _Duplicates(Step):
    """Reject a pair whose key was seen earlier in the stream. Score: 1 for a repeat, else 0.

    Keys are remembered as 64-bit BLAKE2 digests (about 70 bytes of memory per
    distinct pair; a false repeat among 10^8 pairs has probability ~3e-4).
    """

    stateless = False

    def __init__(self, *, name: str | None = None, sides: str = "pair"):
        super().__init__(name=name)
        self.sides = check_choice("sides", sides, ("pair", "src", "tgt"))
        self._seen: set[int] = set()
        self._pending: list[int] = []  # digests not yet saved by save_state

    def key(self, src: str, tgt: str) -> str:
        raise NotImplementedError

    def reset(self) -> None:
        self._seen = set()
        self._pending = []

    def score(self, pairs: Iterable[Pair]) -> Iterator[float]:
        seen, pending = self._seen, self._pending
        for src, tgt in pairs:
            if self.sides == "src":
                tgt = ""
            elif self.sides == "tgt":
                src = ""
            digest = int.from_bytes(hashlib.blake2b(self.key(src, tgt).encode("utf-8", "surrogatepass"),
                                                    digest_size=8).digest(), "little")
            if digest in seen:
                yield 1.0
            else:
                seen.add(digest)
                pending.append(digest)
                yield 0.0

    def accept(self, value: float) -> bool:
        return value == 0

    def _state_file(self, directory: Path) -> Path:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", self.name)
        return Path(directory) / f"{safe}.seen"

    def save_state(self, directory: Path) -> dict:
        """Append the digests seen since the last save to ``NAME.seen``; the marker is its size."""
        path = self._state_file(directory)
        with open_append(path) as f:
            if self._pending:
                f.write(np.asarray(self._pending, dtype="<u8").tobytes())
                self._pending.clear()
            f.flush()
            size = f.tell()
        return {"file": path.name, "bytes": size}

    def load_state(self, directory: Path, marker: dict) -> None:
        path = Path(directory) / marker["file"]
        size = int(marker["bytes"])
        with open_existing(path) as f:
            f.truncate(size)
            data = f.read(size)
        self._seen = set(np.frombuffer(data, dtype="<u8").tolist())
        self._pending = []


@register_step("duplicate")
class DuplicateFilter(_Duplicates):
    """Exact duplicates: the same pair (or side, with ``sides``) seen before, byte for byte."""

    def key(self, src: str, tgt: str) -> str:
        return f"{src}\t{tgt}"


@register_step("normalised_duplicate")
class NormalisedDuplicateFilter(_Duplicates):
    """Near duplicates: equal after case folding and removing digits, punctuation and spaces."""

    def key(self, src: str, tgt: str) -> str:
        return f"{normalise_for_dedup(src)}\t{normalise_for_dedup(tgt)}"


# ---------------------------------------------------------------------------
# Lengths
# ---------------------------------------------------------------------------

@register_step("empty")
class EmptyFilter(Step):
    """Reject a pair with an empty (or all-whitespace) side. Score: the shorter side's characters."""

    def score(self, pairs: Iterable[Pair]) -> Iterator[float]:
        for src, tgt in pairs:
            yield float(min(len(src.strip()), len(tgt.strip())))

    def accept(self, value: float) -> bool:
        return value > 0


@register_step("length")
class LengthFilter(Step):
    """Both sides between ``min_length`` and ``max_length`` (inclusive) words or characters.

    Paper default: 3–80 tokens. Score: ``[src_length, tgt_length]``.
    """

    def __init__(self, *, name: str | None = None, min_length: int = 3, max_length: int = 80, unit: str = "word"):
        super().__init__(name=name)
        self.min_length = check_number("min_length", min_length, low=0, integer=True)
        self.max_length = check_number("max_length", max_length, low=self.min_length, integer=True)
        self.unit = check_choice("unit", unit, ("word", "char"))

    def score(self, pairs: Iterable[Pair]) -> Iterator[list[float]]:
        for src, tgt in pairs:
            yield [float(_length(src, self.unit)), float(_length(tgt, self.unit))]

    def accept(self, value) -> bool:
        return all(self.min_length <= v <= self.max_length for v in value)


@register_step("length_ratio")
class LengthRatioFilter(Step):
    """Longer side / shorter side at most ``max_ratio`` (paper: above 2 is rejected).

    Score: the ratio (``inf`` when one side is empty and the other not).

    ``learned: true`` learns the bound from the input itself instead of one
    ratio for every language pair and length: on a sample of ``sample`` pairs
    (:meth:`fit_sample`; a pre-pass in :func:`filter_file`) the log length
    ratio log(tgt / src) is summarised per length band (the geometric mean of
    the two lengths below each of ``bands``, the last band open) by its median
    and MAD, robust to the noise the sample holds. The score is then the
    robust z of the pair's log ratio (lengths + 5 characters or + 1 word) in
    its band, (log r − median) / (1.4826 ·
    MAD), accepted within ±``max_z``; a band with fewer than 30 sample pairs
    uses the whole sample's figures, and a sample of fewer than 30 pairs the
    fixed bound: ratios of the smoothed lengths up to ``max_ratio``. Short strings get their own, wider band
    ("Click OK." / "Klicken Sie auf OK." is 2.1 times longer, and usual), and
    en→de gets its longer German side.
    """

    #: default band edges (geometric mean of the two sides' lengths, in ``unit``s)
    BANDS = {"char": (16, 32, 64, 128, 256), "word": (3, 6, 12, 24, 48)}
    MIN_BAND = 30
    #: added to both lengths: on the dev split 5 characters keep "Click OK." / "Klicken Sie auf OK." (19 / 9)
    #: and change no other figure against 1
    SMOOTH = {"char": 5, "word": 1}
    #: MAD floor (in log ratio): a band of identical ratios would otherwise reject every other ratio
    MIN_MAD = 0.03

    def __init__(self, *, name: str | None = None, max_ratio: float = 2.0, unit: str = "word", learned: bool = False,
                 max_z: float = 4.0, bands: list | None = None, sample: int = 20000):
        super().__init__(name=name)
        self.max_ratio = check_number("max_ratio", max_ratio, low=1)
        self.unit = check_choice("unit", unit, ("word", "char"))
        self.learned = check_bool("learned", learned)
        self.max_z = check_number("max_z", max_z, low=0, low_open=True)
        self.sample = check_number("sample", sample, low=1, integer=True)
        if bands is None:
            bands = self.BANDS[self.unit]
        if not isinstance(bands, (list, tuple)) or not bands:
            raise ValueError(f"parameter 'bands' must be a non-empty list of increasing lengths, got {bands!r}")
        edges = [check_number("bands", b, low=0, low_open=True) for b in bands]
        if any(a >= b for a, b in zip(edges, edges[1:])):
            raise ValueError(f"parameter 'bands' must be increasing, got {list(bands)!r}")
        self.bands = np.asarray(edges, dtype=np.float64)
        self.stats: np.ndarray | None = None   # (bands + 1, 2): median and scale of log(tgt/src) per band

    def reset(self) -> None:
        if self.learned:
            self.stats = None

    def sample_size(self) -> int:
        return self.sample if self.learned else 0

    def _logs(self, pairs: Sequence[Pair]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(log ratio, band, empty) per pair: lengths + :data:`SMOOTH` (an empty side gives a finite ratio, and
        a few characters more or less weigh less in a short string than in a long one)."""
        a = np.array([_length(s, self.unit) for s, _ in pairs], dtype=np.float64)
        b = np.array([_length(t, self.unit) for _, t in pairs], dtype=np.float64)
        band = np.searchsorted(self.bands, np.sqrt(np.maximum(a, 1) * np.maximum(b, 1)), side="right")
        c = self.SMOOTH[self.unit]
        return np.log((b + c) / (a + c)), band, (a == 0) != (b == 0)

    def fit_sample(self, pairs: Sequence[Pair]) -> None:
        """Median and MAD of the log length ratio per band of ``pairs`` (both sides non-empty)."""
        logs, band, empty = self._logs([p for p in pairs if p[0].strip() and p[1].strip()] or [("x", "x")])
        stats = np.zeros((len(self.bands) + 1, 2))

        def robust(v: np.ndarray) -> tuple[float, float]:
            med = float(np.median(v))
            return med, max(self.MIN_MAD, float(np.median(np.abs(v - med)))) * 1.4826

        # too small a sample to learn from (a handful of lines): the fixed bound, max_ratio either way
        pooled = robust(logs) if len(logs) >= self.MIN_BAND else (0.0, math.log(self.max_ratio) / self.max_z)
        for i in range(len(stats)):
            v = logs[band == i]
            stats[i] = robust(v) if len(v) >= self.MIN_BAND else pooled
        self.stats = stats

    def band_stats(self) -> list[dict]:
        """The learned bounds per band (for docs and summaries): upper length, median ratio, ratio range
        (ratios of the smoothed lengths, :data:`SMOOTH` added)."""
        if self.stats is None:
            return []
        out = []
        for i, (med, scale) in enumerate(self.stats):
            out.append({"below": float(self.bands[i]) if i < len(self.bands) else None,
                        "median_ratio": round(math.exp(med), 3),
                        "range": [round(math.exp(med - self.max_z * scale), 3),
                                  round(math.exp(med + self.max_z * scale), 3)]})
        return out

    def score_batch(self, pairs: Sequence[Pair]) -> np.ndarray:
        if not self.learned:
            return np.asarray(list(self.score(pairs)), dtype=np.float64)
        if not pairs:
            return np.zeros(0)
        if self.stats is None:   # never prepared (a direct call): learn from this batch
            self.fit_sample(pairs)
        logs, band, empty = self._logs(pairs)
        z = (logs - self.stats[band, 0]) / self.stats[band, 1]
        z[empty] = np.inf
        return z

    def score(self, pairs: Iterable[Pair]) -> Iterator[float]:
        if self.learned:
            yield from self.score_batch(list(pairs)).tolist()
            return
        for src, tgt in pairs:
            a, b = _length(src, self.unit), _length(tgt, self.unit)
            lo, hi = min(a, b), max(a, b)
            yield hi / lo if lo else (float("inf") if hi else 1.0)

    def accept(self, value: float) -> bool:
        if self.learned:
            return abs(value) <= self.max_z
        return value <= self.max_ratio


# ---------------------------------------------------------------------------
# Untranslated copies
# ---------------------------------------------------------------------------

_WORD_WITH_LETTER = re.compile(r"\w*[^\W\d_]\w*")


@register_step("overlap")
class OverlapFilter(Step):
    """Reject untranslated or half-translated pairs: sides overlapping by ``max_overlap`` or more.

    ``method: word``: shared words (case-folded, words with at least one letter,
    counted with multiplicity) / words of the longer side; numbers and
    punctuation are not counted, so names and figures alone do not trigger it.
    ``method: char``: ``difflib`` similarity of the case-folded strings (close
    languages share many characters: use a higher threshold). Paper: overlap
    of at least 50 % rejected. Score: the overlap in [0, 1].
    """

    def __init__(self, *, name: str | None = None, max_overlap: float = 0.5, method: str = "word"):
        super().__init__(name=name)
        self.max_overlap = check_number("max_overlap", max_overlap, low=0, high=1, low_open=True)
        self.method = check_choice("method", method, ("word", "char"))

    def score(self, pairs: Iterable[Pair]) -> Iterator[float]:
        for src, tgt in pairs:
            if self.method == "word":
                a = _WORD_WITH_LETTER.findall(src.casefold())
                b = _WORD_WITH_LETTER.findall(tgt.casefold())
                if not set(a).intersection(b):
                    yield 0.0
                    continue
                yield sum((Counter(a) & Counter(b)).values()) / max(len(a), len(b))
            else:
                a, b = " ".join(src.casefold().split()), " ".join(tgt.casefold().split())
                yield difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() if a and b else 0.0

    def accept(self, value: float) -> bool:
        return value < self.max_overlap


# ---------------------------------------------------------------------------
# Numbers
# ---------------------------------------------------------------------------

# A number: digit runs joined by one separator (3.5, 3,5, 1'000, 1 000 with a
# (narrow) no-break space) or by a plain space before exactly three digits (1 000).
_NUMBER = re.compile(r"\d+(?:(?:[.,'\u2019\u00a0\u202f\u2009]|\s(?=\d{3}(?!\d)))\d+)*")
_NON_DIGIT = re.compile(r"\D")


def numbers(text: str) -> Counter:
    """Multiset of the numbers in ``text``, separators and leading zeros ignored: 1,000 = 1 000 = 1000."""
    out: Counter = Counter()
    for m in _NUMBER.findall(text):
        digits = _NON_DIGIT.sub("", m)
        if not digits.isascii():
            digits = "".join(str(unicodedata.decimal(c)) for c in digits)
        out[digits.lstrip("0") or "0"] += 1
    return out


@register_step("numbers")
class NumbersFilter(Step):
    """Reject pairs whose numbers differ (a sign of misalignment or a wrong translation).

    Score: how many numbers appear on one side but not the other (multiset
    symmetric difference); accepted up to ``max_mismatches`` (default 0).

    ``spelled_up_to: N`` forgives numbers up to N written as digits on one side only while the other side has
    no number of its own left over: translators spell small numbers out ("1-dimensional" / "eindimensionale",
    "2 columns" / "zwei Spalten"), while a misaligned pair holds different numbers on both sides ("Step 3" /
    "Schritt 4" still counts 2). 0 (the class default) forgives none.
    """

    def __init__(self, *, name: str | None = None, max_mismatches: int = 0, spelled_up_to: int = 0):
        super().__init__(name=name)
        self.max_mismatches = check_number("max_mismatches", max_mismatches, low=0, integer=True)
        self.spelled_up_to = check_number("spelled_up_to", spelled_up_to, low=0, integer=True)

    def score(self, pairs: Iterable[Pair]) -> Iterator[float]:
        for src, tgt in pairs:
            if not (_has_digit(src) or _has_digit(tgt)):
                yield 0.0
                continue
            a, b = numbers(src), numbers(tgt)
            only_a, only_b = a - b, b - a
            if self.spelled_up_to and not (only_a and only_b):
                small = str(self.spelled_up_to)
                only_a, only_b = (Counter({n: c for n, c in side.items() if not _small(n, small)})
                                  for side in (only_a, only_b))
            yield float(sum((only_a + only_b).values()))

    def accept(self, value: float) -> bool:
        return value <= self.max_mismatches


def _small(digits: str, limit: str) -> bool:
    """``digits`` (a number as :func:`numbers` keys it) is at most ``limit``."""
    return len(digits) < len(limit) or (len(digits) == len(limit) and digits <= limit)


_DIGIT = re.compile(r"\d")


def _has_digit(text: str) -> bool:
    return _DIGIT.search(text) is not None


# ---------------------------------------------------------------------------
# Debris: URLs, markup, runs of symbols
# ---------------------------------------------------------------------------

_URL = re.compile(r"\b(?:https?|ftp)://\S+|\bwww\.\w[\w-]*\.\S+", re.IGNORECASE)
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9:-]*(?:\s[^<>]{0,500})?/?>")
_ENTITY = re.compile(r"&(?:[A-Za-z][A-Za-z0-9]{1,31}|#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6});")
_SYMBOLS = re.compile(r"[^\w\s]{2,}")


@register_step("debris")
class DebrisFilter(Step):
    """Reject web-crawl debris: URLs, HTML tags and entities, long runs of symbols.

    Score: how many such items both sides hold together; accepted up to
    ``max_count`` (default 0). ``symbol_run``: the shortest run of
    punctuation/symbol characters counted (default 5, so "..." and "?!" pass;
    0 turns it off).
    """

    def __init__(self, *, name: str | None = None, urls: bool = True, markup: bool = True,
                 symbol_run: int = 5, max_count: int = 0):
        super().__init__(name=name)
        self.urls = check_bool("urls", urls)
        self.markup = check_bool("markup", markup)
        self.symbol_run = check_number("symbol_run", symbol_run, low=0, integer=True)
        if self.symbol_run == 1:
            raise ValueError("parameter 'symbol_run' must be 0 (off) or at least 2, got 1")
        self.max_count = check_number("max_count", max_count, low=0, integer=True)

    def count(self, text: str) -> int:
        """Debris items in one text."""
        n = 0
        if self.urls:
            n += len(_URL.findall(text))
        if self.markup and ("<" in text or "&" in text):
            n += len(_TAG.findall(text)) + len(_ENTITY.findall(text))
        if self.symbol_run:
            for run in _SYMBOLS.findall(text):
                # combining marks are not word characters to ``re``; they are not symbols either
                if len(run) >= self.symbol_run and \
                        sum(unicodedata.category(c)[0] != "M" for c in run) >= self.symbol_run:
                    n += 1
        return n

    def score(self, pairs: Iterable[Pair]) -> Iterator[float]:
        for src, tgt in pairs:
            yield float(self.count(src) + self.count(tgt))

    def accept(self, value: float) -> bool:
        return value <= self.max_count


# ---------------------------------------------------------------------------
# Script
# ---------------------------------------------------------------------------

_LATIN = ("af az bs ca cs cy da de en eo es et eu fi fil fo fr fy ga gd gl ha hr ht hu id ig is it jv "
          "la lb lt lv mg mi ms mt nl nn no nb oc pl pt qu ro rm sk sl sm sn so sq su sv sw tl tk tr "
          "uz vi wo xh yo zu").split()
#: language -> scripts its letters may be in (the first word of the Unicode character name).
SCRIPTS: dict[str, frozenset[str]] = {
    **{lang: frozenset({"LATIN"}) for lang in _LATIN},
    **{lang: frozenset({"CYRILLIC"}) for lang in "ru uk be bg mk kk ky mn tg tt ba cv".split()},
    "sr": frozenset({"CYRILLIC", "LATIN"}),
    "el": frozenset({"GREEK"}),
    **{lang: frozenset({"ARABIC"}) for lang in "ar fa ur ps ug ku sd ckb".split()},
    **{lang: frozenset({"HEBREW"}) for lang in "he yi".split()},
    **{lang: frozenset({"DEVANAGARI"}) for lang in "hi mr ne sa".split()},
    **{lang: frozenset({"BENGALI"}) for lang in "bn as".split()},
    "ta": frozenset({"TAMIL"}), "te": frozenset({"TELUGU"}), "kn": frozenset({"KANNADA"}),
    "ml": frozenset({"MALAYALAM"}), "gu": frozenset({"GUJARATI"}), "pa": frozenset({"GURMUKHI"}),
    "or": frozenset({"ORIYA"}), "si": frozenset({"SINHALA"}), "th": frozenset({"THAI"}),
    "lo": frozenset({"LAO"}), "km": frozenset({"KHMER"}), "my": frozenset({"MYANMAR"}),
    "ka": frozenset({"GEORGIAN"}), "hy": frozenset({"ARMENIAN"}), "am": frozenset({"ETHIOPIC"}),
    "ti": frozenset({"ETHIOPIC"}), "bo": frozenset({"TIBETAN"}), "dv": frozenset({"THAANA"}),
    "zh": frozenset({"CJK"}), "ja": frozenset({"CJK", "HIRAGANA", "KATAKANA"}),
    "ko": frozenset({"HANGUL", "CJK"}),
}
#: letters in these "scripts" count for no language (they are neutral).
_NEUTRAL = frozenset({"MODIFIER", "", "COMBINING"})
_SCRIPT_CACHE: dict[str, str] = {}


def script_of(ch: str) -> str:
    """The script of a character: the first word of its Unicode name (``LATIN``, ``CJK``, ...)."""
    s = _SCRIPT_CACHE.get(ch)
    if s is None:
        words = unicodedata.name(ch, "").split()
        if words and words[0] in ("FULLWIDTH", "HALFWIDTH"):
            words = words[1:]
        s = words[0] if words else ""
        if s.startswith("KATAKANA"):  # KATAKANA-HIRAGANA PROLONGED SOUND MARK
            s = "KATAKANA"
        elif s == "HANGUL" or s.startswith("HANGUL"):
            s = "HANGUL"
        _SCRIPT_CACHE[ch] = s
    return s


class _ScriptTable(dict):
    """``str.translate`` table: letters in ``scripts`` -> "g", other letters -> "b", the rest deleted."""

    def __init__(self, scripts: frozenset[str]):
        super().__init__()
        self.scripts = scripts

    def __missing__(self, codepoint: int):
        ch = chr(codepoint)
        mark = None
        if ch.isalpha():
            s = script_of(ch)
            if s not in _NEUTRAL:
                mark = "g" if s in self.scripts else "b"
        self[codepoint] = mark
        return mark


_TABLES: dict[frozenset[str], _ScriptTable] = {}


def script_share(text: str, scripts: frozenset[str]) -> float:
    """Share of the letters of ``text`` in one of ``scripts`` (1.0 when it has no letters)."""
    table = _TABLES.get(scripts)
    if table is None:
        table = _TABLES[scripts] = _ScriptTable(scripts)
    marks = text.translate(table)
    return marks.count("g") / len(marks) if marks else 1.0


@register_step("script")
class ScriptFilter(Step):
    """Reject a side whose letters are mostly not in its language's script (Cyrillic in an
    English side, Latin in a Russian side...). Score: ``[src_share, tgt_share]``, accepted
    when both reach ``min_share``. ``scripts`` adds or overrides languages, e.g.
    ``{sr: [LATIN]}`` (script names are the first word of Unicode character names).
    """

    def __init__(self, *, name: str | None = None, src_lang: str, tgt_lang: str, min_share: float = 0.5,
                 scripts: dict | None = None):
        super().__init__(name=name)
        self.min_share = check_number("min_share", min_share, low=0, high=1)
        table = dict(SCRIPTS)
        if scripts is not None:
            if not isinstance(scripts, dict):
                raise ValueError(f"parameter 'scripts' must map languages to lists of scripts, got {scripts!r}")
            for lang, names in scripts.items():
                if isinstance(names, str):
                    names = [names]
                if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                    raise ValueError(f"parameter 'scripts': {lang} must map to a list of script names")
                table[base_lang(str(lang))] = frozenset(n.upper() for n in names)
        self.src_scripts = self._lookup(table, src_lang, "src_lang")
        self.tgt_scripts = self._lookup(table, tgt_lang, "tgt_lang")

    @staticmethod
    def _lookup(table: dict, lang: str, param: str) -> frozenset[str]:
        code = base_lang(lang)
        if code not in table:
            raise ValueError(f"parameter '{param}': no script known for language '{lang}'; "
                             f"give one with scripts: {{{code}: [LATIN]}}")
        return table[code]

    def score(self, pairs: Iterable[Pair]) -> Iterator[list[float]]:
        for src, tgt in pairs:
            yield [script_share(src, self.src_scripts), script_share(tgt, self.tgt_scripts)]

    def accept(self, value) -> bool:
        return all(v >= self.min_share for v in value)
