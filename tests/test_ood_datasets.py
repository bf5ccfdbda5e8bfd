"""Out-of-domain benchmark builders: gettext catalogs, FreeDict dictionaries, the domain switch of the benchmarks."""

import shutil
import struct

import pytest

from bisent.cli import main
from bisent.datasets import freedict, gettext
from bisent.datasets.comparable import make_mining_task
from bisent.datasets.domains import DOMAINS, load_domain_pairs
from bisent.datasets.libreoffice import Pair
from bisent.datasets.pairset import one_to_one
from bisent.errors import BisentError


def make_mo(entries, big_endian=False, charset="UTF-8") -> bytes:
    """A compiled gettext catalog (the format ``msgfmt`` writes, without the hash table)."""
    end = ">" if big_endian else "<"
    entries = sorted(entries)
    n = len(entries)
    orig_at, trans_at = 28, 28 + 8 * n
    data_at = trans_at + 8 * n
    blobs, orig, trans = b"", [], []
    for table, idx in ((orig, 0), (trans, 1)):
        for e in entries:
            s = e[idx].encode(charset)
            table.append((len(s), data_at + len(blobs)))
            blobs += s + b"\0"
    head = struct.pack(end + "7I", 0x950412DE, 0, n, orig_at, trans_at, 0, 0)
    return head + b"".join(struct.pack(end + "2I", *t) for t in orig + trans) + blobs


CATALOG = [
    ("", "Content-Type: text/plain; charset=UTF-8\nPlural-Forms: nplurals=2; plural=(n != 1);\n"),
    ("cannot open file %s for reading", "Datei %s kann nicht zum Lesen geöffnet werden"),
    ("menu\4Save the current file", "Die aktuelle Datei speichern"),
    ("%d file removed\0%d files removed", "%d Datei entfernt\0%d Dateien entfernt"),
    ("this message has no translation", ""),
    ("Unchanged English text here", "Unchanged English text here"),
    ("%s: %s (%d)", "%s: %s (%d)"),
    ("%s -> %s", "%s → %s"),
    ("Yes", "Ja"),
    ("write error", "Schreibfehler"),
    ("Usage: %s [OPTION]...\n  -h, --help   show this help", "Aufruf: %s [OPTION]...\n  -h, --help   diese Hilfe"),
]


@pytest.mark.parametrize("big_endian", [False, True])
def test_read_mo_roundtrip(big_endian):
    header, entries = gettext.read_mo(make_mo(CATALOG, big_endian=big_endian))
    assert dict(entries) == dict(CATALOG)
    assert header["content-type"] == "text/plain; charset=UTF-8"


def test_read_mo_other_charset_and_bad_files():
    cat = [("", "Content-Type: text/plain; charset=ISO-8859-1\n"), ("open the file", "Datei öffnen")]
    assert dict(gettext.read_mo(make_mo(cat, charset="latin-1"))[1])["open the file"] == "Datei öffnen"
    with pytest.raises(BisentError, match="x.mo: not a gettext .mo file"):
        gettext.read_mo(b"#, fuzzy\nmsgid \"\"\n" + b"\0" * 40, "x.mo")
    good = make_mo(CATALOG)
    with pytest.raises(BisentError, match="truncated or corrupt"):
        gettext.read_mo(good[:200], "x.mo")


def test_catalog_filters_and_pairs(tmp_path):
    lc = tmp_path / "usr/share/locale/de/LC_MESSAGES"
    lc.mkdir(parents=True)
    (lc / "tool.mo").write_bytes(make_mo(CATALOG))
    (tmp_path / "usr/share/locale/fr/LC_MESSAGES").mkdir(parents=True)
    removed = dict.fromkeys(gettext.REMOVAL_REASONS, 0)
    pairs = gettext.package_pairs(tmp_path, "tool", "de", "test", removed)
    got = {p.src: p.tgt for p in pairs}
    assert got == {"cannot open file %s for reading": "Datei %s kann nicht zum Lesen geöffnet werden",
                   "Save the current file": "Die aktuelle Datei speichern",  # context stripped
                   "write error": "Schreibfehler",
                   "Usage: %s [OPTION]... -h, --help show this help": "Aufruf: %s [OPTION]... -h, --help diese Hilfe"}
    assert removed == {"header": 1, "plural": 1, "untranslated": 3, "format_only": 1, "too_short": 1,
                       "too_long": 0, "duplicate": 0}
    assert all(p.doc == "tool" and p.split == "test" for p in pairs)
    assert gettext.package_pairs(tmp_path, "tool", "fr", "test", removed) == []


