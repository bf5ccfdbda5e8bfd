"""Benchmark tasks end to end on small slices of the real LibreOffice help (fetched into the cache)."""

import json
import shutil

import numpy as np
import pytest

from bisent.bench import TASKS, task_module
from bisent.bench.common import Recorder, run_encoders
from bisent.datasets.noise import NOISE_KINDS, make_noisy_set
from bisent.evaluate import average_precision

pytestmark = pytest.mark.skipif(shutil.which("apt-get") is None, reason="needs apt-get for Debian's packages")

LIMITS = {"mining": {"max_gold": 40}, "recover": {"limit": 150}, "filter": {"limit": 240},
          "docs": {"limit": 25}, "speed": {"limit": 40}, "calibration": {"limit": 60}, "divergence": {"limit": 120},
          "align": {"limit": 4}, "pairs": {"limit": 60}, "docmine": {"limit": 10, "max_queries": 12, "max_units": 4}}


def run(task, encoders, anchors=False, **limits):
    """The task's records at :data:`LIMITS` (``limits``: other values for this call)."""
    rec = Recorder(task, None, echo=lambda s: None)
    return task_module(task).run("en", "de", run_encoders(encoders, anchors=anchors), rec,
                                 **{**LIMITS[task], **limits})


#: Calibration's align setting (sentence alignment of whole pages: most of the task's time) runs on its first
#: 10 test pages (about 290 sentences a side), the other settings at :data:`LIMITS`.
SPLIT_RUNS = {"calibration": [{"settings": ("mining", "docs", "filter")}, {"settings": ("align",), "limit": 10}]}


@pytest.mark.parametrize("task", TASKS)
def test_task_runs_and_is_deterministic(task):
    def records():
        return [r for limits in SPLIT_RUNS.get(task, [{}]) for r in run(task, ["char-ngram", "random"], **limits)]

    first = records()
    assert first and all(r["task"] == task for r in first)
    if task == "calibration":
        assert [r["setting"] for r in first] == ["mining", "docs", "filter"] * 2 + ["align"] * 2
    if task != "speed":  # quality figures repeat exactly; timings do not
        def quality(recs):
            return [{k: v for k, v in r.items() if not k.endswith("seconds")} for r in recs]
        assert quality(records()) == quality(first)


def test_mining_floors_and_anchor():
    # 20 gold pairs a split (80 sentences a side): the anchors embed in a fresh cache, me5-small at a few sentences
    # a second; their oracle F1 was 88 and 82 there against char-ngram's 18
    recs = run("mining", ["random", "char-ngram"], anchors=True, max_gold=20)
    best = {}
    for r in recs:
        if r["margin"] == "ratio" and r["retrieval"] == "max":
            best[r["encoder"]] = r["oracle_f1"]
    assert set(best) == {"random", "char-ngram", "use-m3", "me5-small"}
    assert best["random"] < 10                      # chance: nothing to find
    assert best["use-m3"] > best["char-ngram"] + 30  # surface overlap is far below a real encoder
    assert best["me5-small"] > best["char-ngram"] + 30


def test_recover_random_is_chance():
    recs = {(r["encoder"], r["score"]): r for r in run("recover", ["random", "char-ngram"])}
    assert recs[("random", "cosine")]["error_src_tgt"] > 95
    assert recs[("char-ngram", "ratio")]["error_src_tgt"] < recs[("random", "ratio")]["error_src_tgt"] - 20


def test_filter_set_has_every_noise_kind_and_ap_is_sane():
    recs = run("filter", ["random"])
    counts = recs[0]["counts"]
    assert counts["clean"] == 120 and all(counts[k] >= 15 for k in NOISE_KINDS)
    assert 35 < recs[0]["ap"] < 70  # random ranking: about the clean share (50 %)
    pipe = next(r for r in recs if r["scorer"] == "pipeline")
    assert set(pipe["kept"]) == set(NOISE_KINDS) and 0 <= pipe["clean_lost"] <= 100 and pipe["split"] == "test"
    assert pipe["kept"]["untranslated"] == 0     # the overlap rule, whatever the encoder


