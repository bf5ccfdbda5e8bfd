"""One function in bisent parses a bitext: :func:`bisent.io.bitext.iter_units`.

The source is scanned for code that splits rows on tabs, parses XML or reads Parquet outside ``bisent.io``; each
such function must be a reader of something other than a bitext, listed below with what it reads. The readers that
once parsed bitexts themselves are called and must go through ``iter_units``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import bisent
from bisent.errors import BisentError

SRC = Path(bisent.__file__).parent

#: functions outside bisent.io that split on tabs or parse XML/Parquet, and what they read (none reads a bitext)
NOT_BITEXTS = {
    "bisent.align.batch:read_pairs": "a list of document file pairs",
    "bisent.align.files:read_alignment_list": "the alignment files named in a pairs list",
    "bisent.cli.documents:read_doc_matches": "document ids and scores of bisent documents mine",
    "bisent.cli.evaluate:read_mined": "scores and ids of bisent mine's output (the text columns are not read)",
    "bisent.cli.evaluate:read_gold": "gold id pairs",
    "bisent.datasets.docsets:mallard_paragraphs": "Mallard help pages (XML documents)",
    "bisent.datasets.docsets:read_gold": "gold id pairs",
    "bisent.datasets.freedict:read_index": "a dictionary's index",
    "bisent.datasets.scale:read_gold": "gold line-number pairs",
    "bisent.report.finished:tsv_rows": "bisent's own output tables read back for a report (scored rows, rejected rows)",
    "bisent.run:_documents": "a list of document file pairs",
    "bisent.run:stage_bitext": "the line numbers of the filter's rejected rows",
}

_TAB = ("\t", b"\t")


def _parses(fn: ast.AST) -> list[str]:
    """What in ``fn`` (nested functions included) splits a row on tabs or parses a bitext-like file."""
    out = []
    for node in ast.walk(fn):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
        if (name in ("split", "rsplit", "partition", "count") and node.args
                and isinstance(node.args[0], ast.Constant) and node.args[0].value in _TAB):
            out.append(f"{name}(TAB) at line {node.lineno}")
        elif name in ("parse_row", "read_tsv", "read_table", "fromstring", "iterparse", "XMLParser"):
            out.append(f"{name} at line {node.lineno}")
        elif name == "parse" and isinstance(f, ast.Attribute) and getattr(f.value, "id", "") == "etree":
            out.append(f"etree.parse at line {node.lineno}")
    return out


def _functions(tree: ast.AST, prefix: str = ""):
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield prefix + node.name, node
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")


def scan(root: Path = SRC) -> dict[str, list[str]]:
    """``{"module:function": [what it parses]}`` for every function outside ``bisent.io`` that parses rows."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        module = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        if module == "bisent.io" or module.startswith("bisent.io."):
            continue
        for name, fn in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            if hits := _parses(fn):
                found[f"{module}:{name}"] = hits
    return found


def test_no_bitext_parser_outside_the_io_package():
    found = scan()
    unknown = {k: v for k, v in found.items() if k not in NOT_BITEXTS}
    assert not unknown, ("these functions parse rows outside bisent.io; read a bitext with "
                         f"bisent.io.bitext.iter_units, or list what else they read in NOT_BITEXTS: {unknown}")
    stale = sorted(set(NOT_BITEXTS) - set(found))
    assert not stale, f"NOT_BITEXTS lists functions that no longer parse rows (remove them): {stale}"


def test_the_scan_finds_a_parser(tmp_path):
    """The scan is no test that cannot fail: a function splitting lines on tabs, or parsing TMX, is found."""
    pkg = tmp_path / "bisent"
    (pkg / "io").mkdir(parents=True)
    (pkg / "io" / "tsv.py").write_text("def read(raw):\n    return raw.split(b'\\t')\n")
    (pkg / "mine.py").write_text("def pairs(path):\n    return [ln.split('\\t') for ln in open(path)]\n\n\n"
                                 "class Tmx:\n    def units(self, f):\n        from lxml import etree\n"
                                 "        return etree.parse(f)\n")
    assert scan(pkg) == {"bisent.mine:pairs": ["split(TAB) at line 2"],
                         "bisent.mine:Tmx.units": ["etree.parse at line 8"]}


def test_only_iter_units_calls_a_format_reader():
    """Inside bisent.io, the format modules' ``read`` is called from :func:`bisent.io.bitext.iter_units` alone."""
    callers = []
    for path in sorted((SRC / "io").rglob("*.py")):
        for name, fn in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            for node in ast.walk(fn):
                f = node.func if isinstance(node, ast.Call) else None
                if (isinstance(f, ast.Attribute) and f.attr == "read" and isinstance(f.value, ast.Call)
                        and getattr(f.value.func, "id", "") == "module"):
                    callers.append(f"{path.name}:{name}")
    assert callers == ["bitext.py:iter_units"]


