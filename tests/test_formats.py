"""Bitext formats (bisent.formats) and `bisent filter` on them, on LibreOffice help pairs (en-de).

The pairs come from Debian's archive into the cache (``network``: skipped when it cannot be reached).
Canonical form: what bisent writes (README of bisent.formats): a file in that form is read and written
back byte-identical when nothing changes, and loses exactly the removed units' bytes otherwise.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil

import pytest

from bisent.cli import main
from bisent.errors import BisentError
from bisent.formats import TMX_SCORE_PROP, check_columns, new_bitext, read_bitext, remember_text, write_bitext

KEEP_ALL = "steps:\n  - type: empty\n  - {name: cosine, type: cosine, encoder: char-ngram}\n"
STRICT = "steps:\n  - type: empty\n  - {name: cosine, type: cosine, encoder: char-ngram, accept: {min: 0.25}}\n"


@pytest.fixture(scope="module")
def lo_pairs():
    """Twelve LibreOffice help paragraphs, English-German, with their document and paragraph ids."""
    from bisent.datasets import libreoffice as lo
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        pytest.skip("apt-get/dpkg-deb not available: not a Debian-based system")
    try:
        pairs = lo.load_pairs("en", "de")
    except BisentError as e:
        pytest.skip(f"cannot fetch LibreOffice help from Debian's archive: {e}")
    return pairs[:12]


def _texts(pairs):
    return [(p.src, p.tgt) for p in pairs]


def _props(pairs):
    return [{"x-doc": p.doc, "x-pid": p.pid} for p in pairs]


def _filter(tmp_path, *inputs, config=KEEP_ALL, out="kept", extra=()):
    cfg = tmp_path / "f.yaml"
    cfg.write_text(config)
    return main(["filter", *inputs, "-l", "en", "-L", "de", "-c", cfg, "-o", tmp_path / out,
                 "--rejected", tmp_path / "rejected.tsv", "--summary", tmp_path / "summary.json", *extra])


def _rejected(tmp_path):
    return [line.split("\t") for line in (tmp_path / "rejected.tsv").read_text().splitlines()]


pytestmark = pytest.mark.network


# ---------------------------------------------------------------------------
# Round trips of each format
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("fmt,name", [("tsv", "p.tsv"), ("tsv", "p.tsv.gz"), ("jsonl", "p.jsonl"),
                                      ("jsonl", "p.jsonl.zst"), ("tmx", "p.tmx"), ("tmx", "p.tmx.xz"),
                                      ("xliff", "p.xlf"), ("xliff2", "p.xliff"), ("parquet", "p.parquet")])
def test_round_trip_is_byte_identical(tmp_path, lo_pairs, fmt, name):
    """Written by bisent, read, written again with nothing changed: the same bytes (decompressed)."""
    bt = new_bitext(fmt, "en", "de", _texts(lo_pairs), props=_props(lo_pairs) if fmt == "tmx" else None)
    write_bitext(tmp_path / name, bt, bt.units)
    back = read_bitext([tmp_path / name], src_lang="en", tgt_lang="de")
    assert [(u.n, u.src, u.tgt, u.problem) for u in back.units] == [(i + 1, s, t, None)
                                                                    for i, (s, t) in enumerate(_texts(lo_pairs))]
    write_bitext(tmp_path / f"again.{name}", back, back.units)
    if fmt != "parquet":   # Parquet: the same table (its bytes carry a writer's metadata)
        assert (tmp_path / f"again.{name}").read_bytes() == (tmp_path / name).read_bytes()
    again = read_bitext([tmp_path / f"again.{name}"], src_lang="en", tgt_lang="de")
    assert [(u.src, u.tgt) for u in again.units] == _texts(lo_pairs)


def test_moses_round_trip_and_filter(tmp_path, lo_pairs):
    """FILE.en FILE.de in, kept.en kept.de out (compressed as the inputs are), line-aligned."""
    bt = new_bitext("moses", "en", "de", _texts(lo_pairs))
    write_bitext([tmp_path / "noisy.en.zst", tmp_path / "noisy.de.zst"], bt, bt.units)
    assert _filter(tmp_path, tmp_path / "noisy.en.zst", tmp_path / "noisy.de.zst", config=STRICT) == 0
    kept = read_bitext([tmp_path / "kept.en.zst", tmp_path / "kept.de.zst"])
    rejected = {int(r[0]) for r in _rejected(tmp_path)}
    assert rejected and len(kept.units) + len(rejected) == len(lo_pairs)
    assert [(u.src, u.tgt) for u in kept.units] == [p for i, p in enumerate(_texts(lo_pairs), 1) if i not in rejected]
    from bisent.formats import output_paths
    assert output_paths("out/kept", ["a/noisy.en.gz", "a/noisy.de.gz"], "moses") == ("out/kept.en.gz", "out/kept.de.gz")
    assert output_paths("kept", ["src.txt", "tgt.txt"], "moses") == ("kept.src.txt", "kept.tgt.txt")
    (tmp_path / "short.de").write_text("one line\n")
    (tmp_path / "short.en").write_text("one\ntwo\n")
    with pytest.raises(BisentError, match="short.en: has 2 lines but .*short.de has 1"):
        read_bitext([tmp_path / "short.en", tmp_path / "short.de"])


def test_jsonl_carries_other_keys_and_the_score(tmp_path, lo_pairs):
    rows = [{"id": p.pid, "src": p.src, "tgt": p.tgt, "meta": {"doc": p.doc}} for p in lo_pairs]
    lines = [json.dumps(r, ensure_ascii=False) for r in rows]
    lines[3] = "{not json"
    (tmp_path / "p.jsonl.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    assert _filter(tmp_path, tmp_path / "p.jsonl.gz", out="kept.jsonl", extra=["--score-column"]) == 0
    kept = [json.loads(x) for x in (tmp_path / "kept.jsonl").read_text().splitlines()]
    assert [k["id"] for k in kept] == [r["id"] for i, r in enumerate(rows) if i != 3]
    assert all(k["meta"] == {"doc": lo_pairs[0].doc} and 0 <= k["score"] <= 1 for k in kept)
    assert _rejected(tmp_path) == [["4", "bad_row:json", "", "{not json"]]
    (tmp_path / "other.jsonl").write_text("".join(json.dumps({"en": s, "de": t}) + "\n" for s, t in _texts(lo_pairs)))
    with pytest.raises(BisentError, match="no line has text under both 'src' and 'tgt'; name .* --columns"):
        check_columns(read_bitext([tmp_path / "other.jsonl"]))
    assert [u.src for u in read_bitext([tmp_path / "other.jsonl"], columns="en,de").units] == [p.src for p in lo_pairs]


# ---------------------------------------------------------------------------
# TMX and XLIFF: every unit accounted for, properties and states kept
# ---------------------------------------------------------------------------

def _tmx_without_target(data: bytes, unit: int) -> bytes:
    """The TMX with the German <tuv> of the ``unit``-th <tu> (1-based) taken out."""
    tus = [m.start() for m in re.finditer(rb"<tu>", data)]
    start = tus[unit - 1]
    tuv = re.compile(rb'\n\s*<tuv xml:lang="de">.*?</tuv>', re.S).search(data, start)
    return data[:tuv.start()] + data[tuv.end():]


def test_tmx_filter_accounts_for_every_unit(tmp_path, lo_pairs):
    """A <tu> without a target is rejected by number; the rest come back byte for byte, properties kept."""
    bt = new_bitext("tmx", "en", "de", _texts(lo_pairs), props=_props(lo_pairs))
    write_bitext(tmp_path / "all.tmx", bt, bt.units)
    assert _filter(tmp_path, tmp_path / "all.tmx", out="kept.tmx") == 0
    assert (tmp_path / "kept.tmx").read_bytes() == (tmp_path / "all.tmx").read_bytes()   # nothing removed

    bad = _tmx_without_target(_tmx_without_target((tmp_path / "all.tmx").read_bytes(), 12), 5)   # the last, too
    (tmp_path / "bad.tmx").write_bytes(bad)
    assert _filter(tmp_path, tmp_path / "bad.tmx", out="kept.tmx") == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert (summary["lines"], summary["kept"], summary["rejected"]) == (12, 10, 2)
    assert summary["rejected_by"] == {"bad_unit:no_target": 2}
    rows = _rejected(tmp_path)
    assert [r[:2] for r in rows] == [["5", "bad_unit:no_target"], ["12", "bad_unit:no_target"]]
    assert lo_pairs[4].src in rows[0][3]
    others = [p for i, p in enumerate(lo_pairs) if i not in (4, 11)]
    want = new_bitext("tmx", "en", "de", _texts(others), props=_props(others))
    write_bitext(tmp_path / "want.tmx", want, want.units)
    assert (tmp_path / "kept.tmx").read_bytes() == (tmp_path / "want.tmx").read_bytes()


def test_tmx_score_property_and_removed_units(tmp_path, lo_pairs):
    bt = new_bitext("tmx", "en", "de", _texts(lo_pairs), props=_props(lo_pairs))
    write_bitext(tmp_path / "all.tmx", bt, bt.units)
    assert _filter(tmp_path, tmp_path / "all.tmx", config=STRICT, out="kept.tmx", extra=["--score-column"]) == 0
    rejected = {int(r[0]) for r in _rejected(tmp_path)}
    from lxml import etree
    tus = etree.parse(str(tmp_path / "kept.tmx")).getroot().findall("body/tu")
    kept = [p for i, p in enumerate(lo_pairs, 1) if i not in rejected]
    assert rejected and len(tus) == len(kept) == 12 - len(rejected)
    for tu, p in zip(tus, kept):
        props = {x.get("type"): x.text for x in tu.findall("prop")}
        assert props["x-doc"] == p.doc and props["x-pid"] == p.pid and float(props[TMX_SCORE_PROP]) >= 0.25


def test_xliff_states_kept_and_missing_target_rejected(tmp_path, lo_pairs):
    for fmt in ("xliff", "xliff2"):
        bt = new_bitext(fmt, "en", "de", _texts(lo_pairs), ids=[p.pid for p in lo_pairs])
        write_bitext(tmp_path / "all.xlf", bt, bt.units)
        data = (tmp_path / "all.xlf").read_bytes()
        # one unit left untranslated (no <target>), one marked for review
        ids = [p.pid.encode() for p in lo_pairs]
        first = data.index(b'id="' + ids[2] + b'"')
        t0 = data.index(b"<target", first)
        data = data[:data.rindex(b"\n", 0, t0)] + data[data.index(b"</target>", t0) + len(b"</target>"):]
        mark = data.index(b'state="translated"', data.index(b'id="' + ids[6] + b'"'))
        data = data[:mark] + b'state="needs-review-translation"' + data[mark + len(b'state="translated"'):]
        (tmp_path / "bad.xlf").write_bytes(data)
        assert _filter(tmp_path, tmp_path / "bad.xlf", out="kept.xlf") == 0, fmt
        [row] = _rejected(tmp_path)
        assert row[:2] == ["3", "bad_unit:no_target"], fmt
        kept = (tmp_path / "kept.xlf").read_bytes()
        assert ids[2] not in kept and b'state="needs-review-translation"' in kept
        assert kept.count(b"<source>") == 11
        # nothing else changed: the kept file is the input less that unit's bytes (and the indentation before it)
        tag = b"trans-unit" if fmt == "xliff" else b"unit"
        start = data.rindex(b"<" + tag, 0, first)
        while data[start - 1:start] in (b" ", b"\n"):
            start -= 1
        end = data.index(b"</" + tag + b">", first) + len(tag) + 3
        assert kept == data[:start] + data[end:], fmt


def test_xml_is_parsed_defused(tmp_path):
    """An external entity is not fetched, an internal one not expanded; a broken file is one line naming it."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    (tmp_path / "x.tmx").write_text(
        f'<?xml version="1.0"?>\n<!DOCTYPE tmx [<!ENTITY s SYSTEM "file://{secret}"><!ENTITY a "aaaaaaaa">]>\n'
        '<tmx version="1.4"><header srclang="en"/><body>\n'
        '<tu><tuv xml:lang="en"><seg>Hello &s; &a;</seg></tuv><tuv xml:lang="de"><seg>Hallo</seg></tuv></tu>\n'
        '</body></tmx>\n')
    bt = read_bitext([tmp_path / "x.tmx"], src_lang="en", tgt_lang="de")
    assert "SECRET" not in bt.units[0].src and "aaaa" not in bt.units[0].src
    (tmp_path / "broken.tmx").write_text('<tmx version="1.4"><body>\n<tu><tuv>\n</body></tmx>\n')
    with pytest.raises(BisentError, match=r"broken.tmx:\d+: not well-formed XML"):
        read_bitext([tmp_path / "broken.tmx"], src_lang="en", tgt_lang="de")
    with pytest.raises(BisentError, match="no <tuv> in fr"):
        read_bitext([tmp_path / "x.tmx"], src_lang="en", tgt_lang="fr")