def test_package_split_is_by_package_and_deterministic():
    splits = gettext.split_of_packages()
    assert splits == gettext.split_of_packages(tuple(reversed(gettext.PACKAGES)))
    counts = {s: list(splits.values()).count(s) for s in ("train", "dev", "test")}
    assert counts["test"] >= 2 and counts["dev"] >= 2 and counts["train"] > counts["test"] + counts["dev"]
    assert gettext.locale_dir("pt-br") == "pt_BR" and gettext.locale_dir("DE") == "de"


def test_one_to_one_keeps_held_out_copy_first():
    pairs = [Pair("a", "1", "write error", "Schreibfehler", "train"),
             Pair("b", "1", "write error", "Schreibfehler", "test"),
             Pair("c", "1", "read error", "Schreibfehler", "dev"),
             Pair("a", "2", "Write Error", "Fehler beim Schreiben", "train"),
             Pair("a", "3", "disk full", "Platte voll", "train")]
    kept, dropped = one_to_one(pairs)
    assert kept == [pairs[1], pairs[4]] and dropped == 3


# --------------------------------------------------------------------------- FreeDict

INDEX_BODY = (
    "cat /kæt/\nKatze <fem>, Kater <masc>\n      \"the cat is on the mat\"  - die Katze ist auf der Matte\n"
    "      \"cats and dogs\"  - Hunde und Katzen, Katzen und Hunde\n see: {cats}\n\n"
    "Armenian /ɑːmiːniən/\n1. arménien\n2. Arménien\n"
    "Costa Rica /kɔstəraikə/\nCosta Rica\n"
    "write down /ɹˈaɪt dˈaʊn/\n         Note: etw.\n [coll.] etw. aufschreiben <vt>; notieren\n"
)


def _index(entries):
    def b64(n):
        digits = ""
        while True:
            digits = freedict._B64[n % 64] + digits
            n //= 64
            if not n:
                return digits
    return "".join(f"{w}\t{b64(o)}\t{b64(n)}\n" for w, o, n in entries)


def _dictd():
    body = ("00-database-info\nsome header\n" + INDEX_BODY).encode("utf-8")
    starts = [body.index(s.encode()) for s in ("00-database", "cat /", "Armenian", "Costa", "write down")]
    ends = starts[1:] + [len(body)]
    words = ["00-database-info", "cat", "Armenian", "Costa Rica", "write down"]
    rows = [(w, s, e - s) for w, s, e in zip(words, starts, ends)] + [("kitty", starts[1], ends[1] - starts[1])]
    return _index(rows), body


def test_dictd_index_and_entries():
    index, body = _dictd()
    assert (freedict.b64_number("8"), freedict.b64_number("BA"), freedict.b64_number("B8")) == (60, 64, 124)
    entries = freedict.read_index(index)
    assert [w for w, _, _ in entries] == ["cat", "Armenian", "Costa Rica", "write down"]  # kitty shares cat's entry
    removed = dict.fromkeys(freedict.REMOVAL_REASONS, 0)
    pairs = freedict.dictionary_pairs(index, body, "eng-deu", removed)
    assert [(p.src, p.tgt) for p in pairs] == [
        ("cat", "Katze"), ("the cat is on the mat", "die Katze ist auf der Matte"),
        ("cats and dogs", "Hunde und Katzen"), ("Armenian", "arménien"), ("write down", "etw. aufschreiben")]
    assert removed["identical"] == 1  # Costa Rica
    assert {p.split for p in pairs if p.doc == "cat"} == {freedict.split_of("cat")}  # examples follow their entry
    with pytest.raises(BisentError, match="eng-deu.index:1: expected headword"):
        freedict.read_index("cat 0 5\n", "eng-deu.index")
    with pytest.raises(BisentError, match="no FreeDict English dictionary known for 'xx'"):
        freedict.package_for("xx")


