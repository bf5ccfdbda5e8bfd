"""The report section of a distilled student (``bisent distill``'s ``distill.json``): how far it is from its teacher."""

from __future__ import annotations

from .html import _e, _kv, render_body


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _agreement_rows(pairs: list[dict]) -> str:
    rows = []
    for p in pairs:
        for name, v in p.items():
            if isinstance(v, dict):
                lo, hi = v["interval"]
                rows.append(f"<tr><td>{_e(name)}</td><td class=num>{v['queries']:,}</td>"
                            f"<td class=num>{_pct(v['agreement'])}</td><td class=num>{_pct(lo)} – {_pct(hi)}</td>"
                            f"<td class=num>{p['cosine_correlation']:.3f}</td>"
                            f"<td>{'yes' if v.get('above_bar') else 'no'}</td></tr>")
    return ("<table><tr><th>direction</th><th>held-out queries</th><th>top-1 agreement</th><th>95 % interval</th>"
            "<th>cosine correlation (pair)</th><th>above the bar</th></tr>" + "".join(rows) + "</table>")


def _line_language_rows(blocks: list[dict]) -> str:
    """Per line language of a many-language input: both directions' agreement, largest languages first."""
    out = []
    for blk in blocks:
        rows = []
        for r in blk["languages"]:
            for name, v in r.items():
                if isinstance(v, dict):
                    lo, hi = v["interval"]
                    rows.append(f"<tr><td>{_e(r['line_language'])}</td><td>{_e(name)}</td>"
                                f"<td class=num>{v['queries']:,}</td><td class=num>{v['candidates']:,}</td>"
                                f"<td class=num>{_pct(v['agreement'])}</td><td class=num>{_pct(lo)} – {_pct(hi)}</td>"
                                f"<td>{'yes' if v['above_bar'] else 'no'}</td></tr>")
        small = blk["smaller"]
        out.append(f"<h3>{_e(blk['lang'])} by the language of each line, against {_e(blk['other'])}</h3>"
                   "<p class=muted>Each line language with at least "
                   f"{blk['min_held_out']} held-out sentences: its sentences as queries against every held-out "
                   f"{_e(blk['other'])} sentence, and every {_e(blk['other'])} sentence as a query against its "
                   f"sentences alone. {small['line_languages']} smaller line language(s), {small['held_out']:,} "
                   "held-out sentences together, are in the figures above but not listed.</p>"
                   "<table><tr><th>line language</th><th>direction</th><th>queries</th><th>candidates</th>"
                   "<th>top-1 agreement</th><th>95 % interval</th><th>above the bar</th></tr>"
                   + "".join(rows) + "</table>")
    return "".join(out)


def _gold_rows(gold: list[dict]) -> str:
    if not gold:
        return "<p class=muted>No gold pairs given (--gold [SRC-TGT=]PAIRS.tsv adds both encoders' recovery error).</p>"
    rows = "".join(f"<tr><td>{_e(g['pairs'])}</td><td>{_e(d)}</td><td class=num>{g['n']:,}</td>"
                   f"<td class=num>{g[d]['student']:.2f}</td><td class=num>{g[d]['teacher']:.2f}</td>"
                   f"<td class=num>{g[d]['gap']:+.2f} [{g[d]['gap_interval'][0]:+.2f}, {g[d]['gap_interval'][1]:+.2f}]"
                   "</td></tr>" for g in gold for d in ("src->tgt", "tgt->src"))
    return ("<h3>Gold pairs: recovery error % (CSLS)</h3><table><tr><th>pairs</th><th>direction</th><th>n</th>"
            "<th>student</th><th>teacher</th><th>gap, 95 % interval</th></tr>" + rows + "</table>")


def distill_html(summary: dict) -> str:
    """The section: what was distilled, then the no-gold figures on the held-out sentences, then any gold."""
    q, s, tr = summary["quality"], summary["sample"], summary["training"]
    lowest = q["lowest_agreement"]
    facts = {"model directory": summary["model_dir"], "teacher": summary["teacher"],
             "inputs": ", ".join(f"{i['file']} ({i['lang']}, {i['usable_lines']:,} lines)" for i in summary["inputs"]),
             "sample": ", ".join(f"{lang}: {n:,} trained on, {s['held_out'][lang]:,} held out"
                                 for lang, n in s["train"].items()) + (" (all of the input)" if s["all_used"] else ""),
             "training": f"{tr['steps']:,} steps of {tr['recipe']}, {tr['seconds']:,} s",
             "student speed": f"{q['student_sentences_per_s']:,} sentences/s",
             "lowest top-1 agreement": f"{lowest['direction']}: {_pct(lowest['agreement'])} ("
                                       + ("above" if lowest["agreement"] >= q["agreement_bar"] else "below")
                                       + f" the bar of {_pct(q['agreement_bar'])})"}
    close = ", ".join(f"{lang} {v:.3f}" for lang, v in q["closeness"].items())
    return ("<h2>Distilled student</h2>" + '<div class="box"><b>Summary</b>' + _kv(facts) + "</div>"
            "<h3>Without gold, on held-out sentences</h3><p class=muted>Top-1 agreement: the share of held-out "
            "sentences of one language whose nearest held-out sentence of the other is the same under the student "
            "as under the teacher (what mining with the student changes); the interval is a bootstrap over the "
            "queries. Cosine correlation: of the student's and the teacher's cosines of every cross-language "
            f"held-out pair. Mean cosine of student(x) and teacher(x): {_e(close)}.</p>"
            f"<p>The bar: on the development runs, every direction whose agreement was at least "
            f"{_pct(q['agreement_bar'])} had a recovery error on gold pairs within 1.5 points of the teacher's, "
            "the student having been distilled on the text it was then used on. It is a guide, not a guarantee: "
            "on held-out test sets a few directions above it were up to 2 points behind, and some far below it "
            "were not behind at all. The figures speak only for text like the sample.</p>"
            + _agreement_rows(q["pairs"]) + _line_language_rows(q.get("by_line_language", []))
            + _gold_rows(q["gold"]))


def write_report(summary: dict, path) -> None:
    """``distill.html``: the section as a page of its own."""
    render_body(distill_html(summary), path, title="bisent distill")
