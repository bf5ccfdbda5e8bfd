"""What a report's reader decides from: the summary box, the zoomed precision axis and its table, the
thresholds a grid cannot give, the pairs --precision cut, and which files of a run folder were read or skipped."""

import html as html_mod
import json
import re

import numpy as np

from bisent.calibration import Calibration
from bisent.report import calibrate, render, report_folder
from bisent.report.html import summary_box, threshold_table, threshold_text
from bisent.report.plots import precision_floor
from bisent.report.record import filter_record, folder_runs

SUMMARY = {"input": "raw.tsv", "lines": 6, "kept": 2, "rejected": 4,
           "rejected_by": {"length_ratio": 1, "cosine": 2, "select:precision": 1}}
REJECTED = [(1, "length_ratio", 2.5, "a b c", "x"), (2, "cosine", 0.1, "hello", "bye"),
            (4, "cosine", 0.2, "p", "q"), (5, "select:precision", 0.55, "cut <b>me</b>", "weg")]


def _cal(precision, kept, thresholds=None) -> Calibration:
    th = thresholds if thresholds is not None else [round(-0.1 + 0.1 * i, 6) for i in range(len(precision))]
    return Calibration(th, precision, kept, pi0=0.2, shift=0.0, n_scores=max(kept), n_negatives=50)


def test_threshold_for_90_is_not_the_bottom_of_a_grid_that_never_reaches_it():
    never = _cal([0.5, 0.6, 0.7, 0.8, 1.0], [100, 80, 60, 40, 0])      # 1.0 only where nothing is kept
    assert never.threshold_for(0.9) is None
    assert threshold_text(never, 0.9) == "not reached"
    everywhere = _cal([0.93, 0.95, 0.97, 0.99], [100, 80, 60, 40])
    assert threshold_text(everywhere, 0.9).startswith("every pair (already 93.0 %")
    assert threshold_text(everywhere, 0.96) == "0.1000"


def test_precision_axis_zooms_on_the_decision():
    # 1 000 pairs, precision 97-100 % wherever at least half are kept: the axis starts at 80, not 0
    assert precision_floor([0.97, 0.98, 0.99, 1.0], [1000, 800, 500, 10]) == 80.0
    # a poorer run: 62 % over all pairs; the axis starts at 60 (and below a precision asked for)
    assert precision_floor([0.62, 0.8, 0.9, 0.95], [1000, 500, 300, 10]) == 60.0
    assert precision_floor([0.97, 0.99], [10, 5], target=0.8) == 75.0


def test_filter_report_summary_table_and_cut_pairs(tmp_path):
    rng = np.random.default_rng(0)
    scores = np.concatenate([rng.normal(0.2, 0.1, 300), rng.normal(0.8, 0.05, 700)])
    cal = calibrate(scores, rng.normal(0.2, 0.1, 500))
    th = cal.threshold_for(0.95)
    rec = filter_record(SUMMARY, REJECTED, score_step="cosine", kept_scores=np.array([0.8, 0.9]),
                        kept_texts=[("one", "eins"), ("two", "zwei")], threshold=th, calibration=cal,
                        precision_target=0.95, params={"input": "raw<x>.tsv"})
    series = rec["histogram"]["series"]
    assert sum(series["removed by --precision"]) == 1                  # the cut pair is in the histogram, marked
    assert "select:precision" not in rec["other_scores"] and "select:precision" not in rec["rejected_samples"]
    assert "select:precision" in {r["decided"] for b in rec["samples"] for r in b["rows"]}
    box = summary_box(rec)
    for text in ("raw&lt;x&gt;.tsv", "input lines", "cosine: 2", "length_ratio: 1", "select:precision: 1",
                 f"{100 * cal.precision_at(th):.1f} %", f"{th:.4f}", "--precision"):
        assert text in box, text
    table = threshold_table(cal, th)
    rows = re.findall(r"<tr[^>]*><td class=num>(-?[0-9.]+)</td><td class=num>([0-9.]+) %</td>"
                      r"<td class=num>([0-9,]+)</td>", table)
    assert len(rows) >= 3
    ths = [float(t) for t, _, _ in rows]
    assert ths == sorted(ths) and any(abs(t - th) < 1e-4 for t in ths)
    kept = [int(k.replace(",", "")) for _, _, k in rows]
    assert kept == sorted(kept, reverse=True) and kept[0] == 1000
    prec = [float(p) for _, p, _ in rows]
    assert prec == sorted(prec)
    page = render([("kept.tsv", rec)], tmp_path / "r.html").read_text()
    assert page.index("Summary") < page.index("<svg")                   # the answer first
    assert "cut <b>me</b>" not in page and html_mod.escape("cut <b>me</b>") in page
    lo = precision_floor(cal.precision, cal.kept, 0.95)
    assert 0 < lo <= 80 and f"Left axis (from {lo:.0f} %" in page
    assert "threshold for 90 % estimated precision" in page


