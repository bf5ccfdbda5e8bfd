"""How far encoders are from a reference (use-m3) on every recovery set: the out-of-domain check.

Reads ``recover.jsonl`` records (``bisent bench recover ... -e use-m3 -e MODEL``), takes each encoder's latest
per (domain, pair) for one score (CSLS) beside use-m3's on the same pairs, and per encoder reports over the directions
where both ran: the mean error, the directions more than ``--points`` behind the reference, the points behind summed
over the directions where it is behind, and, from the records' item-by-item comparison (``paired_*``, in
records that have them), how many directions it is significantly behind or ahead (exact sign test, p < 0.05).
A set of 300 items moves a third of a point per item, so "more than 1 point behind" on one set can be
three items of noise; the paired columns say which gaps the sets can tell apart. ``--resample N`` says how
often the target "within ``--points`` of the reference on every direction" holds on test sets of the same
sizes drawn again (:func:`target_chance`): for this encoder as measured, and for one exactly as good as the
reference on every set.

``--recommend`` prints, per domain and language pair (LibreOffice help included), which of the two to use there
(:func:`recommend`): the encoder unless it is more than ``--points`` or significantly behind the reference in either
direction.

    python benchmarks/gaps.py -e models/student-general [-e ...] [--results benchmarks/results] [--list] [--resample N]
        [--recommend]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

from bisent.errors import BisentError

DIRECTIONS = ("src_tgt", "tgt_src")


def load_records(paths: list[Path], score: str = "csls") -> list[dict]:
    """The test-split records with ``score`` in the recover files ``paths``, in file order (a missing file or a
    line that is not JSON is an error)."""
    out = []
    for path in paths:
        if not path.is_file():
            raise BisentError(f"{path}: no such recover records file")
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                except json.JSONDecodeError as e:
                    raise BisentError(f"{path}:{n}: not a JSON record ({e.msg})") from None
                if r.get("score") == score and r.get("split", "test") == "test":
                    out.append(r)
    return out


def gaps(records: list[dict], encoder: str, reference: str = "use-m3", points: float = 1.0, alpha: float = 0.05,
         exclude_domains: tuple[str, ...] = ("libreoffice",)) -> dict:
    """One encoder's gaps to ``reference`` over every (domain, pair, direction): the encoder's latest record
    against the reference's latest on the same pairs (the same ``set``, the pairs' fingerprint; records
    without one pair up with each other), domains in ``exclude_domains`` left out (the
    general student trained on LibreOffice help: in domain). ``rows``: every direction compared."""
    mine, ref_by_set = {}, {}
    for r in records:                                                   # later records replace earlier ones
        where = (r.get("domain", "libreoffice"), r["pair"])
        if r["encoder"] == encoder:
            mine[where] = r
        if r["encoder"] == reference:
            ref_by_set[(*where, r.get("set"))] = r
    rows = []
    for (domain, pair), r in sorted(mine.items()):
        ref = ref_by_set.get((domain, pair, r.get("set")))
        if ref is None or domain in exclude_domains:
            continue
        for d in DIRECTIONS:
            paired = r.get(f"paired_{d}") if r.get("vs") == reference else None
            rows.append({"domain": domain, "pair": pair, "direction": d, "n": r["n"], "error": r[f"error_{d}"],
                         "ref_error": ref[f"error_{d}"], "gap": round(r[f"error_{d}"] - ref[f"error_{d}"], 2),
                         "paired": paired})
    tested = [x for x in rows if x["paired"] is not None]
    return {"encoder": encoder, "reference": reference, "directions": len(rows),
            "mean_error": round(sum(x["error"] for x in rows) / len(rows), 2) if rows else None,
            "ref_mean_error": round(sum(x["ref_error"] for x in rows) / len(rows), 2) if rows else None,
            f"behind_more_than_{points:g}": [x for x in rows if x["gap"] > points],
            "points_behind_summed": round(sum(max(x["gap"], 0) for x in rows), 2),
            "paired_directions": len(tested),
            "significantly_behind": [x for x in tested if x["paired"]["p"] < alpha and x["paired"]["gap"] > 0],
            "significantly_ahead": [x for x in tested if x["paired"]["p"] < alpha and x["paired"]["gap"] < 0],
            "rows": rows}


def target_chance(rows: list[dict], points: float = 1.0, draws: int = 10000, seed: int = 0, top: int = 5) -> dict:
    """How often "no direction more than ``points`` behind" would hold on test sets drawn again, from the
    directions' item-by-item counts (``rows`` of :func:`gaps`, every one with ``paired``).

    Only the items exactly one of the two encoders gets wrong move the gap, so a set of n items is three cells:
    only this wrong (b), only the reference wrong (c), the rest. A set drawn again is a multinomial draw of n
    items over the three cells, its gap ``100 (b* - c*) / n``. ``as_measured`` draws with the measured shares
    (b / n, c / n): a paired bootstrap, the chance that the same encoder meets the target on fresh test sets of
    these sizes. ``if_equal`` splits the discordant items evenly ((b + c) / 2n each): the chance for an encoder
    exactly as good as the reference on every set. Each gives the share of draws in which the target holds
    (``target_met``; 0 means none of ``draws``) and the mean number of directions more than ``points`` behind.
    The directions are drawn independently; the two directions of one pair share their items, so this is an
    approximation. Training noise (another seed) is not in it.
    ``likeliest_misses``: the ``top`` directions most often more than ``points`` behind in the measured draws."""
    if not rows:
        raise BisentError("no directions to resample")
    if any(x["paired"] is None for x in rows):
        raise BisentError("--resample needs the item-by-item counts (paired_*) of every "
                          "direction")
    rng = np.random.default_rng(seed)
    n = np.array([x["n"] for x in rows], dtype=np.int64)                    # (R,)
    b = np.array([x["paired"]["only_this_wrong"] for x in rows], dtype=np.float64)
    c = np.array([x["paired"]["only_ref_wrong"] for x in rows], dtype=np.float64)
    out = {"draws": draws, "points": points}
    for name, (pb, pc) in (("as_measured", (b / n, c / n)), ("if_equal", ((b + c) / (2 * n),) * 2)):
        miss = np.zeros((draws, len(rows)), dtype=bool)                     # (D, R) more than `points` behind
        for i in range(len(rows)):
            cells = rng.multinomial(n[i], [pb[i], pc[i], max(1.0 - pb[i] - pc[i], 0.0)], size=draws)   # (D, 3)
            miss[:, i] = 100.0 * (cells[:, 0] - cells[:, 1]) / n[i] > points + 1e-9
        out[name] = {"target_met": round(float(np.mean(~miss.any(axis=1))), 4),
                     "mean_directions_behind": round(float(miss.sum(axis=1).mean()), 2)}
        if name == "as_measured":
            share = miss.mean(axis=0)                                       # (R,)
            order = np.argsort(-share, kind="stable")[:top]
            out["likeliest_misses"] = [{**{k: rows[i][k] for k in ("domain", "pair", "direction", "n", "gap")},
                                        "share_behind": round(float(share[i]), 4)} for i in order if share[i] > 0]
    return out


def recommend(rows: list[dict], points: float = 1.0, alpha: float = 0.05) -> list[dict]:
    """Per (domain, pair) of :func:`gaps`'s ``rows`` (both directions): which of the two encoders to use there.
    The encoder is chosen (``use: "this"``) where in neither direction it is more than ``points`` behind the
    reference or significantly behind it (exact sign test on the same items, p < ``alpha``); else the reference.
    ``why`` says how it stands: ahead significantly, within ``points``, or how far behind and in which direction."""
    by_set: dict[tuple[str, str], list[dict]] = {}
    for x in rows:
        by_set.setdefault((x["domain"], x["pair"]), []).append(x)
    out = []
    for (domain, pair), xs in by_set.items():
        behind, ahead = [], []
        for x in xs:
            p = x["paired"]
            sig = p is not None and p["p"] < alpha
            if x["gap"] > points or (sig and p["gap"] > 0):
                behind.append(f"{_arrow(x)} {x['gap']:+.2f}" + (f" (p = {p['p']})" if p else ""))
            elif sig and p["gap"] < 0:
                ahead.append(_arrow(x))
        why = ("behind: " + "; ".join(behind) if behind else
               "ahead, significantly: " + ", ".join(ahead) if ahead else f"within {points:g} point(s)")
        out.append({"domain": domain, "pair": pair, "use": "reference" if behind else "this", "why": why,
                    "n": xs[0]["n"], "errors": {x["direction"]: (x["error"], x["ref_error"]) for x in xs}})
    return out


def _arrow(x: dict) -> str:
    src, tgt = x["pair"].split("-", 1)
    return f"{src}->{tgt}" if x["direction"] == "src_tgt" else f"{tgt}->{src}"


def _line(x: dict) -> str:
    s = f"  {x['domain']} {_arrow(x)}: {x['error']:.2f} against {x['ref_error']:.2f} (n={x['n']})"
    p = x["paired"]
    if p:
        s += (f"; only this wrong on {p['only_this_wrong']}, only the reference on {p['only_ref_wrong']}, "
              f"gap 95 % interval [{p['gap_ci95'][0]}, {p['gap_ci95'][1]}], p = {p['p']}")
    return s


def _print_recommendation(enc: str, reference: str, recs: list[dict]) -> None:
    """:func:`recommend`'s rows as a markdown table, errors src->tgt / tgt->src."""
    print(f"| domain | pair | n | {reference} | {enc} | use | why |")
    print("|---|---|---|---|---|---|---|")
    for r in recs:
        e = r["errors"]
        ref = " / ".join(f"{e[d][1]:.2f}" for d in DIRECTIONS if d in e)
        this = " / ".join(f"{e[d][0]:.2f}" for d in DIRECTIONS if d in e)
        use = enc if r["use"] == "this" else reference
        print(f"| {r['domain']} | {r['pair']} | {r['n']} | {ref} | {this} | {use} | {r['why']} |")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-e", "--encoder", action="append", required=True, help="encoder name as recorded (repeatable)")
    ap.add_argument("--results", action="append", type=Path,
                    help="a recover.jsonl or a folder holding one (repeatable; default benchmarks/results)")
    ap.add_argument("--reference", default="use-m3")
    ap.add_argument("--score", default="csls")
    ap.add_argument("--points", type=float, default=1.0, help="count directions more than this far behind")
    ap.add_argument("--include-libreoffice", action="store_true", help="count LibreOffice help sets too")
    ap.add_argument("--list", action="store_true", help="list the directions behind and the significant ones")
    ap.add_argument("--recommend", action="store_true",
                    help="a markdown table: per domain and language pair, the encoder or the reference, and why")
    ap.add_argument("--resample", type=int, default=0, metavar="N",
                    help="draw the test sets again N times: how often the target holds (as measured, and for an "
                         "encoder as good as the reference)")
    args = ap.parse_args(argv)
    paths = [p / "recover.jsonl" if p.is_dir() else p for p in (args.results or [Path("benchmarks/results")])]
    try:
        if args.resample < 0:
            raise BisentError(f"--resample {args.resample}: the number of draws must be 0 (none) or more")
        records = load_records(paths, args.score)
        for enc in args.encoder:
            g = gaps(records, enc, args.reference, args.points,
                     exclude_domains=() if args.include_libreoffice else ("libreoffice",))
            if not g["directions"]:
                raise BisentError(f"-e {enc}: no {args.score} recover record beside {args.reference}'s in "
                                  + ", ".join(map(str, paths)))
            behind = g[f"behind_more_than_{args.points:g}"]
            print(json.dumps({k: (len(v) if isinstance(v, list) else v) for k, v in g.items() if k != "rows"}))
            if args.list:
                for title, xs in ((f"more than {args.points:g} point(s) behind", behind),
                                  ("significantly behind", g["significantly_behind"]),
                                  ("significantly ahead", g["significantly_ahead"])):
                    print(f" {title}: {len(xs)}")
                    for x in xs:
                        print(_line(x))
            if args.recommend:
                _print_recommendation(enc, args.reference,
                                      recommend(gaps(records, enc, args.reference, args.points, exclude_domains=())
                                                ["rows"], args.points))
            if args.resample > 0:
                t = target_chance(g["rows"], args.points, args.resample)
                summary = {k: v for k, v in t.items() if k != "likeliest_misses"}
                print(json.dumps({"encoder": enc, "resampled": summary}))
                for x in t["likeliest_misses"]:
                    print(f"  {x['domain']} {_arrow(x)} (n={x['n']}, gap {x['gap']:+.2f}): more than "
                          f"{args.points:g} behind in {100 * x['share_behind']:.1f} % of the draws")
    except BisentError as e:
        raise SystemExit(f"bisent: error: {e}") from None
    except BrokenPipeError:                       # piped into head: stop quietly, and let the final flush go nowhere
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    main()
