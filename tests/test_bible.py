"""The Bible domain: the SWORD zText reader, verse ids from the chapter tags, pairing by id, the split by book."""

import shutil
import struct
import zlib

import pytest

from bisent.cli import main
from bisent.datasets import bible
from bisent.datasets.domains import DOMAINS, load_domain_pairs
from bisent.errors import BisentError


def write_ztext(folder, slots_by_testament, per_block=3):
    """A zText module folder: for each testament, its slots' texts packed ``per_block`` to a zlib block."""
    folder.mkdir(parents=True, exist_ok=True)
    for testament, slots in slots_by_testament.items():
        bzs, bzv, bzz = b"", b"", b""
        for start in range(0, len(slots), per_block):
            chunk = [s.encode("utf-8") for s in slots[start:start + per_block]]
            offsets, data = [], b""
            for c in chunk:
                offsets.append(len(data))
                data += c
            block = len(bzs) // 12
            comp = zlib.compress(data)
            bzs += struct.pack("<III", len(bzz), len(comp), len(data))
            bzz += comp
            bzv += b"".join(struct.pack("<IIH", block if c else 0, o if c else 0, len(c))
                            for c, o in zip(chunk, offsets))
        for ext, blob in (("bzs", bzs), ("bzv", bzv), ("bzz", bzz)):
            (folder / f"{testament}.{ext}").write_bytes(blob)


def chapter(book, n):
    return f'<chapter n="{n}" osisID="{book}.{n}" sID="{book}.{n}"/>'


def book_div(book):
    return f'<div canonical="true" osisID="{book}" sID="b{book}" type="book"/>'


#: two books of one testament: Aa 1 (2 verses), Aa 2 (1 verse), Bb 1 (3 verses, the second empty)
OT = ["", "<milestone/>", book_div("Aa"), chapter("Aa", 1), "<w>First</w> verse, <note>a note</note>one.",
      "Second <title>A heading</title>verse of Aa 1.", chapter("Aa", 2), "Only verse of Aa 2.",
      book_div("Bb"), chapter("Bb", 1), '<title canonical="true" type="psalm">A song.</title> Bb one &amp; all.',
      "", "Bb 1:3 \u00b6 ends here ."]


def install(root, module, slots, conf_extra=""):
    """Write ``module``'s .conf and data under ``root`` (the ``usr/share/sword`` of a package)."""
    (root / "mods.d").mkdir(parents=True, exist_ok=True)
    (root / "mods.d" / f"{module.lower()}.conf").write_text(
        f"[{module}]\n# a comment=x\nDataPath=./modules/texts/ztext/{module.lower()}/\nModDrv=zText\n"
        f"CompressType=ZIP\nEncoding=UTF-8\n{conf_extra}", encoding="utf-8")
    write_ztext(root / "modules/texts/ztext" / module.lower(), slots)


def test_verse_ids_come_from_the_chapter_tags(tmp_path):
    install(tmp_path, "Mod", {"ot": OT})
    verses = bible.module_verses(tmp_path, "Mod")
    assert [v.id for v in verses] == ["Aa.1.1", "Aa.1.2", "Aa.2.1", "Bb.1.1", "Bb.1.2", "Bb.1.3"]
    assert [bible.clean_text(v.osis) for v in verses] == [
        "First verse, one.", "Second verse of Aa 1.", "Only verse of Aa 2.", "A song. Bb one & all.", "",
        "Bb 1:3 ends here."]


def test_a_slot_with_several_chapter_tags_heads_none(tmp_path):
    """A book outside the versification put whole into the next book's heading slot (as osis2mod does)."""
    stuffed = book_div("Extra") + chapter("Extra", 1) + "x" + chapter("Extra", 2) + "y" + book_div("Bb")
    slots = OT[:8] + [stuffed] + OT[9:]
    install(tmp_path, "Mod", {"ot": slots})
    assert [v.id for v in bible.module_verses(tmp_path, "Mod")] == [
        "Aa.1.1", "Aa.1.2", "Aa.2.1", "Bb.1.1", "Bb.1.2", "Bb.1.3"]


@pytest.mark.parametrize("slots, message", [
    (OT[:6] + [chapter("Aa", 3)] + OT[7:], "Aa chapter 3 where chapter 2 was expected"),
    (OT + [book_div("Aa"), chapter("Aa", 1), "again"], "book Aa starts a second time"),
    (OT[:5] + [book_div("Bb") + "verse"] + OT[6:], "book Bb starts inside Aa 1:2"),
    (OT[:3] + ['<chapter n="1" sID="x"/>'] + OT[4:], "chapter tag without a Book.N osisID"),
])
def test_broken_structure_is_a_one_line_error(tmp_path, slots, message):
    install(tmp_path, "Mod", {"ot": slots})
    with pytest.raises(BisentError, match=message):
        bible.module_verses(tmp_path, "Mod")


def test_broken_files_are_one_line_errors(tmp_path):
    install(tmp_path, "Mod", {"ot": OT})
    data = tmp_path / "modules/texts/ztext/mod"
    (data / "ot.bzv").write_bytes((data / "ot.bzv").read_bytes()[:-3])
    with pytest.raises(BisentError, match="Mod: ot.bzs or ot.bzv is truncated"):
        bible.module_verses(tmp_path, "Mod")
    install(tmp_path, "Mod", {"ot": OT})
    (data / "ot.bzz").write_bytes(b"\0" * 200)
    with pytest.raises(BisentError, match="Mod: ot.bzz block 0 does not decompress"):
        bible.module_verses(tmp_path, "Mod")
    install(tmp_path, "Raw", {"ot": OT}, conf_extra="ModDrv=RawText\n")
    (tmp_path / "mods.d/raw.conf").write_text("[Raw]\nModDrv=RawText\n", encoding="utf-8")
    with pytest.raises(BisentError, match="driver 'RawText' is not zText"):
        bible.module_verses(tmp_path, "Raw")
    with pytest.raises(BisentError, match="Nope: no Nope.conf"):
        bible.module_verses(tmp_path, "Nope")


