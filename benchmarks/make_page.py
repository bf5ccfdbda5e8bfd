"""Write docs/benchmarks.md, the generated tables of the published benchmark figures, from benchmarks/results/*.jsonl.

Only the encoders named in ``PUBLISHED`` get rows (the records also hold every experiment run on the way); each row is
the latest record of its task, domain, language pair and encoder, with the anchors ``use-m3`` and ``me5-small`` (and the
``char-ngram`` floor) from the same run where that run measured them, and a reference to the command that printed it.
Usage: ``python benchmarks/make_page.py`` writes the page; ``--check`` exits 1 when the committed page is stale.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "docs" / "benchmarks.md"

# encoder_id (or its leading part) -> (name on the page, model page under docs/models/)
PUBLISHED: dict[str, tuple[str, str]] = {
    "ensemble/51a19f86ad5c8ea11922": ("general student (6 members, own hashings)", "student.md"),
    # the previous recipe's six-member student: its mining F1 and speed stand in where the current one's were not
    # measured
    "ensemble/53ebe978a8a641a9337f": ("general student, previous recipe (6 members, one hashing)", "student.md"),
    "dan/86652364a7b5f9d65436": ("general student, one seed of the recipe (not the 6-member ensemble)", "student.md"),
    "dan/1a5ae521290eff4675cb": ("distill-dan (Bible train books, monolingual + fortunes)", "student.md"),
    "dan/ff92212893a09b31367b": ("distill-dan (Bible train books, bitext)", "student.md"),
    "dan/5c257c9b03dd5556ccac": ("distill-dan (en-de + en-fr help)", "student.md"),
    "dan/bc8e45407fa341e24121": ("distill-dan (en-de help, 15 min)", "student.md"),
    "dan/4d764434b51225d6c9a7": ("distill-dan (en-de help)", "student.md"),
    "adapter/488a6812488d767c77d0": ("adapt-use-m3 (en-de + en-fr help)", "guo2019-dual-encoder.md"),
    "adapter/874a79639bb7eabe6309": ("adapt-use-m3 (en-de help, 3 min)", "guo2019-dual-encoder.md"),
    "dan/dd6c0bcbc336ee4bd8ae": ("guo2019-dan (en-de help, 2,129 steps)", "guo2019-dual-encoder.md"),
    "bilstm/4d59aae5ab6bf915d2af": ("guo2019-bilstm (en-de help, 1,169 steps)", "guo2019-dual-encoder.md"),
    "hash-transformer/0e4087cf4b2a1a0c92ae": ("guo2019-transformer (en-de + en-fr help, 18 min)",
                                              "guo2019-dual-encoder.md"),
    "kim2019/6ac9d8756ff8efa7cd22": ("kim2019 (en-de help, 100 min CPU)", "kim2019.md"),
    "kim2019/be0ba291ba332d2be8c0": ("kim2019 (en-de help, 10k steps GPU)", "kim2019.md"),
    "kim2019/75362f5b0242ac3db548": ("kim2019 (100k en-de pairs, 10k steps GPU)", "kim2019.md"),
    "kim2019/e134b5245500dcff9124": ("kim2019 (245k en-de pairs, 10k steps GPU)", "kim2019.md"),
    "artetxe2019/fedef371cb6e6d03fe49": ("artetxe2019 (en-de + en-fr help, 100 min CPU)", "artetxe-schwenk2019.md"),
    "artetxe2019/c062df24c44ca9de51": ("artetxe2019 (en-de help, 10k steps GPU)", "artetxe-schwenk2019.md"),
    "artetxe2019/c3358aa42fb752a437": ("artetxe2019 (100k en-de pairs, 10k steps GPU)", "artetxe-schwenk2019.md"),
    "artetxe2019/d37da6fd816057372d": ("artetxe2019 (245k en-de pairs, 10k steps GPU)", "artetxe-schwenk2019.md"),
    "zhang2016/3fe7c2eb7eb0223519f9": ("zhang2016 MM2AS (en-de help, 300 it.)", "zhang2016.md"),
    "zhang2016/f33459a1c1cae24d457d": ("zhang2016 AS2MM (en-de help, standardised, 300 it.)", "zhang2016.md"),
    "bbowae/2a294b4c44666186bda3": ("bbowae (en-de help, 20 min)", "zhang2016.md"),
    "divergence:42aa9fe0909b9f51": ("divergence BiLSTM (en-de help)", "divergence.md"),
    "divergence:a2519d90dd67f0b2": ("divergence BiLSTM (en-fr help)", "divergence.md"),
    "hide-dnn-pool/a8fc5e88ff0a346f46c0": ("hide-dnn-pool (LibreOffice en-de pages)", "guo2019-hide.md"),
    "hide-pool-dnn/d0cef3dcb72b7b0d62b8": ("hide-pool-dnn (LibreOffice en-de pages)", "guo2019-hide.md"),
    "hide-dnn-pool/52c0d8322c15c3f55950": ("hide-dnn-pool (every source but LibreOffice, en-de)", "guo2019-hide.md"),
    "hide-dnn-pool/ed763470e0d7de1ffd45": ("hide-dnn-pool (LibreOffice en-fr pages)", "guo2019-hide.md"),
    "doc-bow/7802bbd261cea508e78a": ("doc-bow baseline (LibreOffice en-de pages)", "guo2019-hide.md"),
}
ANCHORS = ["use-m3", "me5-small", "char-ngram"]
DOMAINS = {"libreoffice": "LibreOffice help (the trained models' domain)", "gettext": "UI messages (gettext)",
           "gnome": "GNOME help", "dict": "dictionary entries (FreeDict)",
           "bible": "Bible verses (World English Bible / Reina-Valera 1909; outside Debian's documentation)"}


def load(name: str) -> list[dict]:
    """The records of benchmarks/results/NAME.jsonl, in file order (later lines are later runs)."""
    path = RESULTS / f"{name}.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def published(r: dict) -> tuple[str, str] | None:
    """(name, model page) of a record's encoder when it is one the page publishes."""
    eid = r.get("encoder_id") or ""
    for key, val in PUBLISHED.items():
        if eid.startswith(key):
            return val
    return None


