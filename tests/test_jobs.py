"""The job layer: each job through the command line and through :mod:`bisent.jobs` writes the same bytes, from
the same defaults; the commands stay thin."""

from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path

import click
import numpy as np
import pytest

import bisent
from bisent import jobs
from bisent.cli import main

LETTERS = list("abcdefghijklmnopqrstuvwxyz")
CLI = Path(bisent.__file__).parent / "cli"


def _sentences(rng, n, words=8):
    """Sentences of random 5-letter words (a large vocabulary: unrelated sentences share little)."""
    return [" ".join("".join(rng.choice(LETTERS, 5)) for _ in range(words)) for _ in range(n)]


def _same_files(a: Path, b: Path, names) -> None:
    """Byte for byte; a JSON summary but for its ``seconds``."""
    for name in names:
        x, y = (a / name).read_bytes(), (b / name).read_bytes()
        if name.endswith(".json"):
            x, y = ({k: v for k, v in json.loads(t).items() if k != "seconds"} for t in (x, y))
        assert x == y, name


def _sides(tmp_path) -> tuple[Path, Path]:
    """``cli/`` and ``api/``: one output folder for each way of running a job."""
    for side in ("cli", "api"):
        (tmp_path / side).mkdir()
    return tmp_path / "cli", tmp_path / "api"


def test_mine_cli_and_api_write_the_same_bytes(tmp_path):
    rng = np.random.default_rng(4)
    shared = _sentences(rng, 150)
    (tmp_path / "a.txt").write_text("\n".join(shared + [f"only source {s}" for s in _sentences(rng, 150)]) + "\n")
    (tmp_path / "b.txt").write_text("\n".join([s + " ." for s in shared] +
                                              [f"nur Ziel {s}" for s in _sentences(rng, 150)]) + "\n")
    cli, api = _sides(tmp_path)
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    # the default threshold (estimated precision 0.9), and every pair with line numbers
    assert main(["mine", a, b, "-l", "en", "-L", "de", "-e", "char-ngram", "-o", cli / "m.tsv"]) == 0
    assert main(["mine", a, b, "-l", "en", "-L", "de", "-e", "char-ngram", "-o", cli / "all.tsv",
                 "--threshold", "none", "--line-numbers"]) == 0
    summary = jobs.mine(a, b, src_lang="en", tgt_lang="de", encoder="char-ngram", output=api / "m.tsv")
    jobs.mine(a, b, src_lang="en", tgt_lang="de", encoder="char-ngram", output=api / "all.tsv", threshold="none",
              with_ids=True)
    _same_files(cli, api, ["m.tsv", "all.tsv"])
    n = len((api / "m.tsv").read_text().splitlines())
    assert 0 < n == summary["pairs"] < len((api / "all.tsv").read_text().splitlines())
    assert summary["estimated_precision"] >= jobs.DEFAULT_PRECISION
    # state folders removed, no record; the pairs the threshold dropped kept aside for `bisent review`
    assert sorted(p.name for p in api.iterdir()) == ["all.tsv", "m.tsv", "m.tsv.below"]
    _same_files(cli, api, ["m.tsv.below"])
    below = [float(line.split("\t")[0]) for line in (api / "m.tsv.below").read_text().splitlines()]
    kept = [float(line.split("\t")[0]) for line in (api / "m.tsv").read_text().splitlines()]
    assert n + len(below) == len((api / "all.tsv").read_text().splitlines()) and max(below) <= min(kept)


def test_mine_to_standard_output_cli_and_api(tmp_path, capsysbinary):
    """``-o -`` with the default threshold: mined into a temporary file, thresholded, then copied to stdout."""
    rng = np.random.default_rng(4)
    shared = _sentences(rng, 100)
    (tmp_path / "a.txt").write_text("\n".join(shared + _sentences(rng, 100)) + "\n")
    (tmp_path / "b.txt").write_text("\n".join([s + " ." for s in shared] + _sentences(rng, 100)) + "\n")
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    assert main(["mine", a, b, "-l", "en", "-L", "de", "-e", "char-ngram", "-o", "-"]) == 0
    cli = capsysbinary.readouterr().out
    summary = jobs.mine(a, b, src_lang="en", tgt_lang="de", encoder="char-ngram", output="-")
    api = capsysbinary.readouterr().out
    assert cli == api and len(api.splitlines()) == summary["pairs"] > 50 and summary["output"] == "-"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt"]