def test_average_precision():
    assert average_precision(np.array([3, 2, 1.0]), np.array([1, 1, 0])) == 1.0
    assert average_precision(np.array([3, 2, 1.0]), np.array([0, 1, 1])) == pytest.approx((1 / 2 + 2 / 3) / 2)


def test_noise_kinds_do_what_they_say():
    from collections import namedtuple

    P = namedtuple("P", "doc pid src tgt split")
    pairs = [P(f"d{d}", f"p{i}", f"source {d} {i} alpha beta gamma", f"target {d} {i} eins zwei drei vier", "test")
             for d in range(6) for i in range(5)]
    third = {(p.doc, p.pid): f"tiers {p.doc} {p.pid}" for p in pairs}
    items = make_noisy_set(pairs, third, seed=1)
    by_src = {p.src: p for p in pairs}
    for it in items:
        p = by_src[it.src]
        if it.kind == "clean":
            assert it.tgt == p.tgt
        elif it.kind == "untranslated":
            assert it.tgt == it.src
        elif it.kind == "third_language":
            assert it.tgt == third[(p.doc, p.pid)]
        elif it.kind == "truncated":
            assert p.tgt.startswith(it.tgt) and len(it.tgt) < len(p.tgt)
        elif it.kind == "glued":
            assert it.tgt.startswith(p.tgt + " target " + p.doc[1:] + " ")
        elif it.kind == "neighbour":
            assert it.tgt != p.tgt and it.tgt.startswith(f"target {p.doc[1:]} ")
        elif it.kind == "misaligned":
            assert not it.tgt.startswith(f"target {p.doc[1:]} ")
    assert len({it.src for it in items}) == len(items) == len(pairs)


def test_centred_document_pooling_removes_each_languages_offset():
    """Sentence vectors = the language's own offset + the page's topic + noise: only centring finds the pages."""
    import numpy as np

    from bisent.bench.docs import doc_embeddings
    from bisent.evaluate import retrieval_p_at as p_at_1

    rng = np.random.default_rng(0)
    n_docs, dim = 20, 32
    topic = rng.normal(size=(n_docs, dim))

    class Toy:
        def __init__(self, seed):
            self.rng = np.random.default_rng(seed)
            self.offset = 5 * self.rng.normal(size=dim)            # a direction all sentences of a language share

        def encode(self, texts, lang, progress=None):
            rows = [self.offset + topic[int(t.split()[0])] + self.rng.normal(size=dim) for t in texts]
            return np.asarray(rows, dtype=np.float32)

    docs = [[f"{i} s{j}" for j in range(int(rng.integers(1, 6)))] for i in range(n_docs)]
    plain = p_at_1(doc_embeddings(docs, Toy(1), "en", center=False), doc_embeddings(docs, Toy(2), "de", center=False))
    centred = p_at_1(doc_embeddings(docs, Toy(1), "en"), doc_embeddings(docs, Toy(2), "de"))
    assert min(centred) >= 0.9 and max(plain) < 0.5, (plain, centred)


def test_benchmark_scripts_record_through_the_one_recorder(tmp_path, monkeypatch):
    """`python benchmarks/embed.py`: its lines go to results/embed.jsonl with context, through the one recorder."""
    import json
    import sys

    import embed

    monkeypatch.setattr(sys, "argv", ["benchmarks/embed.py", "--n", "8", "--encoders", "random"])
    embed.main(["--n", "8", "--encoders", "random", "--results", str(tmp_path)])
    (line,) = (tmp_path / "embed.jsonl").read_text().splitlines()
    rec = json.loads(line)
    assert rec["task"] == "embed" and rec["bench"] == "embed_speed" and rec["sentences"] == 8
    assert rec["command"] == "python benchmarks/embed.py --n 8 --encoders random" and "machine" in rec


