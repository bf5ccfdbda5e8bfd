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


@pytest.mark.parametrize("stage", ["projection.npz", "index-tgt.faiss", "fwd.npz", "index-src.faiss"])
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