def test_filter_cli_and_api_write_the_same_bytes(tmp_path, monkeypatch):
    rng = np.random.default_rng(5)
    clean = [(s, s[:-3] + " !") for s in _sentences(rng, 120)]
    noise = [(s, t) for (s, _), (_, t) in zip(clean[:60], reversed(clean[60:]))]
    lines = [f"{a}\t{b}" for a, b in clean + noise] + ["bad row without tab", ""]
    (tmp_path / "in.tsv").write_text("\n".join(lines) + "\n")
    (tmp_path / "f.yaml").write_text("steps:\n  - type: empty\n"
                                     "  - {name: cos, type: cosine, encoder: word-ngram, accept: {min: 0.05}}\n")
    cli, api = _sides(tmp_path)
    common = ["-l", "en", "-L", "de", "-c", tmp_path / "f.yaml", "-e", "char-ngram", "--set", "cos.accept.min=0.1"]
    monkeypatch.chdir(cli)       # the summary names the output files: the same names on both sides
    for stem, extra in (("all", []), ("p", ["--precision", "0.85"])):
        assert main(["filter", tmp_path / "in.tsv", *common, "-o", f"{stem}.kept.tsv", "--rejected",
                     f"{stem}.rej.tsv", "--summary", f"{stem}.json", *extra]) == 0
    monkeypatch.chdir(api)
    for stem, extra in (("all", {}), ("p", {"precision": 0.85})):
        jobs.filter(tmp_path / "in.tsv", src_lang="en", tgt_lang="de", config=tmp_path / "f.yaml",
                    encoder="char-ngram", overrides=["cos.accept.min=0.1"], output=Path(f"{stem}.kept.tsv"),
                    rejected=f"{stem}.rej.tsv", summary=f"{stem}.json", **extra)
    _same_files(cli, api, [f"{stem}.{x}" for stem in ("all", "p") for x in ("kept.tsv", "rej.tsv", "json")])
    kept, rejected = ((api / f"all.{x}").read_text().splitlines() for x in ("kept.tsv", "rej.tsv"))
    assert len(kept) == 120 and len(kept) + len(rejected) == len(lines)   # the noise rejected, nothing dropped


def test_filter_other_format_cli_and_api(tmp_path):
    """The bitext engine (JSONL here)."""
    rng = np.random.default_rng(6)
    rows = [{"src": s, "tgt": s[:-3] + " !"} for s in _sentences(rng, 40)] + [{"src": "", "tgt": "leer"}]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "f.yaml").write_text("steps:\n  - type: empty\n  - {type: cosine, encoder: char-ngram}\n")
    cli, api = _sides(tmp_path)
    assert main(["filter", tmp_path / "in.jsonl", "-l", "en", "-L", "de", "-c", tmp_path / "f.yaml", "--score-column",
                 "-o", cli / "kept.jsonl", "--rejected", cli / "rej.tsv"]) == 0
    jobs.filter(tmp_path / "in.jsonl", src_lang="en", tgt_lang="de", config=tmp_path / "f.yaml", score_column=True,
                output=api / "kept.jsonl", rejected=api / "rej.tsv")
    _same_files(cli, api, ["kept.jsonl", "rej.tsv"])
    assert len((api / "kept.jsonl").read_text().splitlines()) == 40


def test_align_cli_and_api_write_the_same_bytes(tmp_path):
    """One document pair (with its blocks and the precision cut), and a folder of pairs."""
    rng = np.random.default_rng(8)
    src = _sentences(rng, 10)
    tgt = [s + " ." for s in src[:4]] + [src[4] + " " + src[5] + " ."] + [s + " ." for s in src[7:]]
    (tmp_path / "a.txt").write_text("\n".join(src) + "\n")
    (tmp_path / "b.txt").write_text("\n".join(tgt) + "\n")
    (tmp_path / "pairs.tsv").write_text("a.txt\tb.txt\nb.txt\ta.txt\n")
    cli, api = _sides(tmp_path)
    lang = ["-l", "en", "-L", "de", "-e", "char-ngram"]
    assert main(["align", tmp_path / "a.txt", tmp_path / "b.txt", *lang, "-o", cli / "al.tsv", "--blocks",
                 cli / "al.blocks", "--precision", "0.5", "--merge-penalty", "0.2"]) == 0
    assert main(["align", "--pairs", tmp_path / "pairs.tsv", *lang, "-o", cli / "many"]) == 0
    jobs.align(tmp_path / "a.txt", tmp_path / "b.txt", src_lang="en", tgt_lang="de", encoder="char-ngram",
               output=api / "al.tsv", blocks=api / "al.blocks", precision=0.5, merge_penalty=0.2)
    summary = jobs.align(pairs=tmp_path / "pairs.tsv", src_lang="en", tgt_lang="de", encoder="char-ngram",
                         output=api / "many")
    names = sorted(p.name for p in (cli / "many").iterdir() if p.is_file())
    assert names == sorted(p.name for p in (api / "many").iterdir() if p.is_file()) and len(names) >= 2
    _same_files(cli, api, ["al.tsv", "al.blocks", *(f"many/{n}" for n in names if n.endswith((".tsv", ".blocks")))])
    assert summary["pairs"] == summary["aligned"] == 2
    rows = (api / "al.tsv").read_text().splitlines()
    assert sum(int(r.split("\t")[0].count(",")) + 1 for r in rows if r.split("\t")[0]) == 10   # every line once


