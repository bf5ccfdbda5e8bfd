"""The CLI end to end: mining output, BUCC evaluation, and one-line errors for bad input."""

import functools
import json
import os
import subprocess
import sys

import pytest

from bisent.cli import main


def run(*args, env_extra=None):
    env = dict(os.environ, **(env_extra or {}))
    p = subprocess.run([sys.executable, "-m", "bisent", *map(str, args)], capture_output=True, text=True, env=env)
    return p.returncode, p.stdout, p.stderr


def write_bytes(path, data: bytes):
    path.write_bytes(data)
    return path


EN = ["the red house", "a blue car", "green tea please", "an old wooden boat"]
XX = ["a blue car?", "the red house.", "no match here at all", "green tea please!"]


def test_mine_and_eval_bucc(tmp_path, capsys):
    src = tmp_path / "en.tsv"
    tgt = tmp_path / "xx.tsv"
    src.write_text("".join(f"e{i}\t{t}\n" for i, t in enumerate(EN)))
    tgt.write_text("".join(f"x{i}\t{t}\n" for i, t in enumerate(XX)))
    gold = tmp_path / "gold"
    gold.write_text("e0\tx1\ne1\tx0\ne2\tx3\n")
    out = tmp_path / "mined.tsv"
    assert main(["mine", src, tgt, "-l", "en", "-L", "en", "-e", "char-ngram", "--format", "bucc", "-o", out,
                 "--threshold", "none"]) == 0
    rows = [r.split("\t") for r in out.read_text().splitlines()]
    assert {(r[3], r[4]) for r in rows[:3]} == {("e0", "x1"), ("e1", "x0"), ("e2", "x3")}
    assert [float(r[0]) for r in rows] == sorted((float(r[0]) for r in rows), reverse=True)
    capsys.readouterr()
    assert main(["eval", "bucc", out, gold, "--json"]) == 0
    best = json.loads(capsys.readouterr().out)["best"]
    assert best["f1"] == 1.0 and best["n_correct"] == 3


def test_embed_then_mine_from_vectors(tmp_path):
    src = tmp_path / "en.txt"
    tgt = tmp_path / "xx.txt"
    src.write_text("\n".join(EN[:2] + [""] + EN[2:]) + "\n")
    tgt.write_text("\n".join(XX) + "\n")
    for f, lang in ((src, "en"), (tgt, "en")):
        assert main(["embed", f, "-l", lang, "-e", "char-ngram", "-o", tmp_path / f"{f.stem}.vec"]) == 0
    out = tmp_path / "m.tsv"
    assert main(["mine", src, tgt, "-l", "en", "-L", "en", "--src-vectors", tmp_path / "en.vec",
                 "--tgt-vectors", tmp_path / "xx.vec", "--line-numbers", "-o", out, "--threshold", "none"]) == 0
    rows = [r.split("\t") for r in out.read_text().splitlines()]
    assert ("green tea please", "green tea please!", "4", "4") in {tuple(r[1:]) for r in rows}


BAD_CASES = {
    "missing": (None, r"nope\.txt: no such file"),
    "non-utf8": (b"fine line\nbad \xff byte\n", r":2: not valid UTF-8 \(byte 0xff at column 5\)"),
    "nul": (b"ok\nnul\x00here\n", r":2: contains a NUL byte"),
    "tab": (b"ok\nok too\ntab\there\n", r":3: contains a tab"),
    "long": (b"ok\n" + b"x" * (1 << 20) + b"\n", r":2: line is 1048576 bytes long, over the limit of 20000"),
    "empty-file": (b"", r": file is empty"),
}


@pytest.mark.parametrize("case", list(BAD_CASES))
@pytest.mark.parametrize("command", ["embed", "mine"])
def test_bad_input_gives_one_line_error(tmp_path, capsys, case, command):
    """Each command in a new interpreter on the first case (what a user's shell sees), in this process on the rest."""
    data, pattern = BAD_CASES[case]
    bad = tmp_path / "nope.txt" if data is None else write_bytes(tmp_path / f"{case}.txt", data)
    good = write_bytes(tmp_path / "good.txt", b"a line\nanother line\n")
    if command == "embed":
        args = ["embed", bad, "-l", "en", "-e", "char-ngram", "-o", tmp_path / "v"]
    else:
        args = ["mine", good, bad, "-l", "en", "-L", "de", "-e", "char-ngram", "-o", tmp_path / "o.tsv"]
    code, out, err = run(*args) if case == next(iter(BAD_CASES)) else in_process(capsys, *args)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bisent: error: "), err
    assert "Traceback" not in err
    import re
    assert re.search(pattern, lines[0]), lines[0]
    assert str(bad.name) in lines[0]
    assert not (tmp_path / "o.tsv").exists()