@pytest.fixture
def counted(monkeypatch):
    """The formats read by the format modules' ``read``, which only ``iter_units`` calls (the test above)."""
    from bisent.io import bitext_formats as formats

    calls = []
    for name in set(formats.MODULES.values()):
        mod = formats.module(name if name != "xml" else "tmx")
        real = mod.read

        def read(bt, real=real):
            calls.append(bt.fmt)
            return real(bt)

        monkeypatch.setattr(mod, "read", read)
    return calls


def _tsv(path, text: str):
    path.write_text(text, encoding="utf-8")
    return path


def test_former_readers_go_through_iter_units(tmp_path, counted):
    from bisent.datasets.libreoffice import read_pair_file
    from bisent.divergence.files import read_pairs as divergence_pairs
    from bisent.filtering.bitext import check_two_columns
    from bisent.filtering.mlp import read_pairs as mlp_pairs

    two = _tsv(tmp_path / "p.tsv", "a b\tc d\nbad line\n\te f\n")
    assert mlp_pairs(two) == ([("a b", "c d")], 2)
    assert counted == ["tsv"]
    assert [(n, p) for n, p, _ in divergence_pairs(two)] == [(1, ("a b", "c d")), (2, None), (3, ("", "e f"))]
    check_two_columns(two)
    cached = _tsv(tmp_path / "pairs.tsv", "doc\tp1\ta b\tc d\ttrain\n")
    assert [tuple(p) for p in read_pair_file(cached)] == [("doc", "p1", "a b", "c d", "train")]
    assert counted == ["tsv"] * 4
    with pytest.raises(BisentError, match=r"pairs.tsv:2: expected 5 tab-separated columns, found 2"):
        read_pair_file(_tsv(cached, "doc\tp1\ta b\tc d\ttrain\nx\ty\n"))


def test_training_data_goes_through_iter_units(tmp_path, counted):
    pytest.importorskip("torch")
    from bisent.training.data import read_bitext

    four = _tsv(tmp_path / "t.en-de.tsv", "web:x\t1\ta b\tc d\nweb:x\t2\te\tf\n")
    bt = read_bitext(four, "en", "de")
    assert bt.pairs == [("a b", "c d"), ("e", "f")] and bt.domains == ["web", "web"]
    assert counted == ["tsv"]


def test_the_filter_engine_goes_through_iter_units(tmp_path, counted):
    from bisent.filtering import filter_file

    pairs = _tsv(tmp_path / "in.tsv", "Hello world\tHallo Welt\nonly one column\n")
    summary = filter_file(pairs, tmp_path / "k.tsv", tmp_path / "r.tsv", "en", "de",
                          {"steps": [{"type": "length", "min_length": 1, "max_length": 50}]}, progress=False)
    assert (summary["kept"], summary["rejected_by"]) == (1, {"bad_row:columns": 1})
    assert counted == ["tsv"]


def test_the_bad_row_policy(tmp_path):
    from bisent.io.bitext import read_bitext

    path = _tsv(tmp_path / "p.tsv", "a\tb\nno tab\nc\td\n")
    assert [u.problem for u in read_bitext(path).units] == [None, "bad_row:columns", None]
    skipped = read_bitext(path, on_bad="skip")
    assert [u.n for u in skipped.units] == [1, 3] and skipped.skipped == {"bad_row:columns": 1}
    with pytest.raises(BisentError, match=r"p.tsv:2: expected 2 tab-separated columns, found 1 \(bad_row:columns\)"):
        read_bitext(path, on_bad="error")
    with pytest.raises(ValueError, match="on_bad"):
        read_bitext(path, on_bad="drop")


def test_a_tsv_line_keeps_its_bytes_and_a_second_cr_is_a_bad_row(tmp_path):
    """A CRLF line's raw bytes keep the CR (kept lines are written back byte for byte), its text does not; a CR
    before that one is a lone CR (as the streaming filter always judged it)."""
    from bisent.io.bitext import read_bitext

    path = tmp_path / "p.tsv"
    path.write_bytes(b"\xef\xbb\xbfa\tb\r\nc\td\r\r\ne\tf")
    units = read_bitext(path).units
    assert [(u.src, u.tgt, u.raw) for u in units[::2]] == [("a", "b", b"\xef\xbb\xbfa\tb\r"), ("e", "f", b"e\tf")]
    assert (units[1].problem, units[1].detail, units[1].raw) == ("bad_row:cr", 4.0, b"c\td\r\r")