def _collections(tmp_path, rng) -> tuple[Path, Path]:
    """12 shared documents, 4 only in the source, and an empty one (JSONL)."""
    shared = [_sentences(rng, 3) for _ in range(12)]
    src = [{"id": f"s{i}", "text": d} for i, d in enumerate(shared + [_sentences(rng, 3) for _ in range(4)])]
    tgt = [{"id": f"t{i}", "text": [x + " ." for x in d]} for i, d in enumerate(shared)]
    src.append({"id": "empty", "text": []})
    for name, docs in (("a.jsonl", src), ("b.jsonl", tgt)):
        (tmp_path / name).write_text("".join(json.dumps(d) + "\n" for d in docs))
    return tmp_path / "a.jsonl", tmp_path / "b.jsonl"


def test_documents_cli_and_api_write_the_same_bytes(tmp_path, capsys):
    a, b = _collections(tmp_path, np.random.default_rng(7))
    cli, api = _sides(tmp_path)
    args = [a, b, "-l", "en", "-L", "de", "-e", "char-ngram", "--segmentation", "given", "--threshold", "1.05"]
    assert main(["documents", "mine", *args, "-o", cli / "m.tsv"]) == 0
    printed = json.loads(capsys.readouterr().out)
    summary = jobs.documents(a, b, src_lang="en", tgt_lang="de", encoder="char-ngram", segmentation="given",
                             threshold=1.05, output=api / "m.tsv")
    _same_files(cli, api, ["m.tsv"])
    assert {k: v for k, v in printed.items() if k != "output"} == {k: v for k, v in summary.items() if k != "output"}
    rows = [r.split("\t") for r in (api / "m.tsv").read_text().splitlines()[1:]]
    assert len(rows) == 17 and sum(r[4] == "matched" for r in rows) >= 10


def test_docs_is_the_former_name_of_documents(tmp_path, capsys):
    a, b = _collections(tmp_path, np.random.default_rng(7))
    args = [a, b, "-l", "en", "-L", "de", "-e", "char-ngram", "--segmentation", "given"]
    assert main(["documents", "mine", *args, "-o", tmp_path / "new.tsv"]) == 0
    assert "renamed" not in capsys.readouterr().err
    assert main(["docs", "mine", *args, "-o", tmp_path / "old.tsv"]) == 0
    err = capsys.readouterr().err
    assert "`bisent docs` is renamed `bisent documents`" in err
    assert (tmp_path / "old.tsv").read_bytes() == (tmp_path / "new.tsv").read_bytes()
    assert main(["--help"]) == 0 and "  docs " not in capsys.readouterr().out     # not listed any more


def test_embed_cli_and_api_write_the_same_bytes(tmp_path, capsys):
    rng = np.random.default_rng(3)
    (tmp_path / "en.txt").write_text("\n".join(_sentences(rng, 30)[:14] + [""] + _sentences(rng, 9)) + "\n")
    cli, api = _sides(tmp_path)
    assert main(["embed", tmp_path / "en.txt", "-l", "en", "-e", "char-ngram", "--shard-rows", "10",
                 "-o", cli / "v"]) == 0
    line = capsys.readouterr().err.strip().splitlines()[-1]
    summary = jobs.embed(tmp_path / "en.txt", lang="en", encoder="char-ngram", shard_rows=10, output=api / "v")
    names = sorted(p.name for p in (cli / "v").iterdir())
    assert names == sorted(p.name for p in (api / "v").iterdir()) and len([n for n in names if "manifest" not in n]) > 2
    _same_files(cli, api, [f"v/{n}" for n in names])
    assert summary["rows"] == 24 and summary["rejected"] == 1
    assert line.startswith(f"24 rows (1 rejected lines with zero rows) x {summary['dims']} dims from ")


