"""The audit's cases of outputs that destroyed an input, mixed or lost lines, or failed with a traceback on an
output path, and of state folders that were not bisent's: each is now exit 2 with one `bisent: error:` line,
no traceback, and every input and bystander file unchanged (SHA-256). Resumes after an input or a partial file
changed are refused or redone, never mixed. Tiny inputs, the char-ngram encoder; no model download."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bisent.cli import main
from conftest import snapshot

EN = ["The house is red.", "A dog runs fast.", "Hello to the world.", "The cat sleeps.", "We eat bread.",
      "The sun is hot.", "My car is blue.", "Birds can fly.", "The tea is green.", "I read a book.",
      "The boat is old.", "Rain falls today."]
DE = ["Das Haus ist rot.", "Ein Hund rennt schnell.", "Hallo an die Welt.", "Die Katze schläft.", "Wir essen Brot.",
      "Die Sonne ist heiß.", "Mein Auto ist blau.", "Vögel können fliegen.", "Der Tee ist grün.",
      "Ich lese ein Buch.", "Das Boot ist alt.", "Heute fällt Regen.", "Guten Morgen.", "Bis bald."]
FILTER = "steps:\n  - type: duplicate\n  - type: length_ratio\n    max_ratio: 3.0\n    unit: char\n"
PROC = "/proc/bisent-audit"
SRC = ["-l", "en", "-L", "de", "-e", "char-ngram"]


def write_inputs(d: Path) -> None:
    """Every input the cases use, small, written into ``d``."""
    (d / "en.txt").write_text("\n".join(EN) + "\n")
    (d / "de.txt").write_text("\n".join(DE) + "\n")
    (d / "a.txt").write_text("\n".join(EN[:6]) + "\n")
    (d / "b.txt").write_text("\n".join(DE[:6]) + "\n")
    (d / "ln.tsv").symlink_to("b.txt")
    os.link(d / "de.txt", d / "hard.html")
    (d / "in.tsv").write_text("".join(f"{e}\t{g}\n" for e, g in zip(EN * 2, DE * 2)))
    os.link(d / "in.tsv", d / "h.tsv")
    (d / "cfg.yaml").write_text(FILTER)
    (d / "c.yaml").write_text(FILTER)
    (d / "bg.tsv").write_text("".join(f"{e}\t{g}\n" for e, g in zip(EN, DE)))
    (d / "sentinel.txt").write_text("keep me\n")
    (d / "src.jsonl").write_text("".join(json.dumps({"id": f"s{i}", "text": t}) + "\n" for i, t in enumerate(EN[:4])))
    (d / "tgt.jsonl").write_text("".join(json.dumps({"id": f"t{i}", "text": t}) + "\n" for i, t in enumerate(DE[:4])))
    from divergence_toys import TOY, toy_pairs

    (d / "r.yaml").write_text(json.dumps({**TOY, "train": {"max_steps": 1, "log_every": 1}}))
    (d / "toy.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in toy_pairs(40, 0)))
    (d / "tr.en-de.tsv").write_text("".join(f"{e}\t{g}\n" for e, g in zip(EN, DE)))
    docs = d / "docs"
    docs.mkdir()
    for k in range(2):
        (docs / f"{k}.en").write_text("\n".join(EN[k * 6:k * 6 + 6]) + "\n")
        (docs / f"{k}.de").write_text("\n".join(DE[k * 6:k * 6 + 6]) + "\n")
    (docs / "pairs.tsv").write_text("0.en\t0.de\n1.en\t1.de\n")
    (d / "pairs.tsv").write_text("docs/0.en\tdocs/0.de\ndocs/1.en\tdocs/1.de\n")
    (d / "run.yaml").write_text("src_lang: en\ntgt_lang: de\ndocuments: {pairs: docs/pairs.tsv}\n"
                                "align: {encoder: char-ngram}\nfilter: {config: cfg.yaml}\n")
    (d / "documents").mkdir()
    (d / "documents" / "notes.txt").write_text("my notes\n")
    (d / "summary.json").write_text("{}\n")
    for name in ("mystate", "out.tsv.knn"):
        (d / name).mkdir()
        (d / name / "thesis.tex").write_text("chapter 1\n")
        (d / name / "notes.txt").write_text("notes\n")
    (d / "data").mkdir()
    (d / "data" / "en.txt").write_text("\n".join(EN) + "\n")
    (d / "data" / "de.txt").write_text("\n".join(DE) + "\n")
    (d / "vec").mkdir()
    (d / "vec" / "shard-00001.npy").write_text("\n".join(EN) + "\n")
    (d / "vec" / "manifest.json").write_text("\n".join(EN) + "\n")
    (d / "rd").mkdir()
    (d / "rd" / "mined.tsv").write_text("".join(f"1.0\t{e}\t{g}\n" for e, g in zip(EN, DE)))
    (d / "rd" / "en.txt").write_text("\n".join(EN) + "\n")
    for m in ("m1", "m2"):
        (d / m).mkdir()
        (d / m / "config.json").write_text("{}\n")
    (d / "user").mkdir()
    (d / "user" / "precious.txt").write_text("do not delete\n")


def plant_run_link(d: Path) -> None:
    """A run folder bisent made, with a link to a user's folder planted where the align stage keeps its files."""
    from bisent.io import make_state_dir

    make_state_dir(d / "runs", "run")
    (d / "runs" / "align").symlink_to(d / "user")


