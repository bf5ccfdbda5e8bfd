"""The sample a student is distilled on: drawn from the user's files, stratified by language and file, part held out.

Two passes over each file and nothing held in memory but the drawn lines, so a file of tens of millions of
lines costs its reading time only: :func:`scan` counts the usable lines (and hashes the bytes, which names the
input in the resume key), :func:`draw` picks line numbers and :func:`read_drawn` reads them back.

Allocation (:func:`allocate`): the sample is split equally between the languages, and a language's share
equally between its files; a stratum with fewer lines than its share gives the rest to the others (water
filling), so a small language keeps all its text and a large one is not drowned by a larger one. Within each
language, a seeded draw of the drawn sentences (at most ``heldout``, and at most a tenth) is held out from
training: the student never sees them, and the quality figures are computed on them.

A file of many languages (a crawl's language-identified side) comes with a language file, one code a line
(:func:`split_by_language`): its lines become one stratum per line language under the file's own language
code, which splits its share equally between them as above, and holds out part of each.
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
    lang: str                     # the file's language code (-l): what the teacher embeds it as
    lines: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))   # (n,) usable line numbers
    skipped: int = 0
    digest: str = ""
    stratum: str | None = None    # the language of these lines, from a language file; None: the file's own


def split_by_language(src: Source, langs_path: str) -> list[Source]:
    """``src`` as one :class:`Source` per language of ``langs_path`` (one code a line, a line per line of the
    input, as ``bisent data scale`` writes ``tgt.lang``), largest first; a file of another length, or an empty or
    malformed code, is a one-line error naming the file and line."""
    from ..langcodes import check_code

    codes: list[str] = []
    for n, raw in iter_raw_lines(langs_path):
        try:
            codes.append(check_code(raw.decode("utf-8")))
        except (UnicodeDecodeError, ValueError) as e:
            raise BisentError(f"{langs_path}:{n}: not a language code ({e})") from None
    total = len(src.lines) + src.skipped
    if len(codes) != total:
        raise BisentError(f"{langs_path}: {len(codes):,} lines, but {src.path} has {total:,}: give one language "
                          "code a line of the input")
    of_line = np.asarray(codes, dtype=object)[src.lines - 1]                      # (n,) language of each usable line
    names, counts = np.unique(of_line.astype(str), return_counts=True)
    digest = hashlib.blake2b((src.digest + "\n".join(codes)).encode("utf-8"), digest_size=16).hexdigest()
    order = sorted(zip(names, counts), key=lambda x: (-x[1], x[0]))
    return [Source(src.path, src.lang, src.lines[of_line == name], src.skipped if k == 0 else 0, digest, str(name))
            for k, (name, _) in enumerate(order)]                   # the file's skipped lines counted once


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
    """Lines to draw from each source: ``total`` split equally between languages, then between the line
    languages of a language's files (those with a language file), then between files."""

    def split(members: list[int], n: int, key) -> list[tuple[list[int], int]]:
        groups: dict = {}
        for i in members:
            groups.setdefault(key(sources[i]), []).append(i)
        shares = fill([sum(len(sources[i].lines) for i in g) for g in groups.values()], n)
        return list(zip(groups.values(), shares))

    out = [0] * len(sources)
    for lang_members, n in split(list(range(len(sources))), total, lambda s: s.lang):
        for stratum_members, m in split(lang_members, n, lambda s: s.stratum):
            for i, k in zip(stratum_members, fill([len(sources[i].lines) for i in stratum_members], m)):
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


def read_sources(sources: list[Source], numbers: list[np.ndarray]) -> list[list[str]]:
    """:func:`read_drawn` of each source's ``numbers``, reading each file once however many strata it has."""
    by_path: dict[str, list[int]] = {}
    for i, src in enumerate(sources):
        by_path.setdefault(src.path, []).append(i)
    out: list[list[str]] = [[] for _ in sources]
    for path, members in by_path.items():
        union = np.unique(np.concatenate([numbers[i] for i in members]))
        text = dict(zip(union.tolist(), read_drawn(path, union)))
        for i in members:
            out[i] = [text[n] for n in numbers[i].tolist()]
    return out


def split_heldout(sentences: list[str], heldout: int, seed: int) -> tuple[list[str], list[str]]:
    """``(train, held out)`` of one language's distinct drawn sentences: ``min(heldout, n // 10)`` held out
    (a seeded draw; at least one sentence each side when there are two)."""
    k = min(heldout, len(sentences) // 10) if len(sentences) >= 20 else min(heldout, len(sentences) // 2)
    rng = np.random.default_rng([seed, 7])
    mask = np.zeros(len(sentences), dtype=bool)
    mask[rng.choice(len(sentences), size=k, replace=False)] = True
    return ([s for s, m in zip(sentences, mask) if not m], [s for s, m in zip(sentences, mask) if m])
