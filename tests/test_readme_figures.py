"""The figures the README and the quickstart show are what their commands print, on the real data they name.

The README's console blocks and the quickstart's ``sh`` / ``text`` blocks are run as written (the shell lines with
bash, the ``bisent`` lines in this process) on LibreOffice help fetched by ``bisent data`` with the default encoder;
every ``"key": value`` the page shows of a printed JSON object must be what the command printed, an ``eval`` line
must be printed as shown, and the filter example's sentence of counts must match its outputs. Slow (real data and
use-m3): ``pytest -m slow tests/test_readme_figures.py``.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = {"README.md": ROOT / "README.md", "quickstart": ROOT / "docs" / "quickstart.md"}

pytestmark = pytest.mark.slow
#: the README shows the inputs of its examples in words; they are made as the quickstart makes them
README_INPUTS = ("cut -f3 data/en-de/test.tsv | head -300 > en.txt",
                 "cut -f4 data/en-de/test.tsv | sed -n 51,350p | sort > de.txt",
                 "bisent data align -l en -L de --split test --drop 0.1 -o task/")
#: printed figures that differ from run to run
UNSTABLE = ("seconds",)


def shown_fields(text: str) -> dict:
    """The ``"key": value`` pairs of a JSON object as a page shows it (elided with ``...``, wrapped over lines)."""
    out = {}
    for m in re.finditer(r'"(\w+)": (\{[^{}]*\}|"[^"]*"|-?[\d.]+|null|true|false)', text):
        out[m.group(1)] = json.loads(m.group(2))
    return out


def steps(page: str) -> list[tuple[str, str]]:
    """(command, the output the page shows after it) in page order: a README console block's ``$`` lines and the
    lines under each; a quickstart ``sh`` block's lines, the last one followed by the next ``text`` block."""
    text = PAGES[page].read_text(encoding="utf-8")
    out = []
    if page == "README.md":
        out += [(cmd, "") for cmd in README_INPUTS]
        for block in re.findall(r"```console\n(.*?)```", text, flags=re.S):
            for part in re.split(r"^\$ ", block, flags=re.M)[1:]:
                cmd, _, shown = part.partition("\n")
                out.append((cmd, shown))
        return out
    for kind, block, after in re.findall(r"```(sh|bash)\n(.*?)```\s*(?:```text\n(.*?)```)?", text, flags=re.S):
        lines = [ln for ln in block.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        for i, ln in enumerate(lines):
            out.append((ln, after if i == len(lines) - 1 else ""))
    return out


def run_page(page: str, folder: Path, capsys) -> list[tuple[str, str, str]]:
    """Run a page's commands in ``folder``: (command, shown, printed) for every bisent command."""
    from bisent.cli import main

    done = []
    for cmd, shown in steps(page):
        words = shlex.split(cmd, comments=True)
        if not words or words[0] in ("make", "pip"):
            continue
        if words[0] != "bisent":
            subprocess.run(["bash", "-c", cmd], cwd=folder, check=True)
            continue
        if words[1:3] == ["data", "libreoffice"] and (folder / "data" / "en-de").is_dir():
            continue
        capsys.readouterr()
        assert main(words[1:]) == 0, cmd
        got = capsys.readouterr()
        done.append((cmd, shown, got.out + got.err))
    return done


def check(done: list[tuple[str, str, str]]) -> None:
    for cmd, shown, printed in done:
        objects = [json.loads(ln) for ln in printed.splitlines() if ln.startswith("{")]
        want = {k: v for k, v in shown_fields(shown).items() if k not in UNSTABLE}
        if want:
            got = objects[-1] if objects else {}
            wrong = {k: (v, got.get(k)) for k, v in want.items() if k in got and got[k] != v}
            missing = [k for k in want if k not in got]
            assert not wrong and not missing, f"{cmd}: shown -> printed {wrong}, not printed {missing}"
        for line in shown.splitlines():
            if line.startswith(("strict ", "bisent: kept")):
                assert line in printed, f"{cmd}: shows {line!r}, prints {printed!r}"


@pytest.mark.parametrize("page", sorted(PAGES))
def test_page_figures_are_printed(page, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    subprocess.run(["bash", "-c", "mkdir -p data"], cwd=tmp_path, check=True)
    from bisent.cli import main

    assert main(["data", "libreoffice", "-l", "en", "-L", "de", "-o", "data/en-de"]) == 0
    done = run_page(page, tmp_path, capsys)
    assert {"mine", "filter", "align", "eval"} <= {shlex.split(c)[1] for c, _, _ in done}
    check(done)
    # the filter example's counts in words: copies and shifted pairs rejected, published pairs lost
    rejected = {int(r.split("\t")[0]) for r in (tmp_path / "rejected.tsv").read_text(encoding="utf-8").splitlines()}
    text = PAGES[page].read_text(encoding="utf-8")
    m = re.search(r"(\d+)\s+of\s+the\s+60\s+shifted\s+pairs,\s+against\s+(\d+)\s+of\s+the\s+220", text)
    assert m, "the filter example's sentence of counts"
    assert (int(m.group(1)), int(m.group(2))) == (len(rejected & set(range(241, 301))),
                                                  len(rejected & set(range(1, 221))))
    assert set(range(221, 241)) <= rejected                      # "every copy is rejected"