def test_headwords_lose_pronunciations_and_grammar_tags_wherever_they_stand():
    """eng-deu headword lines as Debian's package has them; a slash inside a headword stays."""
    cases = {"swirl /swˈɜːl/ <v>": "swirl",
             "uncharitably /ʌntʃˈaɹɪtəbli/ <adv>": "uncharitably",
             "Prevention of Money Laundering Act /pɹɪvˈɛnʃən ɒv mˈʌni lˈɔːndəɹɪŋ ˈakt/ (PMLA /pˌiːˌɛmˌɛlˈeɪ/)":
                 "Prevention of Money Laundering Act (PMLA)",
             "abate /əˈbeɪt/ <V>": "abate", "able //ə.bl̩// <suffix>": "able",
             "'s-Hertogenbosch //-toʊx-// //ˌsɜːtəʊɡənˈbɒs// <pn>": "'s-Hertogenbosch",
             "cat /kæt/": "cat", "he/she misinterprets": "he/she misinterprets",
             "at a/the minimum, at least": "at a/the minimum, at least", "km / h": "km / h",
             "siliceous sandstone": "siliceous sandstone", "chide // t͡ʃaɪd//": "chide",
             "exit by land / by sea / by air": "exit by land / by sea / by air"}
    for line, head in cases.items():
        assert freedict.parse_entry(line + "\nwirbeln\n")[0] == head, line


def test_reverse_dictionary_entries_turn_round_without_pronunciation_tags_or_labels():
    body = ("00-database-info\nheader\n"
            "accoupler /akuple/ <v>\njoin, couple\n"
            "[ichi1] 打付ける /tɕi/, 打ち付ける /tsɯ/\nto nail\n"
            "ぶよぶよ\n(adjectival nouns or quasi-adjectives )\n"
            "Paris /paʁi/\nParis\n").encode("utf-8")
    heads = ["00-database-info", "accoupler", "[ichi1] 打付ける", "ぶよぶよ", "Paris"]
    starts = [body.index(h.encode()) for h in heads]
    rows = [(w, s, e - s) for w, s, e in zip(heads, starts, starts[1:] + [len(body)])]
    removed = dict.fromkeys(freedict.REMOVAL_REASONS, 0)
    pairs = freedict.reverse_dictionary_pairs(_index(rows), body, "fra-eng", removed)
    assert [(p.src, p.tgt, p.split) for p in pairs] == [("join", "accoupler", "train"),
                                                         ("to nail", "打付ける", "train")]
    assert removed["no_translation"] == 1 and removed["identical"] == 1       # a label only; a name
    with pytest.raises(BisentError, match="no FreeDict dictionary into English read for 'xx'"):
        freedict.load_reverse_pairs("en", "xx")


def test_domain_switch_and_bench_option(capsys):
    with pytest.raises(BisentError, match="unknown domain 'news'"):
        load_domain_pairs("news", "en", "de")
    assert DOMAINS[0] == "libreoffice"
    assert main(["bench", "filter", "--domain", "gettext", "--no-anchors", "-e", "random", "--results", ""]) == 2
    assert "bisent: error: No such option '--domain'" in capsys.readouterr().err   # filter: LibreOffice help only


