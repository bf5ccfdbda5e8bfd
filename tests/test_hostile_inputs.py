"""Hostile inputs: oversized or self-referencing configs, deep JSON, nonsense numbers, model directories that
point outside themselves, vectors of another language, files that are not files.

Each row of the table runs one command in-process (``bisent.cli.main``) and checks: exit status 2, exactly
one ``bisent: error:`` line holding the expected text, no traceback, every file that existed before
byte-identical afterwards. The tests after the table pin what needs more than an error line.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from bisent.cli import main
from conftest import snapshot

EN = [f"The house number {i} is red." for i in range(12)]
DE = [f"Das Haus Nummer {i} ist rot." for i in range(14)]
PAIRS = [f"{e}\t{d}" for e, d in zip(EN, DE)]
LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))



def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def lines(path: Path, rows) -> Path:
    return write(path, "".join(r + "\n" for r in rows))


def jsonl(path: Path, docs) -> Path:
    return write(path, "".join(json.dumps(d) + "\n" for d in docs))


DOCS_EN = [{"id": f"e{i}", "text": [f"Page {i} about the red house.", f"It has {i} windows."]} for i in range(5)]
DOCS_DE = [{"id": f"d{i}", "text": [f"Seite {i} über das rote Haus.", f"Es hat {i} Fenster."]} for i in range(5)]


def docs(d: Path, src=None) -> list:
    s = jsonl(d / "src.jsonl", DOCS_EN) if src is None else write(d / "src.jsonl", src)
    return [s, jsonl(d / "tgt.jsonl", DOCS_DE)]


def run_yaml(d: Path, align: str = "", documents: str = "{pairs: pairs.tsv}") -> Path:
    lines(d / "a.txt", EN[:4])
    lines(d / "b.txt", DE[:4])
    write(d / "pairs.tsv", f"{d / 'a.txt'}\t{d / 'b.txt'}\n")
    return write(d / "run.yaml", f"src_lang: en\ntgt_lang: de\ndocuments: {documents}\n"
                                 f"align:\n  encoder: char-ngram\n{align}filter:\n  config: f.yaml\n")


def filter_cfg(d: Path, text: str) -> list:
    return ["filter", lines(d / "in.tsv", PAIRS), "-l", "en", "-L", "de", "-c", write(d / "cfg.yaml", text),
            "-o", d / "kept.tsv", "--rejected", d / "rej.tsv"]


def recipe(d: Path, text: str) -> list:
    return ["train", "-c", write(d / "r.yaml", text), "--train", f"en-de={lines(d / 'tr.tsv', PAIRS)}",
            "--max-steps", "1", "-o", d / "model"]


def dan_dir(path: Path) -> Path:
    """A tiny DAN model directory (8-d), as training writes one."""
    from bisent.models import modeldir

    hp = {"dim": 8, "embed_dim": 4, "hidden": [], "buckets": 64, "n_min": 3, "n_max": 5, "word_ngrams": 2,
          "lowercase": True, "max_tokens": 128, "feature_dropout": 0.0, "dropout": 0.0}
    rng = np.random.default_rng(0)
    modeldir.save(path, "dan", hp, {"embed.weight": rng.standard_normal((64, 4)).astype(np.float32),
                                    "layers.0.weight": rng.standard_normal((8, 4)).astype(np.float32),
                                    "layers.0.bias": np.zeros(8, np.float32)})
    return path


def deep_config(path: Path) -> Path:
    """A model directory whose config.json nests 100,000 lists deep."""
    dan_dir(path)
    (path / "config.json").write_text('{"architecture": "dan", "model": ' + "[" * 100_000 + "]" * 100_000 + "}")
    return path


def self_adapter(path: Path) -> Path:
    """An adapter model directory whose base encoder is the directory itself."""
    from bisent.models import modeldir

    hp = {"base": str(path), "base_dim": 8, "dim": 8, "hidden": [], "residual": False}
    modeldir.save(path, "adapter", hp, {"layers.0.weight": np.eye(8, dtype=np.float32),
                                        "layers.0.bias": np.zeros(8, np.float32)})
    return path


def vectors(d: Path, name: str, rows, lang: str) -> Path:
    """``bisent embed`` of ``rows`` as ``lang`` into ``d/name``."""
    src = lines(d / f"{name}.txt", rows)
    assert main(["embed", src, "-l", lang, "-e", "char-ngram", "-o", d / name]) == 0
    return d / name


def mine_vectors(d: Path, *, src_lang="en", poison=False) -> list:
    v, w = vectors(d, "v", EN, src_lang), vectors(d, "w", DE, "de")
    if poison:                                         # another matrix of the same shape: the checksum no longer fits
        shard = sorted(v.glob("*.npy"))[0]
        arr = np.load(shard)
        np.save(shard, np.ascontiguousarray(arr[::-1]))
    return ["mine", d / "v.txt", d / "w.txt", "-l", "en", "-L", "de", "-e", "char-ngram", "-o", d / "out.tsv",
            "--src-vectors", v, "--tgt-vectors", w]


def report_dir(d: Path, record: str) -> Path:
    write(d / "rd" / "out.tsv.report.json", record)
    return d / "rd"


def gold_blocks(d: Path, text: str) -> list:
    return ["eval", "align", write(d / "hyp.align", "[0]:[0]\n[1]:[1]\n"), write(d / "g.align", text)]


def eval_docs(d: Path, gold) -> list:
    return ["eval", "docs", *docs(d), gold, "-l", "en", "-L", "de", "-e", "char-ngram", "--segmentation", "given"]


def dev_zero(d: Path) -> list:
    (d / "z.tsv").symlink_to("/dev/zero")
    recipe = Path(__file__).resolve().parents[1] / "src" / "bisent" / "recipes" / "guo2019-dan.yaml"
    return ["train", "-c", recipe,
            "--train", f"en-de={d / 'z.tsv'}", "--set", "model.buckets=4096", "--set", "model.hidden=[8]",
            "--set", "model.dim=8", "--set", "model.embed_dim=8", "--set", "objectives.hard_negatives=false",
            "--max-steps", "1", "-o", d / "model"]


A = lambda d: ["align", lines(d / "a.txt", EN), lines(d / "b.txt", DE[:10]), "-l", "en", "-L", "de",  # noqa: E731
               "-e", "char-ngram", "-o", d / "out.tsv"]
MINE = lambda d: ["mine", lines(d / "en.txt", EN), lines(d / "de.txt", DE), "-l", "en", "-L", "de",  # noqa: E731
                  "-e", "char-ngram", "--threshold", "none", "-o", d / "out.tsv"]
DOCS = lambda d, src=None: ["documents", "mine", *docs(d, src), "-l", "en", "-L", "de", "-e", "char-ngram",  # noqa: E731
                            "--segmentation", "given", "-o", d / "out.tsv"]
RUN = lambda d, **kw: ["run", "-c", run_yaml(d, **kw), "-o", d / "out", "--quiet"]  # noqa: E731
REPAIR = lambda d: ["repair", lines(d / "in.tsv", PAIRS), "-m", d / "no-model", "-o", d / "out.tsv"]  # noqa: E731

# (id, argv from a fresh folder, text the error line must hold)
CASES = [
    # --- YAML: aliases, size, nesting, steps -----------------------------------------------------------------
    ("filter-billion-laughs", lambda d: filter_cfg(d, LAUGHS + "steps:\n  - {type: length, name: *i}\n"),
      "alias *a refused"),
    ("filter-2mb-50000-steps",
      lambda d: filter_cfg(d, "".join(f"- {{type: length, max_length: {i}}}\n" for i in range(50_000))),
      "kB refused"),
    ("filter-201-steps", lambda d: filter_cfg(d, "- {type: empty}\n" * 201), "201 steps, more than the 200"),
    ("filter-deep", lambda d: filter_cfg(d, "- " + "[" * 5000 + "]" * 5000 + "\n"), "nested more than 64 levels"),
    ("recipe-billion-laughs", lambda d: recipe(d, LAUGHS + "architecture: dan\ndata:\n  bucket_batches: *i\n"),
      "r.yaml:2: invalid YAML: alias *a"),
    ("recipe-set-alias", lambda d: recipe(d, "architecture: dan\n") + ["--set", "model.hidden=*a"],
      "--set model.hidden=*a: invalid YAML: alias"),
    ("run-billion-laughs",
      lambda d: ["run", "-c", write(d / "run.yaml", LAUGHS + "src_lang: en\ntgt_lang: de\nalign: {width: *i}\n"),
                 "-o", d / "out", "--quiet"],
      "alias *a refused"),
    # --- config values: range, finiteness, unknown keys ------------------------------------------------------
    ("run-align-max-size-100", lambda d: RUN(d, align="  max_size: 100\n"),
      "align: parameter 'max_size' must be an integer >= 2 and <= 8, got 100"),
    ("run-align-unknown-key", lambda d: RUN(d, align="  surprise: 1\n"), "align: unknown key 'surprise'"),
    ("run-align-jobs-0", lambda d: RUN(d, align="  jobs: 0\n"), "parameter 'jobs' must be an integer >= 1"),
    ("run-align-merge-penalty-inf", lambda d: RUN(d, align="  merge_penalty: .inf\n"),
      "parameter 'merge_penalty' must be a number"),
    ("run-documents-threshold-nan",
      lambda d: RUN(d, documents="{collections: {src: s.jsonl, tgt: t.jsonl}, threshold: .nan}"),
      "documents: parameter 'threshold' must be a number, got nan"),
    ("run-documents-unknown-key", lambda d: RUN(d, documents="{pairs: pairs.tsv, treshold: 1}"),
      "documents: unknown key 'treshold'"),
    # --- numeric CLI options ---------------------------------------------------------------------------------
    ("align-merge-penalty-inf", lambda d: A(d) + ["--merge-penalty", "inf"], "'inf' is not a finite number"),
    ("align-merge-penalty-negative", lambda d: A(d) + ["--merge-penalty", "-10"], "'-10' is below the minimum 0"),
    ("align-skip-quantile-1", lambda d: A(d) + ["--skip-quantile", "1"], "'1' is not below the maximum 1"),
    ("docs-threshold-nan", lambda d: DOCS(d) + ["--threshold", "nan"], "'nan' is not a finite number"),
    ("docs-rerank-weight-nan", lambda d: DOCS(d) + ["--rerank", "2", "--rerank-weight", "nan"],
      "'nan' is not a finite number"),
    ("repair-min-gain-nan", lambda d: REPAIR(d) + ["--min-gain", "nan"], "'nan' is not a finite number"),
    ("repair-boundary-cost-inf", lambda d: REPAIR(d) + ["--boundary-cost", "inf"], "'inf' is not a finite number"),
    ("lexicon-threshold-nan", lambda d: ["data", "lexicon", "-e", "char-ngram", "--threshold", "nan", d],
      "'nan' is not a finite number"),
    ("mine-precision-nan", lambda d: MINE(d) + ["--precision", "nan"], "'nan' is not a finite number"),
    ("scorer-worst-33",
      lambda d: ["train-scorer", "--clean", lines(d / "cl.tsv", PAIRS), "--noisy", lines(d / "no.tsv", PAIRS),
                 "-l", "en", "-L", "de", "-e", "char-ngram", "-o", d / "sc", "--negatives", "worst:33"],
      "one of the five bands 20, 40, 60, 80, 100"),
    # --- JSON and JSONL --------------------------------------------------------------------------------------
    ("docs-json-100000-deep", lambda d: DOCS(d, src="[" * 100_000 + "]" * 100_000 + "\n"),
      "src.jsonl:1: JSON nested more than 64 levels"),
    ("docs-id-carriage-return", lambda d: DOCS(d, src=json.dumps({"id": "a\rb", "text": "x"}) + "\n"),
      "src.jsonl:1: 'id' must be a non-empty string without tabs, newlines or carriage returns"),
    ("docs-empty-jsonl", lambda d: DOCS(d, src=""), "src.jsonl: no documents"),
    ("embed-config-100000-deep",
      lambda d: ["embed", lines(d / "in.txt", EN), "-l", "en", "-e", deep_config(d / "m"), "-o", d / "vec"],
      "config.json: JSON nested more than 64 levels"),
    ("report-json-100000-deep", lambda d: ["report", report_dir(d, "[" * 100_000 + "]" * 100_000), "-o", d / "r.html"],
      "out.tsv.report.json: JSON nested more than 64"),
    ("report-wrong-types",
      lambda d: ["report", report_dir(d, json.dumps({"kind": "mining", "counts": 3, "samples": 1})),
                 "-o", d / "r.html"],
      "out.tsv.report.json: 'counts' must be an object, got 3"),
    ("report-run-dir-is-a-file", lambda d: ["report", write(d / "sentinel.txt", "just text\n"), "-o", d / "r.html"],
      "sentinel.txt: no run found"),
    # --- model directories, vectors, indexes -----------------------------------------------------------------
    ("adapter-base-is-itself",
      lambda d: ["embed", lines(d / "in.txt", EN), "-l", "en", "-e", self_adapter(d / "ad"), "-o", d / "vec"],
      "a model directory whose base encoder is itself"),
    ("vectors-shard-changed", lambda d: mine_vectors(d, poison=True), "checksum does not match"),
    ("vectors-other-language", lambda d: mine_vectors(d, src_lang="de"), "vectors embedded as language 'de', not 'en'"),
    ("mine-blank-source", lambda d: MINE(d)[:1] + [write(d / "blank.txt", "\n \n\n")] + MINE(d)[2:],
      "blank.txt: no sentences to mine"),
    # --- files that are missing, not UTF-8, not regular -------------------------------------------------------
    ("eval-align-missing-hyp", lambda d: ["eval", "align", d / "nope.blocks", write(d / "g.align", "[0]:[0]\n")],
      "nope.blocks: no such file"),
    ("eval-align-gold-repeated", lambda d: gold_blocks(d, "[0]:[0]\n[0]:[0]\n[0]:[0]\n"),
      "g.align:2: source sentence 0 is already in the block of line 1"),
    ("eval-align-gold-overlap", lambda d: gold_blocks(d, "[0,1]:[0]\n[1]:[1]\n"),
      "g.align:2: source sentence 1 is already in the block"),
    ("eval-docs-missing-gold", lambda d: eval_docs(d, d / "nope.tsv"), "nope.tsv: no such file"),
    ("eval-docs-gold-not-utf8", lambda d: eval_docs(d, write(d / "g.tsv", b"e0\td\xff0\n")),
      "g.tsv:1: not valid UTF-8"),
    ("train-dev-zero", dev_zero, "z.tsv: not a regular file"),
    ("embed-proc-self-mem", lambda d: ["embed", "/proc/self/mem", "-l", "en", "-e", "char-ngram", "-o", d / "vec"],
      "/proc/self/mem: cannot read"),
    ("explain-empty-src", lambda d: ["explain", "", "Das Haus.", "-l", "en", "-L", "de", "-e", "char-ngram"],
      "SRC '': empty"),
    ("data-tgt-not-a-code", lambda d: ["data", "gettext", "-L", "../x", "-o", d / "out"],
      "'../x' is not a language code"),
]


@pytest.mark.parametrize("name,argv,expected", CASES, ids=[c[0] for c in CASES])
def test_hostile_input_is_one_error_line_and_changes_nothing(name, argv, expected, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BISENT_CACHE", str(tmp_path / "cache"))          # nothing here may fetch anything
    args = [str(a) for a in argv(tmp_path)]
    before = snapshot(tmp_path)
    capsys.readouterr()
    t0 = time.perf_counter()
    rc = main(args)
    seconds = time.perf_counter() - t0
    err = capsys.readouterr().err
    errors = [x for x in err.splitlines() if x.startswith("bisent: error:")]
    assert rc == 2, (rc, err[-2000:])
    assert len(errors) == 1 and expected in errors[0], err[-2000:]
    assert "Traceback" not in err
    assert snapshot(tmp_path) == before
    assert seconds < 60, seconds                                        # the 2 MB config hung for minutes
    assert not (tmp_path / "cache" / "debian").exists()                   # nothing fetched from Debian


def test_bounded_yaml_and_json_refuse_bombs_and_depth_but_read_ordinary_documents():
    from bisent.errors import BisentError
    from bisent.safeload import MAX_DEPTH, json_text, yaml_text

    assert yaml_text("a: 1\nb: [1, {c: x}]\n") == {"a": 1, "b": [1, {"c": "x"}]}
    assert yaml_text("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    assert json_text('{"a": [1, 2]}') == {"a": [1, 2]}
    for text, problem in ((LAUGHS, "alias"), ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "nested"),
                          ("- x\n" * 20_001, "more than 20000 values"), ("a: [", "invalid YAML")):
        with pytest.raises(BisentError, match=problem):
            yaml_text(text, "c.yaml")
    for text, problem in (("[" * 100_000, "nested"), ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "nested"),
                          ("{x", "corrupt JSON")):
        with pytest.raises(BisentError, match=problem):
            json_text(text, "c.json", 3)
    t0 = time.perf_counter()
    with pytest.raises(BisentError, match="refused"):
        yaml_text("- {type: length}\n" * 130_000, "big.yaml")                          # 2.2 MB
    with pytest.raises(BisentError, match="more than 20000 values"):
        yaml_text("- {type: length}\n" * 60_000, "1mb.yaml")                           # 1 MB, under the byte cap
    assert time.perf_counter() - t0 < 10


def test_every_shipped_recipe_and_config_still_reads():
    from bisent.safeload import read_yaml

    recipes = sorted((Path(__file__).resolve().parents[1] / "src" / "bisent" / "recipes").glob("*.yaml"))
    assert recipes and all(isinstance(read_yaml(p), (dict, list)) for p in recipes)


def test_a_model_directory_reads_no_file_outside_itself(tmp_path):
    from bisent.errors import BisentError
    from bisent.models.modeldir import ModelDir
    from bisent.models.tokenizer import Tokenizer

    write(tmp_path / "outside" / "tok.model", b"not yours")
    md = ModelDir(tmp_path / "a" / "b" / "m", {"tokenizer": {"file": "../../../outside/tok.model", "max_len": 8}},
                  {"vocab_size": 8}, b"", {})
    md.path.mkdir(parents=True)
    (md.path / "link.model").symlink_to(tmp_path / "outside" / "tok.model")
    for name in ("../../../outside/tok.model", str(tmp_path / "outside" / "tok.model"), "link.model", ".."):
        with pytest.raises(BisentError, match="is not a file inside"):
            md.read_file(name, "tokenizer")
    with pytest.raises(BisentError, match="is not a file inside"):
        Tokenizer.from_model_dir(md)
    write(md.path / "own.model", b"mine")
    assert md.read_file("own.model", "tokenizer") == b"mine"


def test_ivf_on_a_few_vectors_mines_like_exact(tmp_path, capsys):
    argv = MINE(tmp_path)
    assert main([str(a) for a in argv] + ["--index", "ivf"]) == 0
    ivf = (tmp_path / "out.tsv").read_text().splitlines()
    assert main([str(a) for a in argv] + ["--index", "exact"]) == 0
    exact = (tmp_path / "out.tsv").read_text().splitlines()
    assert len(ivf) == len(exact) == 12
    assert [r.split("\t")[1:] for r in ivf] == [r.split("\t")[1:] for r in exact]
    assert "WARNING" not in capsys.readouterr().err


def test_data_lexicon_checks_its_word_lists_before_fetching_anything(tmp_path, capsys, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("BISENT_CACHE", str(cache))
    coll = tmp_path / "coll"
    write(coll / "words.en.txt", "house\ndog\n")
    write(coll / "words.de.txt", "Haus\n")
    write(coll / "words.it.txt", b"casa\ncan\xffe\n")                        # the second list is the broken one
    assert main(["data", "lexicon", "-e", "char-ngram", str(coll)]) == 2
    err = capsys.readouterr().err
    assert err.count("bisent: error:") == 1 and "words.it.txt:2" in err and "Traceback" not in err
    assert not (cache / "debian").exists()                                # nothing fetched from Debian
