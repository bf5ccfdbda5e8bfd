"""A BUCC-like mining task built from aligned pairs: two collections, most sentences without a translation.

Documents of one split are shared out between three roles: *gold* documents
give both sides of their pairs, *source-only* documents give only their
source side and *target-only* documents only their target side. Each role is
filled to a sentence-count target so that about ``gold_share`` of each side
has its translation on the other side (BUCC 2017 has 2–4 %; the default
25 % keeps small demos meaningful). A document serves one role only.

Invariants (checked in the tests): ids are unique (``en-000001``...); no text
appears twice on one side; gold ids exist on both sides; and no known
translation (any pair in the input, any split) links a source sentence to a
target sentence unless it is a gold pair, so a "false positive" is never a
real translation. Both sides are shuffled with ``seed``.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Protocol

from ..errors import BisentError
from ..io import atomic_dir

ROLES = ("gold", "src_only", "tgt_only")


class _PairLike(Protocol):
    doc: str
    src: str
    tgt: str
    split: str


@dataclass
class MiningTask:
    """Two collections of ``(id, text)`` and the gold ``(src_id, tgt_id)`` links between them."""

    src: list[tuple[str, str]]
    tgt: list[tuple[str, str]]
    gold: list[tuple[str, str]]
    docs: dict[str, list[str]] = field(default_factory=dict)  # role -> document paths
    stats: dict = field(default_factory=dict)


def _targets(n_pairs: int, gold_share: float, max_gold: int | None) -> dict[str, float]:
    """Sentence counts per role so that gold is ``gold_share`` of each side and all pairs are used.

    gold + 2 * only = n and gold / (gold + only) = g  =>  gold = n g / (2 - g).
    """
    gold = n_pairs * gold_share / (2 - gold_share)
    if max_gold is not None:
        gold = min(gold, max_gold)
    only = gold * (1 - gold_share) / gold_share
    return {"gold": gold, "src_only": only, "tgt_only": only}


class _Sides:
    """The growing collections, refusing repeated texts and hidden translations."""

    def __init__(self, pairs: Iterable[_PairLike]):
        self.translations: dict[str, set[str]] = defaultdict(set)  # src text -> tgt texts
        self.sources: dict[str, set[str]] = defaultdict(set)       # tgt text -> src texts
        for p in pairs:
            self.translations[p.src].add(p.tgt)
            self.sources[p.tgt].add(p.src)
        self.src: list[str] = []
        self.tgt: list[str] = []
        self.gold: list[tuple[str, str]] = []
        self.src_set: set[str] = set()
        self.tgt_set: set[str] = set()
        self.skipped = {"repeated_text": 0, "hidden_translation": 0}

    def _src_ok(self, s: str, partner: str | None) -> bool:
        if s in self.src_set:
            self.skipped["repeated_text"] += 1
            return False
        if any(t != partner and t in self.tgt_set for t in self.translations.get(s, ())):
            self.skipped["hidden_translation"] += 1
            return False
        return True

    def _tgt_ok(self, t: str, partner: str | None) -> bool:
        if t in self.tgt_set:
            self.skipped["repeated_text"] += 1
            return False
        if any(s != partner and s in self.src_set for s in self.sources.get(t, ())):
            self.skipped["hidden_translation"] += 1
            return False
        return True

    def add(self, role: str, s: str, t: str) -> bool:
        """Add the side(s) of pair ``(s, t)`` that ``role`` contributes; False if refused."""
        if role == "gold":
            ok = self._src_ok(s, t) and self._tgt_ok(t, s)
        elif role == "src_only":
            ok = self._src_ok(s, None)
        else:
            ok = self._tgt_ok(t, None)
        if not ok:
            return False
        if role != "tgt_only":
            self.src.append(s)
            self.src_set.add(s)
        if role != "src_only":
            self.tgt.append(t)
            self.tgt_set.add(t)
        if role == "gold":
            self.gold.append((s, t))
        return True


def make_mining_task(pairs: Iterable[_PairLike], split: str = "test", *, gold_share: float = 0.25,
                     seed: int = 0, max_gold: int | None = None, src_lang: str = "src",
                     tgt_lang: str = "tgt") -> MiningTask:
    """Build a mining task from the ``split`` documents of ``pairs`` (objects with doc, src, tgt, split).

    ``gold_share``: the wanted fraction of each side that has a translation;
    ``max_gold``: cap on gold pairs (the other roles shrink in proportion) for
    small demos; ``seed``: document order and shuffling. All of ``pairs`` (every
    split) is used to recognise translations that must not hide among the
    unpaired sentences.
    """
    pairs = list(pairs)
    if not 0 < gold_share < 1:
        raise BisentError(f"gold_share must be between 0 and 1 (exclusive), got {gold_share}")
    if max_gold is not None and max_gold < 1:
        raise BisentError(f"max_gold must be at least 1, got {max_gold}")
    by_doc: dict[str, list[_PairLike]] = defaultdict(list)
    for p in pairs:
        if p.split == split:
            by_doc[p.doc].append(p)
    if not by_doc:
        raise BisentError(f"no pairs in split {split!r}")
    rng = random.Random(seed)
    docs = sorted(by_doc)
    rng.shuffle(docs)
    targets = _targets(sum(map(len, by_doc.values())), gold_share, max_gold)
    sides = _Sides(pairs)
    filled = dict.fromkeys(ROLES, 0)
    roles: dict[str, list[str]] = {r: [] for r in ROLES}
    for doc in docs:
        open_roles = [r for r in ROLES if filled[r] < targets[r]]
        if not open_roles:
            break
        role = min(open_roles, key=lambda r: filled[r] / targets[r])
        roles[role].append(doc)
        for p in by_doc[doc]:
            if filled[role] >= targets[role]:
                break
            filled[role] += sides.add(role, p.src, p.tgt)
    return _number(sides, roles, rng, src_lang, tgt_lang, split, gold_share)


def _number(sides: _Sides, roles: dict[str, list[str]], rng: random.Random, src_lang: str,
            tgt_lang: str, split: str, gold_share: float) -> MiningTask:
    """Shuffle both sides, give them ids, and express gold as id pairs."""
    src, tgt = list(sides.src), list(sides.tgt)
    rng.shuffle(src)
    rng.shuffle(tgt)
    src_ids = {text: f"{src_lang}-{i:06d}" for i, text in enumerate(src, 1)}
    tgt_ids = {text: f"{tgt_lang}-{i:06d}" for i, text in enumerate(tgt, 1)}
    gold = sorted((src_ids[s], tgt_ids[t]) for s, t in sides.gold)
    stats = {
        "split": split, "gold_share_wanted": gold_share, "gold": len(gold), "src": len(src), "tgt": len(tgt),
        "gold_share_src": round(len(gold) / max(len(src), 1), 4),
        "gold_share_tgt": round(len(gold) / max(len(tgt), 1), 4),
        **{f"docs_{r}": len(d) for r, d in roles.items()},
        **{f"skipped_{k}": v for k, v in sides.skipped.items()},
    }
    return MiningTask([(src_ids[t], t) for t in src], [(tgt_ids[t], t) for t in tgt], gold,
                      {r: sorted(d) for r, d in roles.items()}, stats)


def write_bucc(task: MiningTask, out_dir, src_lang: str, tgt_lang: str) -> Path:
    """Write ``{lang}.txt`` (``id<TAB>sentence``), ``gold.txt`` (``src_id<TAB>tgt_id``) and ``{lang}.plain.txt``.

    Plain files hold the same sentences in the same order, one per line. The
    folder appears atomically; an existing one is replaced only if it holds
    nothing but these files.
    """
    if src_lang == tgt_lang:
        raise BisentError(f"source and target language are both {src_lang!r}")
    names = {f"{src_lang}.txt", f"{tgt_lang}.txt", "gold.txt", f"{src_lang}.plain.txt", f"{tgt_lang}.plain.txt"}
    out = Path(out_dir)
    with atomic_dir(out, replace_names=frozenset(names)) as tmp:
        for lang, side in ((src_lang, task.src), (tgt_lang, task.tgt)):
            _write_lines(tmp / f"{lang}.txt", (f"{i}\t{text}" for i, text in side))
            _write_lines(tmp / f"{lang}.plain.txt", (text for _, text in side))
        _write_lines(tmp / "gold.txt", (f"{s}\t{t}" for s, t in task.gold))
    return out


def _write_lines(path: Path, lines: Iterable[str]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.writelines(line + "\n" for line in lines)