def test_calibration_takes_a_split_and_settings(capsys):
    """``bench calibration --split dev --setting ...``: the dev documents, only the settings asked for."""
    from bisent.cli import main

    rec = Recorder("calibration", None, echo=lambda s: None)
    out = task_module("calibration").run("en", "de", run_encoders(["char-ngram"], anchors=False), rec, limit=60,
                                         split="dev", settings=["mining", "docs"])
    assert [r["setting"] for r in out] == ["mining", "docs"]
    diag = out[0]["diagnosis"]                                  # gold used for diagnosis only
    assert sum(diag[k]["n"] for k in ("true_mutual", "true_non_mutual", "false_mutual", "false_non_mutual")) \
        == out[0]["pairs"]
    assert out[0]["estimator"] == "storey-0.5-unmoved"
    assert all(r["split"] == "dev" for r in out) and out[1]["pool"].endswith("dev pages")
    test = task_module("calibration").run("en", "de", run_encoders(["char-ngram"], anchors=False), rec, limit=60,
                                          settings=["mining"])
    assert test[0]["split"] == "test"
    # 8 dev pages (about 240 sentences a side): the 9th has 479 sentences, whose alignment is most of a 20-page run
    al, = task_module("calibration").run("en", "de", run_encoders(["char-ngram"], anchors=False), rec, limit=8,
                                         split="dev", settings=["align"])
    assert al["setting"] == "align" and al["pages"] == 8 and al["blocks"] > 100 and len(al["points"]) == 5
    assert al["negatives"] >= 100 and all(0 <= p["measured"] <= 100 for p in al["points"])
    # each task has its own options: another task's is no option of it
    assert main(["bench", "mining", "--split", "dev", "--no-anchors", "-e", "random", "--results", ""]) == 2
    assert "No such option '--split'" in capsys.readouterr().err
    assert main(["bench", "filter", "--setting", "docs", "--no-anchors", "-e", "random", "--results", ""]) == 2
    assert "No such option '--setting'" in capsys.readouterr().err
    assert main(["bench", "calibration", "--split", "all", "--no-anchors", "-e", "random", "--results", ""]) == 2
    assert "--split all: only the docs setting" in capsys.readouterr().err
    assert main(["bench", "mining", "--estimator", "em", "--no-anchors", "-e", "random", "--results", ""]) == 2
    assert "No such option '--estimator'" in capsys.readouterr().err
    assert main(["bench", "calibration", "--estimator", "split", "--no-anchors", "-e", "random", "--results", ""]) == 2
    assert "--estimator split: only the mining setting splits its pairs" in capsys.readouterr().err
    assert main(["bench", "calibration", "--estimator", "joint", "--no-anchors", "-e", "random", "--results", ""]) == 2
    assert "--estimator joint: only the mining setting has mutual pairs" in capsys.readouterr().err


# real rows of `bisent data general --langs de` (train split), for the learning-curve sets
_GENERAL_DE = [
    ("help:text/scalc/01/04060199.html", "par_id838953", "Concatenation or union", "Verkettung oder Vereinigungsmenge"),
    ("ui:dpkg", "dpkg:383", "Use dpkg --info (= dpkg-deb --info) to examine archive files.",
     "Verwenden Sie dpkg --info (= dpkg-deb --info) zum Untersuchen von Archiven."),
    ("dict:unitary /jˈuːnɪtəɹi/ <adj>", "hw:439844", "unitary /jˈuːnɪtəɹi/ <adj>", "unitär"),
    ("help:text/simpress/guide/photo_album.html", "par_id221120161524582911",
     "In the Create Photo Album dialog, click Add.", "Im Dialog Erstelle Fotoalbum klicken Sie auf Hinzufügen."),
    ("ui:bash", "bash:107", "%s: not an indexed array", "%s: Ist kein indiziertes Array."),
    ("dict:columbite", "hw:453089", "columbite", "Columbit"),
    ("ui:gawk", "gawk:395", "enable [once|del] [breakpoints] [range] - enable specified breakpoints",
     "enable [once|del] [Haltepunkte] [Bereich] - die angegebenen Haltepunkte aktivieren"),
    ("dict:opera manager", "hw:171198", "opera manager", "Opernintendant"),
    ("dict:seek error", "hw:235872", "seek error", "Suchfehler"),
    ("ui:gawk", "gawk:12", "seek error", "Suchfehler"),              # the same pair again: kept once
]


