"""Choose repair's defaults on DEV: glued pairs restored and clean pairs cut for a grid of
(boundary_cost, min_word_gain), with where the glued pairs go (left whole, cut a word off, ...).

    python benchmarks/divergence_dev_sweep.py --pair en-de -e models/div-en-de \
        --costs 0,1,2,3,4,6 [--gains 0:4:0.25] [--tau 1]

The word set is built from LibreOffice DEV pages exactly as `bisent bench divergence` builds its
TEST set (:func:`bisent.divergence.testset.word_test_set`). Per pair the whole (p, q, a, b) tensor of
aligned scores is computed once ('align' ranking, as :func:`bisent.divergence.repair.repair_pair`; kept spans
longer than ``--tau``, default bisent.divergence.repair.TAU), so every min_word_gain of a cost is read off one
arg max. Prints one JSON line per setting.
"""

from __future__ import annotations

import argparse
import collections
import json

import numpy as np

from bisent.bench.divergence import held_out_word_set
from bisent.datasets.domains import load_domain_pairs
from bisent.divergence.cuts import sentence_boundaries
from bisent.divergence.repair import TAU
from bisent.models.divergence import load_model


def score_tensor(S: np.ndarray, r: float, tau: int = TAU) -> np.ndarray:
    """(I+1, I+1, J+1, J+1): aligned score of source p..q-1 with target a..b-1; -inf where a span has <= tau words."""
    I, J = S.shape
    rS = r * S
    A = np.zeros((J + 1, J + 1, I))                        # A[a, b, i]: Eq. 2 of source word i over targets a..b-1
    for a in range(J):
        acc = rS[:, a].copy()
        A[a, a + 1] = acc / r
        for b in range(a + 2, J + 1):
            acc = np.logaddexp(acc, rS[:, b - 1])
            A[a, b] = acc / r
    B = np.zeros((I + 1, I + 1, J))                        # B[p, q, j]: Eq. 2 of target word j over sources p..q-1
    for p in range(I):
        acc = rS[p, :].copy()
        B[p, p + 1] = acc / r
        for q in range(p + 2, I + 1):
            acc = np.logaddexp(acc, rS[q - 1, :])
            B[p, q] = acc / r
    PA = np.concatenate([np.zeros((J + 1, J + 1, 1)), np.cumsum(A, 2)], 2).transpose(2, 0, 1)   # [i, a, b]
    PB = np.concatenate([np.zeros((I + 1, I + 1, 1)), np.cumsum(B, 2)], 2)                     # [p, q, j]
    T = (PA[None] - PA[:, None]) + (PB[:, :, None, :] - PB[:, :, :, None])
    p, q, a, b = np.ogrid[:I + 1, :I + 1, :J + 1, :J + 1]
    return np.where(((q - p) > tau) & ((b - a) > tau), T, -np.inf)


def gold_cut(e) -> tuple[int, int, int, int]:
    I, J, g = len(e.src), len(e.tgt), e.info["glued"]
    if e.info["side"] == "src":
        return (g, I, 0, J) if e.info["where"] == "start" else (0, I - g, 0, J)
    return (0, I, g, J) if e.info["where"] == "start" else (0, I, 0, J - g)


def outcome(e, got) -> str:
    """exact / off1 / off2 / off3+ (glued side's edge that many words off, other side kept) / other (glued
    side right, other side trimmed) / both (both sides wrong)."""
    g = gold_cut(e)
    if got == g:
        return "exact"
    gi, oi = ((0, 1), (2, 3)) if e.info["side"] == "src" else ((2, 3), (0, 1))
    if all(got[k] == g[k] for k in oi):
        d = sum(abs(got[k] - g[k]) for k in gi)
        return "off3+" if d >= 3 else f"off{d}"
    return "other" if all(got[k] == g[k] for k in gi) else "both"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pair", default="en-de")
    ap.add_argument("-e", "--model", required=True)
    ap.add_argument("--costs", default="0,1,2,3,4,6")
    ap.add_argument("--gains", default="0:4:0.25", help="start:stop:step of min_word_gain")
    ap.add_argument("--tau", type=int, default=TAU, help="both kept spans longer than this (the paper: 3)")
    args = ap.parse_args()
    s, t = args.pair.split("-")
    rows = [(p.doc, p.pid, p.src, p.tgt) for p in load_domain_pairs("libreoffice", s, t, split="dev")]
    test = [e for e in held_out_word_set(rows, "libreoffice", s, t) if e.kind in "PI"]
    model = load_model(args.model)
    costs = [float(c) for c in args.costs.split(",")]
    lo, hi, step = (float(x) for x in args.gains.split(":"))
    gains = [round(float(g), 4) for g in np.arange(lo, hi + step / 2, step)]
    decisions = []                                         # per pair: {cost: (cut, gain per removed word, core ok)}
    for e in test:
        I, J = len(e.src), len(e.tgt)
        d = {}
        if I > args.tau and J > args.tau:
            T = score_tensor(model.pair_scores(e.src, e.tgt), model.r, args.tau)
            bs, bt = sentence_boundaries(e.src), sentence_boundaries(e.tgt)
            for c in costs:
                cs, ct = np.where(bs, 0.0, c), np.where(bt, 0.0, c)
                C = (T - cs[:, None, None, None] - cs[None, :, None, None] - ct[None, None, :, None]
                     - ct[None, None, None, :])
                p, q, a, b = (int(x) for x in np.unravel_index(int(np.argmax(C)), C.shape))
                removed = I + J - (q - p) - (b - a)
                if removed:
                    d[c] = ((p, q, a, b), float(C[p, q, a, b] - T[0, I, 0, J]) / removed,
                            T[p, q, a, b] / ((q - p) + (b - a)) > 0)
        decisions.append(d)
    for c in costs:
        for g in gains:
            n = collections.Counter()
            clean = cut = 0
            for e, d in zip(test, decisions):
                x = d.get(c)
                cutting = x is not None and x[2] and x[1] > g
                if e.kind == "P":
                    clean += 1
                    cut += cutting
                else:
                    n[outcome(e, x[0]) if cutting else "left whole"] += 1
            glued = sum(n.values())
            print(json.dumps({"pair": args.pair, "split": "dev", "model": args.model, "tau": args.tau,
                              "boundary_cost": c,
                              "min_word_gain": g, "glued": glued, "clean": clean,
                              "restored_exactly": round(n["exact"] / glued, 4), "clean_cut": round(cut / clean, 4),
                              "glued_outcomes": {k: round(v / glued, 4) for k, v in sorted(n.items())
                                                 if k != "exact"}}),
                  flush=True)


if __name__ == "__main__":
    main()
