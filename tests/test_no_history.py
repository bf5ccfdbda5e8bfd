"""The product speaks of the software only: no development history in the tracked files (CHANGELOG.md aside).

Two rules, over every file ``git ls-files`` lists:

- nowhere a work log's numbering: the words session, issue or stop followed by a number (any case of the first
  letter), e.g. in code, comments, help, recipes, tests, the Makefile or benchmark records;
- in prose, no private output folder: ``cmp`` or ``out`` then a slash and a name. Prose is a Markdown or text
  file's lines, the comments of Python, YAML, TOML and the Makefile, Python string constants with a space in
  them (docstrings, help texts, messages; a bare default path without a space is code), and the ``note`` of a
  benchmark record.
  Make's variables (``$(OUT)/general``) are not folders and are not matched;
- anywhere, no absolute path of a developer's machine (``/work/``, ``/tmp/``, ``/root/``, ``/home/`` then a name),
  and no file outside the repository: a sibling shared folder of papers, or a design note that is not tracked
  (``OUTSIDE``);
- anywhere, no work list's numbering as a heading (an item and its number), and no version history of the software
  itself (its first, earlier or previous version; ``VERSIONS``): a text says what is, not what was;
- outside the tests, before the first release (no ``v*`` tag), no option or form is marked as on its way out
  (``DEPRECATED``: the word, ``old=`` spellings, a promise to keep working for one release).
"""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXCLUDED = {"CHANGELOG.md"}
HISTORY = re.compile(r"\b(?:[Ss]ession|[Ii]ssue|[Ss]top) [0-9]")
FOLDER = re.compile(r"(?<![\w$(-])(?:cmp/|out/[a-z])")
MACHINE = re.compile(r"(?<![\w.~-])/(?:work|tmp|root|home)/[\w.-]")
OUTSIDE = re.compile(r"\.\./shared/|\bDESIGN\.md\b")
WORKLIST = re.compile(r"\bItem [0-9]+\b")
VERSIONS = re.compile(r"\b(?:the (?:first|earlier|previous|older|old) version|the version[ ]before)\b", re.IGNORECASE)
DEPRECATED = re.compile(r"\b[Dd]eprecat[ei]\w*|\bold=\(|\bfor one[ ]release\b")


def tracked() -> list[str]:
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True).stdout
    return [p for p in out.decode("utf-8").split("\0") if p and p not in EXCLUDED]


def _python_prose(text: str) -> list[tuple[int, str]]:
    """``(line, text)`` of a Python file's comments and of its string constants that hold a space."""
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT or (tok.type == tokenize.STRING and re.search(r"\s", tok.string)):
                out += [(tok.start[0] + i, s) for i, s in enumerate(tok.string.split("\n"))]
            elif getattr(tokenize, "FSTRING_MIDDLE", None) == tok.type and re.search(r"\s", tok.string):
                out.append((tok.start[0], tok.string))
    except (tokenize.TokenError, SyntaxError):    # not Python after all: every line is prose
        return list(enumerate(text.splitlines(), 1))
    return out


def _comments(text: str) -> list[tuple[int, str]]:
    """``(line, text)`` of ``#`` comments: a line that starts with one, or the rest of a line after `` #``."""
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        if stripped.startswith("#"):
            out.append((i, stripped))
        elif " #" in line:
            out.append((i, line[line.index(" #"):]))
    return out


def _notes(text: str) -> list[tuple[int, str]]:
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        if '"note"' in line:
            note = json.loads(line).get("note")
            if isinstance(note, str):
                out.append((i, note))
    return out


def prose(path: str, text: str) -> list[tuple[int, str]]:
    """The prose of a tracked file, as ``(line, text)``, for the private-folder rule."""
    name = Path(path).name
    if path.endswith(".py"):
        return _python_prose(text)
    if path.endswith((".yaml", ".yml", ".toml", ".cfg")) or name == "Makefile":
        return _comments(text)
    if path.endswith(".jsonl"):
        return _notes(text)
    if path.endswith((".md", ".txt", ".rst")):
        return list(enumerate(text.splitlines(), 1))
    return []


def released() -> bool:
    """Whether a version of the software was released (a ``v*`` tag): only then may an option be on its way out."""
    out = subprocess.run(["git", "-C", str(ROOT), "tag", "--list", "v*"], capture_output=True, check=True).stdout
    return bool(out.strip())


#: Substrings every match of a rule holds (VERSIONS: in the lower-cased text; each alternative starts with "the ",
#: letters without other case forms): a file without any of them cannot break the rule, and is not scanned line by
#: line (the records are tens of MB; the regular expressions are what takes the time).
NEEDLES = {HISTORY: ("ession ", "ssue ", "top "), OUTSIDE: ("../sha" + "red/", "DESI" + "GN.md"), WORKLIST: ("Item ",),
           DEPRECATED: ("eprecat", "old=(", "for one release"), FOLDER: ("cmp/", "out/"),
           MACHINE: ("/work/", "/tmp/", "/root/", "/home/")}