#: (audit id, arguments, what the error line says, set-up beyond write_inputs)
CASES = [
    ("A18", ["align", "a.txt", "b.txt", *SRC, "-o", "a.txt"], "same file as SRC_DOC"),
    ("A19", ["align", "a.txt", "b.txt", *SRC, "-o", "out.tsv", "--blocks", "b.txt"], "same file as TGT_DOC"),
    ("A20", ["align", "a.txt", "b.txt", *SRC, "-o", "out.tsv", "--blocks", "out.tsv"], "are the same file"),
    ("A21", ["align", "a.txt", "b.txt", *SRC, "-o", f"{PROC}/o.tsv"], "cannot write --output"),
    ("A22", ["align", "a.txt", "b.txt", *SRC, "-o", "out.tsv", "--report", "a.txt"], "same file as SRC_DOC"),
    ("A23", ["align", "a.txt", "b.txt", *SRC, "-o", "ln.tsv"], "same file as TGT_DOC"),
    ("A33", ["align", "--pairs", "pairs.tsv", *SRC, "-o", "sentinel.txt"], "exists and is not a folder"),
    ("A-pairs-holds", ["align", "--pairs", "pairs.tsv", *SRC, "-o", "."], "holds --pairs"),
    ("D16", ["documents", "mine", "src.jsonl", "tgt.jsonl", *SRC, "--segmentation", "given", "-o", "src.jsonl"],
     "same file as SRC_DOCS"),
    ("D17", ["documents", "mine", "src.jsonl", "tgt.jsonl", *SRC, "--segmentation", "given", "-o", f"{PROC}/o.tsv"],
     "cannot write --output"),
    ("D18", ["documents", "mine", "src.jsonl", "tgt.jsonl", *SRC, "--segmentation", "given", "-o", "out.tsv",
             "--report", "tgt.jsonl"], "same file as TGT_DOCS"),
    ("DT12", ["data", "vocab", "--train", "tr.en-de.tsv", "-o", f"{PROC}/t"], "cannot write --output folder"),
    ("E27", ["embed", "vec/shard-00001.npy", "-l", "en", "-e", "char-ngram", "-o", "vec"], "holds INPUT"),
    ("E28", ["embed", "vec/manifest.json", "-l", "en", "-e", "char-ngram", "-o", "vec", "--force"], "holds INPUT"),
    ("E-proc", ["embed", "en.txt", "-l", "en", "-e", "char-ngram", "-o", f"{PROC}/vec"], "cannot write"),
    ("F45", ["filter", "in.tsv", "-l", "en", "-L", "de", "-c", "cfg.yaml", "-o", "kept.tsv", "--rejected", "rej.tsv",
             "--report", "in.tsv"], "same file as PAIRS"),
    ("F46", ["filter", "in.tsv", "-l", "en", "-L", "de", "-c", "cfg.yaml", "-o", "kept.tsv", "--rejected", "rej.tsv",
             "--report", "cfg.yaml"], "same file as --config"),
    ("F47", ["filter", "in.tsv", "-l", "en", "-L", "de", "-c", "cfg.yaml", "-o", "kept.tsv", "--rejected", "rej.tsv",
             "--report", "kept.tsv"], "are the same file"),
    ("F48", ["filter", "in.tsv", "-l", "en", "-L", "de", "-c", "cfg.yaml", "-o", "kept.tsv", "--rejected", "rej.tsv",
             "--report", f"{PROC}/r.html"], "cannot write --report"),
    ("F-summary", ["filter", "in.tsv", "-l", "en", "-L", "de", "-c", "cfg.yaml", "-o", "kept.tsv", "--rejected",
                   "rej.tsv", "--summary", "h.tsv"], "same file as PAIRS"),
    ("M37", ["mine", "en.txt", "de.txt", *SRC, "-o", "out.tsv", "--report", "en.txt"], "same file as SRC"),
    ("M38", ["mine", "en.txt", "de.txt", *SRC, "-o", "out.tsv", "--report", "out.tsv"], "are the same file"),
    ("M39", ["mine", "en.txt", "de.txt", *SRC, "-o", "out.tsv", "--report", f"{PROC}/r.html"], "cannot write --report"),
    ("M40", ["mine", "en.txt", "de.txt", *SRC, "-o", "out.tsv", "--report", "hard.html"], "same file as TGT"),
    ("M41", ["mine", "en.txt", "de.txt", *SRC, "-o", "out.tsv", "--state", "mystate"], "was not made by bisent"),
    ("M42", ["mine", "data/en.txt", "data/de.txt", *SRC, "-o", "out.tsv", "--state", "data"], "holds SRC"),
    ("M43", ["mine", "en.txt", "de.txt", *SRC, "-o", "out.tsv", "--index", "twostage", "--state", "mystate"],
     "was not made by bisent"),
    ("M46", ["mine", "en.txt", "de.txt", *SRC, "-o", "out.tsv", "--index", "twostage"], "out.tsv.knn: state folder"),
    ("M-vectors", ["mine", "en.txt", "de.txt", *SRC, "-o", "vec/manifest.json", "--src-vectors", "vec"],
     "would replace a file inside --src-vectors"),
    ("N07", ["ensemble", "m1", "m2", "-o", f"{PROC}/ens"], "cannot write --output folder"),
    ("N-member", ["ensemble", "m1", "m2", "-o", "m1"], "same file as MEMBERS"),
    ("P06", ["report", "rd", "-o", "rd/mined.tsv"], "would replace a file inside RUN_DIR"),
    ("P07", ["report", "rd", "-o", f"{PROC}/r.html"], "cannot write --output"),
    ("P09", ["report", "rd", "-o", "rd/en.txt"], "would replace a file inside RUN_DIR"),
    ("R10", ["repair", "in.tsv", "-m", "MODEL", "-o", "in.tsv"], "same file as PAIRS"),
    ("R11", ["repair", "in.tsv", "-m", "MODEL", "-o", f"{PROC}/o.tsv"], "cannot write --output"),
    ("R19", ["repair", "in.tsv", "-m", "MODEL", "-o", "h.tsv"], "same file as PAIRS"),
    ("R23", ["divergence", "in.tsv", "-m", "MODEL", "-o", "in.tsv"], "same file as PAIRS"),
    ("R26", ["divergence", "in.tsv", "-m", "MODEL", "-o", f"{PROC}/o.jsonl"], "cannot write --output"),
    ("T-proc", ["train", "-c", "cfg.yaml", "--train", "en-de=tr.en-de.tsv", "-o", f"{PROC}/model"],
     "cannot write model directory"),
    ("T-train", ["train", "-c", "cfg.yaml", "--train", "en-de=tr.en-de.tsv", "-o", "."], "holds --config"),
    ("T-user", ["train", "-c", "r.yaml", "--train", "xa-xb=toy.tsv", "-o", "mystate"],
     "was not made by bisent"),
    ("S-clean", ["train-scorer", "--clean", "in.tsv", *SRC, "-o", "."], "holds --clean"),
    ("U11", ["run", "-c", "run.yaml", "-o", f"{PROC}/run", "--quiet"], "cannot write --output folder"),
    ("U12", ["run", "-c", "run.yaml", "-o", ".", "--quiet"], "holds --config"),
    ("U21", ["run", "-c", "run.yaml", "-o", "runs", "--quiet"], "runs/align: not removed"),
    ("U28", ["run", "-c", "run.yaml", "-o", "out", "--quiet", "--report", f"{PROC}/r.html"], "cannot write --report"),
    ("U29", ["run", "-c", "run.yaml", "-o", "out", "--quiet", "--report", "run.yaml"], "same file as --config"),
    ("X07", ["explain", "The house.", "Das Haus.", *SRC, "--background", "bg.tsv", "-o", "bg.tsv"],
     "same file as --background"),
    ("X08", ["explain", "The house.", "Das Haus.", *SRC, "-o", f"{PROC}/x.html"], "cannot write --output"),
    ("X12", ["explain", "The house.", "Das Haus.", *SRC, "-c", "c.yaml", "-o", "c.yaml"], "same file as --config"),
]