@pytest.mark.parametrize("task", ["recover", "mining"])
def test_a_benchmark_set_without_test_pairs_is_a_clear_error(task, monkeypatch, capsys):
    """GNOME help in Turkish is untranslated: every block is dropped as identical, no test pairs are left; the
    benchmark says so in one line instead of printing NaN errors."""
    from bisent.datasets import domains

    monkeypatch.setattr(domains, "load_domain_pairs", lambda d, s, t, split=None: [
        p for p in [Pair("page", "1", "Open the file", "Dosyayı aç", "train")] if split in (None, p.split)])
    assert main(["bench", task, "--domain", "gnome", "--pair", "en-tr", "--no-anchors", "-e", "random",
                 "--results", ""]) == 2
    err = capsys.readouterr().err
    assert "--domain gnome --pair en-tr: the " in err and "split holds no pairs (1 pairs in all)" in err



def test_gnome_blocks_are_paired_by_position_and_cleaned():
    from bisent.datasets.gnome_help import block_pairs
    from bisent.datasets.libreoffice import Document, Paragraph

    d = Document("gnome:gnome-help/x.page", "test",
                 [Paragraph("p0", "Turn on\n  sticky keys"), Paragraph("p2", "OK"), Paragraph("p3", "Press Tab.")],
                 [Paragraph("p0", "Klebrige Tasten\taktivieren"), Paragraph("p2", "OK!"),
                  Paragraph("p3", "Tab drücken.")])
    rows, removed = block_pairs([d])
    assert [(r.pid, r.src, r.tgt, r.split) for r in rows] == [
        ("p0", "Turn on sticky keys", "Klebrige Tasten aktivieren", "test"), ("p3", "Press Tab.", "Tab drücken.",
                                                                              "test")]
    assert removed == {"short": 1} and all(r.doc == d.doc for r in rows)
    assert "gnome" in DOMAINS and main(["data", "gnome", "--help"]) == 0


