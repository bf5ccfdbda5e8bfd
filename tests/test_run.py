"""bisent run: stages in a run folder, every line accounted for, kill -9 between stages resumes to identical outputs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bisent.cli import main
from divergence_toys import toy_pairs

EN = ["The cat sits on the mat.", "It is raining today in Berlin.", "I like green apples very much.",
      "Open the file menu first.", "Click the Save button now.", "The dog barks loudly at night."]
DE = ["Die Katze sitzt auf der Matte.", "Heute regnet es in Berlin.", "Ich mag grüne Äpfel sehr.",
      "Öffnen Sie zuerst das Menü Datei.", "Klicken Sie jetzt auf Speichern.", "Der Hund bellt nachts laut."]
FILTER = """steps:
  - type: duplicate
  - type: length_ratio
    max_ratio: 3.0
    unit: char
  - name: cosine
    type: cosine
    encoder: char-ngram
"""


def make_run(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    rows = []
    for k in range(3):
        (docs / f"{k}.en").write_text("\n".join(EN[k:] + EN[:k]) + "\n\n", encoding="utf-8")
        (docs / f"{k}.de").write_text("\n".join(DE[k:] + DE[:k]) + "\n", encoding="utf-8")
        rows.append(f"{k}.en\t{k}.de")
    (docs / "empty.en").write_text("\n", encoding="utf-8")
    rows.append("empty.en\t0.de")
    (docs / "pairs.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (tmp_path / "filter.yaml").write_text(FILTER, encoding="utf-8")
    cfg = tmp_path / "run.yaml"
    cfg.write_text("src_lang: en\ntgt_lang: de\ndocuments: {pairs: docs/pairs.tsv}\n"
                   "align: {encoder: char-ngram}\nfilter: {config: filter.yaml}\n", encoding="utf-8")
    return cfg


def outputs(run_dir: Path) -> dict:
    names = ["documents/pairs.tsv", "candidates.tsv", "candidates.ids.tsv", "filter/kept.tsv",
             "filter/rejected.tsv", "bitext.tsv", "bitext.ids.tsv"] + [f"align/{k:05d}.tsv" for k in range(3)]
    return {n: (run_dir / n).read_bytes() for n in names}


def summary_aligned(run_dir: Path) -> int:
    return json.loads((run_dir / "summary.json").read_text())["align"]["aligned"]


def test_run_accounts_for_everything(tmp_path, capsys):
    cfg = make_run(tmp_path)
    assert main(["run", "-c", str(cfg), "-o", str(tmp_path / "r"), "--quiet"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["documents"]["pairs"] == 4
    assert summary["align"]["aligned"] == 3 and summary["align"]["failed"] == 1
    assert summary["align"]["unaligned_src_lines"] == 3                     # the empty last line of each doc
    cand = summary["candidates"]["candidates"]
    assert cand == 18 and summary["filter"]["kept"] + summary["filter"]["rejected"] == cand
    assert summary["bitext"]["pairs"] == summary["filter"]["kept"] > 0
    assert main(["run", "-c", str(cfg), "-o", str(tmp_path / "r"), "--quiet"]) == 0   # nothing to redo
    assert capsys.readouterr().out.count("skipped") == 5
    (tmp_path / "filter.yaml").write_text(FILTER.replace("3.0", "1.2"), encoding="utf-8")
    assert main(["run", "-c", str(cfg), "-o", str(tmp_path / "r"), "--quiet"]) == 0   # filter and bitext redone
    assert capsys.readouterr().out.count("skipped") == 3
    before = (tmp_path / "r" / "align" / "00000.tsv").read_text()
    (tmp_path / "docs" / "0.de").write_text("\n".join(DE[1:]) + "\n", encoding="utf-8")   # a document changes
    assert main(["run", "-c", str(cfg), "-o", str(tmp_path / "r"), "--quiet"]) == 0
    assert capsys.readouterr().out.count("skipped") == 1                          # only `documents`
    after = (tmp_path / "r" / "align" / "00000.tsv").read_text()
    assert after != before and sum(1 for x in after.splitlines() if x.split("\t")[1] == "") == 2


def use_collections(tmp_path, cfg) -> None:
    """Turn make_run's given document pairs into two collections (folders en/ and de/) mined by the run."""
    for side in ("en", "de"):
        (tmp_path / side).mkdir()
        for f in (tmp_path / "docs").glob(f"*.{side}"):
            (tmp_path / side / f.name).write_bytes(f.read_bytes())
    cfg.write_text(cfg.read_text().replace("{pairs: docs/pairs.tsv}", "{collections: {src: en, tgt: de}, "
                                           "encoder: char-ngram, threshold: 0.0, min_cosine: null}"))