def test_repair_cli_and_api_write_the_same_bytes(toy_model, tmp_path, capsys):
    """The toy divergence model of divergence_toys (trained for seconds) on its own kind of pairs."""
    _, model_dir = toy_model
    lines = [b"a1 a2 a3 a4 a5\tb5 b4 b3 b2 b1", b"\tb1 b2", b"only one column", b"a1 a2 a3 a4 a9 a9 a9 a9\tb4 b3 b2 b1"]
    (tmp_path / "pairs.tsv").write_bytes(b"\n".join(lines) + b"\n")
    cli, api = _sides(tmp_path)
    assert main(["repair", tmp_path / "pairs.tsv", "-m", model_dir, "--tau", "2", "-o", cli / "r.tsv"]) == 0
    printed = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    counts = jobs.repair(tmp_path / "pairs.tsv", model_dir=model_dir, tau=2, output=api / "r.tsv")
    _same_files(cli, api, ["r.tsv"])
    assert printed == counts and counts["skipped"] == 2 and counts.get("cut", 0) >= 1


def test_run_cli_and_api_write_the_same_bytes(tmp_path, capsys):
    """test_run's run: three document pairs (and an empty document) aligned, filtered, joined into a bitext."""
    from test_run import make_run, outputs

    cfg = make_run(tmp_path)
    assert main(["run", "-c", cfg, "-o", tmp_path / "cli", "--quiet", "--set", "align.max_size=3"]) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    summary = jobs.run(cfg, output=tmp_path / "api", quiet=True, overrides=["align.max_size=3"])
    assert outputs(tmp_path / "cli") == outputs(tmp_path / "api")
    assert printed["bitext"] == summary["bitext"] and summary["bitext"]["pairs"] > 0


