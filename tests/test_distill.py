"""``bisent distill`` on small real text (gettext UI messages, English and unspaced Chinese, from the shared cache):
the student moves toward its teacher on held-out sentences, the no-gold figures equal a direct NumPy computation,
Chinese without spaces gets non-degenerate vectors, kill -9 during the teacher pass and during training then the
same command gives the same model, and bad inputs get one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bisent.errors import BisentError

sys.path.insert(0, str(Path(__file__).parent))
from test_kill_resume import kill_after  # noqa: E402

pytest.importorskip("torch")
ROOT = Path(__file__).parents[1]
#: a small student: the same recipe, a table of 2^14 rows, so a test trains in seconds
SMALL = {"model.buckets": 16384, "model.embed_dim": 64, "model.hidden": [128]}
SMALL_ARGS = ["--set", "model.buckets=16384", "--set", "model.embed_dim=64", "--set", "model.hidden=[128]"]


#: use-m3 on real UI messages (gettext en-zh_CN, fetched and built into the cache on first use): minutes
needs_gettext = pytest.mark.slow


@pytest.fixture(scope="module")
def texts(tmp_path_factory) -> Path:
    """English and Chinese UI messages of the train split (2,000 of each, unaligned files) and 300 dev pairs."""
    from bisent.datasets.gettext import load_pairs

    d = tmp_path_factory.mktemp("text")
    train, dev = load_pairs("en", "zh_CN", "train")[:2000], load_pairs("en", "zh_CN", "dev")[:300]
    (d / "en.txt").write_text("".join(p.src + "\n" for p in train), encoding="utf-8")
    (d / "zh.txt").write_text("".join(p.tgt + "\n" for p in train[::-1]), encoding="utf-8")
    (d / "gold.en-zh.tsv").write_text("".join(f"{p.src}\t{p.tgt}\n" for p in dev), encoding="utf-8")
    return d


@pytest.fixture(scope="module")
def run(texts, tmp_path_factory):
    """One distillation from use-m3 on the real text: 3,000 sentences, 150 held out a language, 120 steps."""
    from bisent.jobs.distill import distill

    out = tmp_path_factory.mktemp("model") / "student"
    summary = distill([texts / "en.txt", texts / "zh.txt"], ["en", "zh_CN"], out, sample=3000, heldout=150, steps=120,
                      gold=[str(texts / "gold.en-zh.tsv")], overrides=SMALL, progress=False)
    return out, summary


def _held(out: Path) -> dict[str, list[str]]:
    return {lang: (out / "sample" / f"heldout.{lang}.txt").read_text(encoding="utf-8").split("\n")[:-1]
            for lang in ("en", "zh-cn")}


@needs_gettext
def test_the_no_gold_figures_equal_a_direct_numpy_computation(run):
    from bisent.encoders import get_encoder
    from bisent.encoders.trained import load_model_dir

    out, summary = run
    held, student, teacher = _held(out), load_model_dir(out), get_encoder("use-m3")
    s = {lang: student.encode(v, lang) for lang, v in held.items()}
    t = {lang: teacher.encode(v, lang) for lang, v in held.items()}
    (pair,) = summary["quality"]["pairs"]
    for a, b in (("en", "zh-cn"), ("zh-cn", "en")):
        same = [int(np.argmax(s[b] @ s[a][i])) == int(np.argmax(t[b] @ t[a][i])) for i in range(len(held[a]))]
        figure = pair[f"{a}->{b}"]
        assert figure["agreement"] == pytest.approx(np.mean(same), abs=1e-4)
        assert figure["queries"] == len(held[a]) == 150
        lo, hi = figure["interval"]
        assert lo <= figure["agreement"] <= hi and hi - lo > 0
    r = np.corrcoef((s["en"] @ s["zh-cn"].T).ravel(), (t["en"] @ t["zh-cn"].T).ravel())[0, 1]
    assert pair["cosine_correlation"] == pytest.approx(r, abs=1e-4)
    for lang in held:
        assert summary["quality"]["closeness"][lang] == pytest.approx(np.mean(np.sum(s[lang] * t[lang], 1)), abs=1e-4)
    assert json.loads((out / "distill.json").read_text(encoding="utf-8"))["quality"]["pairs"] == [pair]
    assert "top-1 agreement" in (out / "distill.html").read_text(encoding="utf-8")


@needs_gettext
def test_the_student_moves_toward_its_teacher_on_held_out_sentences(run, texts, tmp_path):
    from bisent.jobs.distill import distill

    out, trained = run
    early = distill([texts / "en.txt", texts / "zh.txt"], ["en", "zh_CN"], tmp_path / "early", sample=3000,
                    heldout=150, steps=5, overrides=SMALL, progress=False)
    assert _held(tmp_path / "early") == _held(out)                     # the same held-out sentences
    q0, q1 = early["quality"], trained["quality"]
    for lang in ("en", "zh-cn"):
        assert q1["closeness"][lang] > q0["closeness"][lang] + 0.1
    for d in ("en->zh-cn", "zh-cn->en"):
        assert q1["pairs"][0][d]["agreement"] > q0["pairs"][0][d]["agreement"]
    (g,) = q1["gold"]                                                  # both encoders on the gold pairs, one run
    assert g["n"] == 300 and 0 <= g["src->tgt"]["teacher"] < g["src->tgt"]["student"] <= 100


@needs_gettext
def test_chinese_without_spaces_gets_non_degenerate_vectors(run):
    from dataclasses import replace

    from bisent.encoders.trained import load_model_dir
    from bisent.models.hashing import HashFeaturizer

    out, _ = run
    zh = [s for s in _held(out)["zh-cn"] if " " not in s and len(s) >= 4]
    assert len(zh) >= 30
    student = load_model_dir(out)
    plain = HashFeaturizer(replace(student.featurizer.config, cjk_n_min=0)).bags(zh).counts       # (n,)
    with_cjk = student.featurizer.bags(zh).counts
    han = np.array([sum("\u4e00" <= ch <= "\u9fff" for ch in s) for s in zh])
    assert (with_cjk - plain > han).all()               # each Han character a feature of its own, and their bigrams
    rows = student.encode(zh, "zh-cn", cache=False)
    cos = rows @ rows.T
    off = cos[~np.eye(len(zh), dtype=bool)]
    assert np.isfinite(rows).all() and off.mean() < 0.8 and off.max() < 0.999
    assert np.linalg.matrix_rank(rows.astype(np.float64), tol=1e-3) == len(zh)


@needs_gettext
def test_killed_during_the_teacher_pass_and_during_training_the_same_model(texts, tmp_path, monkeypatch):
    args = ["distill", str(texts / "en.txt"), str(texts / "zh.txt"), "-l", "en", "-l", "zh_CN", "--sample", "1600",
            "--heldout", "100", "--steps", "40", "--no-progress", *SMALL_ARGS]

    def bisent(argv, cache: Path) -> None:
        env = {**os.environ, "BISENT_EMBED_CACHE": str(cache), "OMP_NUM_THREADS": "1",
               "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
        done = subprocess.run([sys.executable, "-m", "bisent", *argv], env=env, capture_output=True, text=True,
                              timeout=900)
        assert done.returncode == 0, done.stderr[-2000:]

    bisent([*args, "-o", str(tmp_path / "clean")], tmp_path / "cache-clean")
    killed, cache = tmp_path / "killed", tmp_path / "cache-killed"
    monkeypatch.setenv("BISENT_EMBED_CACHE", str(cache))              # kill_after's subprocess reads it
    kill_after([*args, "-o", str(killed)], tmp_path,
               lambda: any(cache.glob("use-m3*.sqlite-wal")) and (killed / "sample" / "sample.json").is_file(),
               seed=3, spread=1.0)
    assert not (killed / "train_log.jsonl").exists(), "killed after the teacher pass: nothing tested"
    kill_after([*args, "-o", str(killed)], tmp_path, lambda: (killed / "checkpoint.safetensors").is_file(),
               seed=4, spread=0.5)
    bisent([*args, "-o", str(killed)], cache)
    for name in ("model.safetensors", "config.json", "sample/train.en.txt", "sample/heldout.zh-cn.txt"):
        assert (killed / name).read_bytes() == (tmp_path / "clean" / name).read_bytes(), name
    a, b = (json.loads((d / "distill.json").read_text(encoding="utf-8")) for d in (killed, tmp_path / "clean"))
    assert a["quality"]["pairs"] == b["quality"]["pairs"]


def _lines(path: Path, rows) -> Path:
    path.write_text("".join(r + "\n" for r in rows), encoding="utf-8")
    return path


def test_bad_inputs_are_one_line_errors(tmp_path):
    from bisent.jobs.distill import distill

    en = _lines(tmp_path / "en.txt", [f"sentence number {i}" for i in range(40)])
    de = _lines(tmp_path / "de.txt", [f"Satz Nummer {i}" for i in range(40)])
    empty = _lines(tmp_path / "empty.txt", [])
    cases = [
        (([en, empty], ["en", "de"]), "empty.txt: "),
        (([en, de], ["en", "en"]), "one language (en)"),
        (([en, de], ["en"]), "one language per input file: 2 file(s), 1 language(s)"),
        (([en, de], ["en", "fi"]), "teacher use-m3 does not know 'fi'; encoders that cover it: me5-small"),
    ]
    for (files, langs), message in cases:
        with pytest.raises(BisentError) as e:
            distill(files, langs, tmp_path / "out", teacher="use-m3", progress=False)
        assert message in str(e.value) and "\n" not in str(e.value)
        assert not (tmp_path / "out").exists()


def test_a_sample_larger_than_the_input_uses_all_of_it_and_says_so(tmp_path, capsys):
    from bisent.jobs.distill import distill

    en = _lines(tmp_path / "en.txt", [f"sentence number {i} of the list" for i in range(60)] + ["", ""])
    de = _lines(tmp_path / "de.txt", [f"Satz Nummer {i} der Liste" for i in range(30)])
    summary = distill([en, de], ["en", "de"], tmp_path / "m", teacher="char-ngram", sample=1000, heldout=5, steps=3,
                      overrides=SMALL, progress=False)
    err = capsys.readouterr().err
    assert "not smaller than the input (90 usable lines): all of it is used" in err
    s = summary["sample"]
    assert s["all_used"] and s["drawn"] == {"en": 60, "de": 30} and s["held_out"] == {"en": 5, "de": 3}
    assert summary["inputs"][0]["skipped_lines"] == 2
    q = summary["quality"]                                             # each direction against the stated bar
    dirs = [v for p in q["pairs"] for v in p.values() if isinstance(v, dict)]
    assert len(dirs) == 2 and all(v["above_bar"] == (v["agreement"] >= q["agreement_bar"]) for v in dirs)
    assert "above the bar" in (tmp_path / "m" / "distill.html").read_text(encoding="utf-8")
    again = distill([en, de], ["en", "de"], tmp_path / "m", teacher="char-ngram", sample=1000, heldout=5, steps=3,
                    overrides=SMALL, progress=False)
    assert again == summary and "holds this distillation already" in capsys.readouterr().err
    with pytest.raises(BisentError, match="holds a distillation of other inputs or settings"):
        distill([en, de], ["en", "de"], tmp_path / "m", teacher="char-ngram", sample=1000, heldout=5, steps=4,
                overrides=SMALL, progress=False)


def test_the_sample_is_stratified_by_language_then_file():
    from bisent.distill.sample import Source, allocate

    def src(lang, n):
        return Source(f"{lang}{n}", lang, np.arange(1, n + 1))

    sources = [src("en", 100_000), src("en", 50), src("de", 3000), src("zh", 200_000)]
    got = allocate(sources, 12_000)
    assert sum(got) == 12_000
    assert got[0] + got[1] == got[3] == 4_500 and got[1] == 50 and got[2] == 3000


def test_mine_fast_distils_on_the_inputs_keeps_the_student_and_reuses_it(tmp_path, capsys, monkeypatch):
    import bisent.jobs.distill as job
    from bisent.cli import main

    monkeypatch.setattr(job, "DEFAULT_STEPS", 4)                       # a quick student; the path is the same
    monkeypatch.setattr(job, "RECIPE_SET", {**job.RECIPE_SET, **SMALL})
    en = _lines(tmp_path / "en.txt", [f"the house number {i} is red" for i in range(80)])
    de = _lines(tmp_path / "de.txt", [f"das Haus Nummer {i} ist rot" for i in range(80)])
    out = tmp_path / "mined.tsv"
    argv = ["mine", en, de, "-l", "en", "-L", "de", "-e", "char-ngram", "--fast", "-o", out, "--threshold", "none"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert f"--fast: mining with a student of char-ngram distilled on {en} and {de}, kept in {out}.student" in err
    assert (tmp_path / "mined.tsv.student" / "config.json").is_file() and out.read_text().count("\t") > 0
    first = (tmp_path / "mined.tsv.student" / "model.safetensors").read_bytes()
    assert main(argv) == 0
    assert "holds this distillation already" in capsys.readouterr().err
    _lines(de, [f"das Haus Nummer {i} ist blau" for i in range(80)])  # other input: distilled again, in place
    assert main(argv) == 0
    assert "holds this distillation already" not in capsys.readouterr().err
    assert (tmp_path / "mined.tsv.student" / "model.safetensors").read_bytes() != first
    assert main([*argv[:-4], "-o", "-", "--threshold", "none"]) != 0
    assert "--fast keeps its student beside the output" in capsys.readouterr().err


def test_mine_fast_refuses_a_student_folder_bisent_did_not_make_before_any_work(tmp_path, capsys):
    from bisent.cli import main

    en = _lines(tmp_path / "en.txt", [f"the house number {i} is red" for i in range(80)])
    de = _lines(tmp_path / "de.txt", [f"das Haus Nummer {i} ist rot" for i in range(80)])
    mine = tmp_path / "mined.tsv.student"
    mine.mkdir()
    (mine / "notes.txt").write_text("a person's notes\n")
    argv = ["mine", en, de, "-l", "en", "-L", "de", "-e", "char-ngram", "--fast", "-o", tmp_path / "mined.tsv"]
    assert main(argv) != 0
    err = capsys.readouterr().err.strip()
    assert "--fast student folder (OUTPUT.student)" in err and "\n" not in err
    assert (mine / "notes.txt").read_text() == "a person's notes\n" and not (tmp_path / "mined.tsv").exists()


def test_mine_checks_both_languages_before_embedding_anything(tmp_path, capsys, monkeypatch):
    from bisent.cli import main
    from bisent.encoders.base import Encoder

    def refuse(self, *args, **kwargs):
        raise AssertionError("embedded before both languages were checked")

    monkeypatch.setattr(Encoder, "encode", refuse)
    en = _lines(tmp_path / "en.txt", [f"the house number {i} is red" for i in range(20)])
    fi = _lines(tmp_path / "fi.txt", [f"talo numero {i} on punainen" for i in range(20)])
    assert main(["mine", en, fi, "-l", "en", "-L", "fi", "-e", "use-m3", "-o", tmp_path / "m.tsv"]) != 0
    err = capsys.readouterr().err.strip()
    assert "encoder use-m3: unknown language 'fi'" in err and "\n" not in err


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> Path:
    """Real UI messages: English on one side; German, Japanese, Russian and Chinese translations mixed on the other
    (unequal amounts, shuffled) with a language file, as a language-identified crawl's side."""
    from bisent.datasets.gettext import load_pairs

    d = tmp_path_factory.mktemp("mixed")
    rows = [(p.tgt, code) for code, lang, n in (("de", "de", 900), ("ja", "ja", 400), ("ru", "ru", 200),
                                                 ("zh-cn", "zh_CN", 40))
            for p in load_pairs("en", lang, "train")[:n]]
    order = np.random.default_rng(0).permutation(len(rows))
    _lines(d / "en.txt", [p.src for p in load_pairs("en", "de", "train")[1000:2000]])
    _lines(d / "mixed.txt", [rows[i][0] for i in order])
    _lines(d / "mixed.lang", [rows[i][1] for i in order])
    return d