def anchor(r: dict) -> str | None:
    enc = r.get("encoder") or ""
    for a in ANCHORS:
        if enc == a or enc == f"sentence-avg-centred({a})":
            return a
    return None


class Commands:
    """Numbers the commands behind the rows; model directories read as DIR (they live wherever one trains them)."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def ref(self, r: dict) -> str:
        cmd = clean_command(r.get("command", ""), r.get("encoder", ""))
        if cmd not in self.ids:
            self.ids[cmd] = len(self.ids) + 1
        return f"c{self.ids[cmd]}"

    def listing(self) -> str:
        return "\n".join(f"- c{i}: `{cmd}`" for cmd, i in self.ids.items())


def clean_command(cmd: str, own: str) -> str:
    """The command as a template for its table: the record's model directory as DIR, other trained models measured in
    the same run left out (they have rows of their own), ``--pair``/``--domain`` as the row's P and D, and
    ``--results`` (where the run wrote its records) dropped."""
    try:
        words = shlex.split(cmd)
    except ValueError:
        words = cmd.split()
    out: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        nxt = words[i + 1] if i + 1 < len(words) else None
        if w in ("-e", "--encoder") and nxt is not None:
            if nxt == own and "/" in nxt:
                out += [w, "DIR"]
            elif nxt in ANCHORS or nxt in ("random", "gale-church"):
                out += [w, nxt]
            i += 2
            continue
        if w in ("--pair", "--domain", "--results") and nxt is not None:
            out += {"--pair": [w, "P"], "--domain": [w, "D"], "--results": []}[w]
            i += 2
            continue
        out.append(w if w in ("DIR", "P", "D") else shlex.quote(w))
        i += 1
    return " ".join(out)


def latest(records: list[dict], key) -> dict:
    """The last record per key (None keys skipped)."""
    out: dict = {}
    for r in records:
        k = key(r)
        if k is not None:
            out[k] = r
    return out


def same_run(records: list[dict], r: dict, domain: bool = True) -> dict[str, dict]:
    """Anchor records of the run that printed ``r``: the same command, commit, pair (and domain)."""
    out = {}
    for o in records:
        a = anchor(o)
        if (a and o.get("command") == r.get("command") and o.get("commit") == r.get("commit")
                and o.get("pair") == r.get("pair") and (not domain or domain_of(o) == domain_of(r))):
            out[a] = o
    return out


def table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def two(a, b) -> str:
    return f"{a:.2f} / {b:.2f}"


def order(name: str) -> int:
    return [v[0] for v in PUBLISHED.values()].index(name)


def domain_of(r: dict) -> str:
    return r.get("domain") or "libreoffice"


def recovery(cmds: Commands) -> str:
    recs = [r for r in load("recover") + load("recover_full")
            if r.get("score") == "csls" and r.get("task") == "recover"]
    rows_by = latest(recs, lambda r: (domain_of(r), r["pair"], published(r)[0])
                     if published(r) and "previous recipe" not in published(r)[0] else None)
    parts = ["## Alignment recovery\n",
             ("`bisent bench recover`: held-out test pairs shuffled, each source must find its own translation (and "
             "back). Error %, src→tgt / tgt→src, CSLS; n = test pairs (300 where the run was capped with `--limit "
             "300`, one item 0.33 points). Anchors from the same run; — where that run did not measure one.\n")]
    # a domain and pair no published model was measured on yet: the latest run of the anchors alone
    anchor_runs = latest([r for r in recs if anchor(r) == "use-m3"], lambda r: (domain_of(r), r["pair"]))
    for dom, title in DOMAINS.items():
        rows = []
        for (d, pair, name), r in sorted(rows_by.items(), key=lambda kv: (kv[0][1], order(kv[0][2]))):
            if d != dom:
                continue
            anc = same_run(recs, r)
            rows.append([pair, r["n"], name, two(r["error_src_tgt"], r["error_tgt_src"])]
                        + [two(anc[a]["error_src_tgt"], anc[a]["error_tgt_src"]) if a in anc else "—"
                           for a in ANCHORS] + [cmds.ref(r)])
        covered = {pair for (d, pair, _) in rows_by if d == dom}
        for (d, pair), r in sorted(anchor_runs.items()):
            if d == dom and pair not in covered:
                anc = same_run(recs, r)
                rows.append([pair, r["n"], "anchors only", "—"]
                            + [two(anc[a]["error_src_tgt"], anc[a]["error_tgt_src"]) if a in anc else "—"
                               for a in ANCHORS] + [cmds.ref(r)])
        if rows:
            parts += [f"### {title}\n", table(["pair", "n", "encoder", "error %", *ANCHORS, "command"], rows), ""]
    return "\n".join(parts)


def mining(cmds: Commands) -> str:
    recs = [r for r in load("mining") if r.get("margin") == "ratio" and r.get("retrieval") == "max"]
    rows_by = latest(recs, lambda r: (domain_of(r), r["pair"], published(r)[0]) if published(r) else None)
    parts = ["## Mining\n",
             ("`bisent bench mining`: BUCC-like tasks (about a quarter of each side has its translation among "
             "unpaired sentences). Test F1 at the threshold tuned on the dev task; ratio margin, k = 4, max-score "
             "retrieval; g = gold pairs of the test task. Anchors from the same run.\n")]
    for dom, title in DOMAINS.items():
        rows = []
        for (d, pair, name), r in sorted(rows_by.items(), key=lambda kv: (kv[0][1], order(kv[0][2]))):
            if d != dom:
                continue
            anc = same_run(recs, r)
            gold = r.get("sizes", {}).get("test", {}).get("gold", "")
            rows.append([pair, gold, name, f"{r['f1']:.1f}"] + [f"{anc[a]['f1']:.1f}" if a in anc else "—"
                                                               for a in ANCHORS] + [cmds.ref(r)])
        if rows:
            parts += [f"### {title}\n", table(["pair", "g", "encoder", "F1", *ANCHORS, "command"], rows), ""]
    return "\n".join(parts)


def filtering(cmds: Commands) -> str:
    recs = [r for r in load("filter") if "ap" in r and r.get("scorer") in ("cosine", "csls", "pipeline")]
    keep = latest(recs, lambda r: (r["pair"], (published(r) or (anchor(r),))[0], r["scorer"])
                  if (published(r) or anchor(r)) else None)
    rows = []
    for (pair, name, scorer), r in sorted(keep.items(), key=lambda kv: (kv[0][0], kv[0][2], str(kv[0][1]))):
        rows.append([pair, name, scorer, f"{r['ap']:.1f}", r.get("above_median_clean", {}).get("untranslated", ""),
                     cmds.ref(r)])
    return "\n".join(["## Filtering\n",
                      ("`bisent bench filter`: held-out clean pairs mixed with six kinds of synthetic noise "
                      "(misaligned, neighbour paragraph, untranslated copy, a third language, truncated, glued). AP = "
                      "average precision of ranking the clean pairs first; `pipeline` = `recipes/filter-default.yaml` "
                      "with that encoder; the last figure is the share of untranslated copies ranked above the median "
                      "clean pair (%).\n"),
                      table(["pair", "encoder", "scorer", "AP", "untranslated above median %", "command"], rows), ""])


def alignment(cmds: Commands) -> str:
    recs = [r for r in load("align") if r.get("source") and r.get("split", "test") in ("test", "gold")]

    def name(r):
        if r["encoder"] in ("gale-church", "sentalign+use-m3"):
            return r["encoder"]
        return anchor(r) or (published(r) or (None,))[0]
    keep = latest(recs, lambda r: (r["source"], r["pair"], r["view"], name(r)) if name(r) else None)
    cols = ["gale-church", "use-m3", "sentalign+use-m3", "me5-small", "char-ngram", "distill-dan (en-de help)"]
    groups: dict = {}
    for (src, pair, view, n), r in keep.items():
        groups.setdefault((src, pair, view), {})[n] = r
    rows, prows = [], []
    for (src, pair, view), by in sorted(groups.items()):
        if view == "paragraphs":
            prows.append([src, pair] + [f"{by[c]['strict_f1']:.1f} / {by[c]['para_error']:.2f} / "
                                        f"{by[c]['untranslated_skipped']:.0f}" if c in by else "—" for c in cols[:3]]
                         + [by[cols[0]]["n_docs"], ", ".join(sorted({cmds.ref(r) for r in by.values()}))])
            continue
        rows.append([src, pair, view] + [f"{by[c]['strict_f1']:.1f} / {by[c]['lax_f1']:.1f}" if c in by else "—"
                                         for c in cols] + [", ".join(sorted({cmds.ref(r) for r in by.values()}))])
    return "\n".join(["## Sentence alignment\n",
                      ("`bisent bench align`: test help pages re-split into sentences; gold blocks from LibreOffice's "
                      "paragraph ids and GNOME help's block positions. Views: `clean`, `drop10` (a tenth of the "
                      "paragraphs lose their translation), `merge10` (a tenth of neighbours merged on one side), "
                      "both; `gold` rows: a folder of human-aligned documents (`--gold`). `sentalign+use-m3`: "
                      "vecalign's DP (the `sentalign` package) fed the same embeddings in the same run. Strict / lax "
                      "F1 %, latest record per encoder. A prose paragraph left untranslated (target text = source "
                      "text) is gold 1-0 / 0-1; the gold of records older than the `gale-church` and `use-m3` ones "
                      "paired it 1-1 with its copy, so on LibreOffice en-fr (the only pages with such paragraphs) "
                      "the other columns are not comparable with these two.\n"),
                      table(["source", "pair", "view", *cols, "commands"], rows), "",
                      ("Paragraph gold (`--view paragraphs`): test pages that hold a merge or split, a paragraph of "
                       "several sentences on both sides (inner gold unknown) or a paragraph left untranslated. "
                       "Strict F1 % on the exact part / paragraph-consistency error % (aligned blocks crossing a "
                       "paragraph boundary) / % of untranslated sentences left unaligned.\n"),
                      table(["source", "pair", *cols[:3], "pages", "commands"], prows), ""])


def documents(cmds: Commands) -> str:
    recs = [r for r in load("docmine") if r.get("queries") == "all" and r.get("pool") == "all sources"
            and not r.get("rerank")]
    keep = latest(recs, lambda r: (r["pair"], r["view"], anchor(r) or (published(r) or (None,))[0])
                  if (anchor(r) or published(r)) else None)
    rows = [[pair, view, n, f"{r['p@1_src_tgt']:.1f} / {r['p@1_tgt_src']:.1f}",
             f"{r['p@10_src_tgt']:.1f} / {r['p@10_tgt_src']:.1f}", r["n_queries"], cmds.ref(r)]
            for (pair, view, n), r in sorted(keep.items(), key=lambda kv: tuple(map(str, kv[0])))]
    drecs = [r for r in load("docs") if r.get("pooling") in (None, "centred")]
    dkeep = latest(drecs, lambda r: (r["pair"], r["view"], anchor(r) or (published(r) or (None,))[0])
                   if (anchor(r) or published(r)) else None)
    drows = [[pair, view, n, r["n_docs"], f"{r['p_at_1_src_tgt']:.1f} / {r['p_at_1_tgt_src']:.1f}", cmds.ref(r)]
             for (pair, view, n), r in sorted(dkeep.items(), key=lambda kv: tuple(map(str, kv[0])))]
    return "\n".join(["## Document mining\n",
                      ("`bisent bench docmine`: the gold page pairs of the test split of 17 documentation sources as "
                      "queries against every page of every source and split (each page cut to its first 16 units); "
                      "P@1 and P@10 %, src→tgt / tgt→src. Sentence encoders as Sentence-Avg (centred); `given` = the "
                      "pages' paragraphs, `resplit` = sentencex sentences.\n"),
                      table(["pair", "view", "encoder", "P@1", "P@10", "queries", "command"], rows), "",
                      "### LibreOffice test pages only (`bisent bench docs`)\n",
                      table(["pair", "view", "encoder", "pages", "P@1", "command"], drows), ""])


def speed(cmds: Commands) -> str:
    recs = load("speed")
    keep = latest(recs, lambda r: (r["pair"], published(r)[0]) if published(r) else None)
    rows = []
    for (pair, name), r in sorted(keep.items(), key=lambda kv: (kv[0][0], order(kv[0][1]))):
        anc = same_run(recs, r, domain=False)
        rows.append([pair, name, f"{r['sentences_per_s']:,.0f}", f"{r['peak_rss_mb']:,.0f}"]
                    + [f"{anc[a]['sentences_per_s']:,.0f}" if a in anc else "—" for a in ANCHORS]
                    + [r["machine"]["cpu"], cmds.ref(r)])
    mem = load("mine_memory")
    mkeep = latest(mem, lambda r: (r["src"], r["cache"]))
    mrows = [[n, cache, r["encoder"], r["peak_rss_mb"], r["baseline_rss_mb"], r["fp16_vectors_mb"], r["seconds"],
              cmds.ref(r)] for (n, cache), r in sorted(mkeep.items())]
    return "\n".join(["## Speed and memory\n",
                      ("`bisent bench speed`: sentences/s embedding held-out help sentences (cache bypassed), peak "
                      "RSS MB of the run; the anchors' sentences/s from the same run. Absolute figures belong to the "
                      "named 2-core machine; compare within a row.\n"),
                      table(["pair", "encoder", "sentences/s", "peak RSS MB", *ANCHORS, "machine", "command"], rows),
                      "", "### Mining memory (`python benchmarks/mine_memory.py`)\n",
                      table(["sentences a side", "embedding cache", "encoder", "peak RSS MB", "baseline MB",
                             "fp16 vectors MB", "seconds", "command"], mrows), ""])


def name_of(r: dict) -> str | None:
    """A record's encoder as the page names it: an anchor, a published model, or None (not published)."""
    return anchor(r) or (published(r) or (None,))[0]