def test_collections_every_document_accounted_for_and_bad_config(tmp_path, capsys):
    cfg = make_run(tmp_path)
    use_collections(tmp_path, cfg)
    assert main(["run", "-c", str(cfg), "-o", str(tmp_path / "r"), "--quiet"]) == 0
    docs = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["documents"]
    unmatched = (tmp_path / "r" / "documents" / "unmatched.tsv").read_text().splitlines()
    assert docs["pairs"] + docs["unmatched_src"] == 4 and docs["pairs"] + docs["unmatched_tgt"] == 3
    assert 2 * docs["pairs"] + len(unmatched) == 7 and docs["pairs"] >= 1
    assert any(u.startswith("src\tempty.en\t") and u.endswith("empty document") for u in unmatched)
    matches = (tmp_path / "r" / "documents" / "matches.tsv").read_text().splitlines()   # bisent documents mine's format
    assert matches[0].startswith("src_id\ttgt_id") and len(matches) == 5
    pairs = (tmp_path / "r" / "documents" / "pairs.tsv").read_text().splitlines()
    assert len(pairs) == docs["pairs"] and summary_aligned(tmp_path / "r") == docs["pairs"]
    # a JSONL collection is read the same way
    (tmp_path / "de.jsonl").write_text("".join(json.dumps({"id": f.name, "text": f.read_text()}) + "\n"
                                               for f in sorted((tmp_path / "de").iterdir())), encoding="utf-8")
    cfg.write_text(cfg.read_text().replace("tgt: de}", "tgt: de.jsonl}"))
    assert main(["run", "-c", str(cfg), "-o", str(tmp_path / "r"), "--quiet"]) == 0
    again = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["documents"]
    assert again["pairs"] == docs["pairs"] and again["unmatched_tgt"] == docs["unmatched_tgt"]
    assert docs["threshold"] == 0.0
    # a threshold no pair reaches: every document unmatched, with its reason; a clear error, not a traceback
    cfg.write_text(cfg.read_text().replace("threshold: 0.0", "threshold: 100.0"))
    assert main(["run", "-c", str(cfg), "-o", str(tmp_path / "r3"), "--quiet"]) == 2
    assert "no document pairs to align (every document is unmatched: see" in capsys.readouterr().err
    high = json.loads((tmp_path / "r3" / "manifest.json").read_text())["stages"]["documents"]["summary"]
    assert (high["pairs"], high["unmatched_src"], high["unmatched_tgt"]) == (0, 4, 3)
    reasons = [u.split("\t")[-1] for u in (tmp_path / "r3" / "documents" / "unmatched.tsv").read_text().splitlines()]
    assert len(reasons) == 7 and sum(r == "score below threshold 100" for r in reasons) == docs["pairs"]
    cfg.write_text("src_lang: en\ntgt_lang: de\ndocuments: {collections: {src: nowhere, tgt: de}}\n")
    assert main(["run", "-c", str(cfg), "-o", str(tmp_path / "r2")]) == 2
    assert "nowhere: no such file or folder" in capsys.readouterr().err
    cfg.write_text("src_lang: en\nfiltr: {}\n", encoding="utf-8")
    assert main(["run", "-c", str(cfg), "-o", str(tmp_path / "r")]) == 2
    assert "tgt_lang is required" in capsys.readouterr().err


def _run_env() -> dict:
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(__file__).parents[1] / "src")}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """make_run's inputs and one uninterrupted `bisent run` of them (a subprocess): (folder, the run's command)."""
    d = tmp_path_factory.mktemp("killrun")
    cmd = [sys.executable, "-m", "bisent", "run", "-c", str(make_run(d)), "--quiet", "-o"]
    subprocess.run(cmd + [str(d / "clean")], env=_run_env(), check=True, capture_output=True)
    return d, cmd