def test_pairs_by_id_leave_out_chapters_of_different_length(tmp_path):
    install(tmp_path / "a", "A", {"ot": OT})
    other = OT[:4] + ["Primer versículo.", "Segundo.", chapter("Aa", 2), "Único.", "extra verse of Aa 2",
                      book_div("Bb"), chapter("Bb", 1), "Bb uno.", "Bb dos.", "?"]
    install(tmp_path / "b", "B", {"ot": other})
    removed = dict.fromkeys(bible.REMOVAL_REASONS, 0)
    pairs = bible.pair_verses(bible.module_verses(tmp_path / "a", "A"), bible.module_verses(tmp_path / "b", "B"),
                              removed)
    assert [(p.pid, p.src, p.tgt) for p in pairs] == [("Aa.1.1", "First verse, one.", "Primer versículo."),
                                                      ("Aa.1.2", "Second verse of Aa 1.", "Segundo."),
                                                      ("Bb.1.1", "A song. Bb one & all.", "Bb uno.")]
    assert removed == {"empty": 1, "no_letters": 1, "identical": 0, "versification": 1, "unpaired": 1,
                       "duplicate": 0}


def test_split_by_book_and_pairs_known():
    assert {bible.split_of(b) for b in bible.TEST_BOOKS} == {"test"}
    assert {bible.split_of(b) for b in bible.DEV_BOOKS} == {"dev"}
    assert bible.split_of("Lev") == "train" and not set(bible.TEST_BOOKS) & set(bible.DEV_BOOKS)
    assert "bible" in DOMAINS
    with pytest.raises(BisentError, match="no verse-aligned Bible translation .* for en-de; known: en-es"):
        load_domain_pairs("bible", "en", "de")


def _need_apt():
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        pytest.skip("needs apt-get and dpkg-deb (a Debian-based system)")


@pytest.mark.network
def test_real_modules_give_exact_verse_ids():
    """The packages themselves: the KJV versification's 31,102 verses in 66 books, known verses at their ids."""
    _need_apt()
    try:
        rv, _ = bible._load_module("sparv")
        web, _ = bible._load_module("web")
    except BisentError as e:
        pytest.skip(f"cannot fetch the SWORD packages from Debian's archive: {e}")
    assert len(rv) == 31102 and len({v.book for v in rv}) == 66              # the KJV versification, whole
    assert len({(v.book, v.chapter) for v in rv}) == 1189
    text = {v.id: bible.clean_text(v.osis) for v in web}
    spa = {v.id: bible.clean_text(v.osis) for v in rv}
    assert text["John.11.35"] == "Jesus wept." and spa["John.11.35"] == "Y lloró Jesús."
    assert text["Gen.1.1"] == "In the beginning, God created the heavens and the earth."
    assert spa["Gen.1.1"] == "EN el principio crió Dios los cielos y la tierra."
    assert text["Ps.119.176"].startswith("I have gone astray like a lost sheep")
    assert "Rev.12.18" in text and "Rev.12.18" not in spa           # NRSVA against KJV versification
    pairs = bible.load_pairs("en", "es")
    assert pairs == bible.load_pairs("en", "es")                     # deterministic (and cached)
    assert all(p.split == bible.split_of(p.doc) and p.pid.startswith(p.doc + ".") for p in pairs)
    by_id = {p.pid: p for p in pairs}
    assert by_id["John.11.35"].tgt == "Y lloró Jesús." and by_id["John.11.35"].split == "train"
    assert not any(p.pid.startswith(("3John.1.", "Rev.12.")) for p in pairs)     # 15 verses against 14, 18 against 17
    test = [p for p in pairs if p.split == "test"]
    assert {p.doc for p in test} == set(bible.TEST_BOOKS) and len(test) > 6000
    assert len({p.src for p in pairs}) == len(pairs) == len({p.tgt for p in pairs})


def _built_en_es() -> None:
    """The en-es set built in the cache (skips where Debian's archive cannot be reached)."""
    _need_apt()
    try:
        bible.build("en", "es")
    except BisentError as e:
        pytest.skip(f"cannot fetch the SWORD packages from Debian's archive: {e}")


@pytest.mark.network
def test_cli_writes_the_dataset(tmp_path):
    _built_en_es()
    out = tmp_path / "bible"
    assert main(["data", "bible", "-L", "es", "-o", str(out)]) == 0
    rows = (out / "test.tsv").read_text(encoding="utf-8").splitlines()
    assert rows[0].split("\t")[:2] == ["Gen", "Gen.1.1"] and len(rows) > 6000


@pytest.mark.network
def test_recover_runs_on_the_bible_domain(capsys):
    """``bisent bench recover --domain bible``: test pairs of the held-out books, the record names the domain."""
    _built_en_es()
    assert main(["bench", "recover", "--domain", "bible", "--pair", "en-es", "--no-anchors", "-e", "char-ngram",
                 "--limit", "200", "--results", ""]) == 0
    import json

    recs = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert {(r["domain"], r["split"], r["n"]) for r in recs} == {("bible", "test", 200)} and len(recs) == 4