@pytest.fixture(scope="module")
def div_model(tmp_path_factory) -> Path:
    """A divergence model directory trained for one step on the toy task (its quality does not matter here)."""
    pytest.importorskip("torch")
    from bisent.training.loop import train
    from bisent.training.recipe import validate_recipe
    from divergence_toys import TOY, toy_bitext

    out = tmp_path_factory.mktemp("div") / "model"
    train(validate_recipe({**TOY, "train": {"max_steps": 1, "log_every": 1}}), [toy_bitext(40, 0)], [], [], out,
          progress=False)
    return out



def run_main(argv, capsys) -> tuple[int, str]:
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    return rc, capsys.readouterr().err


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_audit_case_is_one_line_error_and_touches_nothing(case, tmp_path, monkeypatch, capsys, request):
    ident, argv, expected = case
    write_inputs(tmp_path)
    if ident == "U21":
        plant_run_link(tmp_path)
    if ident == "T-user":
        pytest.importorskip("torch")
    if "MODEL" in argv:          # a real divergence model: without the guard the command would run to the end
        argv = [str(request.getfixturevalue("div_model")) if a == "MODEL" else a for a in argv]
    monkeypatch.chdir(tmp_path)
    before = snapshot(tmp_path)
    rc, err = run_main(argv, capsys)
    lines = err.strip().splitlines()
    assert rc == 2, (ident, rc, err)
    assert "Traceback" not in err
    assert [ln for ln in lines if ln.startswith("bisent: error:")] == lines[-1:], err
    assert expected in lines[-1], (ident, lines[-1])
    after = snapshot(tmp_path)
    changed = sorted(k for k, v in before.items() if after.get(k) != v)
    assert not changed, f"{ident}: changed or removed: {changed}"