def test_gnome_pairs_need_two_languages(tmp_path, capsys):
    assert main(["data", "gnome", "-L", "EN", "-o", str(tmp_path / "g")]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "bisent: error: GNOME help pairs need two languages, got 'en' twice"
    assert not (tmp_path / "g").exists()


# --------------------------------------------------------------------------- real samples

def _need_apt():
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        pytest.skip("apt-get/dpkg-deb not available: not a Debian-based system")


def _fetched(build, what: str):
    """``build()``'s result, or a skip when Debian's archive cannot give ``what`` (or this is no Debian system)."""
    _need_apt()
    try:
        return build()
    except BisentError as e:
        pytest.skip(f"cannot fetch {what} from Debian's archive: {e}")


@pytest.mark.network
def test_real_gettext_sample_builds_a_mining_task():
    """sed and grep's German catalogs (small packages): deterministic rows, one package per split here."""
    a, stats = _fetched(lambda: gettext._build("de", packages=("sed", "grep")), "packages")
    b, _ = gettext._build("de", packages=("grep", "sed"))
    assert a == b and len(a) > 100 and stats["removed"]["plural"] >= 1      # grep's catalog has a plural message
    assert not any("\0" in p.src for p in a)                                  # and no plural id is a row
    assert {p.doc for p in a} == {"sed", "grep"} and len({p.split for p in a}) == 2
    for p in a:
        assert gettext.drop_reason(p.src, p.tgt) is None and "\t" not in p.src + p.tgt
    split = {p.split for p in a if p.doc == "sed"}.pop()
    task = make_mining_task(a, split, max_gold=20, src_lang="en", tgt_lang="de")
    assert 0 < len(task.gold) <= 20
    c, stats = gettext._build("de", packages=("sed", "grep"), held_out=False)     # training-only catalogs
    assert {p.split for p in c} == {"train"} and len(c) == len(a) and "every package train" in stats["split_rule"]


def test_app_catalogs_check_their_languages_like_the_benchmark_set():
    """The training-only catalogs translate from English into another language, as ``bisent data gettext``."""
    for load in (gettext.load_pairs, gettext.load_app_pairs):
        with pytest.raises(BisentError, match="source language must be en, not 'fr'"):
            load("fr", "de")
        with pytest.raises(BisentError, match="must differ from en"):
            load("en", " EN ")


def test_app_catalogs_are_no_benchmark_s_packages():
    """``ui-apps`` is training text: none of its packages is a UI benchmark package, a GNOME application whose
    help the document benchmarks pair, or the desktop whose UI the GNOME help test pages describe."""
    from bisent.datasets.docsets import GNOME_APPS

    described = ("gnome-shell-common", "nautilus-data", "gnome-control-center-data")
    assert not set(gettext.APP_PACKAGES) & {*gettext.PACKAGES, *GNOME_APPS, *described}


@pytest.mark.network
def test_real_freedict_sample():
    pairs = _fetched(lambda: freedict.load_pairs("en", "fr"), "dict-freedict-eng-fra")
    assert len(pairs) > 3000 and pairs == freedict.load_pairs("en", "fr")
    assert all(p.split == freedict.split_of(p.doc) for p in pairs)
    assert len({p.src.casefold() for p in pairs}) == len(pairs) == len({p.tgt.casefold() for p in pairs})
    assert sum(p.split == "test" for p in pairs) > 300
    reverse = _fetched(lambda: freedict.load_reverse_pairs("en", "fr"), "dict-freedict-fra-eng")
    assert len(reverse) > 5000 and {p.split for p in reverse} == {"train"}
    assert not any(c in p.tgt for p in reverse for c in "/<[")                # pronunciation and tags removed


@pytest.mark.network
def test_real_gnome_help_pairs_split_by_page():
    """The en-de GNOME help blocks: one split per page, one-to-one, no tab or newline in a text."""
    from bisent.datasets import gnome_help

    pairs = _fetched(lambda: gnome_help.load_pairs("en", "de"), "gnome-user-docs")
    assert sum(p.split == "test" for p in pairs) > 300 and pairs == gnome_help.load_pairs("en", "de")
    split_of_page = {}
    for p in pairs:
        assert split_of_page.setdefault(p.doc, p.split) == p.split
        assert "\t" not in p.src + p.tgt and "\n" not in p.src + p.tgt and p.src != p.tgt
    assert len({p.src.casefold() for p in pairs}) == len(pairs) == len({p.tgt.casefold() for p in pairs})



# --- the general training collection (bisent data general) --------------------------------------------

def _general_sources():
    from bisent.datasets.libreoffice import split_of

    def loader(domain):
        def load(src, tgt, split=None):
            rows = [Pair(f"{domain}-doc{i % 5}", f"{i}", f"{domain} english text number {i}", f"{domain} {tgt} {i}",
                         "test" if i % 5 == 0 else "dev" if i % 5 == 1 else "train") for i in range(40)]
            rows.append(Pair("other", "x", "ui english text number 0", f"{domain} {tgt} leak", "train"))  # a test text
            return [r for r in rows if split is None or r.split == split]
        return load

    train_page = next(f"gnome:p{i}.page" for i in range(100) if split_of(f"gnome:p{i}.page") == "train")
    test_page = next(f"gnome:p{i}.page" for i in range(100) if split_of(f"gnome:p{i}.page") == "test")

    def pages(source, lang):
        if source != "gnome":
            return {}
        return {train_page: [f"a {lang} paragraph of three words {k}" for k in range(6)] + ["Heading"],
                test_page: [f"held out {lang} paragraph {k}" for k in range(3)]
                + [f"a {lang} paragraph of three words 0"]}
    return loader, pages


def _with_extra(loader, extra: dict):
    """``loader`` whose domains also give the pairs ``extra[domain]`` (each in its split)."""
    def with_extra(domain):
        load, more = loader(domain), extra.get(domain, [])
        return lambda src, tgt, split=None: load(src, tgt, split) + [p for p in more if split in (None, p.split)]
    return with_extra


def test_general_collection_holds_out_benchmark_text_and_is_deterministic(tmp_path):
    from bisent.datasets.general import write_general

    loader, pages = _general_sources()
    stats = write_general(tmp_path / "g", ("de", "fr"), {"ui": 10, "gnome": 4, "words": 0}, loader=loader, pages=pages)
    de = (tmp_path / "g" / "train.en-de.tsv").read_text(encoding="utf-8").splitlines()
    texts = {c for row in de for c in row.split("\t")[2:]}
    held = {t for d in ("ui", "help", "dict", "gnome-pairs") for p in loader(d)("en", "de") if p.split != "train"
            for t in (p.src, p.tgt)}
    assert texts and not texts & held                      # no dev/test text, not even through another source
    assert stats["languages"]["de"]["bitext"] == {"ui": 10, "help": 24, "dict": 24}   # gnome-pairs: off by default
    assert {r.split("\t")[0].split(":")[0] for r in de[:3]} == {"ui", "help", "dict"}   # domains interleaved
    mono = (tmp_path / "g" / "mono.fr.txt").read_text(encoding="utf-8").splitlines()
    assert len(mono) == 4 and all(" fr paragraph" in t for t in mono)                # train pages only, capped
    assert "a fr paragraph of three words 0" not in mono                               # also on a held-out page
    assert stats["languages"]["en"] == {"bitext": {}, "mono": {"gnome": 4, "man": 0}, "words": 0}
    first = {p.name: p.read_bytes() for p in (tmp_path / "g").iterdir()}
    write_general(tmp_path / "g", ("de", "fr"), {"ui": 10, "gnome": 4, "words": 0}, loader=loader, pages=pages)
    assert {p.name: p.read_bytes() for p in (tmp_path / "g").iterdir()} == first
    with pytest.raises(BisentError, match="no sources for xx"):
        write_general(tmp_path / "h", ("xx",), loader=loader, pages=pages)


def test_general_collection_holds_gnome_test_blocks_out_of_every_other_source(tmp_path):
    """GNOME help blocks are a benchmark (``--domain gnome``): a test block that is also a UI message of some
    package's catalog is not trained on through the UI pairs, whether or not the GNOME pairs are asked for."""
    from bisent.datasets.general import write_general

    loader, pages = _general_sources()

    with_block = _with_extra(loader, {
        "gnome-pairs": [Pair("gnome:zoom.page", "p1", "Zoom out", "Ansicht verkleinern", "test")],
        "ui": [Pair("viewer", "9", "Zoom out", "Verkleinern", "train")]})
    stats = write_general(tmp_path / "g", ("de",), {"ui": 100, "gnome-pairs": 100, "gnome": 4, "words": 0},
                          loader=with_block, pages=pages)
    rows = (tmp_path / "g" / "train.en-de.tsv").read_text("utf-8").splitlines()
    assert not [r for r in rows if "Zoom out" in r] and stats["languages"]["de"]["bitext"]["ui"] == 24
    assert sum(r.startswith("gnome-pairs:") for r in rows) == 24
    stats = write_general(tmp_path / "g", ("de",), {"ui": 100, "gnome": 4, "words": 0}, loader=with_block, pages=pages)
    rows = (tmp_path / "g" / "train.en-de.tsv").read_text("utf-8").splitlines()
    assert "gnome-pairs" not in stats["languages"]["de"]["bitext"] and not any("gnome-pairs:" in r for r in rows)
    assert not [r for r in rows if "Zoom out" in r]                    # the default: no GNOME pairs, still held out


def test_gnome_pages_read_the_locale_folder_of_a_language_code(tmp_path, monkeypatch):
    """``zh-cn`` is GNOME's ``zh_CN`` folder (the benchmark and the collection both ask for it by our code)."""
    from bisent.datasets import docsets

    page = tmp_path / "usr/share/help/zh_CN/hello.page"
    page.parent.mkdir(parents=True)
    page.write_text('<page xmlns="http://projectmallard.org/1.0/" id="hello"><title>你好</title>'
                    '<p>这是一个段落。</p></page>', encoding="utf-8")
    monkeypatch.setattr(docsets, "fetch_package", lambda name: tmp_path)
    pages = docsets.gnome_pages("zh-cn")
    assert list(pages) == ["gnome:hello.page"] and "这是一个段落。" in pages["gnome:hello.page"]
    with pytest.raises(BisentError, match="no help in language 'ko'"):
        docsets.gnome_pages("ko")


def test_general_collection_holds_reverse_dictionary_entries_out_in_any_case(tmp_path):
    """A dictionary into English is another source of the test words: its entries are held out in any case."""
    from bisent.datasets.general import write_general

    loader, pages = _general_sources()

    with_reverse = _with_extra(loader, {"dict": [Pair("h", "1", "House", "Haus", "test")],
                                        "rdict": [Pair("rev:haus", "r1", "house", "haus", "train"),
                                                  Pair("rev:hund", "r2", "dog", "Hund", "train")]})
    stats = write_general(tmp_path / "g", ("de",), {"ui": 10, "rdict": 50, "gnome": 4, "words": 0},
                          loader=with_reverse, pages=pages)
    assert stats["languages"]["de"]["bitext"]["rdict"] == 25           # 24 of the fake loader's rows, and dog
    rows = {tuple(r.split("\t")[2:]) for r in (tmp_path / "g" / "train.en-de.tsv").read_text("utf-8").splitlines()}
    assert ("dog", "Hund") in rows and ("house", "haus") not in rows


def test_general_collection_app_catalogs_only_when_asked_and_held_out_in_any_case(tmp_path):
    """``ui-apps`` (catalogs no benchmark reads) is off by default; asked for, a message equal to a held-out
    text in another case is left out, like the reverse dictionaries'."""
    from bisent.datasets.general import write_general

    loader, pages = _general_sources()

    with_apps = _with_extra(loader, {"ui": [Pair("tool", "1", "Open the file", "Datei öffnen", "test")],
                                     "ui-apps": [Pair("gimp", "a1", "open the file", "datei öffnen", "train"),
                                                 Pair("gimp", "a2", "Close the window", "Fenster schließen", "train")]})
    stats = write_general(tmp_path / "g", ("de",), {"ui": 10, "gnome": 4, "words": 0}, loader=with_apps, pages=pages)
    assert "ui-apps" not in stats["languages"]["de"]["bitext"]
    stats = write_general(tmp_path / "g", ("de",), {"ui": 10, "ui-apps": 50, "gnome": 4, "words": 0},
                          loader=with_apps, pages=pages)
    rows = [r.split("\t") for r in (tmp_path / "g" / "train.en-de.tsv").read_text("utf-8").splitlines()]
    apps = {tuple(r[2:]) for r in rows if r[0].startswith("ui-apps:")}
    assert ("Close the window", "Fenster schließen") in apps and ("open the file", "datei öffnen") not in apps
    assert stats["languages"]["de"]["bitext"]["ui-apps"] == len(apps) == 25      # 24 of the fake loader's, and one


def test_general_collection_word_lists_come_from_wordfreq_most_frequent_first_without_held_out_words(tmp_path):
    pytest.importorskip("wordfreq")
    from bisent.datasets.general import top_words, write_general

    loader, pages = _general_sources()

    def with_headword(domain):                         # a test headword in another case than wordfreq's
        load = loader(domain)
        return lambda src, tgt, split=None: load(src, tgt, split) + (
            [Pair("h", "1", "House", "Haus", "test")] if domain == "dict" and split in (None, "test") else [])
    caps = {"ui": 10, "gnome": 4, "words": 400}
    stats = write_general(tmp_path / "g", ("de", "ja"), caps, loader=with_headword, pages=pages)
    de = (tmp_path / "g" / "words.de.txt").read_text(encoding="utf-8").splitlines()
    en = (tmp_path / "g" / "words.en.txt").read_text(encoding="utf-8").splitlines()
    ja = (tmp_path / "g" / "words.ja.txt").read_text(encoding="utf-8").splitlines()
    real = top_words("de", 2000)
    assert len(de) == len(en) == len(ja) == 400 and {"und", "nicht"} <= set(de)
    assert [real.index(w) for w in de] == sorted(real.index(w) for w in de)   # most frequent first
    assert real.index("haus") < real.index(de[-1]) and "haus" not in de and "house" not in en  # held out, any case
    assert all(len(w) >= 2 and not any(c.isdigit() for c in w) for w in de + en)
    assert any(len(w) == 1 for w in ja)                                         # one-character words in Japanese
    assert stats["languages"]["de"]["words"] == 400 and stats["removed"]["held_out_words"] >= 2
    assert stats["words"].startswith("wordfreq ")
    first = {p.name: p.read_bytes() for p in (tmp_path / "g").iterdir()}
    write_general(tmp_path / "g", ("de", "ja"), {**caps, "words": 0}, loader=with_headword, pages=pages)
    assert not list((tmp_path / "g").glob("words.*"))                           # words=0: no word lists (replaced)
    write_general(tmp_path / "g", ("de", "ja"), caps, loader=with_headword, pages=pages)
    assert {p.name: p.read_bytes() for p in (tmp_path / "g").iterdir()} == first
    kept = write_general(tmp_path / "k", ("de", "ja"), caps, loader=with_headword, pages=pages, word_lists="as-listed")
    de_kept = (tmp_path / "k" / "words.de.txt").read_text(encoding="utf-8").splitlines()
    assert "haus" in de_kept and "house" in (tmp_path / "k" / "words.en.txt").read_text("utf-8").splitlines()
    assert de_kept[:len(de_kept) // 2] == [w for w in real if w in de_kept][:len(de_kept) // 2]  # the list's order
    assert kept["kept"]["held_out_words"] >= 2 and "held_out_words" not in kept["removed"]
    assert stats["kept"] == {}                                                   # strict keeps none
    assert kept["word_lists"] == "as-listed" and stats["word_lists"] == "strict"
    assert kept["split_rule"].startswith(stats["split_rule"].split("(from ")[0]) and "kept" in kept["split_rule"]
    for name in ("train.en-de.tsv", "mono.de.txt"):                              # only the word lists differ
        assert (tmp_path / "k" / name).read_bytes() == first[name]
    with pytest.raises(BisentError, match="word_lists 'all'"):
        write_general(tmp_path / "x", ("de",), caps, loader=with_headword, pages=pages, word_lists="all")


def test_general_collection_caps_one_language_apart_from_the_others(tmp_path, capsys):
    """``SOURCE:LANG`` caps one language (the UI messages of other applications for Chinese only); the other
    languages keep ``SOURCE``'s cap, and the CLI names a language outside ``--langs`` as the error."""
    from bisent.datasets.general import cap_of, write_general

    loader, pages = _general_sources()
    caps = {"ui": 10, "gnome": 4, "words": 0, "ui:fr": 3, "gnome:en": 2}
    stats = write_general(tmp_path / "g", ("de", "fr"), caps, loader=loader, pages=pages)
    assert stats["languages"]["de"]["bitext"]["ui"] == 10 and stats["languages"]["fr"]["bitext"]["ui"] == 3
    assert stats["languages"]["en"]["mono"]["gnome"] == 2 and stats["languages"]["de"]["mono"]["gnome"] == 4
    assert stats["caps"]["ui:fr"] == 3
    fr = (tmp_path / "g" / "train.en-fr.tsv").read_text("utf-8").splitlines()
    assert sum(r.startswith("ui:") for r in fr) == 3
    assert cap_of({"words": 30000, "words:ja": 100000}, "words", "ja") == 100000
    assert cap_of({"words": 30000, "words:ja": 100000}, "words", "ru") == 30000
    with pytest.raises(BisentError, match="unknown cap 'talk:de'"):
        write_general(tmp_path / "x", ("de",), {"talk:de": 5}, loader=loader, pages=pages)

    assert main(["data", "general", "--langs", "de", "--cap", "ui-apps:fr=5", "-o", str(tmp_path / "c")]) == 2
    assert "--cap ui-apps:fr=5: fr is not one of the languages (en, de)" in capsys.readouterr().err
    assert main(["data", "general", "--cap", "talk:de=5", "-o", str(tmp_path / "c")]) == 2
    assert "expected SOURCE=N or SOURCE:LANG=N" in capsys.readouterr().err
