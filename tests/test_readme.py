"""The README stays a short introduction whose commands, code and links work as written.

Its commands and Python run on tiny inputs with the ``char-ngram`` floor in place of the anchors (no model files
needed; the same interface).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from test_docs import as_run, floor

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
EN = ["The cat sits on the mat.", "Open the file menu.", "Save the document.", "Close the window.",
      "Print the page.", "Insert a table.", "Delete the row.", "Copy the text."]
DE = ["Die Katze sitzt auf der Matte.", "Öffnen Sie das Menü Datei.", "Speichern Sie das Dokument.",
      "Schließen Sie das Fenster.", "Drucken Sie die Seite.", "Fügen Sie eine Tabelle ein.",
      "Löschen Sie die Zeile.", "Kopieren Sie den Text."]


def text() -> str:
    return README.read_text(encoding="utf-8")


def test_readme_is_short_and_says_how_to_install():
    t = text()
    assert len(t.splitlines()) <= 150
    for needed in ("make demo", "make test", "pip install -e .", "pip install -e '.[train]'"):
        assert needed in t, needed


def test_readme_links_resolve():
    links = [link.split("#")[0] for link in re.findall(r"\]\(([^)\s]+)\)", text())
             if not re.match(r"[a-z]+:", link)]
    for needed in ("CHANGELOG.md", "LICENSE", "benchmarks/README.md", "docs/references.md", "docs/index.md"):
        assert needed in links, needed
    missing = [link for link in links if link and not (ROOT / link).exists()]
    assert not missing, missing


def test_readme_commands_run(tmp_path, monkeypatch):
    """Every ``$ bisent ...`` line of the README's console blocks runs (and three jobs are shown)."""
    from bisent.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "en.txt").write_text("".join(s + "\n" for s in EN), encoding="utf-8")
    (tmp_path / "de.txt").write_text("".join(s + "\n" for s in sorted(DE)), encoding="utf-8")
    (tmp_path / "noisy.tsv").write_text("".join(f"{e}\t{g}\n" for e, g in zip(EN, DE)) + f"{EN[1]}\t{EN[1]}\n",
                                        encoding="utf-8")
    task = tmp_path / "task"
    task.mkdir()
    (task / "0000.en").write_text("".join(s + "\n" for s in EN), encoding="utf-8")
    (task / "0000.de").write_text("".join(s + "\n" for s in DE[:3] + DE[4:]), encoding="utf-8")
    (task / "0000.gold").write_text("[0]:[0]\n[1]:[1]\n[2]:[2]\n[4]:[3]\n[5]:[4]\n[6]:[5]\n[7]:[6]\n",
                                    encoding="utf-8")
    ran = []
    for block in re.findall(r"```console\n(.*?)```", text(), flags=re.S):
        for line in block.splitlines():
            if not line.startswith("$ bisent "):
                continue
            args = as_run(shlex.split(floor(line[2:]), comments=True)[1:])
            assert main(args) == 0, args
            ran.append(args[0])
    assert {"mine", "filter", "align", "eval"} <= set(ran), ran
    assert Path("mined.tsv").read_text(encoding="utf-8").strip()
    kept = Path("kept.tsv").read_text(encoding="utf-8").splitlines()
    rejected = Path("rejected.tsv").read_text(encoding="utf-8").splitlines()
    assert len(kept) + len(rejected) == len(EN) + 1
    assert len(Path("aligned.tsv").read_text(encoding="utf-8").splitlines()) >= len(EN)


def test_readme_python_runs(capsys):
    (code,) = re.findall(r"```python\n(.*?)```", text(), flags=re.S)
    exec(compile(floor(code), str(README), "exec"), {})          # noqa: S102  the README's own code
    printed = capsys.readouterr().out.splitlines()
    assert printed and all("->" in line for line in printed)