# --------------------------------------------------------------------------- resumes never mix


def _interrupt_after(monkeypatch, module, name, when):
    """Make ``module.name`` raise KeyboardInterrupt (a kill) right after a call for which ``when(args)`` holds."""
    real = getattr(module, name)

    def wrapped(*args, **kwargs):
        result = real(*args, **kwargs)
        if when(*args):
            raise KeyboardInterrupt
        return result

    monkeypatch.setattr(module, name, wrapped)


def _same_size_rewrite(path: Path, line: int, text: str) -> None:
    """Replace line ``line`` (1-based) by ``text`` of the same byte length, keeping the mtime (rsync -t)."""
    st = path.stat()
    rows = path.read_bytes().split(b"\n")
    new = text.encode()
    assert len(new) == len(rows[line - 1])
    rows[line - 1] = new
    path.write_bytes(b"\n".join(rows))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size


FILTER_ARGS = ["filter", "in.tsv", "-l", "en", "-L", "de", "-c", "cfg.yaml", "-o", "kept.tsv", "--rejected", "rej.tsv",
               "--summary", "sum.json", "--chunk-size", "5", "--no-progress"]


def _killed_filter(tmp_path, monkeypatch, capsys):
    import bisent.filtering.files as files

    write_inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    with monkeypatch.context() as m:
        _interrupt_after(m, files, "_write_json",
                         lambda path, state: path.name == "state.json" and state.get("lines", 0) >= 10)
        rc, _ = run_main(FILTER_ARGS, capsys)
    assert rc == 130 and not (tmp_path / "kept.tsv").exists()


def test_filter_resume_after_input_changed_with_same_size_and_mtime_is_refused(tmp_path, monkeypatch, capsys):
    """K-filter-4: a line rewritten after the kill, same size and mtime: the checkpoint is of other bytes."""
    _killed_filter(tmp_path, monkeypatch, capsys)
    line = (tmp_path / "in.tsv").read_text().splitlines()[2]
    _same_size_rewrite(tmp_path / "in.tsv", 3, line[::-1])
    before = snapshot(tmp_path)
    rc, err = run_main(FILTER_ARGS, capsys)
    assert rc == 2 and err.startswith("bisent: error:") and "different input" in err and "Traceback" not in err
    assert not (tmp_path / "kept.tsv").exists() and snapshot(tmp_path) == before
    rc, err = run_main([*FILTER_ARGS, "--no-resume"], capsys)            # starting over gives the whole file
    summary = json.loads((tmp_path / "sum.json").read_text())
    assert rc == 0 and summary["lines"] == summary["kept"] + summary["rejected"] == 24