def _may_match(rule: re.Pattern, text: str, lowered: str) -> bool:
    if rule is VERSIONS:
        return "the " in lowered
    return any(n in text for n in NEEDLES[rule])


def problems(path: str, text: str, *, released: bool = False) -> list[str]:
    """``path:line: ...`` for every line that breaks a rule (``released``: a version is out, options may retire)."""
    rules = [("history", HISTORY), ("outside the repository", OUTSIDE), ("work list", WORKLIST),
             ("version history", VERSIONS)]
    if not released and not path.startswith("tests/"):
        rules.append(("retired before a release", DEPRECATED))
    lowered = text.lower()
    rules = [(what, rule) for what, rule in rules if _may_match(rule, text, lowered)]
    out = [f"{path}:{i}: {what}: {m.group(0)!r} in {line.strip()[:100]!r}"
           for i, line in enumerate(text.splitlines(), 1) for what, rule in rules for m in [rule.search(line)] if m]
    # a record's note is decoded JSON (an escape may hide a slash): always read
    if path.endswith(".jsonl") or _may_match(FOLDER, text, lowered):
        out += [f"{path}:{i}: private folder: {m.group(0)!r} in {s.strip()[:100]!r}"
                for i, s in prose(path, text) for m in [FOLDER.search(s)] if m]
    if _may_match(MACHINE, text, lowered):
        out += [f"{path}:{i}: machine path: {m.group(0)!r} in {line.strip()[:100]!r}"
                for i, line in enumerate(text.splitlines(), 1) for m in [MACHINE.search(line)] if m]
    return out


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout")
def test_no_tracked_file_speaks_of_development_history():
    found, out = [], released()
    for path in tracked():
        try:
            text = (ROOT / path).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue                                         # binary (a PNG), or deleted in the working tree
        found += problems(path, text, released=out)
    assert not found, f"{len(found)} line(s) of development history:\n" + "\n".join(found[:40])


def test_the_rules_catch_history_and_leave_code_alone():
    n = "1" + "7"                                  # built, so that this file does not break its own rule
    assert problems("a.py", f"x = 1  # see Issue {n}\n")
    assert problems("a.py", f'HELP = "measured in session {n}"\n')
    assert problems("r.jsonl", json.dumps({"encoder": "m", "command": f"after stop {n}"}) + "\n")
    assert problems("a.py", f'"""Trained into {"ou" + "t"}/general, see below."""\n')
    assert problems("a.py", f"# the {'cm' + 'p'}/s41 runs\n")
    assert problems("Makefile", f"# builds {'ou' + 't'}/student-general\nOUT := out\n")
    assert problems("r.jsonl", json.dumps({"note": f"{'ou' + 't'}/student beside use-m3"}) + "\n")
    assert problems("x.yaml", f"a: 1   # from {'cm' + 'p'}/old\n")
    assert problems("README.md", f"Then {'ou' + 't'}/general holds it.\n")
    assert problems("r.jsonl", json.dumps({"command": "bisent x --gold " + "/wo" + "rk/shared/data"}) + "\n")
    assert problems("a.py", "P = '" + "/tm" + "p/x/res'\n")
    assert problems("a.py", '"""Paper: ' + "../sha" + 'red/papers/x.txt."""\n')
    assert problems("t.py", '    """The formulas in ' + "DESI" + 'GN.md."""\n')
    assert problems("t.py", "# " + "It" + "em 3: a lone CR is a bad line\n")
    assert problems("a.py", 'H = "storey: the version ' + 'before it; em: the first ' + 'version"\n')
    assert problems("a.py", '"""Over all pairs (the earlier ' + 'version)."""\n')
    assert problems("a.py", '@renamed("-o", "--output", ' + "ol" + 'd=("--out",))\n')
    assert problems("a.py", '"""Old spellings keep working for one ' + 'release."""\n')
    assert problems("a.py", 'echo("--out is ' + 'depre' + 'cated")\n')
    assert not problems("a.py", 'echo("--out is ' + 'depre' + 'cated")\n', released=True)
    # code and records' own fields are not prose; make's variables are not folders; words ending in out are words
    o = "ou" + "t"
    assert not problems("a.py", f'def f(out_dir="{o}/demo"):\n    return out_dir\n')
    assert not problems("Makefile", "OUT := out\n# writes $(OUT)/general\n\t$(BIN)/bisent x -o $(OUT)/general\n")
    assert not problems("r.jsonl", json.dumps({"encoder": f"{o}/student", "command": f"bisent x -o {o}/y"}) + "\n")
    assert not problems("a.md", "Read it throughout/below; a layout/style, the session's result, issue tracker.\n")
    assert not problems("a.md", "Each item 3 times; the version of the model; shared/ folders; DESIGN.mdx.\n")
