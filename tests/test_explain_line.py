"""``bisent explain FILE --line N``: the pair on line N of a bitext in any format, and the bound its verdict crossed."""

from __future__ import annotations

import json

import pytest

from bisent.cli import main

PAIRS = [("the red house", "das rote Haus"),
         ("a short one", "ein sehr sehr langer Satz mit viel zu vielen Wörtern darin"),
         ("green tea", "grüner Tee")]
STEPS = "- {type: length_ratio, max_ratio: 1.8}\n"


def _explain(args, capsys):
    code = main(["explain", *args, "-l", "en", "-L", "de", "-e", "char-ngram", "--json"])
    out = capsys.readouterr()
    return code, (json.loads(out.out) if code == 0 else None), out.err


def _write(tmp_path, fmt):
    if fmt == "tsv":
        (tmp_path / "p.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in PAIRS))
        return ["p.tsv"], []
    if fmt == "columns":
        (tmp_path / "p.tsv").write_text("".join(f"id{i}\tx\t{s}\t{t}\n" for i, (s, t) in enumerate(PAIRS)))
        return ["p.tsv"], ["--columns", "3,4"]
    if fmt == "jsonl":
        (tmp_path / "p.jsonl").write_text("".join(json.dumps({"src": s, "tgt": t}) + "\n" for s, t in PAIRS))
        return ["p.jsonl"], []
    if fmt == "moses":
        (tmp_path / "p.en").write_text("".join(s + "\n" for s, _ in PAIRS))
        (tmp_path / "p.de").write_text("".join(t + "\n" for _, t in PAIRS))
        return ["p.en", "p.de"], []
    tus = "".join(f'<tu><tuv xml:lang="en"><seg>{s}</seg></tuv><tuv xml:lang="de"><seg>{t}</seg></tuv></tu>'
                  for s, t in PAIRS)
    (tmp_path / "p.tmx").write_text(f'<?xml version="1.0"?><tmx version="1.4"><header srclang="en"/><body>{tus}'
                                    "</body></tmx>")
    return ["p.tmx"], []


@pytest.mark.parametrize("fmt", ["tsv", "columns", "jsonl", "moses", "tmx"])
def test_explain_reads_line_n_of_each_format(tmp_path, capsys, monkeypatch, fmt):
    monkeypatch.chdir(tmp_path)
    files, extra = _write(tmp_path, fmt)
    code, ex, err = _explain([*files, "--line", "3", *extra], capsys)
    assert code == 0, err
    assert (ex["src"], ex["tgt"]) == PAIRS[2]


def test_the_verdict_names_the_step_and_the_limit_crossed(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, "tsv")
    (tmp_path / "steps.yaml").write_text(STEPS)
    code, ex, err = _explain(["p.tsv", "--line", "2", "-c", "steps.yaml"], capsys)
    assert code == 0, err
    assert ex["filter"]["reason"] == "length_ratio" and not ex["filter"]["kept"]
    assert ex["filter"]["bound"] == "length_ratio 3.667 > max_ratio 1.8"   # 11 words / 3 words
    assert main(["explain", "p.tsv", "--line", "2", "-c", "steps.yaml", "-l", "en", "-L", "de", "-e",
                 "char-ngram"]) == 0
    assert "verdict: rejected: length_ratio 3.667 > max_ratio 1.8" in capsys.readouterr().out
    code, ex, err = _explain(["p.tsv", "--line", "1", "-c", "steps.yaml"], capsys)
    assert ex["filter"]["kept"] and ex["filter"]["bound"] is None


def test_accept_bounds_are_named_too(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, "tsv")
    (tmp_path / "steps.yaml").write_text("- {type: length, accept: {max: 5}}\n")
    code, ex, err = _explain(["p.tsv", "--line", "2", "-c", "steps.yaml"], capsys)
    assert code == 0, err
    assert ex["filter"]["bound"] == "length target 11 > max 5 (accept)"


@pytest.mark.parametrize("args, message", [
    (["p.tsv", "--line", "9"], "p.tsv: --line 9: there is no line 9 (the last is 3)"),
    (["p.tsv"], "give two sentences SRC TGT, or a bitext file with --line N"),
    (["a", "b", "--columns", "1,2"], "--format and --columns read a bitext file"),
])
def test_line_mistakes_are_one_line_errors(tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, "tsv")
    code, _, err = _explain(args, capsys)
    assert code == 2 and message in err and err.count("\n") == 1


def test_a_bad_line_is_named(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.tsv").write_text("a\tb\nno tab here\n")
    code, _, err = _explain(["p.tsv", "--line", "2"], capsys)
    assert code == 2 and "p.tsv: line 2: cannot explain it:" in err