# ---------------------------------------------------------------------------
# The LibreOffice four-column TSV: --columns, and the one-line error without it
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def lo_tsv(tmp_path_factory, lo_pairs):
    """The first 40 lines of the test split `bisent data libreoffice` writes (doc, id, src, tgt)."""
    d = tmp_path_factory.mktemp("lo")
    assert main(["data", "libreoffice", "-l", "en", "-L", "de", "-o", d / "data"]) == 0
    lines = (d / "data" / "test.tsv").read_bytes().splitlines(keepends=True)[:40]
    assert all(line.count(b"\t") == 3 for line in lines)
    (d / "lo.tsv").write_bytes(b"".join(lines))
    return d / "lo.tsv"


def test_filter_libreoffice_tsv_with_columns(tmp_path, lo_tsv, capsys):
    assert _filter(tmp_path, lo_tsv, out="kept.tsv", config=STRICT, extra=["--columns", "3,4", "--score-column"]) == 0
    lines = lo_tsv.read_bytes().splitlines()
    rejected = _rejected(tmp_path)
    kept = (tmp_path / "kept.tsv").read_bytes().splitlines()
    assert rejected and len(kept) + len(rejected) == len(lines)
    numbers = {int(r[0]) for r in rejected}
    originals = [line for i, line in enumerate(lines, 1) if i not in numbers]
    assert [k.rsplit(b"\t", 1)[0] for k in kept] == originals           # doc and id carried, the score appended
    assert all(float(k.rsplit(b"\t", 1)[1]) >= 0.25 for k in kept)
    assert all("\t".join(r[3:]).encode() == lines[int(r[0]) - 1] for r in rejected)   # the original line
    # without --columns: not 40 rejected lines and exit 0, but one line naming the file and the fix
    capsys.readouterr()
    assert _filter(tmp_path, lo_tsv, out="kept2.tsv") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "lo.tsv: every line has 4 tab-separated columns, expected 2" in err
    assert "--columns" in err and not (tmp_path / "kept2.tsv").exists()