def test_filter_resume_after_partial_file_overwritten_is_refused(tmp_path, monkeypatch, capsys):
    """F72: the killed run's .kept.tsv.partial replaced by garbage of the same size."""
    _killed_filter(tmp_path, monkeypatch, capsys)
    partial = tmp_path / ".kept.tsv.partial"
    partial.write_bytes(b"x" * partial.stat().st_size)
    rc, err = run_main(FILTER_ARGS, capsys)
    assert rc == 2 and "partial output changed since its checkpoint" in err and "Traceback" not in err
    assert not (tmp_path / "kept.tsv").exists()


def test_filter_resume_after_a_kill_gives_the_uninterrupted_output(tmp_path, monkeypatch, capsys):
    _killed_filter(tmp_path, monkeypatch, capsys)
    assert run_main(FILTER_ARGS, capsys)[0] == 0
    resumed = (tmp_path / "kept.tsv").read_bytes(), (tmp_path / "rej.tsv").read_bytes()
    assert run_main([*FILTER_ARGS, "--no-resume"], capsys)[0] == 0
    assert resumed == ((tmp_path / "kept.tsv").read_bytes(), (tmp_path / "rej.tsv").read_bytes())
    assert not (tmp_path / ".kept.tsv.filter-state").exists()


def test_twostage_resume_after_input_changed_is_refused(tmp_path, monkeypatch, capsys):
    """K-mine-twostage-4: a source line (not the first or last) replaced after the candidates were saved."""
    import bisent.mining.twostage as twostage

    write_inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    args = ["mine", "en.txt", "de.txt", *SRC, "-o", "out.tsv", "--index", "twostage", "--state", "st",
            "--line-numbers"]
    with monkeypatch.context() as m:
        _interrupt_after(m, twostage, "_save_state", lambda path, *a: path.name == "candidates.npz")
        assert run_main(args, capsys)[0] == 130
    assert (tmp_path / "st" / "candidates.npz").is_file() and not (tmp_path / "out.tsv").exists()
    rows = (tmp_path / "en.txt").read_text().splitlines()
    rows[5] = "Completely different words here."
    (tmp_path / "en.txt").write_text("\n".join(rows) + "\n")
    rc, err = run_main(args, capsys)
    assert rc == 2 and "of other inputs or settings" in err and "Traceback" not in err
    assert not (tmp_path / "out.tsv").exists()


def test_align_pairs_rerun_after_document_changed_realigns_it(tmp_path, monkeypatch, capsys):
    """A36 / K-align-pairs-4: a finished pair whose document changed is aligned again, not kept."""
    write_inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert run_main(["align", "--pairs", "pairs.tsv", *SRC, "-o", "outdir"], capsys)[0] == 0
    rows = (tmp_path / "docs" / "0.en").read_text().splitlines()
    rows[1] = "Nothing here matches anything."
    (tmp_path / "docs" / "0.en").write_text("\n".join(rows) + "\n")
    assert run_main(["align", "--pairs", "pairs.tsv", *SRC, "-o", "outdir"], capsys)[0] == 0
    assert run_main(["align", "--pairs", "pairs.tsv", *SRC, "-o", "fresh"], capsys)[0] == 0
    for name in ("00000.tsv", "00000.blocks", "00001.tsv", "00001.blocks"):
        assert (tmp_path / "outdir" / name).read_bytes() == (tmp_path / "fresh" / name).read_bytes(), name
    assert "Nothing here matches anything." in (tmp_path / "outdir" / "00000.tsv").read_text()


def test_state_folders_of_a_finished_mine_are_removed_and_user_folders_kept(tmp_path, monkeypatch, capsys):
    """The kNN blocks' --state folder is bisent's (marked) and removed once OUTPUT is written."""
    write_inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    rc, err = run_main(["mine", "en.txt", "de.txt", *SRC, "--threshold", "none", "-o", "new.tsv", "--state", "st"],
                       capsys)
    assert rc == 0, err
    assert (tmp_path / "new.tsv").is_file() and not (tmp_path / "st").exists()
    assert (tmp_path / "mystate" / "thesis.tex").read_text() == "chapter 1\n"