def test_a_side_of_many_languages_is_stratified_by_its_language_file_and_reported_per_language(mixed, tmp_path):
    from bisent.distill.sample import fill
    from bisent.encoders import get_encoder
    from bisent.encoders.trained import load_model_dir
    from bisent.jobs.distill import distill

    out = tmp_path / "m"
    summary = distill([mixed / "en.txt", mixed / "mixed.txt"], ["en", "de"], out, teacher="char-ngram", sample=1600,
                      heldout=100, steps=3, overrides=SMALL, progress=False, lang_files=[f"2={mixed / 'mixed.lang'}"])
    s = summary["sample"]
    strata = s["line_languages"]["de"]
    assert list(strata) == ["de", "ja", "ru", "zh-cn"]                 # largest first
    drawn = {k: v["train"] + v["held_out"] for k, v in strata.items()}
    want = dict(zip(strata, fill([900, 400, 200, 40], 800)))           # equal shares of the side's 800 (water filling)
    for lang in drawn:                                                 # (fewer where a message repeats)
        assert want[lang] - 20 <= drawn[lang] <= want[lang]
    assert want["zh-cn"] == 40 and want["ru"] == 200 and want["de"] == want["ja"] == 280
    assert all(v["held_out"] == max(1, (v["train"] + v["held_out"]) // 10) for v in strata.values())
    assert summary["inputs"][1]["line_languages"] == 4 and s["held_out"]["de"] == sum(
        v["held_out"] for v in strata.values())

    # the per-language figures equal a direct NumPy computation on the held-out files
    held = {lang: (out / "sample" / f"heldout.{lang}.txt").read_text(encoding="utf-8").split("\n")[:-1]
            for lang in ("en", "de")}
    codes = np.array((out / "sample" / "heldout.de.lang").read_text(encoding="utf-8").split("\n")[:-1])
    student, teacher = load_model_dir(out), get_encoder("char-ngram")
    sv = {k: student.encode(v, k, cache=False) for k, v in held.items()}
    tv = {k: teacher.encode(v, k) for k, v in held.items()}
    (block,) = summary["quality"]["by_line_language"]
    assert block["lang"] == "de" and block["other"] == "en"
    shown = {r["line_language"]: r for r in block["languages"]}
    assert set(shown) == {k for k, v in strata.items() if v["held_out"] >= block["min_held_out"]} >= {"de", "ja"}
    assert block["smaller"]["held_out"] == sum(v["held_out"] for k, v in strata.items() if k not in shown)
    for lang, r in shown.items():
        sel = codes == lang
        fwd = np.argmax(sv["de"][sel] @ sv["en"].T, 1) == np.argmax(tv["de"][sel] @ tv["en"].T, 1)
        bwd = np.argmax(sv["en"] @ sv["de"][sel].T, 1) == np.argmax(tv["en"] @ tv["de"][sel].T, 1)
        assert r[f"{lang}->en"]["agreement"] == pytest.approx(fwd.mean(), abs=1e-4)
        assert r[f"en->{lang}"]["agreement"] == pytest.approx(bwd.mean(), abs=1e-4)
        assert r[f"{lang}->en"]["queries"] == sel.sum() and r[f"en->{lang}"]["candidates"] == sel.sum()
        lo, hi = r[f"{lang}->en"]["interval"]
        assert lo <= r[f"{lang}->en"]["agreement"] <= hi
    assert "by the language of each line" in (out / "distill.html").read_text(encoding="utf-8")


def test_a_language_file_of_the_wrong_length_or_with_a_bad_line_is_a_one_line_error(mixed, tmp_path):
    from bisent.jobs.distill import distill

    codes = (mixed / "mixed.lang").read_text(encoding="utf-8").split("\n")[:-1]
    short = _lines(tmp_path / "short.lang", codes[:-1])
    bad = _lines(tmp_path / "bad.lang", codes[:4] + ["de fr"] + codes[5:])
    files = [mixed / "en.txt", mixed / "mixed.txt"]
    cases = [([f"2={short}"], f"short.lang: {len(codes) - 1:,} lines, but {files[1]} has {len(codes):,}"),
             ([f"2={bad}"], "bad.lang:5: not a language code"),
             ([f"3={short}"], "expected INPUT=LANGS, INPUT the position of an input file (1 to 2)"),
             ([f"xx={short}"], "expected INPUT=LANGS")]
    for specs, message in cases:
        with pytest.raises(BisentError) as e:
            distill(files, ["en", "de"], tmp_path / "out", teacher="char-ngram", progress=False, lang_files=specs)
        assert message in str(e.value) and "\n" not in str(e.value)
        assert not (tmp_path / "out").exists()