def test_columns_rows_of_another_width_are_rejected(tmp_path, lo_tsv):
    lines = lo_tsv.read_bytes().splitlines(keepends=True)[:5]
    lines[2] = lines[2].rstrip(b"\n") + b"\textra\n"
    (tmp_path / "w.tsv").write_bytes(b"".join(lines))
    bt = read_bitext([tmp_path / "w.tsv"], columns="3,4")
    assert [u.problem for u in bt.units] == [None, None, "bad_row:columns", None, None] and bt.units[2].detail == 5
    with pytest.raises(BisentError, match="--columns 3,7: the line has only 4"):
        read_bitext([tmp_path / "w.tsv"], columns="3,7")
    with pytest.raises(BisentError, match="two different"):
        read_bitext([tmp_path / "w.tsv"], columns="3,3")


def test_repaired_text_is_written_back(tmp_path, lo_pairs):
    """A unit whose text a step changed is written with the new text; the others as they were."""
    bt = new_bitext("tmx", "en", "de", _texts(lo_pairs[:3]), props=_props(lo_pairs[:3]))
    write_bitext(tmp_path / "a.tmx", bt, bt.units)
    back = read_bitext([tmp_path / "a.tmx"], src_lang="en", tgt_lang="de")
    remember_text(back)
    back.units[1].tgt = "Geändert."
    write_bitext(tmp_path / "b.tmx", back, back.units)
    again = read_bitext([tmp_path / "b.tmx"], src_lang="en", tgt_lang="de")
    assert [u.tgt for u in again.units] == [lo_pairs[0].tgt, "Geändert.", lo_pairs[2].tgt]