def guarded(f, r: dict, missing):
    """f(r), or ``missing`` when the record predates the field (older records of a benchmark lack some)."""
    try:
        out = f(r)
    except (KeyError, TypeError):
        return missing
    return missing if out is None else out


def simple(cmds: Commands, title: str, intro: str, records: list[dict], key, cols: list) -> str:
    """A table of the latest record per ``key`` (None: skipped), one column per (header, function of the record)."""
    keep = latest(records, lambda r: guarded(key, r, None))
    rows = [[guarded(f, r, "—") for _, f in cols] + [cmds.ref(r)]
            for _, r in sorted(keep.items(), key=lambda kv: str(kv[0]))]
    if not rows:
        return ""
    return "\n".join([title + "\n", intro + "\n", table([h for h, _ in cols] + ["command"], rows), ""])


def divergence(cmds: Commands) -> str:
    recs = [r for r in load("divergence") if name_of(r)]
    acc = simple(cmds, "## Divergent words and repair", (
        "`bisent bench divergence`: word accuracy on held-out test pairs of each kind (P parallel, U unpaired, R a "
        "replaced span, I an inserted sentence; PURI all), the paper's Table 2."),
        [r for r in recs if r["part"] == "table2"], lambda r: (r["pair"], domain_of(r), name_of(r)),
        [("pair", lambda r: r["pair"]), ("domain", domain_of), ("model", name_of), ("steps", lambda r: r["steps"])]
        + [(k, lambda r, k=k: f"{r['accuracy'][k]:.3f}") for k in ("P", "U", "R", "I", "PURI")])
    rep = simple(cmds, "### Repair", (
        "Glued test pairs restored exactly and clean pairs cut (%), per repair setting (boundary cost, τ, minimum "
        "word gain)."),
        [r for r in recs if r["part"] == "repair"],
        lambda r: (r["pair"], domain_of(r), name_of(r), r["boundary_cost"], r["tau"], r["min_word_gain"]),
        [("pair", lambda r: r["pair"]), ("domain", domain_of), ("model", name_of),
         ("boundary cost", lambda r: r.get("boundary_cost")), ("τ", lambda r: r.get("tau")),
         ("min word gain", lambda r: r.get("min_word_gain")), ("glued", lambda r: r["glued"]),
         ("restored %", lambda r: f"{100 * r['restored_exactly']:.1f}"), ("clean", lambda r: r["clean"]),
         ("clean cut %", lambda r: f"{100 * r['clean_cut']:.2f}")])
    fil = simple(cmds, "### As a filter score", (
        "AP of ranking the filter benchmark's clean pairs first: the share of parallel words, use-m3's cosine beside."),
        [r for r in recs if r["part"] == "filter"], lambda r: (r["pair"], domain_of(r), name_of(r)),
        [("pair", lambda r: r["pair"]), ("domain", domain_of), ("model", name_of), ("scorer", lambda r: r["scorer"]),
         ("AP", lambda r: f"{r['ap']:.1f}")])
    return "\n".join(x for x in (acc, rep, fil) if x)