def test_filter_takes_a_pipeline_object(tmp_path):
    """Python callers may hand over a built :class:`FilterPipeline`: the same output as its YAML file."""
    from bisent.filtering import FilterPipeline

    rng = np.random.default_rng(2)
    pairs = [(s, s[:-3] + " !") for s in _sentences(rng, 30)] + [("", "leer"), ("eins", "one two three four five")]
    (tmp_path / "in.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in pairs))
    (tmp_path / "f.yaml").write_text("steps:\n  - type: empty\n  - {type: length_ratio, max_ratio: 2.0}\n"
                                     "  - {type: cosine, encoder: char-ngram}\n")
    pipe = FilterPipeline.from_yaml(tmp_path / "f.yaml", src_lang="en", tgt_lang="de")
    for name, config in (("yaml", tmp_path / "f.yaml"), ("object", pipe)):
        jobs.filter(tmp_path / "in.tsv", src_lang="en", tgt_lang="de", config=config, output=tmp_path / f"{name}.tsv",
                    rejected=tmp_path / f"{name}.rej")
    assert (tmp_path / "yaml.tsv").read_bytes() == (tmp_path / "object.tsv").read_bytes()
    assert (tmp_path / "yaml.rej").read_bytes() == (tmp_path / "object.rej").read_bytes()
    assert len((tmp_path / "object.rej").read_text().splitlines()) == 2


def test_job_path_check_guards_python_callers_too(tmp_path):
    (tmp_path / "a.txt").write_text("the red house\n")
    with pytest.raises(bisent.BisentError, match="same file"):
        jobs.mine(tmp_path / "a.txt", tmp_path / "a.txt", src_lang="en", tgt_lang="de", encoder="char-ngram",
                  output=tmp_path / "a.txt", threshold="none")
    assert (tmp_path / "a.txt").read_text() == "the red house\n"


# ---------------------------------------------------------------------------
# The commands: thin layers over the jobs
# ---------------------------------------------------------------------------

#: command -> its job (a group's subcommand as "group sub")
JOBS = {"mine": jobs.mine, "filter": jobs.filter, "align": jobs.align, "documents mine": jobs.documents,
        "embed": jobs.embed, "repair": jobs.repair, "run": jobs.run}
#: options of a command that its job has not: a second way to give one of its keywords (the positional CONFIG)
CLI_ONLY = {"run": {"config_arg"}}


def _command(name: str) -> click.Command:
    from bisent.cli import cli

    ctx = click.Context(cli)
    cmd = cli
    for part in name.split():
        cmd = cmd.get_command(ctx, part)
    return cmd


@pytest.mark.parametrize("name", sorted(JOBS))
def test_job_defaults_are_the_commands(name):
    """Every option of the command is a keyword of its job with the same default (a required option: none)."""
    cmd, sig = _command(name), inspect.signature(JOBS[name])
    ctx = click.Context(cmd)
    # options that never reach the command (expose_value=False: --device, --batch-size, --pooling set the encoders)
    params = [p for p in cmd.params if p.name not in CLI_ONLY.get(name, ()) and p.expose_value]
    for p in params:
        assert p.name in sig.parameters, f"{name}: --{p.name} is no keyword of the job"
        want = sig.parameters[p.name].default
        if p.required or isinstance(p, click.Argument):
            continue
        default = p.get_default(ctx)
        if p.multiple:
            default, want = tuple(default) if isinstance(default, (list, tuple)) else (), tuple(want)
        elif type(default).__name__ == "Sentinel":     # no default given: click passes None
            default = None
        assert default == want, f"{name} {p.name}: the command's default {default!r}, the job's {want!r}"
    assert set(sig.parameters) == {p.name for p in params}


def _long_functions(root: Path, limit: int = 40):
    """``FILE:LINE NAME: N lines`` of each function over ``limit`` lines, from ``def`` to its end (docstring
    included; its decorators, the command's options, not)."""
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > limit:
                    yield f"{path.relative_to(root.parent)}:{node.lineno} {node.name}: {n} lines"


def test_no_command_function_over_40_lines():
    """The commands parse options and call a job: no function in bisent/cli/ has more than 40 lines."""
    assert list(_long_functions(CLI)) == []


def test_the_length_check_can_fail(tmp_path):
    pkg = tmp_path / "cli"
    pkg.mkdir()
    (pkg / "x.py").write_text("def f():\n    '''doc'''\n" + "    x = 1\n" * 39 + "\ndef g():\n    return 1\n")
    assert [line.split(" ", 1)[1] for line in _long_functions(pkg)] == ["f: 41 lines"]


def test_the_package_root_keeps_the_vector_level_mine():
    """``bisent.mine`` is still the search over vectors; the jobs are under ``bisent.jobs``."""
    from bisent.mining.retrieval import mine as vector_mine

    assert bisent.mine is vector_mine and bisent.jobs.mine is jobs.mine is not vector_mine
    namespace: dict = {}
    exec("from bisent import *", namespace)      # noqa: S102
    assert "filter" not in namespace and namespace["jobs"] is jobs


# ---------------------------------------------------------------------------
# bisent bench: a subcommand per task
# ---------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent


def _bench_invocations(texts) -> list[tuple[str, list[str]]]:
    """``(task, arguments)`` of every ``bisent bench TASK ...`` written in ``texts``."""
    import re
    import shlex

    out = []
    for text in texts:
        for m in re.finditer(r"bisent bench ([a-z]+)([^`|\n\"']*)", text):
            try:
                args = shlex.split(m.group(2))
            except ValueError:
                continue
            out.append((m.group(1), [a for a in args if not a.startswith("...")]))
    return out


def _bench_unknown_options(invocations) -> list[str]:
    """The invocations naming no task, or an option their task has not (placeholders such as ``--pair P`` pass)."""
    from bisent.cli.bench import bench

    bad = []
    for task, args in invocations:
        cmd = bench.get_command(click.Context(bench), task)
        try:
            if cmd is None:
                raise click.NoSuchOption(task)
            cmd.make_context(task, list(args))
        except click.NoSuchOption as e:
            bad.append(f"bisent bench {task} {' '.join(args)}: {e}")
        except click.UsageError:
            pass                              # a placeholder value (--domain D): the options themselves are known
    return bad


def test_bench_invocations_in_the_docs_still_parse():
    """``bisent bench TASK --opt`` as the docs, the benchmarks and the Makefile write it: each a subcommand now."""
    files = [*ROOT.glob("docs/**/*.md"), ROOT / "README.md", *ROOT.glob("benchmarks/*.md"),
             *ROOT.glob("benchmarks/*.py"), ROOT / "Makefile", *(ROOT / "src" / "bisent").rglob("*.py")]
    found = _bench_invocations(f.read_text(encoding="utf-8") for f in files if f.is_file())
    assert len(found) >= 50 and _bench_unknown_options(found) == []
    assert len(_bench_unknown_options(_bench_invocations(["`bisent bench mining --view clean`",
                                                         "`bisent bench nosuchtask`"]))) == 2
    assert _command("bench mining").params and _command("bench align").params
