"""kill -9 at a seeded random point of each resumable job (in a subprocess, after its first checkpoint), then the
same command again: outputs and summaries byte-identical to an uninterrupted run (JSON compared without its timing
fields). An input rewritten between the kill and the resume (same size, mtime restored) is refused with one
`bisent: error:` line or redone from scratch, never mixed with the killed run's work. The char-ngram encoder."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
SRC = ["-l", "en", "-L", "de", "-e", "char-ngram"]
TIMING = {"seconds", "elapsed_s", "steps_per_s", "time", "started", "finished"}
FILTER = ("steps:\n  - type: duplicate\n  - type: length_ratio\n    max_ratio: 3.0\n    unit: char\n"
          "  - {name: cos, type: cosine, encoder: char-ngram}\n")


def corpus(n: int, seed: int = 7) -> tuple[list[str], list[str]]:
    """``n`` distinct made-up English sentences and their "German" (every third one reversed: a non-match)."""
    rng = random.Random(seed)
    words = ["".join(rng.choice("abcdefghiklmnoprstuwy") for _ in range(rng.randint(2, 8))) for _ in range(400)]
    en = [f"{i} " + " ".join(rng.choice(words) for _ in range(rng.randint(3, 12))) + "." for i in range(n)]
    return en, [s[::-1] if i % 3 == 2 else s.upper() for i, s in enumerate(en)]


def env() -> dict:
    return {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}


def bisent(args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bisent", *args], cwd=cwd, env=env(), capture_output=True,
                          text=True, timeout=300)


def kill_after(args, cwd, ready, seed: int, spread: float = 0.3) -> None:
    """Start ``bisent args``, wait until ``ready()`` (a checkpoint exists), sleep a seeded random 0..``spread`` s
    more and SIGKILL it; the job must not have finished (else the kill tested nothing)."""
    proc = subprocess.Popen([sys.executable, "-m", "bisent", *args], cwd=cwd, env=env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not ready():
        if proc.poll() is not None:
            pytest.fail(f"finished (rc {proc.returncode}) before its first checkpoint: {proc.stderr.read()[-500:]}")
        assert time.monotonic() < deadline
        time.sleep(0.01)
    time.sleep(random.Random(seed).uniform(0, spread))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL, "finished before the kill: give the job more to do"


def untimed(value):
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def contents(paths, base: Path) -> dict:
    """Relative name -> bytes of each file (a folder: every file in it), JSON parsed without its timing fields."""
    out = {}
    for p in paths:
        p = base / p
        files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
        for f in files:
            name, data = str(f.relative_to(base)), f.read_bytes()
            if f.suffix == ".json":
                out[name] = untimed(json.loads(data))
            elif f.name.endswith(".jsonl"):
                out[name] = [untimed(json.loads(line)) for line in data.splitlines()]
            else:
                out[name] = data
    return out


def same_size_rewrite(path: Path, line: int) -> None:
    """Reverse line ``line`` (1-based) in place: the same size, the mtime restored (what rsync -t would miss)."""
    st = path.stat()
    rows = path.read_bytes().split(b"\n")
    rows[line - 1] = rows[line - 1][::-1]
    path.write_bytes(b"\n".join(rows))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size


# --------------------------------------------------------------------------- the jobs


def write_text(d: Path, n: int) -> None:
    en, de = corpus(n)
    (d / "en.txt").write_text("\n".join(en) + "\n", encoding="utf-8")
    (d / "de.txt").write_text("\n".join(de) + "\n", encoding="utf-8")
    (d / "in.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in zip(en, de)), encoding="utf-8")
    (d / "cfg.yaml").write_text(FILTER, encoding="utf-8")


def write_docs(d: Path, docs: int, lines: int) -> None:
    en, de = corpus(docs * lines)
    for side, rows in (("en", en), ("de", de)):
        (d / side).mkdir()
        for k in range(docs):
            (d / side / f"d{k:03d}.txt").write_text("\n".join(rows[k * lines:(k + 1) * lines]) + "\n",
                                                    encoding="utf-8")
    (d / "pairs.tsv").write_text("".join(f"en/d{k:03d}.txt\tde/d{k:03d}.txt\n" for k in range(docs)),
                                 encoding="utf-8")


def write_run(d: Path, docs: int, lines: int) -> None:
    write_docs(d, docs, lines)
    (d / "cfg.yaml").write_text(FILTER, encoding="utf-8")
    (d / "run.yaml").write_text("src_lang: en\ntgt_lang: de\ndocuments: {pairs: pairs.tsv}\n"
                                "align: {encoder: char-ngram}\nfilter: {config: cfg.yaml}\n", encoding="utf-8")


def write_train(d: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from test_training import cipher_corpus

    rows = cipher_corpus(400, seed=5)
    (d / "tr.en-de.tsv").write_text("".join(f"{r['en']}\t{r['de']}\n" for r in rows), encoding="utf-8")
    recipe = {"architecture": "dan", "model": {"buckets": 2048, "embed_dim": 16, "hidden": [16], "dim": 16},
              "data": {"batch_size": 16}, "optim": {"lr": 0.003},
              "train": {"log_every": 1, "eval_every": 1000, "checkpoint_every": 3, "threads": 1}}
    (d / "r.yaml").write_text(json.dumps(recipe), encoding="utf-8")


def _has(pattern: str):
    return lambda d: any(d.glob(pattern))


# name: (write inputs, args with OUT for the output, outputs compared, ready-after-kill probe, resume args,
#        the input rewritten in the changed-input case)
JOBS = {
    "embed": (lambda d: write_text(d, 20000), ["embed", "en.txt", "-l", "en", "-e", "char-ngram", "-o", "OUT",
                                             "--shard-rows", "100"],
              ["OUT"], _has("OUT/shard-00001.npy"), [], "en.txt"),
    "mine-state": (lambda d: write_text(d, 4200), ["mine", "en.txt", "de.txt", *SRC, "-o", "OUT.tsv", "--state",
                                                  "OUT.st", "--block-rows", "4096", "--threshold", "none",
                                                  "--line-numbers"],
                   ["OUT.tsv"], _has("OUT.st/block-*.npz"), [], "de.txt"),
    "mine-twostage": (lambda d: write_text(d, 6000), ["mine", "en.txt", "de.txt", *SRC, "-o", "OUT.tsv", "--index",
                                                     "twostage", "--state", "OUT.st", "--threshold", "none",
                                                     "--line-numbers"],
                      ["OUT.tsv"], _has("OUT.st/*.npz"), [], "en.txt"),
    "filter": (lambda d: write_text(d, 4000), ["filter", "in.tsv", "-l", "en", "-L", "de", "-c", "cfg.yaml", "-o",
                                              "OUT.tsv", "--rejected", "OUT.rej.tsv", "--summary", "OUT.json",
                                              "--chunk-size", "100", "--no-progress"],
               ["OUT.tsv", "OUT.rej.tsv", "OUT.json"], _has(".OUT.tsv.filter-state/state.json"), [], "in.tsv"),
    "align-pairs": (lambda d: write_docs(d, 24, 20), ["align", "--pairs", "pairs.tsv", *SRC, "-o", "OUT"],
                    ["OUT"], _has("OUT/00002.tsv"), [], "en/d001.txt"),
    "run": (lambda d: write_run(d, 24, 20), ["run", "run.yaml", "--quiet", "-o", "OUT"],
            ["OUT/documents/pairs.tsv", "OUT/candidates.tsv", "OUT/filter/kept.tsv", "OUT/filter/rejected.tsv",
             "OUT/bitext.tsv", "OUT/bitext.ids.tsv", "OUT/align"], _has("OUT/align/00001.tsv"), [], "en/d000.txt"),
    "train": (write_train, ["train", "-c", "r.yaml", "--train", "tr.en-de.tsv", "-o", "OUT", "--max-steps",
                            "12", "--no-progress"],
              ["OUT/model.safetensors", "OUT/config.json", "OUT/train_log.jsonl"], _has("OUT/checkpoint*"),
              ["--resume"], "tr.en-de.tsv"),
}


def _clean(tmp_path: Path, name: str) -> tuple[Path, Path, list, list]:
    """The uninterrupted run, made in ``tmp_path/work`` and moved to ``tmp_path/clean``; a fresh ``work`` (the same
    absolute paths, which summaries and resume keys record) for the run to kill."""
    write, args, outs = JOBS[name][:3]
    work = tmp_path / "work"
    work.mkdir()
    write(work)
    done = bisent(args, work)
    assert done.returncode == 0, done.stderr[-2000:]
    work.rename(tmp_path / "clean")
    work.mkdir()
    write(work)
    return work, tmp_path / "clean", args, outs


# slow: train; filter, whose kill and resume the default run checks on smaller inputs (a SIGKILL in
# test_filtering.py's test_resume_after_sigkill, these command-line arguments in test_audit.py's
# test_filter_resume_after_a_kill_gives_the_uninterrupted_output)
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in ("train", "filter") else n
                                  for n in JOBS])
def test_a_job_killed_at_a_random_point_resumes_to_the_uninterrupted_output(tmp_path, name):
    work, clean, args, outs = _clean(tmp_path, name)
    ready, resume = JOBS[name][3], JOBS[name][4]
    kill_after(args, work, lambda: ready(work), seed=sum(map(ord, name)))
    assert not any((work / o).is_file() for o in outs if "/" not in o), "a killed job left a final output"
    done = bisent([*args, *resume], work)
    assert done.returncode == 0, done.stderr[-2000:]
    assert contents(outs, work) == contents(outs, clean)


# slow: train; mine-state; run, whose kill lands in its align stage, which aligns the same 24 document pairs through
# the same batch aligner as align-pairs (the default run keeps align-pairs; a changed document redoing the run's later
# stages is test_run.py's); filter, whose same-size, same-mtime rewrite after a kill is refused on 24 lines in
# test_audit.py's test_filter_resume_after_input_changed_with_same_size_and_mtime_is_refused
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow)
                                  if n in ("train", "mine-state", "run", "filter") else n for n in JOBS])
def test_an_input_changed_between_the_kill_and_the_resume_is_never_mixed(tmp_path, name):
    write, args, outs, ready, resume, changed = JOBS[name]
    work = tmp_path / "work"
    work.mkdir()
    write(work)
    kill_after(args, work, lambda: ready(work), seed=sum(map(ord, name)) + 1)
    same_size_rewrite(work / changed, 2)
    done = bisent([*args, *resume], work)
    if done.returncode == 2:                                        # refused: one line, no traceback
        lines = done.stderr.strip().splitlines()
        assert lines and "Traceback" not in done.stderr, done.stderr
        assert [ln for ln in lines if ln.startswith("bisent: error:")] == lines[-1:], done.stderr
        assert not any((work / o).is_file() for o in outs if "/" not in o)
        return
    assert done.returncode == 0, done.stderr[-2000:]
    work.rename(tmp_path / "resumed")
    work.mkdir()                                                    # an uninterrupted run on the changed input
    write(work)
    same_size_rewrite(work / changed, 2)
    fresh = bisent(args, work)
    assert fresh.returncode == 0, fresh.stderr[-2000:]
    assert contents(outs, tmp_path / "resumed") == contents(outs, work)


def test_a_resumed_state_folder_drops_the_temporary_file_a_killed_write_left(tmp_path):
    """A kill inside atomic_write leaves ``.NAME.<hex>.tmp`` in bisent's folder; the resumed run removes it, and
    nothing else."""
    from bisent.io import make_state_dir

    d = make_state_dir(tmp_path / "state", "test")
    (d / ".progress.json.5b870f8c.tmp").write_bytes(b"")
    (d / "shard-00001.npy").write_bytes(b"kept")
    (d / ".notes.tmp").write_bytes(b"kept too: not atomic_write's name")
    make_state_dir(d, "test")
    assert sorted(p.name for p in d.iterdir()) == [".bisent-state", ".notes.tmp", "shard-00001.npy"]
