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
    stats = scale.build_scale(tmp_path / "out", is_english=english, size=150, gold=20, sources=("libreoffice", "manual"),
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
    for rel, h, p in (("mm/a.html", "Memory", "Pages are mapped."), ("translations/zh_CN/mm/a.html", "内存", "页被映射。"),
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
