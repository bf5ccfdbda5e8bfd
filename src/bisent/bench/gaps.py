"""How far encoders are from a reference (use-m3) on every recovery set: issue 17's out-of-domain check.

Reads ``recover.jsonl`` records (``bisent bench recover ... -e use-m3 -e MODEL``), takes each encoder's latest
per (domain, pair) for one score (CSLS) beside use-m3's on the same pairs, and per encoder reports over the directions where both ran:
the mean error, the directions more than ``--points`` behind the reference, the points behind summed over
the directions where it is behind, and, from the records' item-by-item comparison (``paired_*``, written
since session 32), how many directions it is significantly behind or ahead (exact sign test, p < 0.05).
A set of 300 items moves a third of a point per item, so "more than 1 point behind" on one set can be
three items of noise; the paired columns say which gaps the sets can tell apart.

    python benchmarks/gaps.py -e out/student-general [-e ...] [--results benchmarks/results] [--list]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from ..errors import BisentError

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
    against the reference's latest on the same pairs (the same ``set``, the pairs' fingerprint; records written
    before session 32 have none and pair up with each other), domains in ``exclude_domains`` left out (the
    general student trained on LibreOffice help: in domain)."""
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
            "significantly_ahead": [x for x in tested if x["paired"]["p"] < alpha and x["paired"]["gap"] < 0]}


def _line(x: dict) -> str:
    src, tgt = x["pair"].split("-", 1)
    arrow = f"{src}->{tgt}" if x["direction"] == "src_tgt" else f"{tgt}->{src}"
    s = f"  {x['domain']} {arrow}: {x['error']:.2f} against {x['ref_error']:.2f} (n={x['n']})"
    p = x["paired"]
    if p:
        s += (f"; only this wrong on {p['only_this_wrong']}, only the reference on {p['only_ref_wrong']}, "
              f"gap 95 % interval [{p['gap_ci95'][0]}, {p['gap_ci95'][1]}], p = {p['p']}")
    return s


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
    args = ap.parse_args(argv)
    paths = [p / "recover.jsonl" if p.is_dir() else p for p in (args.results or [Path("benchmarks/results")])]
    try:
        records = load_records(paths, args.score)
        for enc in args.encoder:
            g = gaps(records, enc, args.reference, args.points,
                     exclude_domains=() if args.include_libreoffice else ("libreoffice",))
            if not g["directions"]:
                raise BisentError(f"-e {enc}: no {args.score} recover record beside {args.reference}'s in "
                                  + ", ".join(map(str, paths)))
            behind = g[f"behind_more_than_{args.points:g}"]
            print(json.dumps({k: (len(v) if isinstance(v, list) else v) for k, v in g.items()}))
            if args.list:
                for title, xs in ((f"more than {args.points:g} point(s) behind", behind),
                                  ("significantly behind", g["significantly_behind"]),
                                  ("significantly ahead", g["significantly_ahead"])):
                    print(f" {title}: {len(xs)}")
                    for x in xs:
                        print(_line(x))
    except BisentError as e:
        raise SystemExit(f"bisent: error: {e}") from None
    except BrokenPipeError:                       # piped into head: stop quietly, and let the final flush go nowhere
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    main()
