"""Data builders: HTML paragraph extraction, pairing, filtering, splits, the mining task, Debian fetching.

All texts here are invented for the tests; the one real build (LibreOffice
help en-de from Debian's archive) is marked ``network``.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path

import pytest

from bisent.datasets import comparable, debian
from bisent.datasets import libreoffice as lo
from bisent.datasets.comparable import make_mining_task, write_bucc
from bisent.datasets.libreoffice import Pair, Paragraph, extract_paragraphs, split_of, trivial_reason
from bisent.errors import BisentError

# --------------------------------------------------------------------------- HTML extraction

PAGE_A = """<!DOCTYPE html>
<html lang="xx"><head><title>Ignored title</title>
<script type="text/javascript">var notText = "<p id='par_id1'>no</p>";</script></head>
<body>
<header><p dir="auto">Site banner without an id</p></header>
<div id="DisplayArea">
<a name="x"></a>
<h1 id="hd_id100" dir="auto">Frobnicate   the
  widgets</h1>
<p id="par_id200" class="paragraph">Turns <span class="emph">every</span> widget &amp; gadget
into a <a href="elsewhere.html">frobnicated</a>&nbsp;one&#8212;quickly.</p>
<p id="par_id300" class="paragraph"><img src="icon.svg" alt="Icon text is not text"></p>
<p class="paragraph">A paragraph without an id is not collected.</p>
<p id="par_id400" class="paragraph">Press <span id="sw1" class="switchinline"><span hidden="true" id="MACtext1"
class="MAC">Cmd</span><span hidden="true" id="defaulttext1">Ctrl</span></span>+K to<br>continue.</p>
<p id="par_id500" class="paragraph">See <span id="sw2" class="switchinline"><span hidden="true" id="WRITERtext2"
class="WRITER">the writer page</span><span hidden="true" id="CALCtext2"
class="CALC">the calc page</span></span> now.</p>
<span id="sw3" class="switch"><span hidden="true" id="WINtext3"
class="WIN"><h2 id="hd_id600">Only on one platform</h2></span></span>
<div class="embedded"><p id="par_id200" class="paragraph">An embedded repeat of an id.</p></div>
<p id="bm_id700">Bookmarks are not paragraphs.</p>
</div></body></html>
"""


def test_extract_paragraphs_strips_markup_and_keeps_order():
    paras = extract_paragraphs(PAGE_A)
    assert [p.pid for p in paras] == ["hd_id100", "par_id200", "par_id300", "par_id400", "par_id500",
                                      "hd_id600", "par_id200#2"]
    text = dict(paras)
    assert text["hd_id100"] == "Frobnicate the widgets"
    assert text["par_id200"] == "Turns every widget & gadget into a frobnicated one\u2014quickly."
    assert text["par_id300"] == ""  # an image only: empty, alt text is not text
    assert text["par_id200#2"] == "An embedded repeat of an id."


def test_switchinline_keeps_default_case_else_first():
    text = dict(extract_paragraphs(PAGE_A))
    assert text["par_id400"] == "Press Ctrl+K to continue."
    assert text["par_id500"] == "See the writer page now."
    assert text["hd_id600"] == "Only on one platform"  # block switches: every case's paragraphs are kept


def test_extract_paragraphs_tolerates_broken_markup():
    html = '<p id="par_id1">Unclosed <b>bold</i> and &unknown; entity<p id="par_id2">Second</p></span>'
    assert [p.pid for p in extract_paragraphs(html)] == ["par_id1", "par_id2"]
    assert dict(extract_paragraphs(html))["par_id2"] == "Second"


def test_normalise_text_collapses_space_and_drops_invisible_characters():
    assert lo.normalise_text(" a\tb\n\u00a0c\u00adde\u200b ") == "a b cde"


# --------------------------------------------------------------------------- filtering and pairing

@pytest.mark.parametrize("src, tgt, reason", [
    ("", "Etwas", "empty"),
    ("12.5 %", "12,5 %", "no_letters"),
    ("--> (1)", "Ein ganz normaler Satz hier.", "no_letters"),
    ("Print the open file now.", "print the OPEN file now.", "identical"),
    ("Open file", "Datei öffnen", "too_short"),              # 2 words
    ("Go on now", "Weiter jetzt los", "too_short"),          # 3 words but under 15 characters
    ("Opens a new window for you.", "Öffnet", "too_short"),
    ("Opens a new window for you.", "Öffnet ein neues Fenster.", None),
    ("Opens a new window for you.", "打开一个新窗口。", None),    # unspaced script: 6 characters suffice
    ("Opens a new window for you.", "新窗口", "too_short"),
])
def test_trivial_reason(src, tgt, reason):
    assert trivial_reason(src, tgt) == reason


def _page(*paras: tuple[str, str]) -> list[Paragraph]:
    return [Paragraph(pid, text) for pid, text in paras]


def test_pair_pages_pairs_by_page_and_id_and_counts_removals():
    long_en = "The quick tool sorts every list."
    long_de = "Das schnelle Werkzeug sortiert jede Liste."
    src = {
        "text/b.html": _page(("hd_id1", "Sorting"), ("par_id2", long_en), ("par_id3", "Only in the source page."),
                             ("par_id4", "Exactly the same text here."), ("par_id5", "")),
        "text/a.html": _page(("par_id2", long_en), ("par_id9", "A second sentence for page a.")),
        "text/only-src.html": _page(("par_id1", "Nobody translated this page yet.")),
    }
    tgt = {
        "text/b.html": _page(("hd_id1", "Sortieren"), ("par_id2", long_de), ("par_id4", "Exactly the same text here."),
                             ("par_id5", ""), ("par_id8", "Nur auf der Zielseite vorhanden.")),
        "text/a.html": _page(("par_id2", long_de), ("par_id9", "Ein zweiter Satz für Seite a.")),
    }
    pairs, documents, counts = lo.pair_pages(src, tgt)
    # pages in path order; a.html's copy of the duplicate pair is kept, b.html's removed
    assert [(p.doc, p.pid) for p in pairs] == [("text/a.html", "par_id2"), ("text/a.html", "par_id9")]
    assert pairs[0] == Pair("text/a.html", "par_id2", long_en, long_de, split_of("text/a.html"))
    assert counts["removed"] == {"empty": 1, "no_letters": 0, "identical": 1, "too_short": 1, "duplicate": 1}
    assert counts["pages_both"] == 2 and counts["paragraphs_aligned"] == 6
    assert counts["paragraphs_src_only"] == 1 and counts["paragraphs_tgt_only"] == 1
    # the document view keeps every non-empty paragraph in page order, unfiltered
    b = next(d for d in documents if d.doc == "text/b.html")
    assert [p.pid for p in b.src] == ["hd_id1", "par_id2", "par_id3", "par_id4"]
    assert [p.pid for p in b.tgt] == ["hd_id1", "par_id2", "par_id4", "par_id8"]


def test_split_is_a_fixed_hash_of_the_path():
    assert split_of("text/shared/01/01010000.html") == split_of("text/shared/01/01010000.html")
    # pinned values: a change in the split function would silently move documents between splits
    assert [split_of(f"doc{i}.html") for i in range(8)] == [_pinned_split(f"doc{i}.html") for i in range(8)]
    counts = Counter(split_of(f"text/module/{i}.html") for i in range(20000))
    assert abs(counts["train"] / 20000 - 0.8) < 0.02
    assert abs(counts["dev"] / 20000 - 0.1) < 0.01
    assert abs(counts["test"] / 20000 - 0.1) < 0.01


def _pinned_split(doc: str) -> str:
    import hashlib

    bucket = int.from_bytes(hashlib.blake2b(doc.encode(), digest_size=8).digest(), "big") % 100
    return "train" if bucket < 80 else "dev" if bucket < 90 else "test"


def test_unknown_language_is_a_one_line_error(monkeypatch):
    monkeypatch.setattr(lo, "available_packages",
                        lambda prefix: [f"{prefix}{x}" for x in ("common", "de", "en-us", "fr")])
    assert lo.check_language("EN") == "libreoffice-help-en-us"
    assert lo.check_language("de") == "libreoffice-help-de"
    with pytest.raises(BisentError) as e:
        lo.check_language("xx")
    msg = str(e.value)
    assert "\n" not in msg and "libreoffice-help-xx" in msg and "available: de, en, fr" in msg
    with pytest.raises(BisentError, match="both 'en'"):
        lo.load_pairs("en", "en-US")


# --------------------------------------------------------------------------- the whole build, offline

def _fake_help_package(root: Path, name: str, lang_dir: str, pages: dict[str, str]) -> Path:
    """A folder shaped like an unpacked libreoffice-help-* package, with hand-written pages."""
    folder = root / name
    for rel, body in pages.items():
        path = folder / "usr/share/libreoffice/help" / lang_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"<html><body><div id='DisplayArea'>{body}</div></body></html>", encoding="utf-8")
    (folder / debian.MARKER).write_text(json.dumps({"package": name, "version": "0.test"}), encoding="utf-8")
    return folder


@pytest.fixture
def fake_packages(tmp_path, monkeypatch):
    """Offline en/de help with 30 pages of invented text; fetching and language checks are stubbed."""
    monkeypatch.setenv("BISENT_CACHE", str(tmp_path / "cache"))
    en, de = {}, {}
    for i in range(30):
        rel = f"text/mod{i % 3}/page{i}.html"
        en[rel] = (f"<h1 id='hd_id{i}'>Page number {i} heading</h1>"
                   f"<p id='par_id{i}1'>The first long sentence of page {i}.</p>"
                   f"<p id='par_id{i}2'>Short</p>")
        de[rel] = (f"<h1 id='hd_id{i}'>Seite Nummer {i} Überschrift</h1>"
                   f"<p id='par_id{i}1'>Der erste lange Satz der Seite {i}.</p>"
                   f"<p id='par_id{i}2'>Kurz</p>")
    folders = {"libreoffice-help-en-us": _fake_help_package(tmp_path, "libreoffice-help-en-us", "en-US", en),
               "libreoffice-help-de": _fake_help_package(tmp_path, "libreoffice-help-de", "de", de)}
    monkeypatch.setattr(lo, "check_language", lambda lang: lo.package_for(lang))
    monkeypatch.setattr(lo, "fetch_package", lambda name: folders[name])
    return folders


def test_build_load_and_write_dataset_offline(fake_packages, tmp_path):
    pairs = lo.load_pairs("en", "de")
    assert len(pairs) == 60  # heading + first sentence per page; "Short"/"Kurz" is too short
    assert lo.load_pairs("en", "de") == pairs  # from the cache
    assert all(p.split == split_of(p.doc) for p in pairs)
    docs = lo.load_documents("en", "de", split="train")
    assert docs and all(d.split == "train" and len(d.src) == len(d.tgt) == 3 for d in docs)
    out = tmp_path / "out"
    stats = lo.write_dataset("en", "de", out)
    assert sorted(os.listdir(out)) == sorted(lo.DATASET_FILES)
    assert stats["pairs"]["total"] == 60 and stats["removed"]["too_short"] == 30
    assert stats["packages"] == {"libreoffice-help-en-us": "0.test", "libreoffice-help-de": "0.test"}
    rows = [line.split("\t") for s in lo.SPLITS for line in (out / f"{s}.tsv").read_text("utf-8").splitlines()]
    assert len(rows) == 60 and all(len(r) == 4 for r in rows)
    assert sum(1 for _ in open(out / "documents.jsonl", encoding="utf-8")) == 30
    lo.write_dataset("en", "de", out)  # a previous output folder is replaced
    (out / "mine.txt").write_text("keep me")
    with pytest.raises(BisentError, match="holds other files"):
        lo.write_dataset("en", "de", out)
    assert (out / "mine.txt").read_text() == "keep me"
    with pytest.raises(BisentError, match="unknown split"):
        lo.load_pairs("en", "de", split="validation")


# --------------------------------------------------------------------------- the mining task

def _synthetic_pairs(n_docs: int = 120, per_doc: int = 10) -> list[Pair]:
    """Pairs over documents in all splits, with repeated texts and translations shared across documents."""
    pairs = []
    for d in range(n_docs):
        split = ("train", "dev", "test")[d % 3]
        for k in range(per_doc):
            pairs.append(Pair(f"doc{d}", f"p{k}", f"source {d}-{k}", f"target {d}-{k}", split))
        # the same boilerplate in many documents, translated two ways
        boiler_tgt = "OK klicken." if d % 2 else "OK klicken, fertig."
        pairs.append(Pair(f"doc{d}", "boiler", "Click OK to close.", boiler_tgt, split))
        # a translation shared with the next document (same source, same target in different docs)
        pairs.append(Pair(f"doc{d}", "shared", f"shared source {d // 2}", f"shared target {d // 2}", split))
    return pairs


def _check_task(task, pairs):
    src_ids, tgt_ids = dict(task.src), dict(task.tgt)
    assert len(src_ids) == len(task.src) and len(tgt_ids) == len(task.tgt)  # unique ids
    assert len(set(src_ids.values())) == len(task.src)  # no text twice on a side
    assert len(set(tgt_ids.values())) == len(task.tgt)
    assert all(s in src_ids and t in tgt_ids for s, t in task.gold)
    assert len({s for s, _ in task.gold}) == len(task.gold) == len({t for _, t in task.gold})
    # no known translation hides among the unpaired sentences
    gold_texts = {(src_ids[s], tgt_ids[t]) for s, t in task.gold}
    src_texts, tgt_texts = set(src_ids.values()), set(tgt_ids.values())
    for p in pairs:
        if p.src in src_texts and p.tgt in tgt_texts:
            assert (p.src, p.tgt) in gold_texts


def test_mining_task_invariants_and_proportions():
    pairs = _synthetic_pairs()
    task = make_mining_task(pairs, "test", seed=0, src_lang="en", tgt_lang="de")
    _check_task(task, pairs)
    assert task.src[0][0] == "en-000001" and task.tgt[0][0] == "de-000001"
    assert 0.2 <= len(task.gold) / len(task.src) <= 0.3
    assert 0.2 <= len(task.gold) / len(task.tgt) <= 0.3
    test_docs = {p.doc for p in pairs if p.split == "test"}
    used = [set(task.docs[r]) for r in comparable.ROLES]
    assert all(u <= test_docs for u in used)
    assert not (used[0] & used[1]) and not (used[0] & used[2]) and not (used[1] & used[2])


def test_mining_task_is_deterministic_and_capped():
    pairs = _synthetic_pairs()
    a = make_mining_task(pairs, "dev", seed=3)
    by_doc_reversed = sorted(pairs, key=lambda p: p.doc, reverse=True)
    assert a == make_mining_task(by_doc_reversed, "dev", seed=3)  # the order of documents does not matter
    assert a != make_mining_task(pairs, "dev", seed=4)
    small = make_mining_task(pairs, "dev", seed=3, max_gold=10, gold_share=0.2)
    _check_task(small, pairs)
    assert len(small.gold) == 10 and len(small.src) == len(small.tgt) == 50
    with pytest.raises(BisentError, match="no pairs"):
        make_mining_task(pairs, "nosuchsplit")
    with pytest.raises(BisentError, match="gold_share"):
        make_mining_task(pairs, gold_share=1.0)


def test_write_bucc(tmp_path):
    task = make_mining_task(_synthetic_pairs(), "test", max_gold=5, src_lang="en", tgt_lang="de")
    out = write_bucc(task, tmp_path / "bucc", "en", "de")
    assert sorted(os.listdir(out)) == ["de.plain.txt", "de.txt", "en.plain.txt", "en.txt", "gold.txt"]
    en = [line.split("\t") for line in (out / "en.txt").read_text("utf-8").splitlines()]
    assert [tuple(r) for r in en] == task.src
    assert (out / "en.plain.txt").read_text("utf-8").splitlines() == [t for _, t in task.src]
    gold = [tuple(line.split("\t")) for line in (out / "gold.txt").read_text("utf-8").splitlines()]
    assert gold == task.gold
    write_bucc(task, out, "en", "de")  # replaces its own output
    with pytest.raises(BisentError):
        write_bucc(task, out, "fr", "de")  # would clobber files it does not own


# --------------------------------------------------------------------------- Debian fetching

def test_fetch_rejects_bad_names_and_missing_tools(monkeypatch, tmp_path):
    monkeypatch.setenv("BISENT_CACHE", str(tmp_path))
    with pytest.raises(BisentError, match="not a valid Debian package name"):
        debian.fetch_package("-o Dir=/")
    monkeypatch.setattr(debian.shutil, "which", lambda tool: None)
    with pytest.raises(BisentError, match="apt-get.*not found"):
        debian.fetch_package("some-package")


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb not installed")
def test_corrupt_deb_leaves_nothing_behind(monkeypatch, tmp_path):
    monkeypatch.setenv("BISENT_CACHE", str(tmp_path))
    bad = tmp_path / "broken.deb"
    bad.write_bytes(b"!<arch>\ndebian-binary   " + b"\0" * 200)
    with pytest.raises(BisentError) as e:
        debian.extract_deb(bad, "broken-package")
    assert "broken-package" in str(e.value) and "\n" not in str(e.value)
    assert os.listdir(tmp_path / "debian") == []


@pytest.mark.network
def test_real_libreoffice_en_de_build():
    """Fetch libreoffice-help-en-us and -de from Debian's archive and build en-de (cached after the first run)."""
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        pytest.skip("apt-get/dpkg-deb not available: not a Debian-based system")
    try:
        pairs = lo.load_pairs("en", "de")
    except BisentError as e:
        pytest.skip(f"cannot fetch LibreOffice help from Debian's archive: {e}")
    stats = lo.load_stats("en", "de")
    assert stats["pairs"]["total"] == len(pairs) > 15000
    assert all(stats["pairs"][s] > 1000 for s in lo.SPLITS)
    assert stats["documents"]["total"] > 1500
    assert all("\t" not in p.src and "\t" not in p.tgt and trivial_reason(p.src, p.tgt) is None for p in pairs[:2000])
    assert len({(p.src, p.tgt) for p in pairs}) == len(pairs)
    task = make_mining_task(pairs, "test", max_gold=200, src_lang="en", tgt_lang="de")
    _check_task(task, pairs)
    with pytest.raises(BisentError, match="available: .*de"):
        lo.check_language("xx")