def pairs_and_calibration(cmds: Commands) -> str:
    pr = simple(cmds, "## Translation against sampled words", (
        "`bisent bench pairs` (Zhang et al. 2016, Table 2): accuracy % of scoring each test pair's translation above "
        "3 sampled word sequences, mean (min-max) over 5 rounds of 500 pairs."),
        [r for r in load("pairs") if name_of(r)], lambda r: (r["pair"], name_of(r), r["score"]),
        [("pair", lambda r: r["pair"]), ("encoder", name_of), ("score", lambda r: r["score"]),
         ("accuracy", lambda r: f"{r['accuracy']:.1f} ({r['accuracy_min']:.1f}-{r['accuracy_max']:.1f})")])
    cal = simple(cmds, "## Calibration without gold", (
        "`bisent bench calibration`: precision estimated without gold against precision measured with gold at five "
        "score quantiles; the largest error (points)."),
        [r for r in load("calibration") if name_of(r)],
        lambda r: (r["pair"], r["setting"], r["split"], name_of(r)),
        [("pair", lambda r: r["pair"]), ("setting", lambda r: r.get("setting")), ("split", lambda r: r.get("split")),
         ("encoder", name_of), ("pairs", lambda r: r.get("pairs", "")),
         ("largest error", lambda r: r.get("max_abs_error"))])
    return "\n".join(x for x in (pr, cal) if x)


