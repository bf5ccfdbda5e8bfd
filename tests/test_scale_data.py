"""`bisent data scale`: sides filled to size, gold pairs hidden inside, no unannotated translation, deterministic."""

import json
import shutil

import pytest

from bisent.datasets import scale
from bisent.datasets.libreoffice import Document, Paragraph
from bisent.errors import BisentError
from bisent.filtering.langid import identify


def english(sentence):
    return next(identify([sentence]))[0] == "en"

LANGS = ("de", "fr")
#: left in English in a translated manual: language identification keeps it off the target side
UNTRANSLATED = "This paragraph of the manual was never translated into German by anyone."
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]


def _words(i: int) -> str:
    """A distinct five-word phrase for each number (digits are not letters: the filters would drop them)."""
    return " ".join(WORDS[(i // 10 ** p) % 10] for p in range(5))


def _en(i):
    return f"The {_words(i)} sentence."


def _tr(lang, i):
    return f"{'Der' if lang == 'de' else 'La'} {_words(i)} {'Satz' if lang == 'de' else 'phrase'}."


@pytest.fixture
def fake_sources(tmp_path, monkeypatch):
    """LibreOffice help in de and fr (60 pages × 5 paragraphs, each one sentence) and one page source."""
    monkeypatch.setenv("BISENT_CACHE", str(tmp_path / "cache"))

    def load_documents(src, lang):
        return [Document(f"page{p}", "train", [Paragraph(f"par{k}", _en(p * 5 + k)) for k in range(5)],
                         [Paragraph(f"par{k}", _tr(lang, p * 5 + k)) for k in range(5)]) for p in range(60)]

    pages = {"en": {f"m{p}": [f"Manual {_words(p)} page. It has {_words(p + 7)} words."] for p in range(80)},
             "de": {f"m{p}": [f"Handbuch {_words(p)} Seite.", UNTRANSLATED] for p in range(80)}}
    monkeypatch.setattr(scale, "load_documents", load_documents)
    monkeypatch.setitem(scale.PAGE_SOURCES, "manual", lambda: pages)
    monkeypatch.setattr(scale, "SOURCES", ("libreoffice", "manual"))
    return pages


def _read(folder):
    lines = {n: (folder / n).read_text("utf-8").splitlines() for n in ("src.txt", "tgt.txt", "tgt.lang")}
    gold = scale.read_gold(folder)
    return lines["src.txt"], lines["tgt.txt"], lines["tgt.lang"], gold


def test_gold_hidden_and_no_other_translation(fake_sources, tmp_path):
    stats = scale.build_scale(tmp_path / "out", is_english=english, size=150, gold=20,
                              sources=("libreoffice", "manual"),
                              libreoffice_langs=LANGS)
    src, tgt, langs, gold = _read(tmp_path / "out")
    assert len(src) == len(tgt) == len(langs) == 150 == stats["src_sentences"] == stats["tgt_sentences"]
    assert len(set(src)) == len(src) and len(set(tgt)) == len(tgt)
    assert len(gold) == stats["gold_pairs"] == 20
    number = {_en(i): i for i in range(300)}
    translated = {_tr(lang, i): i for lang in LANGS for i in range(300)}
    for i, j in gold:                                       # each gold pair is a real translation
        assert number[src[i]] == translated[tgt[j]] and langs[j] in LANGS
    gold_set = set(gold)
    pairs = {(i, j) for i, s in enumerate(src) for j, t in enumerate(tgt)
             if s in number and t in translated and number[s] == translated[t]}
    assert pairs == gold_set                                # no translation hides outside the gold
    manual_en = {p.split(".")[0] for p in src if p.startswith("Manual")}
    manual_de = {t for t in tgt if t.startswith("Handbuch")}
    assert manual_en and manual_de                          # the page source feeds both sides ...
    assert not {m.split(" ", 1)[1].rsplit(" ", 1)[0] for m in manual_en} & \
        {t.split(" ", 1)[1].rsplit(" ", 1)[0] for t in manual_de}  # ... but never a page on both
    assert stats["tgt_by_language"].keys() <= {"de", "fr"} and sum(stats["tgt_by_source"].values()) == 150
    assert UNTRANSLATED not in tgt and stats["removed"]["tgt"]["language"] >= 1


def test_deterministic_and_capped_by_the_sources(fake_sources, tmp_path):
    a = scale.build_scale(tmp_path / "a", is_english=english, size=10_000, gold=10, sources=("libreoffice", "manual"),
                          libreoffice_langs=LANGS)
    b = scale.build_scale(tmp_path / "b", is_english=english, size=10_000, gold=10, sources=("libreoffice", "manual"),
                          libreoffice_langs=LANGS)
    assert a == b
    for name in scale.FILES:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert a["src_sentences"] < 10_000 and a["tgt_sentences"] < 10_000   # the sources hold fewer
    assert json.loads((tmp_path / "a" / "stats.json").read_text())["gold_pairs"] == 10
    assert (tmp_path / "cache" / "datasets" / "scale").is_dir()          # page sources parsed once, cached


def test_bad_sources_and_gold_file(fake_sources, tmp_path):
    with pytest.raises(BisentError, match="unknown scale source 'web'"):
        scale.build_scale(tmp_path / "x", is_english=english, size=10, sources=("libreoffice", "web"))
    with pytest.raises(BisentError, match="needs the 'libreoffice' source"):
        scale.build_scale(tmp_path / "x", is_english=english, size=10, sources=("manual",))
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "gold.tsv").write_text("1\t2\nthree\t4\n")
    with pytest.raises(BisentError, match=r"gold.tsv:2: expected two line numbers"):
        scale.read_gold(tmp_path / "g")


@pytest.mark.network
def test_real_small_build_from_cached_libreoffice(tmp_path):
    """A 400-sentence build from the cached en-de LibreOffice help (fetched once if missing)."""
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        pytest.skip("apt-get/dpkg-deb not available: not a Debian-based system")
    try:
        stats = scale.build_scale(tmp_path / "s", is_english=english, size=400, gold=40, sources=("libreoffice",),
                                  libreoffice_langs=("de",))
    except BisentError as e:
        pytest.skip(f"cannot fetch LibreOffice help from Debian's archive: {e}")
    src, tgt, langs, gold = _read(tmp_path / "s")
    assert stats["src_sentences"] == stats["tgt_sentences"] == 400 and len(gold) == 40
    assert set(langs) == {"de"}
    for i, j in gold:
        assert len(src[i].split()) >= scale.GOLD_MIN_WORDS and src[i] != tgt[j]


POD = """=head1 NAME

perlfoo - how to B<frobnicate> things

=head1 DESCRIPTION

This is an I<ordinary> paragraph that spans
two lines and links to L<the manual|perlfunc/open> and L<perlre>.

    my $code = "verbatim, left out";

=over 4

=item *

=item The C<< $x->y >> method

Returns E<lt>nothingE<gt>.X<index entry>

=back

=begin html

<p>Raw HTML, left out.</p>

=end html

=cut
"""


def test_pod_paragraphs_keep_prose_and_drop_code():
    assert scale.pod_paragraphs(POD) == [
        "NAME", "perlfoo - how to frobnicate things", "DESCRIPTION",
        "This is an ordinary paragraph that spans two lines and links to the manual and perlre.",
        "The $x->y method", "Returns <nothing>."]


def test_doc_pages_sort_translations_by_language(tmp_path):
    """Sphinx-style pages: English at the root, translations/<lang>/ paired by path; nav and code left out."""
    root = tmp_path / "html"
    page = ('<html><div class="related">Navigation</div><div class="body"><h1>{h}</h1><p>{p}</p>'
            '<div class="highlight"><pre>code()</pre></div></div></html>')
    for rel, h, p in (("mm/a.html", "Memory", "Pages are mapped."),
                      ("translations/zh_CN/mm/a.html", "内存", "页被映射。"),
                      ("translations/index.html", "Translations", "A list."), ("_static/x.html", "Static", "No.")):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(page.format(h=h, p=p), encoding="utf-8")

    assert scale._doc_pages(root, scale.linux_lang) == {"en": {"mm/a.html": ["Memory", "Pages are mapped."]},
                                               "zh-cn": {"mm/a.html": ["内存", "页被映射。"]}}


@pytest.mark.network
def test_real_perl_doc_pages():
    """perl-doc from Debian's archive (fetched once): every POD file a page of English prose."""
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        pytest.skip("apt-get/dpkg-deb not available: not a Debian-based system")
    try:
        pages = scale.PAGE_SOURCES["perl-doc"]()
    except BisentError as e:
        pytest.skip(f"cannot fetch perl-doc from Debian's archive: {e}")
    assert list(pages) == ["en"] and len(pages["en"]) > 100
    perlfunc = next(v for k, v in pages["en"].items() if k.endswith("pod/perlfunc.pod"))
    assert any(p.startswith("Perl Functions by Category") for p in perlfunc)
    assert not any("<" in p and p.count("<") == p.count(">") and "C<" in p for p in perlfunc)


# --- format 4: gold rules, the leak guard and the new readers ------------------------------------------------

def test_gold_counts_cjk_in_characters_and_english_in_words():
    assert scale._good_gold("这是一个用于测试目的的中文句子。")            # 15 characters, no spaces
    assert not scale._good_gold("打开文件。")                              # 4 characters
    assert scale._good_gold("Open the file you want to edit.")
    assert not scale._good_gold("Open the file.")                          # 3 words


def test_target_paragraph_translated_from_a_gold_sentence_is_left_out():
    counts = dict.fromkeys(scale.REMOVAL_REASONS, 0)
    out = []
    units = [("libreoffice", "de", "Wählen Sie die Datei aus. Klicken Sie dann auf Öffnen.",
              "Select the file you want to open. Then click the Open button."),
             ("libreoffice", "de", "Das Dokument wird jetzt gedruckt.", "The document is printed now by the program.")]
    scale._fill(units, 10, set(), out, counts, "t", is_english=english, english=False,
                gold_src=frozenset({"Select the file you want to open."}))
    assert [r[0] for r in out] == ["Das Dokument wird jetzt gedruckt."] and counts["gold_leak"] == 1


def test_aligned_units_put_each_english_text_on_one_side():
    groups = [(_en(i), [{"en": _en(i), "de": _tr("de", i), "fr": _tr("fr", i)}]) for i in range(400)]
    gold, src, tgt = scale._aligned_units("t", "gettext", iter(groups))
    sides = [{g[0] for g in gold}, {u[2] for u in src}, {u[3] for u in tgt}]
    assert sum(map(len, sides)) == 400 and all(sides) and not (sides[0] & sides[1] | sides[1] & sides[2])
    assert all({u[1] for u in tgt if u[3] == en} == {"de", "fr"} for en in sides[2])   # every translation


def _page(path, body):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"<html><body><h1>Title</h1><p>{body}</p></body></html>", encoding="utf-8")


def test_lilypond_leaves_out_big_pages(tmp_path, monkeypatch):
    """The one-page copies of LilyPond's manuals repeat the split pages: never read."""
    doc = "usr/share/doc/lilypond/html/Documentation"
    _page(tmp_path / "lilypond-doc-html" / doc / "notation/pitches.html", "Pitches are written as letters.")
    _page(tmp_path / "lilypond-doc-html" / doc / "notation-big-page.html", "Pitches are written as letters.")
    _page(tmp_path / "lilypond-doc-html-de" / doc / "notation/pitches.de.html",
          "Tonhöhen werden als Buchstaben notiert.")
    _page(tmp_path / "lilypond-doc-html-de" / doc / "notation-big-page.de.html", "Tonhöhen werden notiert.")
    monkeypatch.setattr(scale, "fetch_package", lambda name: tmp_path / name)
    pages = scale._lilypond()
    assert pages == {"en": {"Documentation/notation/pitches.html": ["Title", "Pitches are written as letters."]},
                     "de": {"Documentation/notation/pitches.html": ["Title",
                                                                    "Tonhöhen werden als Buchstaben notiert."]}}


def test_locale_folders():
    assert [scale._lang_dir(n) for n in ("C", "de", "pt_BR", "zh_TW", "en_GB", "sr@latin", "de.UTF-8")] == \
        ["en", "de", "pt-br", "zh-tw", None, None, None]


def _needs_archive(what, read):
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        pytest.skip("apt-get/dpkg-deb not available: not a Debian-based system")
    try:
        return read()
    except BisentError as e:
        pytest.skip(f"cannot fetch {what} from Debian's archive: {e}")


@pytest.mark.network
def test_real_gettext_messages(monkeypatch):
    """sed's catalogs: the English msgid is the page id; every language's translation of it beside it."""
    monkeypatch.setattr(scale, "GETTEXT_PACKAGES", ("sed",))
    pages = _needs_archive("sed", scale._gettext)
    assert len(pages) > 20 and len(pages["en"]) > 30
    assert all(pages["en"][k] == [k] for k in pages["en"])
    assert all(k in pages["en"] for lang, msgs in pages.items() for k in msgs)
    assert "de" in pages and all(v[0] != k for k, v in pages["de"].items())


@pytest.mark.network
def test_real_translated_manual_pages(monkeypatch):
    """manpages-pl (and its -dev pages): Polish pages under the English page's manN/name.N."""
    monkeypatch.setattr(scale, "MAN_PACKAGES", ())
    monkeypatch.setattr(scale, "MANPAGES_LANGS", ("pl",))
    monkeypatch.setattr(scale, "MANPAGES_DEV_LANGS", ("pl",))
    pages = _needs_archive("manpages-pl", scale._manpages)
    assert set(pages) == {"en", "pl"} and len(pages["pl"]) > 300
    assert len(set(pages["pl"]) & set(pages["en"])) > 100 and "man:man1/ls.1" in pages["pl"]


@pytest.mark.network
def test_real_gnome_app_help():
    """baobab's Mallard help in every language it ships, pages keyed by package and path."""
    pages = _needs_archive("baobab", scale._mallard(("baobab",)))
    assert "en" in pages and len(pages) > 10
    assert all(k.startswith("baobab:") for k in pages["en"])
    assert set(pages["de"]) <= set(pages["en"]) | set(pages["de"]) and set(pages["de"]) & set(pages["en"])


@pytest.mark.network
def test_real_catalan_libreoffice_help_reads_its_own_tree():
    from bisent.datasets.debian import fetch_package
    from bisent.datasets.libreoffice import help_root

    folder = _needs_archive("libreoffice-help-ca", lambda: fetch_package("libreoffice-help-ca"))
    assert help_root(folder, "ca").name == "ca"
    with pytest.raises(BisentError, match="expected one"):
        help_root(folder)


def test_aligned_units_cap_the_translations_of_a_target_text():
    langs = ["de", "fr", "es", "it", "nl", "pl"]
    groups = [(_en(i), [{"en": _en(i), **{l: f"{l} {i}" for l in langs}}]) for i in range(200)]
    _, _, tgt = scale._aligned_units("t", "gettext", iter(groups), max_langs=2)
    per_text = {}
    for u in tgt:
        per_text.setdefault(u[3], []).append(u[1])
    assert per_text and all(len(v) == 2 for v in per_text.values())
    assert len({tuple(v) for v in per_text.values()}) > 5              # drawn per text, not always the same two


def test_gettext_messages_streamed_from_the_cache(tmp_path, monkeypatch):
    """The catalogs are read once into JSON lines; the units come from those lines, the same as from the pages."""
    monkeypatch.setenv("BISENT_CACHE", str(tmp_path / "cache"))
    pages = {"en": {_en(i): [_en(i)] for i in range(100)},
             "de": {_en(i): [_tr("de", i)] for i in range(100)},
             "fr": {_en(i): [_tr("fr", i)] for i in range(0, 100, 2)}}
    calls = []
    monkeypatch.setattr(scale, "_gettext", lambda: calls.append(1) or pages)
    first, second = scale._gettext_units(), scale._gettext_units()
    assert first == second and calls == [1]                    # packages read once
    groups = ((en, [{"en": en, **{l: pages[l][en][0] for l in ("de", "fr") if en in pages[l]}}])
              for en in sorted(pages["en"]))
    assert first == scale._aligned_units("gettext", "gettext", groups, max_langs=scale.GETTEXT_MAX_LANGS)
