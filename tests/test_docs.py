"""The documentation site builds strictly, and its tours run as written.

A tour is a ```sh or ```python block right after a ``<!-- tour -->`` line in a page under docs/. It runs on tiny
inputs with the ``char-ngram`` floor in place of the anchors (no model files needed; the same interface), in a
temporary folder holding the files the pages name.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import lzma
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
EN = ["The cat sits on the mat.", "Open the file menu.", "Save the document.", "Close the window.",
      "Print the page.", "Insert a table.", "Delete the row.", "Copy the text."]
DE = ["Die Katze sitzt auf der Matte.", "Öffnen Sie das Menü Datei.", "Speichern Sie das Dokument.",
      "Schließen Sie das Fenster.", "Drucken Sie die Seite.", "Fügen Sie eine Tabelle ein.",
      "Löschen Sie die Zeile.", "Kopieren Sie den Text."]
#: commands (first words after ``bisent``) that embed and so get ``-e char-ngram`` when a tour gives no encoder
EMBEDDING = {("mine",), ("embed",), ("align",), ("filter",), ("documents", "mine"), ("explain",)}
#: history that belongs in CHANGELOG.md and git, not in the product's text
HISTORY = re.compile(r"\b(session|issue|round)s? \d+|\b(out|cmp)/[\w-]+/|\bstop \d+\b", re.I)

needs_mkdocs = pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None,
                                  reason="mkdocs is not installed (pip install -e '.[docs]', or make docs)")


def tours(lang: str) -> list[tuple[str, str]]:
    """(page, code) of every tour block of language ``lang`` in the docs."""
    out = []
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for code in re.findall(rf"^<!-- tour -->\n```{lang}\n(.*?)^```", text, flags=re.S | re.M):
            out.append((str(page.relative_to(ROOT)), code))
    return out


def floor(code: str) -> str:
    """The anchors swapped for the char-ngram floor."""
    return code.replace("use-m3", "char-ngram").replace("me5-small", "char-ngram")


def write_inputs(d: Path) -> None:
    """The files the tours name, tiny and real enough to run every command on."""
    lines = "".join(s + "\n" for s in EN), "".join(s + "\n" for s in DE)
    for name, text in (("news.en", lines[0]), ("news.de", lines[1]), ("book.en", lines[0]), ("book.de", lines[1]),
                       ("en.txt", lines[0]), ("de.txt", lines[1])):
        (d / name).write_text(text, encoding="utf-8")
    (d / "page.en.txt").write_text(" ".join(EN[:4]) + "\n" + " ".join(EN[4:]) + "\n", encoding="utf-8")
    (d / "page.de.txt").write_text(" ".join(DE[:4]) + "\n" + " ".join(DE[4:]) + "\n", encoding="utf-8")
    with lzma.open(d / "big.en.xz", "wt", encoding="utf-8") as f:
        f.write(lines[0])
    with gzip.open(d / "big.de.gz", "wt", encoding="utf-8") as f:
        f.write(lines[1])
    pairs = [f"{e}\t{g}\n" for e, g in zip(EN, DE)]
    (d / "crawl.tsv").write_text("".join(pairs) + f"{EN[0]}\t{EN[0]}\nno tab here\n", encoding="utf-8")
    (d / "pairs.tsv").write_text("book.en\tbook.de\npage.en.txt\tpage.de.txt\n", encoding="utf-8")
    for lang, sents, ids in (("en", EN, "abcd"), ("de", DE, "wxyz")):
        docs = [{"id": f"{i}", "text": sents[2 * k: 2 * k + 2]} for k, i in enumerate(ids)]
        (d / f"{lang}.jsonl").write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in docs),
                                         encoding="utf-8")
        (d / lang).mkdir()
        for x in docs:
            (d / lang / f"{x['id']}.txt").write_text("\n".join(x["text"]) + "\n", encoding="utf-8")
    (d / "filter.yaml").write_text("steps:\n  - type: empty\n  - {type: length_ratio, max_ratio: 3.0}\n"
                                   "  - {type: cosine, encoder: char-ngram}\n", encoding="utf-8")


def shell_lines(block: str) -> list[list[str]]:
    """The ``bisent`` lines of a shell block (continuations joined, comments dropped) as argument lists."""
    out = []
    for line in re.sub(r"\\\n\s*", " ", block).splitlines():
        args = shlex.split(line, comments=True)
        if args:
            assert args[0] == "bisent", f"a tour runs bisent commands only: {line}"
            out.append(args[1:])
    return out


def as_run(args: list[str]) -> list[str]:
    """A tour's command with the floor encoder, and a recipe name resolved to this checkout's file if it has one."""
    args = list(args)
    if "-e" not in args and any(tuple(args[:len(c)]) == c for c in EMBEDDING):
        args += ["-e", "char-ngram"]
    if "-c" in args:
        i = args.index("-c") + 1
        local = ROOT / "recipes" / f"{args[i]}.yaml"
        if not Path(args[i]).exists() and local.is_file():
            args[i] = str(local)
    if args[0] == "mine" and "--threshold" not in args and "--precision" not in args:
        args += ["--threshold", "none"]     # a toy corpus of a few lines is too few to calibrate the default one
    return args


def test_tours_are_found():
    assert len(tours("sh")) >= 5 and len(tours("python")) >= 3


@pytest.mark.parametrize("page,block", tours("sh"), ids=lambda v: v if v.endswith(".md") else "")
def test_shell_tour_runs(page, block, tmp_path, monkeypatch):
    from bisent.cli import main

    monkeypatch.chdir(tmp_path)
    write_inputs(tmp_path)
    lines = shell_lines(floor(block))
    assert lines, page
    for args in lines:
        run = as_run(args)
        assert main(run) == 0, f"{page}: bisent {shlex.join(run)}"
        out = run[run.index("-o") + 1] if "-o" in run else None
        if out and out != "-":
            assert Path(out).exists(), f"{page}: bisent {shlex.join(run)} wrote no {out}"


@pytest.mark.parametrize("page,code", tours("python"), ids=lambda v: v if v.endswith(".md") else "")
def test_python_tour_runs(page, code, tmp_path, monkeypatch):
    from bisent import get_encoder
    from bisent.encoders.shards import embed_file

    monkeypatch.chdir(tmp_path)
    write_inputs(tmp_path)
    enc = get_encoder("char-ngram")
    embed_file("big.de.gz", "de", enc, "vec.de")
    x, y = enc.encode(EN, "en"), enc.encode(DE, "de")
    env = {"src_sentences": EN, "tgt_sentences": DE, "bg_src": x, "bg_tgt": y, "a": x[:3], "b": y[:3]}
    exec(compile(floor(code), page, "exec"), env)          # noqa: S102  the page's own code
    if "pairs" in env:
        assert env["pairs"] and all(0 <= p.tgt < len(DE) for p in env["pairs"])
    if "scores" in env:
        assert np.isfinite(env["scores"]).all()


#: a guide is a manual: how a default was chosen (a rule, its candidates, a dev or test run) is in docs/design/
GUIDES = [*sorted((DOCS / "guides").glob("*.md")), *sorted((DOCS / "models").glob("*.md")), DOCS / "quickstart.md"]
TUNING = re.compile(r"written (?:down )?before|\b[Nn]o candidate|^\|\s*candidate\s*\||^\|.*\|\s*rule\s*\|$"
                    r"|--split dev\b|\bby the rule\b|\bdev split\b", re.M)


def test_guides_are_manuals():
    found = []
    for page in GUIDES:
        text = page.read_text(encoding="utf-8")
        name = page.relative_to(ROOT)
        if len(text.splitlines()) > 150:
            found.append(f"{name}: {len(text.splitlines())} lines (150 at most)")
        found += [f"{name}:{text[:m.start()].count(chr(10)) + 1}: tuning record {m.group(0)!r}"
                  for m in TUNING.finditer(text)]
    assert not found, "\n".join(found)


def test_the_guide_rules_catch_a_lab_notebook(tmp_path):
    assert TUNING.search("The rule, written down before the test books were run: ...")
    assert TUNING.search("| candidate | training text | steps | dev error |")
    assert TUNING.search("bisent bench recover --domain bible --pair en-es --split dev -e DIR")
    assert TUNING.search("| setting | Bleualign de-fr | paragraphs en-de | rule |")
    assert not TUNING.search("| option | default | what it does, and why the default |")
    assert not TUNING.search("| setting | effect |")


def test_no_history_in_the_docs():
    pages = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
    for page in pages:
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            assert not HISTORY.search(line), f"{page.relative_to(ROOT)}:{n}: development history: {line.strip()}"


ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|obj|exc):`")


def reference_problems(cli: str, api: str) -> list[str]:
    """What the built CLI and API pages show of click or Sphinx instead of the text: click's placeholder of a missing
    default, a ``<TAB>`` taken for an HTML tag (the page then reads ``srctgt``), an Examples block run into a
    paragraph, a raw Sphinx role."""
    out = [f"the CLI reference shows click's Sentinel {n} times" for n in [cli.count("Sentinel")] if n]
    out += [f"a placeholder taken for an HTML tag: {m.group(0)!r}" for m in re.finditer(r"<(?:TAB|[A-Z]{2,})>", cli)]
    if "&lt;TAB&gt;" not in cli:
        out.append("no <TAB> placeholder is shown on the CLI reference")
    examples = cli.count("Examples:")
    as_code = len(re.findall(r'<p>Examples:</p>\s*<div class="highlight"><pre>', cli))
    if not examples or as_code != examples:
        out.append(f"{examples - as_code} of {examples} Examples blocks are not code blocks")
    out += [f"a raw Sphinx role on the API page: {api[m.start() - 30:m.end() + 30]!r}" for m in ROLE.finditer(api)]
    return out


def test_reference_checks_catch_what_they_look_for():
    good = '<p>Examples:</p>\n<div class="highlight"><pre>bisent x</pre></div> src&lt;TAB&gt;tgt'
    assert reference_problems(good, "<p>see <code>mine</code></p>") == []
    assert len(reference_problems(good + "<td><code>Sentinel.UNSET</code></td>", "")) == 1
    assert len(reference_problems(good + "lines of src<TAB>tgt", "")) == 1
    assert len(reference_problems(good + "<p>Examples:\n  bisent x -o y</p>", "")) == 1
    assert len(reference_problems(good.replace("<p>Examples:</p>", "<p>Examples:</p><p>"), "")) == 1
    assert len(reference_problems(good, "the mean of :class:`SentenceAvg` rows")) == 1


def test_the_renderers_fix_click_and_sphinx_text():
    import importlib.util as iu

    def load(name):
        spec = iu.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
        mod = iu.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    cli = load("mkdocs_cli")
    rows = ["| `--pairs` | file | TSV of src<TAB>tgt. | `Sentinel.UNSET` |",
            "| `--split` | boolean | Raw `<TAB>` text. | `Sentinel.UNSET` |", "| `-j` | integer | Jobs. | `1` |"]
    assert cli.fix_lines(["Examples:", "  bisent a -o x", "  bisent b", "", *rows]) == [
        "Examples:", "", "```sh", "bisent a -o x", "bisent b", "```", "",
        "| `--pairs` | file | TSV of src&lt;TAB>tgt. | – |",
        "| `--split` | boolean | Raw `<TAB>` text. | `False` |", "| `-j` | integer | Jobs. | `1` |"]
    if importlib.util.find_spec("griffe") is not None:
        roles = load("griffe_roles")
        assert roles.markdown("See :class:`SentenceAvg` and :func:`~bisent.mining.retrieval.mine`::") == \
            "See `SentenceAvg` and `mine`:"


@needs_mkdocs
def test_site_builds_strictly_with_every_command(tmp_path):
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT / "src")}
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    from bisent.cli import COMMANDS

    cli = (site / "cli" / "index.html").read_text(encoding="utf-8")
    missing = [name for name in COMMANDS if f'id="bisent-{name}"' not in cli]
    assert not missing, f"the CLI reference lacks {missing}"
    api = (site / "python-api" / "index.html").read_text(encoding="utf-8")
    for name in ("bisent.mining.retrieval.mine", "bisent.mining.scoring.MarginScorer",
                 "bisent.filtering.FilterPipeline", "bisent.align.SentenceAligner"):
        assert f'id="{name}"' in api, f"the Python API page lacks {name}"
    rendering_problems = reference_problems(cli, api)
    assert not rendering_problems, "\n".join(rendering_problems)
    assert "## Unreleased" not in (site / "changelog" / "index.html").read_text(encoding="utf-8")
    assert "Unreleased" in (site / "changelog" / "index.html").read_text(encoding="utf-8")