def pipeline_runs(cmds: Commands) -> str:
    road = simple(cmds, "## Documents to bitext (`bisent run`)", (
        "`python benchmarks/road.py`: test collections (a share of pages untranslated) through documents, alignment "
        "and filtering; precision of the kept pairs against gold, strict / lax, and the share of gold kept."),
        load("road"), lambda r: (r["pair"], r.get("collections_untranslated") or 0, r["split"], r["drop"]),
        [("pair", lambda r: r["pair"]), ("split", lambda r: r["split"]),
         ("untranslated pages", lambda r: r.get("collections_untranslated") or 0),
         ("paragraphs dropped", lambda r: r["drop"]),
         ("documents matched right / matched",
          lambda r: f"{r.get('documents_matched_right') or '—'} / {r['documents_matched']}"),
         ("kept", lambda r: r["kept"]), ("precision", lambda r: f"{r['precision_strict']} / {r['precision_lax']}"),
         ("yield of gold %", lambda r: r["yield_of_gold"])])
    fs = simple(cmds, "## Filter throughput", (
        "`python benchmarks/filter_speed.py`: `bisent filter` over a TRAIN split file with the default pipeline, "
        "embeddings cached after a first pass."),
        load("filter_speed"), lambda r: (r["pair"], r["config"]),
        [("pair", lambda r: r["pair"]), ("config", lambda r: r["config"]), ("lines", lambda r: r["lines"]),
         ("pairs/s", lambda r: r["pairs_per_s"]), ("peak RSS MB", lambda r: r["peak_rss_mb"])])
    kinds = ("misaligned", "neighbour", "untranslated", "third_language", "truncated", "glued")
    fv = simple(cmds, "## Filter recipes side by side", (
        "`python benchmarks/filter_variants.py`: each recipe's decisions on the noisy set of `bisent bench filter` "
        "(the encoder of its row for every embedding step): % of clean pairs kept (95 % Wilson interval) and % of "
        "each noise kind kept; AP of the ranking. `+divergence`: with the step of `bisent filter --train-divergence`."),
        load("filter_variants"), lambda r: (r["pair"], r["split"], r["encoder"], r["config"]),
        [("pair", lambda r: r["pair"]), ("split", lambda r: r["split"]),
         ("encoder", lambda r: name_of(r) or r["encoder"]),
         ("recipe", lambda r: r["config"]), ("items", lambda r: r["items"]),
         ("clean kept", lambda r: f"{r['clean_kept']} ({r['clean_interval'][0]}-{r['clean_interval'][1]})")]
        + [(k, lambda r, k=k: r["kept"][k]) for k in kinds] + [("AP", lambda r: r["ap"])])
    als = simple(cmds, "## Alignment time and memory", (
        "`python benchmarks/align_speed.py`: `bisent align` on concatenated test pages of growing length."),
        [r for r in load("align_speed") if r["task"] == "align_speed"], lambda r: (r["encoder"], r["n_src"]),
        [("encoder", lambda r: r["encoder"]), ("sentences", lambda r: r["n_src"]),
         ("costs s", lambda r: r.get("costs_seconds")), ("DP s", lambda r: r.get("dp_seconds")),
         ("strict / lax F1", lambda r: f"{r.get('strict_f1')} / {r.get('lax_f1')}"),
         ("peak RSS MB", lambda r: r.get("peak_rss_mb"))])
    return "\n".join(x for x in (road, fs, fv, als) if x)