def _run_folder(tmp_path):
    run = tmp_path / "run"
    (run / "filter").mkdir(parents=True)
    (run / "align").mkdir()
    (run / "candidates.tsv").write_text("0.9\tone\teins\n0.8\ttwo\tzwei\n")
    (run / "candidates.ids.tsv").write_text("0\t0\n1\t0\n")
    (run / "bitext.tsv").write_text("0.9\tone\teins\n")
    (run / "bitext.ids.tsv").write_text("0\t0\n")
    (run / "summary.json").write_text(json.dumps({"kept": 1}))
    (run / "manifest.json").write_text("{}")
    (run / "align" / "summary.jsonl").write_text("{}\n")
    (run / "filter" / "kept.tsv").write_text("0.9\tone\teins\n")
    (run / "filter" / "rejected.tsv").write_text("2\tcosine\t0.1\ttwo\tzwei\n")
    (run / "filter" / "summary.json").write_text(json.dumps({
        "kept_file": str(run / "filter" / "kept.tsv"), "rejected_file": str(run / "filter" / "rejected.tsv"),
        "lines": 2, "kept": 1, "rejected": 1, "rejected_by": {"cosine": 1},
        "pipeline": {"steps": [{"type": "cosine"}]}}))
    return run


def test_report_dir_reads_run_subfolders_and_says_what_it_skipped(tmp_path):
    run = _run_folder(tmp_path)
    records, skipped = folder_runs(run)
    kinds = {n: r["kind"] for n, r in records}
    assert kinds == {"filter/summary": "filter", "candidates.tsv": "mining", "bitext.tsv": "mining"}
    why = dict(skipped)
    assert "ids" in why["candidates.ids.tsv"] and "ids" in why["bitext.ids.tsv"]
    assert {"summary.json", "manifest.json", "align/summary.jsonl"} <= set(why)
    assert "filter/rejected.tsv" not in why and "filter/kept.tsv" not in why   # read with the filter run
    # a record in filter/ (as `bisent run --report` writes it) is read, and the summary beside it not twice
    rec = filter_record({"lines": 2, "kept": 1, "rejected": 1, "rejected_by": {"cosine": 1},
                         "kept_file": "kept.tsv", "rejected_file": "rejected.tsv"},
                        [(2, "cosine", 0.1, "two", "zwei")], score_step="cosine")
    (run / "filter" / "kept.tsv.report.json").write_text(json.dumps(rec))
    records, skipped = folder_runs(run)
    assert sorted(n for n, _ in records) == ["bitext.tsv", "candidates.tsv", "filter/kept.tsv"]
    page = report_folder(run, tmp_path / "r.html").read_text()
    assert "(mining)" in page and page.count("(filter)") == 1
    assert "Files not reported" in page and "candidates.ids.tsv" in page


def test_a_lone_rejected_file_is_not_a_mining_run(tmp_path):
    (tmp_path / "mined.tsv").write_text("0.9\tone\teins\n")
    (tmp_path / "rej.tsv").write_text("7\tcosine\t0.1\tx\ty\n")
    (tmp_path / "odd<i>.txt").write_text("hello")
    records, skipped = folder_runs(tmp_path)
    assert [n for n, _ in records] == ["mined.tsv"]
    assert dict(skipped)["rej.tsv"].startswith("rejected lines")
    page = report_folder(tmp_path, tmp_path / "r.html").read_text()
    assert "odd&lt;i&gt;.txt" in page and "odd<i>" not in page