# ---------------------------------------------------------------------------
# bisent mine: the default threshold is that of 90 % estimated precision
# ---------------------------------------------------------------------------

def test_mine_default_threshold(tmp_path, capsys):
    from bisent.datasets import libreoffice as lo
    try:
        pairs = lo.load_pairs("en", "de")[:200]
    except BisentError as e:
        pytest.skip(f"cannot fetch LibreOffice help from Debian's archive: {e}")
    (tmp_path / "en.txt").write_text("".join(p.src + "\n" for p in pairs))
    (tmp_path / "de.txt").write_text("".join(p.tgt + "\n" for p in reversed(pairs)))
    args = ["mine", tmp_path / "en.txt", tmp_path / "de.txt", "-l", "en", "-L", "de", "-e", "char-ngram"]
    capsys.readouterr()
    assert main([*args, "-o", tmp_path / "m.tsv"]) == 0
    err = capsys.readouterr().err.splitlines()
    summary = json.loads(err[-1])
    assert summary["estimated_precision"] >= 0.9 and summary["threshold"] is not None
    [note] = [line for line in err if line.startswith("bisent: kept")]
    assert f"kept {summary['pairs']} pairs" in note and "--threshold none" in note
    rows = [r.split("\t") for r in (tmp_path / "m.tsv").read_text().splitlines()]
    assert rows and len(rows) == summary["pairs"] and all(float(r[0]) >= summary["threshold"] for r in rows)
    assert not (tmp_path / "m.tsv.report.json").exists()          # the default writes no record of its own
    assert main([*args, "-o", tmp_path / "all.tsv", "--threshold", "none"]) == 0
    assert len((tmp_path / "all.tsv").read_text().splitlines()) > len(rows)
    assert main([*args, "-o", tmp_path / "x.tsv", "--threshold", "none", "--precision", "0.9"]) == 2
    # too few pairs to calibrate: an error that says how to keep them all, not a silent keep-all
    (tmp_path / "one.en").write_text("the red house\n")
    (tmp_path / "one.de").write_text("das rote Haus\n")
    capsys.readouterr()
    assert main([*args[:1], tmp_path / "one.en", tmp_path / "one.de", *args[3:], "-o", tmp_path / "o.tsv"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "default threshold" in err and "--threshold none" in err


# ---------------------------------------------------------------------------
# divergence, repair and training read the same formats
# ---------------------------------------------------------------------------

def test_divergence_repair_and_training_read_tmx_and_moses(tmp_path):
    """What `bisent divergence` / `bisent repair` read (divergence.read_pairs) and `bisent train --train` reads."""
    pytest.importorskip("torch")
    from bisent.divergence.files import read_pairs
    from bisent.training.data import read_bitext as read_training_bitext

    pairs = [("a1 a2 a3", "b3 b2 b1"), ("a4 a5", "b5 b4"), ("a6", "b6")]
    bt = new_bitext("tmx", "xa", "xb", pairs)
    write_bitext(tmp_path / "toy.tmx", bt, bt.units)
    (tmp_path / "bad.tmx").write_bytes(re.sub(rb'\n\s*<tuv xml:lang="xb">.*?</tuv>', b"",
                                              (tmp_path / "toy.tmx").read_bytes(), count=1, flags=re.S))
    got = list(read_pairs(tmp_path / "bad.tmx"))
    assert [(n, p) for n, p, _ in got] == [(1, None), (2, pairs[1]), (3, pairs[2])]
    assert re.fullmatch(r"unit 1 \(line \d+\): bad_unit:no_target", got[0][2])
    moses = new_bitext("moses", "xa", "xb", pairs)
    write_bitext([tmp_path / "toy.xa", tmp_path / "toy.xb"], moses, moses.units)
    assert list(read_pairs([tmp_path / "toy.xa", tmp_path / "toy.xb"])) == [(i, p, None) for i, p in enumerate(pairs,
                                                                                                               1)]
    (tmp_path / "four.tsv").write_text("".join(f"d\tid{i}\t{s}\t{t}\n" for i, (s, t) in enumerate(pairs)))
    assert [p for _, p, _ in read_pairs(tmp_path / "four.tsv", columns="3,4")] == pairs
    assert read_training_bitext(tmp_path / "toy.tmx", "xa", "xb").pairs == pairs
    with pytest.raises(BisentError, match=r"bad.tmx: unit 1 \(line \d+\): bad_unit:no_target"):
        read_training_bitext(tmp_path / "bad.tmx", "xa", "xb")


def test_xliff_inline_markup_is_kept_and_code_is_not_text(tmp_path):
    """<g> text counts, <ph> native code does not; the kept unit is written with its markup, a score added."""
    (tmp_path / "m.xlf").write_text(
        '<xliff version="1.2"><file source-language="en" target-language="de"><body>\n<group>'
        '<trans-unit id="a"><source>Hello <g id="1">big</g> world<ph id="2">{0}</ph>.</source>'
        '<target state="final">Hallo <g id="1">große</g> Welt<ph id="2">{0}</ph>.</target></trans-unit></group>\n'
        '<trans-unit id="b"><source>Only source</source></trans-unit>\n</body></file></xliff>\n')
    bt = read_bitext([tmp_path / "m.xlf"])
    assert [(u.src, u.tgt, u.problem) for u in bt.units] == [("Hello big world.", "Hallo große Welt.", None),
                                                             ("", "", "bad_unit:no_target")]
    write_bitext(tmp_path / "o.xlf", bt, bt.units[:1], scores=[0.5])
    out = (tmp_path / "o.xlf").read_text()
    assert '<trans-unit id="a" bisent:score="0.5"><source>Hello <g id="1">big</g> world<ph id="2">{0}</ph>.' in out
    assert 'state="final"' in out and 'id="b"' not in out