@pytest.mark.parametrize("stage", ["documents", "align", "filter"])
def test_kill_between_stages_resumes_to_identical_outputs(uninterrupted, stage):
    tmp_path, cmd = uninterrupted
    env = _run_env()
    killed = tmp_path / f"killed-{stage}"
    proc = subprocess.Popen(cmd + [str(killed)], env={**env, "BISENT_RUN_PAUSE_AFTER": stage},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while not (killed / f".paused-{stage}").exists():
        assert proc.poll() is None and time.time() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (killed / "bitext.tsv").exists()
    done = subprocess.run(cmd + [str(killed)], env=env, check=True, capture_output=True, text=True)
    assert f"{stage}: done before, skipped" in done.stdout
    assert outputs(killed) == outputs(tmp_path / "clean")


def test_repair_step_in_the_run_cuts_a_glued_pair(tmp_path, capsys, toy_model):
    """The filter stage runs the repair step: a target sentence glued to junk comes out cut back."""
    model_dir = Path(shutil.copytree(toy_model[1], tmp_path / "model"))   # its config.json is changed below
    pairs = toy_pairs(6, 7)
    junk = [f"b{i}" for i in range(40) if f"a{i}" not in pairs[2][0].split()][:5]
    glued = pairs[2][1] + " " + " ".join(junk)
    (tmp_path / "a.xa").write_text("".join(s + "\n" for s, _ in pairs), encoding="utf-8")
    (tmp_path / "a.xb").write_text("".join((glued if k == 2 else t) + "\n" for k, (_, t) in enumerate(pairs)),
                                   encoding="utf-8")
    (tmp_path / "pairs.tsv").write_text("a.xa\ta.xb\n", encoding="utf-8")
    steps = [{"type": "repair", "model": str(model_dir), "tau": 2, "min_word_gain": 0, "sentences_only": False},
             {"type": "length", "min_length": 1, "max_length": 200}]
    cfg = tmp_path / "run.yaml"
    cfg.write_text(json.dumps({"src_lang": "xa", "tgt_lang": "xb", "documents": {"pairs": "pairs.tsv"},
                               "align": {"encoder": str(model_dir)}, "filter": {"config": {"steps": steps}}}))
    assert main(["run", "-c", str(cfg), "-o", str(tmp_path / "r"), "--quiet"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["bitext"]["pairs"] == summary["candidates"]["candidates"] == 6
    bitext = [line.split("\t") for line in (tmp_path / "r" / "bitext.tsv").read_text(encoding="utf-8").splitlines()]
    ids = [line.split("\t")[:3] for line in (tmp_path / "r" / "bitext.ids.tsv").read_text().splitlines()]
    assert [i[1:] for i in ids] == [[str(k), str(k)] for k in range(1, 7)]              # aligned 1-1
    assert bitext[2][0] == pairs[2][0] and bitext[2][1] == pairs[2][1]                    # the junk cut off
    assert [tuple(b) for k, b in enumerate(bitext) if k != 2] == [p for k, p in enumerate(pairs) if k != 2]
    assert main(["run", "-c", str(cfg), "-o", str(tmp_path / "r"), "--quiet"]) == 0
    assert capsys.readouterr().out.count("skipped") == 5
    (model_dir / "config.json").write_bytes((model_dir / "config.json").read_bytes() + b"\n")   # model "retrained"
    assert main(["run", "-c", str(cfg), "-o", str(tmp_path / "r"), "--quiet"]) == 0
    assert capsys.readouterr().out.count("skipped") == 3                            # filter and bitext redone


def test_align_precision_in_the_run_matches_align_pairs_precision(tmp_path, capsys):
    """align.precision: the threshold `bisent align --pairs --precision` chooses on the same pairs, every line still in
    one row, no aligned block below it; another precision re-aligns (blocks come back); bad values are refused."""
    cfg = make_run(tmp_path)
    cfg.write_text(cfg.read_text().replace("{encoder: char-ngram}", "{encoder: char-ngram, precision: 0.6}"))
    assert main(["run", "-c", str(cfg), "-o", str(tmp_path / "r"), "--quiet"]) == 0
    run_align = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["align"]
    assert main(["align", "--pairs", str(tmp_path / "docs" / "pairs.tsv"), "-l", "en", "-L", "de", "-e", "char-ngram",
                 "-o", str(tmp_path / "a"), "--precision", "0.6"]) == 0
    alone = json.loads(capsys.readouterr().out)
    assert run_align["threshold"] == alone["threshold"] and run_align["precision"] == 0.6
    assert run_align["unaligned_after_threshold"] == alone["unaligned_after_threshold"]
    for k in range(3):
        rows = [r.split("\t") for r in (tmp_path / "r" / "align" / f"{k:05d}.tsv").read_text().splitlines()]
        assert rows == [r.split("\t") for r in (tmp_path / "a" / f"{k:05d}.tsv").read_text().splitlines()]
        assert sorted(int(x) for r in rows for x in r[0].split(",") if x) == list(range(1, 8))
        assert sorted(int(x) for r in rows for x in r[1].split(",") if x) == list(range(1, 7))
        assert all(float(r[2]) >= run_align["threshold"] for r in rows if r[0] and r[1])
    cand = json.loads((tmp_path / "r" / "summary.json").read_text())["candidates"]["candidates"]
    cfg.write_text(cfg.read_text().replace("precision: 0.6", "precision: 0.0"))
    assert main(["run", "-c", str(cfg), "-o", str(tmp_path / "r"), "--quiet"]) == 0
    low = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert run_align["unaligned_after_threshold"]["src"] > 0 == low["align"]["unaligned_after_threshold"]["src"]
    assert low["align"]["threshold"] < run_align["threshold"] and low["candidates"]["candidates"] > cand
    for bad, msg in (("precision: 1.5", "'precision'"), ("precision: 0.0, encoder: gale-church", "Gale-Church")):
        cfg.write_text(cfg.read_text().replace("precision: 0.0", bad).replace("encoder: char-ngram, ", ""))
        assert main(["run", "-c", str(cfg), "-o", str(tmp_path / "r4"), "--quiet"]) == 2
        assert msg in capsys.readouterr().err
        cfg.write_text(cfg.read_text().replace(bad, "precision: 0.0").replace("{precision", "{encoder: char-ngram, "
                                                                                          "precision"))
