"""`bisent mine --index compressed` killed (SIGKILL, in a subprocess) as each saved stage appears, then run again:
the output is byte-identical to an uninterrupted run's and the state folder is gone. Real text (gettext UI
messages, English and German), the char-ngram encoder (fast; the stages are what is tested)."""

from __future__ import annotations

import pytest

from test_kill_resume import bisent, kill_after

ARGS = ["-l", "en", "-L", "de", "-e", "char-ngram", "--index", "compressed", "--threshold", "none"]


@pytest.fixture(scope="module")
def texts(tmp_path_factory):
    from bisent.datasets.gettext import load_pairs

    pairs = load_pairs("en", "de")
    d = tmp_path_factory.mktemp("text")
    (d / "en.txt").write_text("".join(p.src + "\n" for p in pairs[:5000]), encoding="utf-8")
    (d / "de.txt").write_text("".join(p.tgt + "\n" for p in pairs[2000:7000][::-1]), encoding="utf-8")
    done = bisent(["mine", "en.txt", "de.txt", *ARGS, "-o", "whole.tsv"], d)
    assert done.returncode == 0, done.stderr
    assert not (d / "whole.tsv.knn").exists()
    return d


@pytest.mark.parametrize("stage", [pytest.param("projection.npz", marks=pytest.mark.slow),
                                   pytest.param("lists-tgt.npz", marks=pytest.mark.slow), "index-tgt.faiss",
                                   pytest.param("fwd.npz", marks=pytest.mark.slow), "index-src.faiss"])
def test_killed_at_each_stage_resumes_to_the_same_output(texts, stage):
    out = f"killed-{stage}.tsv"
    state = texts / f"{out}.knn"
    kill_after(["mine", "en.txt", "de.txt", *ARGS, "-o", out], texts, lambda: (state / stage).is_file(), seed=1,
               spread=0.05)
    assert (state / stage).is_file() and not (texts / out).exists()
    again = bisent(["mine", "en.txt", "de.txt", *ARGS, "-o", out], texts)
    assert again.returncode == 0, again.stderr
    assert (texts / out).read_bytes() == (texts / "whole.tsv").read_bytes()
    assert not state.exists()


def test_changed_input_after_a_kill_is_refused(texts):
    out = "changed.tsv"
    state = texts / f"{out}.knn"
    kill_after(["mine", "en.txt", "de.txt", *ARGS, "-o", out], texts, lambda: (state / "fwd.npz").is_file(), seed=2,
               spread=0.0)
    lines = (texts / "de.txt").read_text(encoding="utf-8").splitlines(keepends=True)
    (texts / "de2.txt").write_text("".join(lines[1:] + lines[:1]), encoding="utf-8")
    again = bisent(["mine", "en.txt", "de2.txt", *ARGS, "-o", out], texts)
    assert again.returncode != 0
    err = again.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("bisent: error:") and "other inputs or settings" in err[0], err


@pytest.mark.parametrize("damage", ["truncated shard", "other model"])
def test_bad_vectors_are_one_line_errors(texts, damage):
    for name, lang, enc in (("en", "en", "char-ngram"), ("de", "de", "random" if damage == "other model" else
                                                          "char-ngram")):
        done = bisent(["embed", f"{name}.txt", "-l", lang, "-e", enc, "-o", f"{name}.{damage[:5]}.vec",
                       "--force"], texts)
        assert done.returncode == 0, done.stderr
    if damage == "truncated shard":
        shard = sorted((texts / "de.trunc.vec").glob("*.npy"))[0]
        shard.write_bytes(shard.read_bytes()[:-1000])
    run = bisent(["mine", "en.txt", "de.txt", *ARGS, "--src-vectors", f"en.{damage[:5]}.vec", "--tgt-vectors",
                  f"de.{damage[:5]}.vec", "-o", f"bad-{damage[:5]}.tsv"], texts)
    err = run.stderr.strip().splitlines()
    assert run.returncode != 0 and len(err) == 1 and err[0].startswith("bisent: error:"), err
    assert ("de.trunc.vec" in err[0]) if damage == "truncated shard" else ("different encoders" in err[0])
    assert not (texts / f"bad-{damage[:5]}.tsv").exists()
