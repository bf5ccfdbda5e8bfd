"""The README's tours run as written, on tiny inputs with a floor encoder (``char-ngram``) in place of the anchors."""

from __future__ import annotations

import lzma
import re
import shlex
import shutil
from pathlib import Path

import numpy as np
import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
EN = ["The cat sits on the mat.", "Open the file menu.", "Save the document.", "Close the window.",
      "Print the page.", "Insert a table.", "Delete the row.", "Copy the text."]
DE = ["Die Katze sitzt auf der Matte.", "Öffnen Sie das Menü Datei.", "Speichern Sie das Dokument.",
      "Schließen Sie das Fenster.", "Drucken Sie die Seite.", "Fügen Sie eine Tabelle ein.",
      "Löschen Sie die Zeile.", "Kopieren Sie den Text."]


def section_blocks(heading: str, lang: str) -> list[str]:
    """The ```lang code blocks under the README heading ``heading`` (up to the next heading of that level)."""
    text = README.read_text(encoding="utf-8")
    start = text.index(heading)
    level = heading.split(" ")[0]
    nxt = re.search(rf"^{level} ", text[start + len(heading):], flags=re.M)
    part = text[start: start + len(heading) + (nxt.start() if nxt else len(text))]
    return re.findall(rf"```{lang}\n(.*?)```", part, flags=re.S)


def floor(code: str) -> str:
    """The anchors swapped for the char-ngram floor (no model files needed; same interface)."""
    return code.replace('"use-m3"', '"char-ngram"').replace("me5-small", "char-ngram")


def test_python_tour_runs(tmp_path, monkeypatch):
    (code,) = section_blocks("## A five-minute tour of the Python API", "python")
    monkeypatch.chdir(tmp_path)
    with lzma.open("big.en.xz", "wt", encoding="utf-8") as f:
        f.write("".join(s + "\n" for s in EN))
    from bisent import get_encoder
    from bisent.vectors import embed_file

    enc = get_encoder("char-ngram")
    (tmp_path / "big.de").write_text("".join(s + "\n" for s in DE), encoding="utf-8")
    embed_file("big.de", "de", enc, "vec.de")
    bg = enc.encode(EN, "en"), enc.encode(DE, "de")
    env = {"src_sentences": EN, "tgt_sentences": DE, "bg_src": bg[0], "bg_tgt": bg[1], "a": bg[0][:3], "b": bg[1][:3]}
    exec(compile(floor(code), str(README), "exec"), env)          # noqa: S102  the README's own code
    assert env["x"].shape == (1, 1024) and env["y"].shape == (2, 1024)
    assert env["scores"].shape == (3,) and np.isfinite(env["scores"]).all()
    assert [p.src for p in env["pairs"]] and all(0 <= p.tgt < len(DE) for p in env["pairs"])


def cli_lines(block: str) -> list[list[str]]:
    """Shell lines of a README block (continuations joined, comments dropped) as argument lists."""
    joined = re.sub(r"\\\n\s*", " ", block)
    out = []
    for line in joined.splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("."):
            out.append(shlex.split(line))
    return out


@pytest.mark.skipif(shutil.which("apt-get") is None, reason="the tour's bucc task needs Debian's packages")
def test_cli_tour_runs(tmp_path, monkeypatch):
    from bisent.cli import main

    (block,) = section_blocks("## A five-minute tour of the CLI", "sh")
    monkeypatch.chdir(tmp_path)
    for name, lines in (("news.en", EN), ("news.de", DE)):
        (tmp_path / name).write_text("".join(s + "\n" for s in lines), encoding="utf-8")
    with lzma.open("big.en.xz", "wt", encoding="utf-8") as f:
        f.write("".join(s + "\n" for s in EN))
    import gzip

    with gzip.open("big.de.gz", "wt", encoding="utf-8") as f:
        f.write("".join(s + "\n" for s in DE))
    ran = []
    for args in cli_lines(floor(block)):
        assert args[0] == "bisent"
        args = args[1:]
        if args[0] in ("mine", "embed") and "-e" not in args:
            args += ["-e", "char-ngram"]
        if args[0] == "mine" and "--threshold" not in args and "--precision" not in args:
            args += ["--threshold", "none"]     # a toy corpus: too few pairs to calibrate the default threshold
        if args[0] == "data":
            args += ["--max-gold", "30"]
        assert main(args) == 0, args
        ran.append(args[0])
    assert ran.count("mine") == 5 and "eval" in ran
    assert Path("mined.tsv").read_text(encoding="utf-8").strip()