@pytest.mark.parametrize("args,pattern", [
    (["-e", "no-such-encoder"], "unknown encoder 'no-such-encoder'"),
    (["-e", "use-m3", "-l", "xx"], "unknown language 'xx'"),
    (["-e", "./no/such/model"], "no/such/model: no such model directory"),
])
def test_unknown_encoder_or_language(tmp_path, capsys, args, pattern):
    f = write_bytes(tmp_path / "in.txt", b"hello\n")
    first = args[1] == "no-such-encoder"                     # in a new interpreter; the others in this process
    if "-l" not in args:
        args = args + ["-l", "en"]
    code, _, err = (run if first else functools.partial(in_process, capsys))("embed", f, *args, "-o", tmp_path / "v")
    assert code == 2 and len(err.strip().splitlines()) == 1 and pattern in err, err


def in_process(capsys, *args):
    """``run``'s (code, stdout, stderr) from ``main`` in this process: a usage error needs no new interpreter (each
    command's errors keep a subprocess case here or in the other CLI tests)."""
    capsys.readouterr()
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_mismatched_shards_and_model_dir(tmp_path, capsys):
    src = write_bytes(tmp_path / "en.txt", b"one\ntwo\n")
    other = write_bytes(tmp_path / "de.txt", b"eins\nzwei\ndrei\n")
    assert main(["embed", src, "-l", "en", "-e", "char-ngram", "-o", tmp_path / "v"]) == 0
    code, _, err = run("mine", other, src, "-l", "de", "-L", "en", "--src-vectors", tmp_path / "v",
                       "--tgt-vectors", tmp_path / "v", "-o", tmp_path / "o.tsv")
    assert code == 2 and "made from another input than" in err and len(err.strip().splitlines()) == 1
    (tmp_path / "v" / "shard-00000.npy").write_bytes(b"garbage")
    code, _, err = in_process(capsys, "mine", src, src, "-l", "en", "-L", "en", "--src-vectors", tmp_path / "v",
                              "--tgt-vectors", tmp_path / "v", "-o", tmp_path / "o.tsv")
    assert code == 2 and "shard-00000.npy: not a readable .npy file" in err and len(err.strip().splitlines()) == 1
    model = tmp_path / "model"
    model.mkdir()
    code, _, err = in_process(capsys, "embed", src, "-l", "en", "-e", model, "-o", tmp_path / "w")
    assert code == 2 and "model: not a model directory (no modules.json, config.json" in err


def test_data_general_caps_only_the_optional_sources_may_be_zero(tmp_path, capsys):
    """ui=0 is a one-line error naming the sources a cap of 0 may turn off; nothing is written."""
    code, _, err = run("data", "general", "--cap", "ui=0", "-o", tmp_path / "g")
    assert code != 0 and "--cap ui=0" in err and "rdict, gnome-pairs, words: N >= 0" in err and "Traceback" not in err
    assert not (tmp_path / "g").exists()
    for bad in ("ui-apps=-1", "ui-apps=many", "apps=10"):                 # ui-apps may be 0 (its default), not less
        code, _, err = in_process(capsys, "data", "general", "--cap", bad, "-o", tmp_path / "g")
        assert code != 0 and f"--cap {bad}" in err and "ui-apps, rdict" in err and "Traceback" not in err
        assert not (tmp_path / "g").exists()


def test_a_command_whose_extra_is_missing_says_which_to_install(tmp_path, monkeypatch):
    """Without torch (the train extra), `bisent data vocab` is a one-line error naming the extra, not a
    traceback; an unrelated missing module is not hidden."""
    (tmp_path / "mono.de.txt").write_text("ein haus\n", encoding="utf-8")
    code = ("import sys; sys.modules['torch'] = None; from bisent.cli import main; "
            "sys.exit(main(sys.argv[1:]))")
    p = subprocess.run([sys.executable, "-c", code, "data", "vocab", "--mono", tmp_path / "mono.de.txt",
                        "-o", tmp_path / "v"], capture_output=True, text=True)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert p.stderr.strip() == "bisent: error: this command needs torch, which this install lacks: " \
                               "pip install 'bisent[train]'"
    assert not (tmp_path / "v").exists()

    def missing(*args, **kwargs):
        raise ModuleNotFoundError("No module named 'nosuchthing'", name="nosuchthing")

    import bisent.cli

    monkeypatch.setattr(bisent.cli.cli, "main", missing)
    with pytest.raises(ModuleNotFoundError):
        main(["encoders"])
