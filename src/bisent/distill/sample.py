"""The sample a student is distilled on: drawn from the user's files, stratified by language and file, part held out.

Two passes over each file and nothing held in memory but the drawn lines, so a file of tens of millions of
lines costs its reading time only: :func:`scan` counts the usable lines (and hashes the bytes, which names the
input in the resume key), :func:`draw` picks line numbers and :func:`read_drawn` reads them back.

Allocation (:func:`allocate`): the sample is split equally between the languages, and a language's share
equally between its files; a stratum with fewer lines than its share gives the rest to the others (water
filling), so a small language keeps all its text and a large one is not drowned by a larger one. Within each
language, a seeded draw of the drawn sentences (at most ``heldout``, and at most a tenth) is held out from
training: the student never sees them, and the quality figures are computed on them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from ..errors import BisentError
from ..io import iter_raw_lines, line_problem


@dataclass
class Source:
    """One input file and its language: usable line numbers (1-based), lines skipped (empty or unusable)."""

    path: str
    lang: str
    lines: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))   # (n,) usable line numbers
    skipped: int = 0
    digest: str = ""


def scan(path: str, lang: str) -> Source:
    """Count ``path``'s usable lines (an empty or unusable line is skipped and counted) and hash its bytes.

    A file without one usable line is a one-line error.
    """
    h = hashlib.blake2b(digest_size=16)
    usable, skipped = [], 0
    for n, raw in iter_raw_lines(path):
        h.update(raw + b"\n")
        _, problem = line_problem(raw)
        if problem is None:
            usable.append(n)
        else:
            skipped += 1
    if not usable:
        raise BisentError(f"{path}: no sentences (the file is empty or holds only empty or unusable lines)")
    return Source(path, lang, np.asarray(usable, dtype=np.int64), skipped, h.hexdigest())


def fill(sizes: list[int], total: int) -> list[int]:
    """Split ``total`` between strata of ``sizes``: equal shares, none above its size, the rest to the others.

    >>> fill([10, 1000, 1000], 300)
    [10, 145, 145]
    """
    out, left, open_ = [0] * len(sizes), total, [i for i, s in enumerate(sizes) if s > 0]
    while left > 0 and open_:
        share = max(1, left // len(open_))
        for i in list(open_):
            take = min(share, sizes[i] - out[i], left)
            out[i] += take
            left -= take
            if out[i] == sizes[i]:
                open_.remove(i)
            if left == 0:
                break
    return out


def allocate(sources: list[Source], total: int) -> list[int]:
    """Lines to draw from each source: ``total`` split equally between languages, then between a language's files."""
    langs = list(dict.fromkeys(s.lang for s in sources))
    members = {lang: [i for i, s in enumerate(sources) if s.lang == lang] for lang in langs}
    per_lang = fill([sum(len(sources[i].lines) for i in members[lang]) for lang in langs], total)
    out = [0] * len(sources)
    for lang, n in zip(langs, per_lang):
        for i, k in zip(members[lang], fill([len(sources[i].lines) for i in members[lang]], n)):
            out[i] = k
    return out


def draw(sources: list[Source], total: int, seed: int) -> list[np.ndarray]:
    """Per source, the sorted line numbers of its share of a ``total``-line sample (a seeded draw per file)."""
    picked = []
    for i, (src, k) in enumerate(zip(sources, allocate(sources, total))):
        rng = np.random.default_rng([seed, i])
        picked.append(np.sort(rng.choice(src.lines, size=k, replace=False)) if k < len(src.lines) else src.lines)
    return picked


def read_drawn(path: str, numbers: np.ndarray) -> list[str]:
    """The text of lines ``numbers`` (sorted, usable) of ``path``, in file order."""
    want, out, j = numbers, [], 0
    for n, raw in iter_raw_lines(path):
        if j == len(want):
            break
        if n == want[j]:
            text, problem = line_problem(raw)
            if problem is not None:
                raise BisentError(f"{path}:{n}: the file changed while it was read ({problem})")
            out.append(text)
            j += 1
    if j < len(want):
        raise BisentError(f"{path}: the file changed while it was read (it is shorter than at first)")
    return out


def split_heldout(sentences: list[str], heldout: int, seed: int) -> tuple[list[str], list[str]]:
    """``(train, held out)`` of one language's distinct drawn sentences: ``min(heldout, n // 10)`` held out
    (a seeded draw; at least one sentence each side when there are two)."""
    k = min(heldout, len(sentences) // 10) if len(sentences) >= 20 else min(heldout, len(sentences) // 2)
    rng = np.random.default_rng([seed, 7])
    mask = np.zeros(len(sentences), dtype=bool)
    mask[rng.choice(len(sentences), size=k, replace=False)] = True
    return ([s for s, m in zip(sentences, mask) if not m], [s for s, m in zip(sentences, mask) if m])