def search(cmds: Commands) -> str:
    knn = load("knn")
    ex = simple(cmds, "## Nearest-neighbour search", (
        "`python benchmarks/knn.py`: the blocked exact search both ways against a plain sgemm over the same tiles in "
        "the same run (target ≥ 0.8 of sgemm), and its peak RSS against the fp16 vectors plus one tile."),
        [r for r in knn if r.get("bench") == "knn_exact"], lambda r: (r["n"], r["threads"]),
        [("n = m", lambda r: r["n"]), ("d", lambda r: r["d"]), ("threads", lambda r: r.get("threads", "—")),
         ("seconds", lambda r: r["seconds"]), ("sgemm s", lambda r: r["anchor_sgemm_seconds"]),
         ("ratio wall / CPU", lambda r: f"{r['ratio_to_sgemm']} / {r.get('ratio_to_sgemm_cpu', '—')}")])
    mem = simple(cmds, "### Exact search memory", "Peak RSS MB against the target.",
                 [r for r in knn if r.get("bench") == "knn_memory"], lambda r: r["n"],
                 [("n = m", lambda r: r["n"]), ("peak RSS MB", lambda r: r["peak_rss_mb"]),
                  ("baseline MB", lambda r: r["baseline_rss_mb"]), ("target MB", lambda r: r.get("target_mb", "—"))])
    two = simple(cmds, "### Two-stage search", (
        "`python benchmarks/knn_twostage.py`: a scan at reduced dimension keeps candidates re-scored exactly; top-1 "
        "agreement with the exact search on sampled queries."),
        load("knn_twostage"), lambda r: (r["n"], r["dim"], r["extra"], r["encoder"]),
        [("n = m", lambda r: r["n"]), ("scan dims", lambda r: r["dim"]), ("extra", lambda r: r["extra"]),
         ("seconds", lambda r: r["seconds"]), ("top-1 agreement", lambda r: r["top1_agreement"]),
         ("exact s", lambda r: r.get("anchor_exact_seconds") or "—"),
         ("peak RSS MB", lambda r: r.get("peak_rss_mb"))])
    ch = simple(cmds, "### Index by size", (
        "`python benchmarks/index_choice.py`: exact against IVF by size, where `--index auto` switches."),
        load("index_choice"), lambda r: (r["n"], r["method"], r.get("quantizer")),
        [("n = m", lambda r: r["n"]), ("method", lambda r: r["method"]), ("quantizer", lambda r: r.get("quantizer")),
         ("CPU s", lambda r: r["cpu_seconds"]), ("exact CPU s", lambda r: r.get("anchor_exact_cpu_seconds")),
         ("agreement (top 30 % pairs)", lambda r: r.get("agreement_top30pct_pairs"))])
    ray = simple(cmds, "### Mining on Ray", (
        "`python benchmarks/ray_mine.py`: `bisent mine --ray` on a local cluster against one machine."),
        load("ray_mine"), lambda r: (r["n"], r["bench"], r.get("workers")),
        [("n = m", lambda r: r["n"]), ("run", lambda r: r["bench"]), ("workers", lambda r: r.get("workers", "—")),
         ("seconds", lambda r: r["seconds"]), ("same pairs", lambda r: r.get("same_pairs_as_one_machine", "—"))])
    sc = simple(cmds, "### Scale", (
        "`python benchmarks/scale.py`: `bisent data scale` (English against a mix of languages, gold pairs hidden "
        "inside) embedded and mined; F1 of the mined pairs against gold."),
        [r for r in load("scale") if r.get("bench") == "scale_gold"], lambda r: (r["size"], r["method"], r["encoder"]),
        [("sentences a side", lambda r: r["size"]), ("method", lambda r: r["method"]),
         ("encoder", lambda r: "general student, an early recipe" if "/" in r["encoder"] else r["encoder"]),
         ("gold", lambda r: r["n_gold"]), ("F1", lambda r: r["f1"])])
    return "\n".join(x for x in (ex, mem, two, ch, ray, sc) if x)


