"""How far a student is from its teacher, without gold: figures on held-out sentences of each language.

- **closeness** per language: the mean cosine of student(x) and teacher(x) over held-out x (the student is
  trained into the teacher's space, so its vector of a text should point where the teacher's does);
- **cosine correlation** per language pair (A, B): Pearson's r between the student's and the teacher's
  cosines of every held-out A sentence with every held-out B sentence (the geometry mining uses);
- **top-1 agreement** per direction A -> B: the share of held-out A sentences whose nearest held-out B
  sentence (cosine) is the same under the student as under the teacher, which is what mining with the
  student instead of the teacher changes; with a 95 % bootstrap interval over the A sentences, and whether it
  is above :data:`AGREEMENT_BAR`.

Where a language's held-out sentences mix line languages (a file given a language file),
:func:`by_line_language` gives both directions' agreement per line language L against each other language:
L's sentences as queries, and the other language's queries against L's sentences alone.

With gold pairs, :func:`gold_errors` gives both encoders' recovery error on them and the student's gap.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from ..evaluate import recovery_misses

BOOTSTRAP = 1000
#: the top-1 agreement above which, on the development runs, every direction's gold gap was within 1.5 points of
#: the teacher's recovery error: the lowest agreement of those runs (benchmarks/README.md, "Distilling on your own
#: text"); below it the report makes no such claim
AGREEMENT_BAR = 0.91


def interval(hits: np.ndarray, *, boot: int = BOOTSTRAP, seed: int = 0) -> tuple[float, float]:
    """95 % percentile bootstrap interval of the mean of ``hits`` (n,) over resampled items."""
    if len(hits) == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = hits[rng.integers(0, len(hits), size=(boot, len(hits)))].mean(axis=1)      # (boot,)
    lo, hi = np.quantile(means, [0.025, 0.975])
    return float(lo), float(hi)


def top1_agreement(s_a: np.ndarray, s_b: np.ndarray, t_a: np.ndarray, t_b: np.ndarray) -> np.ndarray:
    """``(n_a,)`` bool: row i of A has the same nearest row of B under the student (``s_*``, unit rows
    ``(n, D)``) as under the teacher (``t_*``)."""
    return np.argmax(s_a @ s_b.T, axis=1) == np.argmax(t_a @ t_b.T, axis=1)


def pair_figures(a: str, b: str, student: dict, teacher: dict, *, boot: int = BOOTSTRAP) -> dict:
    """The correlation and both directions' agreement of languages ``a`` and ``b`` (dicts lang -> unit rows)."""
    s, t = student[a] @ student[b].T, teacher[a] @ teacher[b].T                          # (n_a, n_b) each
    r = float(np.corrcoef(s.ravel(), t.ravel())[0, 1]) if s.size > 1 else float("nan")
    out = {"pair": f"{a}-{b}", "held_out": [len(student[a]), len(student[b])], "cosine_correlation": round(r, 4)}
    for x, y, name in ((a, b, f"{a}->{b}"), (b, a, f"{b}->{a}")):
        hits = top1_agreement(student[x], student[y], teacher[x], teacher[y]).astype(np.float64)
        lo, hi = interval(hits, boot=boot)
        out[name] = {"agreement": round(float(hits.mean()), 4), "interval": [round(lo, 4), round(hi, 4)],
                     "queries": len(hits), "above_bar": bool(hits.mean() >= AGREEMENT_BAR)}
    return out


def no_gold_report(student: dict, teacher: dict, *, boot: int = BOOTSTRAP) -> dict:
    """Closeness per language and :func:`pair_figures` for every pair of languages; the lowest agreement."""
    langs = list(student)
    close = {lang: round(float(np.mean(np.sum(student[lang] * teacher[lang], axis=1))), 4) for lang in langs}
    pairs = [pair_figures(a, b, student, teacher, boot=boot) for a, b in combinations(langs, 2)]
    lowest = min((v["agreement"], k) for p in pairs for k, v in p.items() if isinstance(v, dict))
    return {"closeness": close, "pairs": pairs, "lowest_agreement": {"direction": lowest[1], "agreement": lowest[0]},
            "agreement_bar": AGREEMENT_BAR}


#: held-out sentences a line language needs for its own agreement figures (fewer: counted, not shown)
MIN_LINE_LANGUAGE = 20


def _direction(s_q: np.ndarray, s_c: np.ndarray, t_q: np.ndarray, t_c: np.ndarray, boot: int) -> dict:
    hits = top1_agreement(s_q, s_c, t_q, t_c).astype(np.float64)
    lo, hi = interval(hits, boot=boot)
    return {"agreement": round(float(hits.mean()), 4), "interval": [round(lo, 4), round(hi, 4)],
            "queries": len(hits), "candidates": len(s_c), "above_bar": bool(hits.mean() >= AGREEMENT_BAR)}


def by_line_language(student: dict, teacher: dict, strata: dict[str, list[str]], *, boot: int = BOOTSTRAP,
                     min_held: int = MIN_LINE_LANGUAGE) -> list[dict]:
    """Per language ``a`` of ``strata`` (lang -> the line language of each held-out row), per other language
    ``b`` and per line language L of ``a`` with at least ``min_held`` held-out rows, largest first: ``L->b``
    (L's rows as queries, every row of ``b`` a candidate: the rows of the ``a->b`` direction that are in L) and
    ``b->L`` (every row of ``b`` a query, L's rows alone the candidates); line languages with fewer rows are
    summed in one entry."""
    out = []
    for a, codes in strata.items():
        codes_a = np.asarray(codes)
        names, counts = np.unique(codes_a, return_counts=True)
        order = sorted(zip(names.tolist(), counts.tolist()), key=lambda x: (-x[1], x[0]))
        for b in (x for x in student if x != a):
            rows = []
            for lang, n in order:
                if n < min_held:
                    continue
                sa, ta = student[a][codes_a == lang], teacher[a][codes_a == lang]              # (n, D) each
                rows.append({"line_language": lang, "held_out": n,
                             f"{lang}->{b}": _direction(sa, student[b], ta, teacher[b], boot),
                             f"{b}->{lang}": _direction(student[b], sa, teacher[b], ta, boot)})
            small = [(lang, n) for lang, n in order if n < min_held]
            out.append({"lang": a, "other": b, "min_held_out": min_held, "languages": rows,
                        "smaller": {"line_languages": len(small), "held_out": sum(n for _, n in small)}})
    return out


def gold_errors(name: str, student: tuple[np.ndarray, np.ndarray], teacher: tuple[np.ndarray, np.ndarray],
                *, score: str = "csls", boot: int = BOOTSTRAP) -> dict:
    """Recovery error (%) of gold pairs (row i of src translates row i of tgt) under both encoders, both
    directions, and the student's paired gap with a 95 % bootstrap interval over the pairs."""
    out: dict = {"pairs": name, "n": len(student[0]), "score": score}
    s_fwd, s_bwd = recovery_misses(*student, score=score)
    t_fwd, t_bwd = recovery_misses(*teacher, score=score)
    for key, s_miss, t_miss in (("src->tgt", s_fwd, t_fwd), ("tgt->src", s_bwd, t_bwd)):
        gap = (s_miss.astype(np.float64) - t_miss) * 100
        lo, hi = interval(gap, boot=boot)
        out[key] = {"student": round(100 * float(s_miss.mean()), 2), "teacher": round(100 * float(t_miss.mean()), 2),
                    "gap": round(float(gap.mean()), 2), "gap_interval": [round(lo, 2), round(hi, 2)]}
    return out