def test_curve_data_nested_sets_and_errors(tmp_path):
    from bisent.errors import BisentError
    from curve_data import main, nested_sets, read_rows

    src = tmp_path / "train.en-de.tsv"
    src.write_text("".join("\t".join(r) + "\n" for r in _GENERAL_DE), encoding="utf-8")
    sets = nested_sets(read_rows(src), [5])
    assert [r[1] for r in sets["core"]] == ["par_id838953", "par_id221120161524582911"]
    assert len(sets["5"]) == 5 and len(sets["all"]) == 9                   # the repeated pair once
    assert sets["all"][:5] == sets["5"] and sets["5"][:2] == sets["core"]     # nested, core first
    assert sum(r[2] == "seek error" for r in sets["all"]) == 1
    main([str(src), "--size", "5", "--out", str(tmp_path / "a")])
    main([str(src), "--size", "5", "--out", str(tmp_path / "b")])
    for name in ("train.core.tsv", "train.5.tsv", "train.all.tsv", "stats.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    stats = json.loads((tmp_path / "a" / "stats.json").read_text())
    assert stats["sets"]["5"]["domains"]["help"] == 2 and stats["sets"]["all"]["pairs"] == 9
    with pytest.raises(BisentError, match="between the core"):
        nested_sets(read_rows(src), [9])
    with pytest.raises(BisentError, match="core domain 'web'"):
        nested_sets(read_rows(src), [], core="web")
    bad = tmp_path / "bad.tsv"
    bad.write_text("help:x\tid\tonly three\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="bad.tsv:1: expected"):
        main([str(bad), "--out", str(tmp_path / "c")])


def test_train_memory_refuses_missing_train_args_or_an_output_folder(tmp_path):
    """benchmarks/train_memory.py: no `bisent train` arguments after --, or an -o of the user's (the run goes to a
    temporary folder), is a one-line usage error before anything runs or is recorded."""
    from train_memory import main

    res = ["--results", str(tmp_path / "results")]
    for argv in (res, [*res, "--steps", "1"], [*res, "--"],
                 [*res, "--", "--recipe", "r.yaml", "-o", str(tmp_path / "x")],
                 [*res, "--", "--recipe", "r.yaml", f"--out={tmp_path / 'x'}"]):
        with pytest.raises(SystemExit, match="after --, without -o"):
            main(argv)
    assert not (tmp_path / "results").exists() and not (tmp_path / "x").exists()


def test_recover_compares_each_encoder_with_the_reference_item_by_item():
    rec = Recorder("recover", None, echo=lambda s: None)
    recs = task_module("recover").run("en", "de", run_encoders(["random", "char-ngram"], anchors=False), rec,
                                      limit=150, reference="char-ngram")
    by = {(r["encoder"], r["score"]): r for r in recs}
    assert len({r["set"] for r in recs}) == 1                         # one fingerprint: the same pairs for all
    assert "vs" not in by[("char-ngram", "csls")]                   # the reference is not compared with itself
    r = by[("random", "csls")]
    assert r["vs"] == "char-ngram"
    for d in ("src_tgt", "tgt_src"):
        g = r[f"paired_{d}"]
        ref_err = by[("char-ngram", "csls")][f"error_{d}"]
        assert g["gap"] == pytest.approx(r[f"error_{d}"] - ref_err, abs=0.02)   # the same items, both ways
        assert g["only_this_wrong"] - g["only_ref_wrong"] == round(g["gap"] * r["n"] / 100)
        assert g["gap_ci95"][0] > 10 and g["p"] < 1e-6                          # chance is far behind, for sure
