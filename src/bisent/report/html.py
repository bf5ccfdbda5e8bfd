"""One self-contained HTML file from run records: inline SVG figures, inline CSS, no script, no network."""

from __future__ import annotations

import html
import json
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from ..io import atomic_write
from . import plots

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1000px;margin:1.5em auto;padding:0 1em;
color:#1a202c;line-height:1.45}
h1{font-size:1.5em;margin-bottom:.2em}
h2{font-size:1.2em;border-bottom:1px solid #cbd5e0;padding-bottom:.2em;margin-top:2em}
h3{font-size:1.02em;margin:1.2em 0 .3em}
.muted{color:#4a5568;font-size:.9em}
table{border-collapse:collapse;font-size:.85em;margin:.4em 0;width:100%}
td,th{border:1px solid #e2e8f0;padding:3px 6px;vertical-align:top;text-align:left}
th{background:#f7fafc}td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
.kv td:first-child{width:32%;color:#4a5568}
figure{margin:.6em 0}figure svg{max-width:100%;height:auto}
figcaption{font-size:.85em;color:#4a5568}
.box{background:#f7fafc;border-left:4px solid #2b6cb0;padding:.5em .9em;margin:.6em 0}
details{margin:.3em 0}summary{cursor:pointer}
"""

HOW = {
    "both ways": "each is the other's best candidate (forward and backward)",
    "forward only": "the target is the source's best candidate, not the other way",
    "backward only": "the source is the target's best candidate, not the other way",
}


def _e(x) -> str:
    return html.escape(str(x), quote=True)


def _kv(d: dict) -> str:
    rows = "".join(f"<tr><td>{_e(k)}</td><td>{_e(v if not isinstance(v, (dict, list)) else json.dumps(v))}</td></tr>"
                   for k, v in d.items() if v is not None)
    return f'<table class="kv">{rows}</table>' if rows else ""


def _fig(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{_e(caption)}</figcaption></figure>"


#: kind -> (x label, what is scored, histogram caption) of the runs that carry labels, not a calibration
LABELLED = {
    "docs": ("score of the document pair", "documents",
             "Each source document's score: matched, and unmatched below the threshold (documents left without "
             "a candidate or empty have no score and are only counted)."),
    "align": ("cosine of the aligned groups", "alignment blocks",
              "Score of each aligned block by its type (source-target sentences); unaligned lines (1-0, 0-1) have "
              "no score and are only counted."),
}


def _fmt(v) -> str:
    return "" if v is None else f"{v:.4f}" if isinstance(v, float) else _e(v)


def _samples(rec: dict) -> str:
    out = []
    for band in rec.get("samples") or []:
        rows = band["rows"]
        if not rows:
            continue
        extra = [k for k in rows[0] if k not in ("score", "src", "tgt")]
        head = ("<tr><th>score</th>" + "".join(f"<th>{_e(k)}</th>" for k in extra)
                + "<th>source</th><th>target</th></tr>")
        body = "".join("<tr><td class=num>" + _fmt(r["score"]) + "</td>"
                       + "".join(f"<td>{_e(r[k])}</td>" for k in extra)
                       + f"<td>{_e(r['src'])}</td><td>{_e(r['tgt'])}</td></tr>" for r in rows)
        out.append(f"<h3>scores {band['high']:.4f} down to {band['low']:.4f} ({band['pairs']:,} pairs)</h3>"
                   f"<table>{head}{body}</table>")
    return "".join(out) or "<p class=muted>No pairs.</p>"


def _calibration(rec: dict, xlabel: str) -> str:
    cal = rec.get("calibration")
    th = rec.get("threshold")
    target = rec.get("precision_target")
    if cal and cal["thresholds"]:
        from ..calibration import Calibration

        c = Calibration(**cal)
        svg = plots.precision_yield(c.thresholds, c.precision, c.kept, title="Estimated precision and yield",
                                    xlabel=xlabel, threshold=th, target=target)
        facts = {"estimated share of false pairs among all scored (pi0)": f"{100 * c.pi0:.1f} %",
                 "synthetic negatives scored": c.n_negatives, "scores calibrated": c.n_scores,
                 "shift of the synthetic negatives' scores": c.shift}
        if th is not None:
            facts["estimated precision at the threshold"] = f"{100 * c.precision_at(th):.1f} %"
        for p in (0.9, 0.95, 0.98):
            facts[f"threshold for {100 * p:.0f} % estimated precision"] = threshold_text(c, p)
        text = ("<p class=muted>No gold was used. The scores of false pairs are modelled by synthetic negatives "
                "made from this corpus and scored by the same scorer (mining, of sentences or documents: the best "
                "free competitor of a confident pair once its partner is taken away; filtering: shuffled, neighbour, "
                "truncated, glued and copied "
                "pairs put through the same pipeline; sentence alignment: two neighbouring blocks' sources glued "
                "against the first one's target, and a block's source against another block's target of the same "
                "document); a mixture of that negative density and a Gaussian for the "
                "true pairs is fitted to the run's scores. Checked against gold on the LibreOffice benchmarks by "
                "<code>bisent bench calibration</code>.</p>")
        if rec.get("kind") == "align":
            text += ("<p>Alignment blocks: on LibreOffice help pages with untranslated and merged paragraphs "
                     "(<code>bisent bench calibration</code>, align setting) the estimate was within 4 points of the "
                     "precision measured against gold blocks, above it at all but the lowest thresholds.</p>")
        if rec.get("kind") == "docs":
            text += ("<p><strong>Documents: read this curve as optimistic.</strong> In every check against gold so far "
                     "(<code>bisent bench calibration</code>, docs setting, and a mixed GNOME/GIMP run in the README) "
                     "the estimate was above the measured precision: false matches between similar pages that have no "
                     "translation are not like the synthetic negatives.</p>")
        lo = plots.precision_floor(c.precision, c.kept, target)
        return _fig(svg, f"Left axis (from {lo:.0f} %, where the thresholds that keep at least half of the pairs "
                         "are): estimated precision of the pairs scoring at least the threshold; right axis: "
                         "how many pairs that keeps. Dashed: the threshold of this run; dotted: the precision asked "
                         "for.") \
            + threshold_table(c, th) + text + _kv(facts)
    y = rec.get("yield") or {}
    svg = plots.precision_yield(y.get("thresholds", []), [], y.get("kept", []), title="Yield against the threshold",
                                xlabel=xlabel, threshold=th)
    if rec.get("kind") in LABELLED:
        return _fig(svg, "Items scoring at least the threshold.")
    note = ("<p class=muted>No calibration in this record: it needs the run itself (rerun with <code>--report</code>, "
            "and <code>--precision P</code> to set the threshold from it) and at least two scores.</p>")
    return _fig(svg, "Pairs kept against the threshold.") + note


def threshold_text(c, p: float) -> str:
    """The lowest threshold of calibration ``c`` reaching estimated precision ``p``, in words: "not reached" where
    no threshold that keeps a pair does, and "every pair" where the lowest score already does (the grid's bottom
    is then no threshold anyone chose)."""
    t = c.threshold_for(p)
    if t is None:
        return "not reached"
    if t <= c.thresholds[0]:
        return f"every pair (already {100 * c.precision[0]:.1f} % at the lowest score, {t:.4f})"
    return f"{t:.4f}"


#: Estimated precisions the threshold table gives a row for (besides the run's own threshold)
TABLE_LEVELS = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.97, 0.98, 0.99)


def threshold_table(c, th: float | None) -> str:
    """Threshold -> estimated precision -> pairs kept, at the lowest threshold reaching each of
    :data:`TABLE_LEVELS` and at the run's threshold (marked): the choice in numbers, not read off a curve."""
    total = max(c.kept) if c.kept else 0
    rows: dict[float, str] = {}
    for p in TABLE_LEVELS:
        t = c.threshold_for(p)
        if t is not None and t > c.thresholds[0]:
            rows.setdefault(t, f"lowest reaching {100 * p:.0f} %")
    rows.setdefault(c.thresholds[0], "lowest score (every pair)")
    if th is not None:
        rows[th] = "this run's threshold"
    th_ = np.asarray(c.thresholds)

    def kept_at(t):
        return c.kept[max(int(np.searchsorted(th_, t, side="right")) - 1, 0)] if t >= th_[0] else total

    body = "".join(
        f"<tr{' style=font-weight:bold' if t == th else ''}><td class=num>{t:.4f}</td>"
        f"<td class=num>{100 * c.precision_at(t):.1f} %</td><td class=num>{kept_at(t):,}</td>"
        f"<td class=num>{_pct(kept_at(t) / total if total else None)}</td><td>{_e(why)}</td></tr>"
        for t, why in sorted(rows.items()))
    return ("<table><tr><th>threshold</th><th>estimated precision</th><th>pairs kept</th><th>of all scored</th>"
            f"<th></th></tr>{body}</table>")


def _how_chosen(rec: dict) -> str:
    kind, th = rec.get("kind"), rec.get("threshold")
    if th is None:
        return "no threshold: every pair kept"
    if rec.get("precision_target") is not None:
        return f"the lowest reaching {100 * rec['precision_target']:.1f} % estimated precision (--precision)"
    if kind == "filter":
        return f"the bound of step '{rec.get('score_step')}' in the filter configuration"
    return "given to the command (--threshold, or its default)"


def summary_box(rec: dict) -> str:
    """What a reader decides from, first: input, kept, rejected by reason, estimated precision, the threshold
    and how it was chosen."""
    kind, counts, s = rec.get("kind"), rec.get("counts") or {}, rec.get("summary") or {}
    params = rec.get("params") or {}
    facts: dict = {"input": params.get("input") or s.get("input")}
    if kind == "mining":
        got, kept = counts.get("retrieved", 0), counts.get("kept", 0)
        facts.update({"pairs retrieved": f"{got:,}", "kept": f"{kept:,}",
                      "rejected": f"{got - kept:,} (below the threshold)" if got else None})
    elif kind == "filter":
        by = sorted(((k, v) for k, v in counts.items() if k != "kept"), key=lambda kv: -kv[1])
        reasons = " (" + ", ".join(f"{k}: {v:,}" for k, v in by) + ")" if by else ""
        facts.update({"input lines": f"{s.get('lines', 0):,}", "kept": f"{s.get('kept', counts.get('kept', 0)):,}",
                      "rejected": f"{s.get('rejected', sum(v for _, v in by)):,}{reasons}"})
    else:
        facts.update({k: f"{v:,}" for k, v in counts.items()})
    cal, th = rec.get("calibration"), rec.get("threshold")
    if cal and cal.get("thresholds") and th is not None:
        from ..calibration import Calibration
        facts["estimated precision (no gold)"] = f"{100 * Calibration(**cal).precision_at(th):.1f} %"
    else:
        facts["estimated precision (no gold)"] = "not calibrated"
    facts["threshold"] = "none" if th is None else _fmt(th)
    facts["threshold chosen as"] = _how_chosen(rec)
    return '<div class="box"><b>Summary</b>' + _kv(facts) + "</div>"


def _pct(x) -> str:
    return "" if x is None else f"{100 * x:.1f} %"


def review_html(rv: dict) -> str:
    """What the labels of ``bisent review`` say (its summary): measured precision per band beside the
    no-gold estimate, and the thresholds the labels give."""
    rows = "".join(
        f"<tr><td class=num>{b['band']}</td><td class=num>{b['high']:.4f} to {b['low']:.4f}</td>"
        f"<td class=num>{b['pairs']:,}</td><td class=num>{b['labelled']} / {b['sampled']}</td>"
        f"<td class=num>{_pct(b['precision'])}</td>"
        f"<td class=num>{'' if not b['interval'] else _pct(b['interval'][0]) + ' to ' + _pct(b['interval'][1])}</td>"
        f"<td class=num>{_pct(b.get('estimated'))}</td></tr>" for b in rv.get("bands", []))
    def span(t) -> str:
        ti = t.get("threshold_interval")
        return "" if not ti else f"{_fmt(ti[0])} to {'not reached' if ti[1] is None else _fmt(ti[1])}"

    def there(t) -> str:
        iv = t.get("interval")
        return "" if not iv else f"{_pct(t['measured'])} ({_pct(iv[0])} to {_pct(iv[1])})"

    ths = "".join(
        f"<tr><td class=num>{_pct(t['precision'])}</td><td class=num>"
        f"{'not reached' if t.get('threshold') is None else _fmt(t['threshold'])}</td><td class=num>{span(t)}"
        f"</td><td class=num>{there(t)}</td><td class=num>{_pct(t.get('estimated'))}</td></tr>"
        for t in rv.get("thresholds", []))
    return (f"<h3>Checked by eye: {rv.get('labelled', 0):,} of {rv.get('sample', 0):,} sampled pairs labelled</h3>"
            f"<p class=muted>Labels of <code>bisent review</code> ({_e(rv.get('labels', ''))}): measured precision is "
            "parallel / (parallel + not + partial) of the labelled pairs of each score band; the interval is Wilson's "
            "at 95 %, finite-population corrected.</p>"
            "<table><tr><th>band</th><th>scores</th><th>pairs</th><th>labelled</th><th>measured precision</th>"
            f"<th>95 % interval</th><th>no-gold estimate</th></tr>{rows}</table>"
            "<table><tr><th>precision asked for</th><th>threshold from the labels</th><th>threshold interval</th>"
            f"<th>measured precision there</th><th>no-gold estimate there</th></tr>{ths}</table>"
            + partial_html(rv.get("partial")))


def partial_html(pt: dict | None) -> str:
    """The pairs labelled partial, for the repair step: their share, and what `bisent repair` would cut."""
    if not pt or not pt.get("labelled"):
        return ""
    iv = pt.get("interval") or [None, None]
    head = (f"<h3>Labelled partial: {pt['labelled']:,} of {pt['judged']:,} judged pairs "
            f"({_pct(pt.get('share'))}, 95 % interval {_pct(iv[0])} to {_pct(iv[1])})</h3>")
    step = pt.get("repair_step")
    if step is None:
        note = ("<p class=muted>This run has no <code>repair</code> step. A divergence model's repair step, or "
                "<code>bisent repair</code>, cuts such pairs back to their parallel core.</p>")
    else:
        note = (f"<p class=muted>The run's repair step <code>{_e(step['name'])}</code> ({_e(step['model'])}) left "
                f"these whole; <code>bisent repair</code> with every shape of cut would cut "
                f"{pt.get('would_cut', 0):,} of them (below).</p>")
    def repair(r: dict) -> str:
        cut = f": {_e(r['src'])} ||| {_e(r['tgt'])}" if r["status"] == "cut" else ""
        return f"<td>{_e(r['status'])}{cut}</td>"

    rows = "".join(
        f"<tr><td class=num>{_e(p['key'])}</td><td class=num>{_fmt(p['score'])}</td><td>{_e(p['src'])}</td>"
        f"<td>{_e(p['tgt'])}</td>" + ("" if step is None else repair(p["repair"])) + "</tr>" for p in pt["pairs"])
    cols = "<th>pair</th><th>score</th><th>source</th><th>target</th>" + ("" if step is None else "<th>repair</th>")
    return f"{head}{note}<table><tr>{cols}</tr>{rows}</table>"


def _explanations(rec: dict) -> str:
    out = []
    for ex in rec.get("explanations") or []:
        out.append(explanation_html(ex))
    return "".join(out)


def explanation_html(ex: dict) -> str:
    """One pair's explanation: scores, competitors both ways, the deciding filter step, the alignment slot."""
    scores = {k: ex.get(k) for k in ("cosine", "ratio_margin", "distance_margin", "csls", "r_src", "r_tgt")}
    bg = ex.get("background")
    where = (f"<p class=muted>Encoder {_e(ex.get('encoder'))}, k = {_e(ex.get('k'))}, competitors among "
             f"{bg['src']:,} source and {bg['tgt']:,} target sentences of the background.</p>" if bg else "")
    parts = [f"<h3>{_e(ex['src'])}<br>↔ {_e(ex['tgt'])}</h3>", where, _kv({k: _fmt(v) for k, v in scores.items()})]
    for side, label in (("src_competitors", "nearest targets of the source"),
                        ("tgt_competitors", "nearest sources of the target")):
        comp = ex.get(side) or []
        if comp:
            rows = "".join(f"<tr><td class=num>{c['rank']}</td><td class=num>{c['cosine']:.4f}</td>"
                           f"<td class=num>{_fmt(c.get('margin'))}</td><td>{'◀ this pair' if c.get('is_pair') else ''}"
                           f"</td><td>{_e(c['text'])}</td></tr>" for c in comp)
            parts.append(f"<details open><summary>{label}</summary><table><tr><th>rank</th><th>cosine</th>"
                         f"<th>ratio margin</th><th></th><th>text</th></tr>{rows}</table></details>")
    if ex.get("filter"):
        f = ex["filter"]
        parts.append(f"<p>Filter: <b>{'kept' if f['kept'] else 'rejected by ' + _e(f['reason'])}</b>"
                     f"{'' if f.get('score') is None else ', score ' + _fmt(f['score'])}"
                     f"{'' if not f.get('steps') else ' (' + _e(', '.join(f['steps'])) + ')'}</p>")
    al = ex.get("alignment")
    if al and al.get("matrix"):
        parts.append(_fig(plots.heatmap(al["matrix"], al["src_words"], al["tgt_words"], title="Word alignment S(i, j)"),
                          "S(i, j) = h_i · h_j of the divergence model: bright where a source word and a target word "
                          "align; a row or column with no bright cell is a word without a counterpart."))
    else:
        parts.append(f"<p class=muted>Word alignment heat map: {_e((al or {}).get('note', 'not available'))}</p>")
    return '<div class="box">' + "".join(parts) + "</div>"


def _at_threshold(rec: dict) -> dict:
    cal, th = rec.get("calibration"), rec.get("threshold")
    out = {}
    if rec.get("precision_target") is not None:
        out["precision asked for"] = f"{100 * rec['precision_target']:.1f} %"
    if cal and cal["thresholds"] and th is not None:
        from ..calibration import Calibration
        out["estimated precision at the threshold (no gold)"] = f"{100 * Calibration(**cal).precision_at(th):.1f} %"
    return out


def record_html(name: str, rec: dict) -> str:
    kind = rec.get("kind")
    counts = rec.get("counts") or {}
    hist = rec.get("histogram") or {}
    th = rec.get("threshold")
    parts = [f"<h2>{_e(name)} <span class=muted>({_e(kind)})</span></h2>" + summary_box(rec),
             _kv(rec.get("params") or {})]
    if kind == "mining":
        xlabel = "score of the retrieved pair"
        parts.append(_kv({"pairs retrieved (before the threshold)": f"{counts.get('retrieved', 0):,}",
                          "pairs kept (at or above the threshold)": f"{counts.get('kept', 0):,}",
                          "threshold": th, **_at_threshold(rec)}))
        parts.append(_fig(plots.histogram(hist.get("edges", []), hist.get("series", {}),
                                          title="Scores of the retrieved pairs",
                                          xlabel=xlabel, threshold=th),
                          "Every pair the retrieval rule proposed, before the threshold, by how it was found "
                          "(" + "; ".join(f"{k}: {v}" for k, v in HOW.items()) + ")."))
        dirs = {k: v for k, v in counts.items() if k in HOW}
        if dirs:
            kept = {k: counts[f"{k}, kept"] for k in dirs if f"{k}, kept" in counts} or None
            parts.append(_fig(plots.bars(dirs, title="Pairs per retrieval direction", inner=kept,
                                         labels=("retrieved", "kept at the threshold")),
                              "Pairs retrieved per direction, and how many of them the threshold keeps."))
    elif kind in LABELLED:
        xlabel, what, caption = LABELLED[kind]
        parts.append(_kv({"threshold": th} if th is not None else {}))
        parts.append(_fig(plots.histogram(hist.get("edges", []), hist.get("series", {}), title=f"Scores of the {what}",
                                          xlabel=xlabel, threshold=th), caption))
        parts.append(_fig(plots.bars(counts, title="Counts"), "Items per outcome (documents per status; alignment "
                                                              "blocks per type and unaligned lines)."))
    else:
        xlabel = f"score of step '{rec.get('score_step')}'"
        s = rec.get("summary") or {}
        parts.append(_kv({"input lines": f"{s.get('lines', 0):,}", "kept": f"{s.get('kept', 0):,}",
                          "rejected": f"{s.get('rejected', 0):,}", "score step": rec.get("score_step"),
                          "threshold": th, **_at_threshold(rec)}))
        parts.append(_fig(plots.bars(counts, title="Lines per outcome"),
                          "Kept lines and lines rejected per reason (the step that rejected them)."))
        parts.append(_fig(plots.histogram(hist.get("edges", []), hist.get("series", {}),
                                          title="Scores at the score step",
                                          xlabel=xlabel, threshold=th, stacked=True),
                          "The pairs that reached the score step: kept, and rejected by its own bound."))
        for reason, h in (rec.get("other_scores") or {}).items():
            parts.append(_fig(plots.histogram(h["edges"], h["series"],
                                              title=f"Scores of the lines rejected by '{reason}'",
                                              xlabel=f"value of step '{reason}'"), f"What step '{reason}' measured "
                                                                                   f"on the lines it rejected."))
    # the answer first: precision and yield against the threshold (after the scores where no calibration is made)
    parts.insert(len(parts) if kind in LABELLED else 3, _calibration(rec, xlabel))
    if rec.get("warnings"):          # what the run warned of (a fallback threshold, an estimate that may run high)
        parts.insert(1, "<ul>" + "".join(f"<li><b>Warning:</b> {_e(w)}</li>" for w in rec["warnings"]) + "</ul>")
    if rec.get("review"):
        parts.append(review_html(rec["review"]))
    parts.append("<h3>Samples per score band</h3>" + _samples(rec))
    for reason, rows in (rec.get("rejected_samples") or {}).items():
        steps = bool(rows) and "steps" in rows[0]
        body = "".join(f"<tr><td class=num>{_fmt(r['score'])}</td>" + (f"<td>{_e(r['steps'])}</td>" if steps else "")
                       + f"<td>{_e(r['src'])}</td><td>{_e(r['tgt'])}</td></tr>" for r in rows)
        parts.append(f"<details><summary>rejected by {_e(reason)}: {len(rows)} samples</summary>"
                     f"<table><tr><th>score</th>{'<th>steps</th>' if steps else ''}<th>source</th><th>target</th></tr>"
                     f"{body}</table></details>")
    if rec.get("explanations"):
        parts.append("<h3>Pairs explained</h3>" + _explanations(rec))
    return "\n".join(parts)


def skipped_html(skipped: Sequence[tuple[str, str]]) -> str:
    """The files of the folder the report left out, and why (a list, not a silence)."""
    if not skipped:
        return ""
    rows = "".join(f"<tr><td>{_e(f)}</td><td>{_e(why)}</td></tr>" for f, why in skipped)
    return (f"<h2>Files not reported ({len(skipped)})</h2><details><summary>which and why</summary>"
            f"<table><tr><th>file</th><th>why</th></tr>{rows}</table></details>")


def render(records: Sequence[tuple[str, dict]], out_path, *, title: str = "bisent report",
           skipped: Sequence[tuple[str, str]] = ()) -> Path:
    """Write the report of ``records`` (``(name, record)``) to ``out_path``, with the ``(file, why)`` left out
    listed at its end; one file, nothing fetched at view time."""
    body = "\n".join(record_html(n, r) for n, r in records) or "<p>No runs.</p>"
    return render_body(body + skipped_html(skipped), out_path, title=title)


def render_body(body: str, out_path, *, title: str) -> Path:
    """Wrap ``body`` in the report's page (styles inline, a policy that forbids any fetch) and write it."""
    doc = (f"<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
           f"<meta name=viewport content='width=device-width,initial-scale=1'>"
           "<meta http-equiv=Content-Security-Policy content=\"default-src 'none'; style-src 'unsafe-inline'; img-src "
           "data:\">"
           f"<title>{_e(title)}</title><style>{CSS}</style></head><body>"
           f"<h1>{_e(title)}</h1><p class=muted>Written by bisent on {time.strftime('%Y-%m-%d %H:%M')}; "
           f"figures are inline SVG (matplotlib), the file needs no network.</p>{body}</body></html>\n")
    with atomic_write(out_path) as f:
        f.write(doc)
    return Path(out_path)