def training_memory(cmds: Commands) -> str:
    tm = simple(cmds, "## Training memory", (
        "`python benchmarks/train_memory.py`: peak RSS of `bisent train` with the general student's recipe to its "
        "first checkpoint, against half the machine's memory."),
        load("train_memory"), lambda r: tuple(r.get("args", [])[:2]),
        [("steps", lambda r: r["steps"]), ("peak RSS MB", lambda r: r["peak_rss_mb"]),
         ("budget MB", lambda r: r["budget_mb"]), ("checkpoint MB", lambda r: r["checkpoint_mb"]),
         ("model MB", lambda r: r["model_mb"])])
    em = simple(cmds, "## Encoder memory", (
        "`python benchmarks/encoder_memory.py`: peak RSS MB of loading an encoder and embedding, and what the process "
        "holds after, use-m3 in the same run."),
        [r for r in load("encoder_memory") if r["encoder"] in LOADED], lambda r: LOADED[r["encoder"]],
        [("encoder", lambda r: LOADED[r["encoder"]]), ("weights MB", lambda r: r.get("weights_mb")),
         ("peak RSS MB", lambda r: r["peak_rss_mb"]), ("held MB", lambda r: r["held_rss_mb"])])
    return "\n".join(x for x in (tm, em) if x)


# encoder_memory records name the model directory's last part
LOADED = {"use-m3": "use-m3", "student-general-pl-s2": "one general student (2^20 buckets, int8 tables)",
          "student-general-pl-ens6L": "general student, 6 members",
          "student-general-pl-ens7L": "general student, 7 members"}


