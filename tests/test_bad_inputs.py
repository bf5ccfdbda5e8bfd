"""A hostile new user: bad inputs across every command give one clear line, never a traceback or lost data.

The table below runs each command in-process (``bisent.cli.main``) on a bad
input and checks: exit status 2; exactly one ``bisent: error:`` line, holding
the expected text (the file, line or key, and the problem); no ``Traceback``;
every file that existed before is byte-identical afterwards. The tests after
the table pin the defects that need more than an error line:
symlinked state folders and partial files, outputs that are inputs, lone CR
line endings, non-finite numbers, standard input, threads, the fp16 cache.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bisent.cli import main
from bisent.recipes import resolve as resolve_recipe
from conftest import snapshot

LINES = ["the red house", "a blue car", "green tea please", "an old wooden boat"]
PAIRS = ["the red house\tdas rote Haus", "a blue car\tein blaues Auto", "green tea please\tgrüner Tee bitte"]
CONFIG = "steps:\n  - type: duplicate\n  - type: empty\n"


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

def run_main(argv, capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def dan_dir(path: Path, *, nan: bool = False, **config_changes) -> Path:
    """A tiny DAN model directory (8-d) written the way training writes one; ``config_changes`` break it."""
    from bisent.models import modeldir

    hp = {"dim": 8, "embed_dim": 4, "hidden": [], "buckets": 64, "n_min": 3, "n_max": 5, "word_ngrams": 2,
          "lowercase": True, "max_tokens": 128, "feature_dropout": 0.0, "dropout": 0.0}
    rng = np.random.default_rng(0)
    table = rng.standard_normal((64, 4)).astype(np.float32)
    if nan:
        table[:] = np.nan
    modeldir.save(path, "dan", hp, {"embed.weight": table,
                                    "layers.0.weight": rng.standard_normal((8, 4)).astype(np.float32),
                                    "layers.0.bias": np.zeros(8, np.float32)})
    if config_changes:
        cfg = json.loads((path / "config.json").read_text())
        for key, value in config_changes.items():
            if key == "architecture":
                cfg[key] = value
            else:
                cfg["model"][key] = value
        (path / "config.json").write_text(json.dumps(cfg))
    return path


def files(d: Path) -> dict[str, Path]:
    """The inputs every case may use, written fresh in ``d``."""
    d.mkdir(exist_ok=True)
    p = {
        "txt": d / "en.txt", "de": d / "de.txt", "tsv": d / "pairs.tsv", "cfg": d / "filter.yaml",
        "empty": d / "empty.txt", "cr": d / "cr.txt", "bucc_en": d / "en.bucc", "bucc_de": d / "de.bucc",
        "mined": d / "mined.tsv", "gold": d / "gold.tsv", "recipe": d / "recipe.yaml", "notdir": d / "plain",
    }
    p["txt"].write_text("\n".join(LINES) + "\n")
    p["de"].write_text("das rote Haus\nein blaues Auto\ngrüner Tee bitte\n")
    p["tsv"].write_text("\n".join(PAIRS) + "\n")
    p["cfg"].write_text(CONFIG)
    p["empty"].write_bytes(b"")
    p["cr"].write_bytes(b"one\rtwo\rthree\r")
    p["bucc_en"].write_text("e1\tthe red house\ne2\ta blue car\n")
    p["bucc_de"].write_text("d1\tdas rote Haus\nd2\tein blaues Auto\n")
    p["mined"].write_text("0.9\tthe red house\tdas rote Haus\te1\td1\n0.5\ta blue car\tein blaues Auto\te2\td2\n")
    p["gold"].write_text("e1\td1\ne2\td2\n")
    p["recipe"].write_text(resolve_recipe("guo2019-dan").read_text())
    p["notdir"].write_text("a file, not a folder\n")
    return p


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


# Each case: (id, function of (tmp folder, input paths) -> argv, text expected in the error line).
# ``{d}`` style paths are built inside the lambdas; every case runs in a fresh folder.
E = ["embed"]
M = lambda p: ["mine", p["txt"], p["de"], "-l", "en", "-L", "de", "-e", "char-ngram"]  # noqa: E731
F = lambda p: ["filter", p["tsv"], "-l", "en", "-L", "de", "-c", p["cfg"]]  # noqa: E731
T = lambda p: ["train", "-c", p["recipe"], "--train", f"en-de={p['tsv']}"]  # noqa: E731
S = lambda p: ["train-scorer", "--clean", p["tsv"], "-l", "en", "-L", "de", "-e", "char-ngram"]  # noqa: E731

CASES = [
    # --- embed -----------------------------------------------------------------------------------
    ("embed-missing", lambda d, p: E + [d / "nope.txt", "-l", "en", "-e", "char-ngram", "-o", d / "v"],
     "nope.txt: no such file"),
    ("embed-folder-input", lambda d, p: E + [d, "-l", "en", "-e", "char-ngram", "-o", d / "v"], "is a directory"),
    ("embed-empty", lambda d, p: E + [p["empty"], "-l", "en", "-e", "char-ngram", "-o", d / "v"],
     "empty.txt: file is empty"),
    ("embed-lone-cr", lambda d, p: E + [p["cr"], "-l", "en", "-e", "char-ngram", "-o", d / "v"],
     "cr.txt:1: contains a carriage return"),
    ("embed-utf8", lambda d, p: E + [_write(d / "b.txt", b"ok\n\xff\xfe bad\n"), "-l", "en", "-e", "char-ngram", "-o",
                                     d / "v"], "b.txt:2: not valid UTF-8"),
    ("embed-nul", lambda d, p: E + [_write(d / "b.txt", b"ok\nn\x00ul\n"), "-l", "en", "-e", "char-ngram", "-o",
                                    d / "v"], "b.txt:2: contains a NUL byte"),
    ("embed-tab", lambda d, p: E + [_write(d / "b.txt", b"a\tb\n"), "-l", "en", "-e", "char-ngram", "-o", d / "v"],
     "b.txt:1: contains a tab"),
    ("embed-too-long", lambda d, p: E + [p["txt"], "-l", "en", "-e", "char-ngram", "-o", d / "v", "--max-bytes", "5"],
     "en.txt:1: line is 13 bytes long"),
    ("embed-unknown-encoder", lambda d, p: E + [p["txt"], "-l", "en", "-e", "nope", "-o", d / "v"],
     "unknown encoder 'nope'"),
    ("embed-missing-model-dir", lambda d, p: E + [p["txt"], "-l", "en", "-e", d / "no" / "model", "-o", d / "v"],
     "no such model directory"),
    ("embed-output-is-file", lambda d, p: E + [p["txt"], "-l", "en", "-e", "char-ngram", "-o", p["de"]],
     "de.txt' is a file"),
    ("embed-output-proc", lambda d, p: E + [p["txt"], "-l", "en", "-e", "char-ngram", "-o", "/proc/x/v"],
     "/proc/x/v: cannot write"),
    ("embed-output-under-file", lambda d, p: E + [p["txt"], "-l", "en", "-e", "char-ngram", "-o", p["notdir"] / "v"],
     "cannot write"),
    ("embed-shard-rows-0", lambda d, p: E + [p["txt"], "-l", "en", "-e", "char-ngram", "-o", d / "v", "--shard-rows",
                                             "0"], "--shard-rows"),
    ("embed-unknown-option", lambda d, p: E + [p["txt"], "-l", "en", "--bogus"], "--bogus"),
    ("embed-config-arch-list", lambda d, p: E + [p["txt"], "-l", "en", "-e", dan_dir(d / "m", architecture=["dan"]),
                                                 "-o", d / "v"], "'architecture' must be a name"),
    ("embed-config-buckets-str", lambda d, p: E + [p["txt"], "-l", "en", "-e", dan_dir(d / "m", buckets="64"), "-o",
                                                   d / "v"], "'buckets'"),
    ("embed-config-n-min-neg", lambda d, p: E + [p["txt"], "-l", "en", "-e", dan_dir(d / "m", n_min=-1), "-o", d / "v"],
     "'n_min' must be"),
    ("embed-config-max-tokens-0", lambda d, p: E + [p["txt"], "-l", "en", "-e", dan_dir(d / "m", max_tokens=0), "-o",
                                                    d / "v"], "'max_tokens' must be"),
    ("embed-config-corrupt", lambda d, p: E + [p["txt"], "-l", "en", "-e", _corrupt_config(dan_dir(d / "m")), "-o",
                                               d / "v"], "config.json: corrupt JSON"),
    ("embed-nan-model", lambda d, p: E + [p["txt"], "-l", "en", "-e", dan_dir(d / "m", nan=True), "-o", d / "v"],
     "en.txt:1: the encoder gave a non-finite"),
    ("embed-other-vectors", lambda d, p: _embedded(d, p) + ["-o", d / "v"], "already holds vectors of other inputs"),
    # --- mine ------------------------------------------------------------------------------------
    ("mine-threshold-nan", lambda d, p: M(p) + ["-o", d / "m.tsv", "--threshold", "nan"],
     "'nan' is not a finite number"),
    ("mine-threshold-inf", lambda d, p: M(p) + ["-o", d / "m.tsv", "--threshold", "-inf"],
     "'-inf' is not a finite number"),
    ("mine-threshold-text", lambda d, p: M(p) + ["-o", d / "m.tsv", "--threshold", "high"], "'high' is not a number"),
    ("mine-output-is-src", lambda d, p: M(p) + ["-o", p["txt"]], "--output is the same file as SRC"),
    ("mine-output-is-tgt-other-spelling", lambda d, p: M(p) + ["-o", d / "in" / "." / ".." / "in" / "de.txt"],
     "--output is the same file as TGT"),
    ("mine-output-hardlink-of-src", lambda d, p: M(p) + ["-o", _hardlink(p["txt"], d / "hard.txt")],
     "same file as SRC"),
    ("mine-output-symlink-to-tgt", lambda d, p: M(p) + ["-o", _symlink(p["de"], d / "link.txt")], "same file as TGT"),
    ("mine-output-proc", lambda d, p: M(p) + ["-o", "/proc/x/out.tsv"], "/proc/x/out.tsv: cannot write --output"),
    ("mine-output-folder", lambda d, p: M(p) + ["-o", d], "is a directory"),
    ("mine-src-missing", lambda d, p: ["mine", d / "no.txt", p["de"], "-l", "en", "-L", "de", "-e", "char-ngram", "-o",
                                       d / "m.tsv"], "no.txt: no such file"),
    ("mine-lone-cr", lambda d, p: ["mine", p["txt"], p["cr"], "-l", "en", "-L", "de", "-e", "char-ngram", "-o",
                                   d / "m.tsv"], "cr.txt:1: contains a carriage return"),
    ("mine-both-stdin", lambda d, p: ["mine", "-", "-", "-l", "en", "-L", "de", "-e", "char-ngram", "-o", d / "m.tsv"],
     "cannot both be `-`"),
    ("mine-bucc-duplicate-id",
     lambda d, p: ["mine", _write(d / "dup.bucc", b"e1\ta\ne2\tb\ne1\tc\n"), p["bucc_de"], "-l", "en", "-L", "de", "-e",
                   "char-ngram", "--format", "bucc", "-o", d / "m.tsv"],
                   "dup.bucc:3: duplicate id 'e1' (first on line 1)"),
    ("mine-bucc-columns",
     lambda d, p: ["mine", p["txt"], p["bucc_de"], "-l", "en", "-L", "de", "-e", "char-ngram", "--format", "bucc", "-o",
                   d / "m.tsv"], "en.txt:1: expected 2 tab-separated columns"),
    ("mine-one-side-vectors", lambda d, p: M(p) + ["-o", d / "m.tsv", "--src-vectors", d],
     "give vectors for both sides"),
    ("mine-k-0", lambda d, p: M(p) + ["-o", d / "m.tsv", "-k", "0"], "-k"),
    ("mine-vectors-not-folder", lambda d, p: M(p) + ["-o", d / "m.tsv", "--src-vectors", d / "v1", "--tgt-vectors",
                                                     d / "v2"], "manifest.json: missing"),
    ("mine-vectors-of-other-input", lambda d, p: _wrong_vectors(d, p), "made from another input"),
    # --- filter ----------------------------------------------------------------------------------
    ("filter-summary-is-input", lambda d, p: F(p) + ["-o", d / "k.tsv", "--rejected", d / "r.tsv", "--summary",
                                                     p["tsv"]], "--summary is the same file as PAIRS"),
    ("filter-output-is-config", lambda d, p: F(p) + ["-o", p["cfg"], "--rejected", d / "r.tsv"],
     "--output is the same file as --config"),
    ("filter-output-is-rejected", lambda d, p: F(p) + ["-o", d / "k.tsv", "--rejected", d / "k.tsv"],
     "--rejected and --output are the same file"),
    ("filter-rejected-is-input", lambda d, p: F(p) + ["-o", d / "k.tsv", "--rejected", p["tsv"]],
     "--rejected is the same file as PAIRS"),
    ("filter-output-symlink-to-input", lambda d, p: F(p) + ["-o", _symlink(p["tsv"], d / "k.tsv"), "--rejected",
                                                            d / "r.tsv"], "same file as PAIRS"),
    ("filter-config-missing", lambda d, p: ["filter", p["tsv"], "-l", "en", "-L", "de", "-c", d / "no.yaml", "-o",
                                            d / "k.tsv", "--rejected", d / "r.tsv"], "no.yaml"),
    ("filter-config-bad-yaml",
     lambda d, p: ["filter", p["tsv"], "-l", "en", "-L", "de", "-c", _write(d / "b.yaml", b"steps: [\n"), "-o",
                   d / "k.tsv", "--rejected", d / "r.tsv"], "b.yaml"),
    ("filter-config-unknown-step",
     lambda d, p: ["filter", p["tsv"], "-l", "en", "-L", "de", "-c",
                   _write(d / "b.yaml", b"steps:\n  - type: nosuchstep\n"), "-o", d / "k.tsv", "--rejected",
                   d / "r.tsv"], "nosuchstep"),
    ("filter-config-nan",
     lambda d, p: ["filter", p["tsv"], "-l", "en", "-L", "de", "-c",
                   _write(d / "n.yaml", b"steps:\n  - {type: length_ratio, max_ratio: .nan}\n"), "-o", d / "k.tsv",
                   "--rejected", d / "r.tsv"],
                   "n.yaml: step 1 'length_ratio': parameter 'max_ratio' must be a number >= 1, got nan"),
    ("filter-config-inf",
     lambda d, p: ["filter", p["tsv"], "-l", "en", "-L", "de", "-c",
                   _write(d / "n.yaml", b"steps:\n  - {type: length, max_length: .inf}\n"), "-o", d / "k.tsv",
                   "--rejected", d / "r.tsv"], "got inf"),
    ("filter-output-proc", lambda d, p: F(p) + ["-o", "/proc/x/k.tsv", "--rejected", d / "r.tsv"],
     "/proc/x/k.tsv: cannot write --output"),
    ("filter-rejected-stdout", lambda d, p: F(p) + ["-o", d / "k.tsv", "--rejected", "-"],
     "--rejected -: standard output is for the kept lines"),
    ("filter-input-missing", lambda d, p: ["filter", d / "no.tsv", "-l", "en", "-L", "de", "-c", p["cfg"], "-o",
                                           d / "k.tsv", "--rejected", d / "r.tsv"], "no.tsv: no such file"),
    ("filter-chunk-size-0", lambda d, p: F(p) + ["-o", d / "k.tsv", "--rejected", d / "r.tsv", "--chunk-size", "0"],
     "--chunk-size"),
    ("filter-state-folder-link", lambda d, p: F(p) + ["-o", _state_link(d) / "k.tsv", "--rejected",
                                                      d / "out" / "r.tsv"], ".k.tsv.filter-state: is a symbolic link"),
    ("filter-state-folder-is-file", lambda d, p: F(p) + ["-o", _state_file(d) / "k.tsv", "--rejected",
                                                         d / "out" / "r.tsv"], "exists and is not a folder"),
    # --- eval --------------------------------------------------------------------------------------
    ("eval-gold-empty", lambda d, p: ["eval", "bucc", p["mined"], p["empty"]], "empty.txt: file is empty"),
    ("eval-gold-ids-unseen", lambda d, p: ["eval", "bucc", p["mined"], _write(d / "g.tsv", b"x1\ty1\nx2\ty2\n")],
     "none of its 2 gold pairs' ids occurs in"),
    ("eval-score-nan", lambda d, p: ["eval", "bucc", _write(d / "m.tsv", b"nan\ta\tb\te1\td1\n"), p["gold"]],
     "m.tsv:1: score 'nan' is not a finite number"),
    ("eval-score-inf", lambda d, p: ["eval", "bucc", _write(d / "m.tsv", b"0.5\ta\tb\te2\td2\ninf\ta\tb\te1\td1\n"),
                                     p["gold"]], "m.tsv:2: score 'inf' is not a finite number"),
    ("eval-score-text", lambda d, p: ["eval", "bucc", _write(d / "m.tsv", b"high\ta\tb\te1\td1\n"), p["gold"]],
     "m.tsv:1: score 'high' is not a number"),
    ("eval-threshold-nan", lambda d, p: ["eval", "bucc", p["mined"], p["gold"], "--threshold", "nan"],
     "'nan' is not a finite number"),
    ("eval-mined-columns", lambda d, p: ["eval", "bucc", _write(d / "m.tsv", b"0.5\ta\tb\n"), p["gold"]],
     "m.tsv:1: expected 5 tab-separated columns"),
    ("eval-gold-columns", lambda d, p: ["eval", "bucc", p["mined"], _write(d / "g.tsv", b"e1\td1\textra\n")],
     "g.tsv:1: expected 2 tab-separated columns"),
    ("eval-mined-missing", lambda d, p: ["eval", "bucc", d / "no.tsv", p["gold"]], "no.tsv: no such file"),
    ("eval-gold-lone-cr", lambda d, p: ["eval", "bucc", p["mined"], _write(d / "g.tsv", b"e1\td1\re2\td2\n")],
     "g.tsv:1: contains a carriage return"),
    # --- train -------------------------------------------------------------------------------------
    ("train-recipe-missing", lambda d, p: ["train", "-c", d / "no.yaml", "--train", f"en-de={p['tsv']}", "-o",
                                           d / "model"], "no.yaml"),
    ("train-max-minutes-nan", lambda d, p: T(p) + ["-o", d / "model", "--max-minutes", "nan"],
     "'nan' is not a finite number"),
    ("train-max-minutes-inf", lambda d, p: T(p) + ["-o", d / "model", "--max-minutes", "inf"],
     "'inf' is not a finite number"),
    ("train-output-proc", lambda d, p: T(p) + ["-o", "/proc/x/model"], "/proc/x/model: cannot write model directory"),
    ("train-output-is-file", lambda d, p: T(p) + ["-o", p["tsv"]], "pairs.tsv' is a file"),
    ("train-data-missing", lambda d, p: ["train", "-c", p["recipe"], "--train", f"en-de={d / 'no.tsv'}", "-o",
                                         d / "model"], "no.tsv"),
    ("train-threads-0", lambda d, p: T(p) + ["-o", d / "model", "--threads", "0"], "--threads"),
    ("train-data-lone-cr", lambda d, p: ["train", "-c", p["recipe"], "--train", _cr_bitext(d), "-o", d / "model",
                                         "--max-steps", "1"], "cr.tsv:1: contains a carriage return"),
    ("train-set-unknown-key", lambda d, p: T(p) + ["-o", d / "model", "--set", "nosuch.key=1"], "nosuch"),
    # --- train-scorer ------------------------------------------------------------------------------
    ("scorer-clean-missing", lambda d, p: ["train-scorer", "--clean", d / "no.tsv", "-l", "en", "-L", "de", "-o",
                                           d / "s"], "no.tsv: no such file"),
    ("scorer-hidden-bad", lambda d, p: S(p) + ["-o", d / "s", "--hidden", "0,1"], "--hidden must be layer sizes"),
    ("scorer-output-proc", lambda d, p: S(p) + ["-o", "/proc/x/s"], "/proc/x/s: cannot write scorer directory"),
    ("scorer-output-is-clean", lambda d, p: S(p) + ["-o", p["tsv"]], "pairs.tsv' is a file"),
    ("scorer-sample-needs-noisy", lambda d, p: S(p) + ["-o", d / "s", "--negatives", "sample"], "needs --noisy"),
    ("scorer-negatives-bogus", lambda d, p: S(p) + ["-o", d / "s", "--negatives", "bogus"], "bogus"),
    ("scorer-max-updates-0", lambda d, p: S(p) + ["-o", d / "s", "--max-updates", "0"], "--max-updates"),
    ("scorer-one-pair", lambda d, p: ["train-scorer", "--clean", _write(d / "one.tsv", b"a\tb\n"), "-l", "en", "-L",
                                      "de", "-e", "char-ngram", "-o", d / "s"], "one.tsv: fewer than 2 usable pairs"),
    ("scorer-third-not-synthetic", lambda d, p: S(p) + ["-o", d / "s", "--third", p["txt"]],
     "--third is for --negatives synthetic"),
]


def _corrupt_config(model: Path) -> Path:
    (model / "config.json").write_text('{"architecture": "dan", ')
    return model


def _embedded(d: Path, p: dict, which: str = "txt") -> list:
    """Vectors of one file in ``d/v``; returns the argv of embedding the other one there."""
    assert main(["embed", str(p[which]), "-l", "en", "-e", "char-ngram", "-o", str(d / "v")]) == 0
    return ["embed", p["de" if which == "txt" else "txt"], "-l", "en", "-e", "char-ngram"]


def _wrong_vectors(d: Path, p: dict) -> list:
    """Vectors of de.txt given as the vectors of en.txt."""
    _embedded(d, p, "de")
    return ["mine", p["txt"], p["de"], "-l", "en", "-L", "de", "-o", d / "m.tsv", "--src-vectors", d / "v",
            "--tgt-vectors", d / "v"]


def _cr_bitext(d: Path) -> str:
    _write(d / "cr.tsv", b"a b\tc d\re f\tg h\n")
    return f"en-de={d / 'cr.tsv'}"


def _hardlink(target: Path, link: Path) -> Path:
    os.link(target, link)
    return link


def _symlink(target: Path, link: Path) -> Path:
    link.symlink_to(target)
    return link


def _state_link(d: Path) -> Path:
    """``out/.k.tsv.filter-state`` -> ``../victim`` (holding a file that must survive)."""
    (d / "victim").mkdir()
    (d / "victim" / "thesis.tex").write_text("years of work\n")
    (d / "out").mkdir()
    (d / "out" / ".k.tsv.filter-state").symlink_to("../victim")
    return d / "out"


def _state_file(d: Path) -> Path:
    (d / "out").mkdir()
    (d / "out" / ".k.tsv.filter-state").write_text("not a folder\n")
    return d / "out"


def test_the_table_covers_every_command_60_times():
    assert len(CASES) >= 60 and len({c[0] for c in CASES}) == len(CASES)
    assert {c[0].split("-")[0] for c in CASES} == {"embed", "mine", "filter", "eval", "train", "scorer"}


@pytest.mark.parametrize("name,make,expected", CASES, ids=[c[0] for c in CASES])
def test_bad_input_one_line_error(tmp_path, capsys, name, make, expected):
    p = files(tmp_path / "in")
    argv = make(tmp_path, p)
    before = snapshot(tmp_path)
    rc, out, err = run_main(argv, capsys)
    errors = [line for line in err.splitlines() if line.startswith("bisent: error:")]
    assert rc == 2, (rc, err)
    assert len(errors) == 1, err
    assert expected in errors[0], errors[0]
    assert "Traceback" not in err + out
    after = snapshot(tmp_path)
    assert {k: v for k, v in after.items() if k in before} == before  # no input changed or removed
    if (tmp_path / "victim").exists():
        assert (tmp_path / "victim" / "thesis.tex").read_text() == "years of work\n"


# ---------------------------------------------------------------------------
# no write or delete through a link; the umask is never touched
# ---------------------------------------------------------------------------

def test_filter_never_follows_a_planted_partial_link(tmp_path, capsys):
    p = files(tmp_path / "in")
    victim = _write(tmp_path / "victim.txt", b"precious\n")
    out = tmp_path / "out"
    out.mkdir()
    for name in (".k.tsv.partial", ".r.tsv.partial", ".k.tsv.records"):
        (out / name).symlink_to(victim)
    rc, _, err = run_main(F(p) + ["-o", out / "k.tsv", "--rejected", out / "r.tsv"], capsys)
    assert rc == 0, err
    assert victim.read_bytes() == b"precious\n"
    assert (out / "k.tsv").read_text().splitlines() == PAIRS
    assert sorted(x.name for x in out.iterdir()) == ["k.tsv", "r.tsv"]  # state folder and partials gone


def test_no_umask_change_and_new_files_get_umask_permissions(tmp_path, monkeypatch):
    from bisent import io as bio

    calls = []
    monkeypatch.setattr(os, "umask", lambda *a: calls.append(a) or 0o022)
    with bio.atomic_write(tmp_path / "a.txt") as f:
        f.write("x\n")
    d = bio.make_temp_dir(tmp_path, "t.")
    monkeypatch.undo()
    assert calls == []
    old = os.umask(0o027)
    try:
        with bio.atomic_write(tmp_path / "b.txt") as f:
            f.write("x\n")
        d2 = bio.make_temp_dir(tmp_path, "u.")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "b.txt").stat().st_mode) == 0o640
    assert stat.S_IMODE(d2.stat().st_mode) == 0o750
    assert d.is_dir()


def test_remove_tree_unlinks_links_but_never_their_targets(tmp_path):
    from bisent.io import remove_tree

    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "f").write_text("keep")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "inner").symlink_to(victim)
    (tmp_path / "top").symlink_to(victim)
    remove_tree(tree)
    remove_tree(tmp_path / "top")
    assert not tree.exists() and not (tmp_path / "top").is_symlink()
    assert (victim / "f").read_text() == "keep"


# ---------------------------------------------------------------------------
# a lone CR is a bad line everywhere, never a silent merge
# ---------------------------------------------------------------------------

def test_lone_cr_rejected_with_a_reason_by_filter_and_skip_bad(tmp_path, capsys):
    p = files(tmp_path / "in")
    data = b"a b\tc d\r\ne f\tg h\rx y\tz w\ni j\tk l\n"  # CRLF line (fine), a line with a lone CR, a plain line
    src = _write(tmp_path / "cr.tsv", data)
    rc, _, err = run_main(["filter", src, "-l", "en", "-L", "de", "-c", p["cfg"], "-o", tmp_path / "k.tsv",
                           "--rejected", tmp_path / "r.tsv"], capsys)
    assert rc == 0, err
    kept = (tmp_path / "k.tsv").read_bytes().splitlines()
    rejected = (tmp_path / "r.tsv").read_text().splitlines()
    assert len(kept) + len(rejected) == data.count(b"\n") == 3  # every input line accounted for
    assert rejected == ["2\tbad_row:cr\t8\te f\tg h\\rx y\tz w"]  # the CR shown as \r
    txt = _write(tmp_path / "cr.txt", b"one\ntwo\rthree\nfour\n")
    rc, _, err = run_main(["embed", txt, "-l", "en", "-e", "char-ngram", "-o", tmp_path / "v", "--skip-bad"], capsys)
    assert rc == 0, err
    manifest = json.loads((tmp_path / "v" / "manifest.json").read_text())
    assert manifest["rows"] == 3 and [r["line"] for r in manifest["rejected"]] == [2]
    assert "carriage return" in manifest["rejected"][0]["reason"]


# ---------------------------------------------------------------------------
# non-finite numbers
# ---------------------------------------------------------------------------

def test_embed_skip_bad_turns_a_nan_vector_into_a_listed_zero_row(tmp_path, capsys):
    p = files(tmp_path / "in")
    model = dan_dir(tmp_path / "m", nan=True)
    rc, _, err = run_main(["embed", p["txt"], "-l", "en", "-e", model, "-o", tmp_path / "v", "--skip-bad"], capsys)
    assert rc == 0, err
    from bisent.mining.vectors import Shards

    s = Shards(tmp_path / "v")
    assert np.isfinite(s.load()).all() and not s.load().any()
    assert [r["line"] for r in s.manifest["rejected"]] == [1, 2, 3, 4]


def test_eval_partial_gold_overlap_is_a_warning_with_a_count(tmp_path, capsys):
    p = files(tmp_path / "in")
    gold = _write(tmp_path / "g.tsv", b"e1\td1\ne9\td9\n")
    rc, out, err = run_main(["eval", "bucc", p["mined"], gold, "--json"], capsys)
    assert rc == 0
    assert "bisent: warning: 1 of 2 gold pairs" in err
    assert json.loads(out)["gold_ids_unseen"] == 1


# ---------------------------------------------------------------------------
# standard input and output
# ---------------------------------------------------------------------------

def _bisent(*args, stdin: bytes | None = None, env: dict | None = None):
    e = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-m", "bisent", *map(str, args)], input=stdin, capture_output=True,
                          env=e)


def test_dev_stdin_pipe_and_dash(tmp_path):
    lines = b"".join(b"line %d\n" % i for i in range(50))
    r = _bisent("embed", "/dev/stdin", "-l", "en", "-e", "char-ngram", "-o", tmp_path / "v1", stdin=lines)
    assert r.returncode == 0, r.stderr
    r = _bisent("embed", "-", "-l", "en", "-e", "char-ngram", "-o", tmp_path / "v2", stdin=lines)
    assert r.returncode == 0, r.stderr
    m1 = json.loads((tmp_path / "v1" / "manifest.json").read_text())
    m2 = json.loads((tmp_path / "v2" / "manifest.json").read_text())
    assert m1["rows"] == m2["rows"] == 50 and m1["shards"] == m2["shards"]
    assert not [f for f in os.listdir(tmp_path / "v2") if f.startswith("bisent-stdin")]  # the copy is gone
    de = _write(tmp_path / "de.txt", b"line 3\nline 7\n")
    r = _bisent("mine", "-", de, "-l", "en", "-L", "de", "-e", "char-ngram", "-o", "-", "--line-numbers",
                "--threshold", "none", stdin=lines)
    assert r.returncode == 0, r.stderr
    rows = [x.split(b"\t") for x in r.stdout.splitlines()]
    assert {(x[3], x[4]) for x in rows} == {(b"4", b"1"), (b"8", b"2")}
    pairs = b"a b\tc d\ne f\te f\n\tempty\n"
    r = _bisent("filter", "-", "-l", "en", "-L", "de", "-c", _write(tmp_path / "f.yaml", CONFIG.encode()),
                "-o", "-", "--rejected", tmp_path / "r.tsv", stdin=pairs)
    assert r.returncode == 0, r.stderr
    rejected = (tmp_path / "r.tsv").read_bytes().splitlines()
    assert len(r.stdout.splitlines()) + len(rejected) == 3 and r.stdout.startswith(b"a b\tc d\n")
    r = _bisent("embed", "-", "-l", "en", "-e", "char-ngram", "-o", tmp_path / "v3", stdin=b"ok\n\n\xff\n")
    assert r.returncode == 2 and r.stderr.decode().strip() == ("bisent: error: <stdin>:3: not valid UTF-8 "
                                                               "(byte 0xff at column 1)")


# ---------------------------------------------------------------------------
# threads from the usual variables; the caller's environment untouched
# ---------------------------------------------------------------------------

def test_threads_from_environment(monkeypatch):
    from bisent.errors import BisentError
    from bisent.threads import default_threads

    for name in ("BISENT_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "3,2")
    assert default_threads() == 3
    monkeypatch.setenv("BISENT_THREADS", "5")
    assert default_threads() == 5
    monkeypatch.setenv("BISENT_THREADS", "many")
    with pytest.raises(BisentError, match="BISENT_THREADS='many'"):
        default_threads()
    monkeypatch.delenv("BISENT_THREADS")
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert default_threads(fallback=1) == 1


def test_loading_me5_small_leaves_the_environment_alone(monkeypatch):
    from bisent.encoders.pretrained import ME5Small

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("BISENT_THREADS", "2")
    before = dict(os.environ)
    enc = ME5Small()
    assert dict(os.environ) == before
    assert enc.threads == 2 and enc._set_threads is not None
    assert enc.encode(["hello world"], "en", cache=False).shape == (1, 384)
    assert dict(os.environ) == before


# ---------------------------------------------------------------------------
# the embedding cache stores fp16, has a cap, and `bisent cache`
# ---------------------------------------------------------------------------

def test_cache_rows_are_fp16_and_equal_fresh_rows(tmp_path, monkeypatch, capsys):
    from bisent.encoders import get_encoder
    from bisent.encoders.base import from_half
    from bisent.encoders.cache import EmbeddingCache

    monkeypatch.setenv("BISENT_EMBED_CACHE", str(tmp_path / "c"))
    enc = get_encoder("char-ngram")
    exact = enc.encode(LINES, "en", cache=False)                       # float32, no rounding
    fresh = enc.encode(LINES, "en")                                     # computed, stored as fp16
    cached = enc.encode(LINES, "en")                                    # read back
    np.testing.assert_array_equal(cached, fresh)
    np.testing.assert_array_equal(fresh, from_half(exact.astype(np.float16)))
    assert 0 < np.abs(fresh - exact).max() < 1e-3
    db = EmbeddingCache(enc.id, enc.dim)
    (blob,) = db._db.execute("SELECT v FROM emb LIMIT 1").fetchone()
    assert len(blob) == 2 * enc.dim + 7                                 # 2 bytes per dimension and a check
    rc, out, _ = run_main(["cache", "info"], capsys)
    assert rc == 0 and "4 entries" in out
    rc, _, err = run_main(["cache", "clear"], capsys)
    assert rc == 0 and "removed 1" in err and not list((tmp_path / "c").glob("*.sqlite"))


def test_cache_cap_evicts_oldest_first(tmp_path, monkeypatch):
    from bisent.encoders.cache import EmbeddingCache

    monkeypatch.setenv("BISENT_EMBED_CACHE", str(tmp_path / "c"))
    monkeypatch.setenv("BISENT_CACHE_MAX_MB", "0.5")
    db = EmbeddingCache("cap-test", 1024)
    rows = np.ones((100, 1024), np.float32)
    for i in range(6):
        db.put([f"{i}-{j}" for j in range(100)], rows)                 # 6 x 200 KB > 0.5 MB
    found_old, _ = db.get([f"0-{j}" for j in range(100)])
    found_new, _ = db.get([f"5-{j}" for j in range(100)])
    assert not found_old.any() and found_new.all()


def test_unusable_cache_warns_once_and_goes_on(tmp_path, monkeypatch, capsys):
    from bisent.encoders import get_encoder

    monkeypatch.setenv("BISENT_EMBED_CACHE", str(tmp_path / "c"))
    enc = get_encoder("char-ngram")
    folder = tmp_path / "c"
    folder.mkdir()
    from bisent.encoders.cache import EmbeddingCache

    path = EmbeddingCache(enc.id, enc.dim).path
    path.write_bytes(b"this is not a database" * 100)
    capsys.readouterr()
    a = enc.encode(LINES, "en")
    b = enc.encode(LINES[:2], "en")
    err = capsys.readouterr().err
    assert err.count("bisent: warning: embedding cache") == 1
    np.testing.assert_array_equal(a[:2], b)


# ---------------------------------------------------------------------------
# a silent phase prints lines when not on a terminal
# ---------------------------------------------------------------------------

def test_progress_lines_off_terminal(monkeypatch, capsys):
    from bisent.progress import LineProgress, progress_bar

    monkeypatch.setenv("BISENT_PROGRESS_SECONDS", "0")
    bar = progress_bar(None, total=3, desc="teacher", unit="sent")
    assert isinstance(bar, LineProgress)  # pytest's stderr is no terminal
    with bar:
        for _ in range(3):
            bar.update(1)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("teacher: 1/3 sent") and lines[-1].startswith("teacher: 3/3 sent")
    assert progress_bar(False, total=3).disable


def test_cache_file_holds_about_two_bytes_per_dimension(tmp_path, monkeypatch):
    from bisent.encoders.cache import EmbeddingCache, used_bytes

    monkeypatch.setenv("BISENT_EMBED_CACHE", str(tmp_path / "c"))
    db = EmbeddingCache("size-test", 1024)
    db.put([f"sentence {i}" for i in range(700)], np.full((700, 1024), 0.03, np.float32))
    per_row = used_bytes(db._db) / 700
    assert 2048 < per_row < 2600  # float32 in 4 KB pages took 4.6 KB a row


def test_cache_rows_swapped_between_texts_are_embedded_again(tmp_path, monkeypatch, capsys):
    """A cache whose rows were swapped between two texts (each a valid row of the other) gives the rows of a
    run without the cache, with one warning, and is mended for the next run."""
    from bisent.encoders import get_encoder
    from bisent.encoders.cache import EmbeddingCache, _key

    monkeypatch.setenv("BISENT_EMBED_CACHE", str(tmp_path / "c"))
    enc = get_encoder("char-ngram")
    fresh = enc.encode(LINES, "en")
    db = EmbeddingCache(enc.id, enc.dim)
    ka, kb = _key(LINES[0], None), _key(LINES[1], None)                 # char-ngram: one key for all languages
    (va,), (vb,) = (db._db.execute("SELECT v FROM emb WHERE k = ?", (k,)).fetchone() for k in (ka, kb))
    with db._db:
        db._db.execute("UPDATE emb SET v = ? WHERE k = ?", (vb, ka))
        db._db.execute("UPDATE emb SET v = ? WHERE k = ?", (va, kb))
    capsys.readouterr()
    np.testing.assert_array_equal(enc.encode(LINES, "en"), fresh)
    assert "2 row(s) fail their check" in capsys.readouterr().err
    assert db._db.execute("SELECT v FROM emb WHERE k = ?", (ka,)).fetchone()[0] == va      # rewritten
    np.testing.assert_array_equal(enc.encode(LINES, "en"), fresh)


def test_cache_reads_float32_entries_of_older_versions_rounded_alike(tmp_path, monkeypatch):
    from bisent.encoders.cache import EmbeddingCache, _key

    monkeypatch.setenv("BISENT_EMBED_CACHE", str(tmp_path / "c"))
    db = EmbeddingCache("legacy-test", 4)
    row = np.array([0.1, 0.2, 0.3, 0.9], np.float32)
    with db._db:
        db._db.execute("INSERT INTO emb (k, v) VALUES (?, ?)", (_key("old", None), row.tobytes()))
    found, rows = db.get(["old", "new"])
    assert found.tolist() == [True, False]
    np.testing.assert_array_equal(rows[0], row.astype(np.float16).astype(np.float32))


def test_cache_has_says_what_get_finds(tmp_path, monkeypatch):
    """has() (the teacher's "what is missing" check) agrees with get(): fp16 and float32 entries found, an entry of
    another dimension and an unknown text not, a repeated text twice, languages kept apart."""
    from bisent.encoders.cache import EmbeddingCache, _key

    monkeypatch.setenv("BISENT_EMBED_CACHE", str(tmp_path / "c"))
    db = EmbeddingCache("has-test", 4)
    db.put(["a", "b"], np.ones((2, 4), np.float32), "de")
    with db._db:
        db._db.execute("INSERT INTO emb (k, v) VALUES (?, ?)", (_key("old", "de"), np.ones(4, np.float32).tobytes()))
        db._db.execute("INSERT INTO emb (k, v) VALUES (?, ?)", (_key("stale", "de"), np.ones(3, np.float16).tobytes()))
    texts = ["a", "old", "stale", "zzz", "b", "a"]
    assert db.has(texts, "de").tolist() == db.get(texts, "de")[0].tolist() == [True, True, False, False, True, True]
    assert not db.has(texts, "fr").any() and db.has([], "de").tolist() == []