def render() -> str:
    cmds = Commands()
    body = [recovery(cmds), mining(cmds), filtering(cmds), alignment(cmds), documents(cmds), divergence(cmds),
            pairs_and_calibration(cmds), pipeline_runs(cmds), speed(cmds), training_memory(cmds), search(cmds)]
    head = ["# Benchmark tables\n",
            ("Generated by `python benchmarks/make_page.py` from `benchmarks/results/*.jsonl`; do not edit by hand "
            "(`python benchmarks/make_page.py --check` and `tests/test_benchmarks_page.py` fail when this page is "
            "stale). What each benchmark measures and how to run it: `benchmarks/README.md` in the repository. "
            "Each row is the latest record of its task, domain, pair and encoder. Trained models are named by "
            "recipe and training data (their pages: [models](models/index.md)). In the commands (listed at the "
            "end) `DIR` is the row's model directory and `P` and `D` its language pair and domain; other trained "
            "models measured in the same run are left out (they have rows of their own).\n"),
            ("Every set but one is built from Debian's packaged documentation and translations (LibreOffice help, "
            "UI message catalogs, GNOME help, FreeDict), the sources the general student is distilled from; the one "
            "outside it is literary, Bible verses in English and Spanish (World English Bible, Reina-Valera 1909, "
            "from Debian's SWORD packages, paired by verse id; test books Genesis, Psalms, Proverbs, Luke, Romans, "
            "Revelation). News, subtitles and conversation are not measured.\n")]
    tail = ["## Commands\n", cmds.listing(), ""]
    return "\n".join(head + body + tail)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when docs/benchmarks.md differs from the records")
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        if not PAGE.is_file() or PAGE.read_text(encoding="utf-8") != text:
            print(f"bisent: error: {PAGE.relative_to(ROOT)} is stale: run python benchmarks/make_page.py",
                  file=sys.stderr)
            return 1
        return 0
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    tmp = PAGE.with_suffix(".md.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(PAGE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
