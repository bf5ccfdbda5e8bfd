"""Embedding steps (cosine, CSLS, margins against a background), Kim et al.'s MLP similarity, ranking,
and `bisent filter` / `bisent train-scorer` end to end with the fast char-ngram encoder."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from bisent.cli import main
from bisent.encoders import get_encoder
from bisent.errors import BisentError
from bisent.filtering import (
    FilterPipeline,
    MLPScorer,
    Step,
    background_sample,
    edit_config,
    filter_file,
    rank_scores,
    register_step,
    train_scorer,
)
from bisent.filtering.negatives import choose_negatives, parse_strategy, random_pairing, synthetic_noise, worst_band

ENC = "char-ngram"

PAIRS = [
    ("The museum is closed on Mondays.", "Das Museum ist montags geschlossen."),
    ("Where is the nearest pharmacy?", "Wo ist die nächste Apotheke?"),
    ("The children are playing in the garden.", "Die Kinder spielen im Garten."),
    ("Please close the window before you go.", "Bitte schließ das Fenster, bevor du gehst."),
    ("Choose Format - Character.", "Wählen Sie Format - Zeichen."),
    ("The table has three columns and four rows.", "Die Tabelle hat drei Spalten und vier Zeilen."),
    ("Click the Save button to store the document.", "Klicken Sie auf Speichern, um das Dokument zu sichern."),
    ("Insert a chart into the spreadsheet.", "Fügen Sie ein Diagramm in die Tabelle ein."),
    ("The printer is out of paper.", "Der Drucker hat kein Papier mehr."),
    ("Open the Navigator with F5.", "Öffnen Sie den Navigator mit F5."),
    ("Select the text you want to format.", "Wählen Sie den Text aus, den Sie formatieren möchten."),
    ("The macro runs when the document opens.", "Das Makro läuft, wenn das Dokument geöffnet wird."),
]


def unit(a: np.ndarray) -> np.ndarray:
    return a / np.linalg.norm(a, axis=1, keepdims=True)


def direct_scores(kind: str, x, y, bx, by, k: int) -> np.ndarray:
    """CSLS / margins written out in NumPy: neighbours of x among background targets, of y among sources."""
    cos = np.sum(x * y, axis=1)
    r_x = np.sort(x @ by.T, axis=1)[:, ::-1][:, :k].mean(axis=1)
    r_y = np.sort(y @ bx.T, axis=1)[:, ::-1][:, :k].mean(axis=1)
    if kind == "csls":
        return 2 * cos - r_x - r_y
    if kind == "distance":
        return cos - (r_x + r_y) / 2
    return cos / np.maximum((r_x + r_y) / 2, 1e-6)   # scoring.margin keeps the denominator positive


# ---------------------------------------------------------------------------
# Embedding steps
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["ratio", "distance", "csls"])
def test_margin_with_a_sample_background_equals_numpy(kind):
    k, size = 3, 8
    step = {"type": "csls"} if kind == "csls" else {"type": "margin", "kind": kind}
    pipe = FilterPipeline.from_config([{**step, "name": "s", "encoder": ENC, "k": k, "sample": size}],
                                      src_lang="en", tgt_lang="de")
    got = np.array([r.score for r in pipe.run(PAIRS, batch_size=5)])   # batches of 5: the sample is shared
    enc = get_encoder(ENC)
    sample = background_sample(PAIRS, size)
    assert len(sample) == size and set(sample) <= set(PAIRS)
    x, y = enc.encode([s for s, _ in PAIRS], "en"), enc.encode([t for _, t in PAIRS], "de")
    bx, by = enc.encode([s for s, _ in sample], "en"), enc.encode([t for _, t in sample], "de")
    np.testing.assert_allclose(got, direct_scores(kind, x, y, bx, by, k), rtol=1e-5, atol=1e-6)


def test_background_files_and_batch_backgrounds(tmp_path):
    src_bg, tgt_bg = tmp_path / "bg.en", tmp_path / "bg.de"
    src_bg.write_text("A completely different sentence.\n\nThe museum opens at nine.\nOpen the file.\n")
    tgt_bg.write_text("Ein ganz anderer Satz.\nDas Museum öffnet um neun.\n")
    enc = get_encoder(ENC)
    x, y = enc.encode([s for s, _ in PAIRS], "en"), enc.encode([t for _, t in PAIRS], "de")
    bx = enc.encode(["A completely different sentence.", "The museum opens at nine.", "Open the file."], "en")
    by = enc.encode(["Ein ganz anderer Satz.", "Das Museum öffnet um neun."], "de")
    pipe = FilterPipeline.from_config([{"type": "margin", "encoder": ENC, "k": 2, "background_src": str(src_bg),
                                        "background_tgt": str(tgt_bg)}], src_lang="en", tgt_lang="de")
    got = np.array([r.score for r in pipe.run(PAIRS)])
    np.testing.assert_allclose(got, direct_scores("ratio", x, y, bx, by, 2), rtol=1e-5)
    # background: batch -> each batch is its own background
    pipe = FilterPipeline.from_config([{"type": "margin", "encoder": ENC, "k": 2, "background": "batch"}],
                                      src_lang="en", tgt_lang="de")
    got = np.array([r.score for r in pipe.run(PAIRS, batch_size=6)])
    want = np.concatenate([direct_scores("ratio", x[s:s + 6], y[s:s + 6], x[s:s + 6], y[s:s + 6], 2)
                           for s in (0, 6)])
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_cosine_step_and_threshold():
    enc = get_encoder(ENC)
    x, y = enc.encode([s for s, _ in PAIRS], "en"), enc.encode([t for _, t in PAIRS], "de")
    cos = np.sum(x * y, axis=1)
    t = float(np.median(cos))
    pipe = FilterPipeline.from_config([{"type": "cosine", "encoder": ENC, "accept": {"min": t}}],
                                      src_lang="en", tgt_lang="de")
    results = list(pipe.run(PAIRS))
    np.testing.assert_allclose([r.score for r in results], cos, rtol=1e-5)
    assert [r.kept for r in results] == list(cos >= t)
    assert {r.reason for r in results if not r.kept} == {"cosine"}


def test_filter_file_draws_the_same_sample_as_run(tmp_path):
    """The pre-pass over a file (bad rows skipped, order irrelevant) gives the background run() gets."""
    lines = [f"{s}\t{t}" for s, t in PAIRS]
    data = "\n".join(lines[6:] + ["broken row without a tab"] + lines[:6] + [lines[0]]) + "\n"
    src = tmp_path / "in.tsv.gz"
    src.write_bytes(gzip.compress(data.encode()))
    steps = [{"name": "m", "type": "margin", "encoder": ENC, "k": 3, "sample": 8, "accept": {"gt": 1e9}}]
    summary = filter_file(src, tmp_path / "k.tsv", tmp_path / "r.tsv", "en", "de", steps, chunk_size=4,
                          progress=False)
    assert summary["kept"] == 0 and summary["rejected_by"] == {"m": 13, "bad_row:columns": 1}
    rows = [r.split("\t") for r in (tmp_path / "r.tsv").read_text().splitlines()]
    from_file = {(r[3], r[4]): float(r[2]) for r in rows if r[1] == "m"}
    ref = FilterPipeline.from_config(steps, src_lang="en", tgt_lang="de")
    for res in ref.run(PAIRS):
        assert from_file[res.pair] == pytest.approx(res.score, rel=1e-5)


CRASH_AT: dict[str, str | None] = {"src": None}


@register_step("_test_crash_at")
class CrashAt(Step):
    """Raises when it meets the source ``CRASH_AT['src']`` (a simulated kill mid-file)."""

    def score(self, pairs):
        for src, _ in pairs:
            if src == CRASH_AT["src"]:
                raise RuntimeError("simulated crash")
            yield 0.0

    def accept(self, value):
        return True


def test_resume_with_a_sample_background_gives_identical_output(tmp_path):
    src = tmp_path / "in.tsv"
    src.write_text("".join(f"{s}\t{t}\n" for s, t in PAIRS * 2 + PAIRS[:5]))
    steps = [{"type": "_test_crash_at"},
             {"name": "m", "type": "margin", "encoder": ENC, "k": 2, "sample": 6, "accept": {"min": 1.0}}]
    ref = filter_file(src, tmp_path / "ref_k.tsv", tmp_path / "ref_r.tsv", "en", "de", steps, chunk_size=4,
                      progress=False)
    CRASH_AT["src"] = PAIRS[9][0]  # line 10: chunks 1-2 are checkpointed
    try:
        with pytest.raises(RuntimeError, match="simulated crash"):
            filter_file(src, tmp_path / "k.tsv", tmp_path / "r.tsv", "en", "de", steps, chunk_size=4,
                        progress=False)
    finally:
        CRASH_AT["src"] = None
    summary = filter_file(src, tmp_path / "k.tsv", tmp_path / "r.tsv", "en", "de", steps, chunk_size=4,
                          progress=False)
    assert summary["rejected_by"] == ref["rejected_by"] and 0 < summary["kept"] < summary["lines"] == 29
    assert (tmp_path / "k.tsv").read_bytes() == (tmp_path / "ref_k.tsv").read_bytes()
    assert (tmp_path / "r.tsv").read_bytes() == (tmp_path / "ref_r.tsv").read_bytes()


def test_background_sample_is_order_free_and_nested():
    pairs = [(f"s{i}", f"t{i}") for i in range(100)]
    a = background_sample(pairs, 10)
    assert a == background_sample(list(reversed(pairs)) + pairs[:5], 10)
    assert background_sample(pairs, 4) == a[:4]
    assert len(background_sample(pairs[:3], 10)) == 3
    assert background_sample(pairs, 10, seed=1) != a


def test_embedding_step_mistakes_are_one_line_errors(tmp_path):
    cases = [({"type": "cosine", "encoder": "no-such-encoder"}, "parameter 'encoder' must be one of"),
             ({"type": "margin", "kind": "cubic"}, "parameter 'kind' must be one of absolute, distance, ratio"),
             ({"type": "csls", "background": "files"}, "needs both 'background_src' and 'background_tgt'"),
             ({"type": "csls", "background_src": str(tmp_path / "nope"), "background_tgt": str(tmp_path / "nope")},
              "no such file"),
             ({"type": "csls", "k": 0}, "parameter 'k' must be an integer >= 1")]
    for step, expected in cases:
        with pytest.raises(BisentError) as info:
            FilterPipeline.from_config([step], src_lang="en", tgt_lang="de")
        assert expected in str(info.value) and "\n" not in str(info.value)


def test_edit_config_overrides_embedding_steps_and_leaves_the_input_alone():
    config = {"steps": [{"type": "empty"}, {"type": "cosine", "encoder": "use-m3"},
                        {"type": "margin", "params": {"encoder": "use-m3"}}]}
    before = json.dumps(config)
    pipe = FilterPipeline.from_config(edit_config(config, encoder=ENC), src_lang="en", tgt_lang="de")
    assert [getattr(s, "encoder_name", None) for s in pipe.steps] == [None, ENC, ENC]
    assert json.dumps(config) == before


def test_edit_config_replaces_the_embedding_steps_and_the_selection_follows(tmp_path):
    path = tmp_path / "f.yaml"
    path.write_text("steps:\n  - type: empty\n  - {name: cos, type: cosine, encoder: use-m3}\n"
                    "  - type: overlap\n  - {type: margin, encoder: use-m3}\n"
                    "select: {mode: top_n, n: 5, step: cos}\n", encoding="utf-8")
    new = {"name": "mlp", "type": "mlp", "model": "scorers/x"}
    data = edit_config(path, embedding_step=new)
    assert data == {"steps": [{"type": "empty"}, new, {"type": "overlap"}],
                    "select": {"mode": "top_n", "n": 5, "step": "mlp"}}
    assert edit_config([{"type": "empty"}], encoder=ENC, embedding_step=new) == [{"type": "empty"}]
    with pytest.raises(BisentError, match=r"f\.yaml:\d+: invalid YAML"):
        path.write_text("steps:\n  - [unclosed\n", encoding="utf-8")
        edit_config(path, encoder=ENC)


def test_rank_scores_put_kept_pairs_first_then_by_how_far_rejected_pairs_got():
    pairs = PAIRS[:6] + [("The museum is closed on Mondays.", "The museum is closed on Mondays."),  # overlap
                         ("a", "")]                                                                 # empty
    config = [{"type": "empty"}, {"type": "overlap"}, {"name": "cos", "type": "cosine", "encoder": ENC}]
    ranks, results = rank_scores(config, pairs, src_lang="en", tgt_lang="de", return_results=True)
    assert [r.reason for r in results[-2:]] == ["overlap", "empty"]
    assert ranks[-1] < ranks[-2] < ranks[:6].min()
    kept_scores = np.array([r.score for r in results[:6]])
    assert list(np.argsort(-ranks[:6], kind="stable")) == list(np.argsort(-kept_scores, kind="stable"))


# ---------------------------------------------------------------------------
# The MLP similarity
# ---------------------------------------------------------------------------

def toy_vectors(n: int, d: int = 16, seed: int = 0):
    """Positives: y = a fixed rotation of x plus noise; negatives: unrelated y. Cosine alone cannot tell."""
    rng = np.random.default_rng(seed)
    rot = np.linalg.qr(rng.standard_normal((d, d)))[0]
    x = unit(rng.standard_normal((n, d)))
    pos_y = unit(x @ rot + 0.3 * rng.standard_normal((n, d)) / np.sqrt(d))
    neg_y = unit(rng.standard_normal((n, d)))
    return x.astype(np.float32), pos_y.astype(np.float32), neg_y.astype(np.float32)


def test_mlp_learns_a_toy_separation_far_above_chance():
    x, pos_y, neg_y = toy_vectors(600)
    mlp = MLPScorer(hidden=(64, 64), max_updates=200, threads=1).fit(x[:400], pos_y[:400], x[:400], neg_y[:400])
    scores_pos, scores_neg = mlp.score(x[400:], pos_y[400:]), mlp.score(x[400:], neg_y[400:])
    accuracy = (np.mean(scores_pos > 0.5) + np.mean(scores_neg <= 0.5)) / 2
    assert accuracy > 0.9, accuracy                     # chance: 0.5
    assert np.mean(np.sum(x[400:] * pos_y[400:], 1) > np.sum(x[400:] * neg_y[400:], 1)) < 0.75  # cosine is weak
    assert mlp.log_.updates == 200 and 0 < mlp.log_.best_epoch <= mlp.log_.epochs


def test_mlp_features_option_and_determinism():
    x, pos_y, neg_y = toy_vectors(200, seed=1)
    a = MLPScorer(hidden=(32,), features="concat-diff-prod", max_updates=50).fit(x, pos_y, x, neg_y)
    b = MLPScorer(hidden=(32,), features="concat-diff-prod", max_updates=50).fit(x, pos_y, x, neg_y)
    np.testing.assert_array_equal(a.score(x, pos_y), b.score(x, pos_y))
    assert sum(p.numel() for p in a.net_.parameters()) == 4 * 16 * 32 + 32 + 32 + 1


def test_scorer_directory_round_trip_and_mlp_step(tmp_path):
    scorer = train_scorer(PAIRS, "en", "de", encoder=ENC, negatives="random", hidden=(16,), max_updates=30,
                          out_dir=tmp_path / "scorer")
    assert sorted(p.name for p in (tmp_path / "scorer").iterdir()) == ["config.json", "model.safetensors"]
    config = json.loads((tmp_path / "scorer" / "config.json").read_text())
    assert config["architecture"] == "mlp-similarity" and config["model"]["hidden"] == [16]
    assert config["encoder"] == {"name": ENC, "id": get_encoder(ENC).id, "dim": get_encoder(ENC).dim}
    assert config["languages"] == {"src": "en", "tgt": "de"} and config["training"]["negatives"] == "random"
    loaded = MLPScorer.load(tmp_path / "scorer")
    enc = get_encoder(ENC)
    x, y = enc.encode([s for s, _ in PAIRS], "en"), enc.encode([t for _, t in PAIRS], "de")
    np.testing.assert_array_equal(loaded.score(x, y), scorer.score(x, y))
    pipe = FilterPipeline.from_config([{"type": "mlp", "model": str(tmp_path / "scorer"), "accept": {"min": 0.0}}],
                                      src_lang="en", tgt_lang="de")
    np.testing.assert_allclose([r.score for r in pipe.run(PAIRS)], scorer.score(x, y))
    with pytest.raises(BisentError, match="trained for en-de, not en-fr"):
        FilterPipeline.from_config([{"type": "mlp", "model": str(tmp_path / "scorer")}], src_lang="en",
                                   tgt_lang="fr")


def test_missing_or_corrupt_scorer_is_a_one_line_error(tmp_path):
    good = tmp_path / "good"
    train_scorer(PAIRS, "en", "de", encoder=ENC, negatives="random", hidden=(8,), max_updates=5, out_dir=good)
    cfg, weights = (good / "config.json").read_text(), (good / "model.safetensors").read_bytes()

    def broken(name, config=cfg, data=weights):
        d = tmp_path / name
        d.mkdir()
        if config is not None:
            (d / "config.json").write_text(config)
        if data is not None:
            (d / "model.safetensors").write_bytes(data)
        return d

    other = json.loads(cfg)
    other["model"]["dim"] = 7
    cases = [(tmp_path / "absent", "no such scorer directory"),
             (broken("no_config", config=None), "config.json: missing"),
             (broken("bad_json", config="{not json"), "corrupt JSON"),
             (broken("not_mlp", config=json.dumps({"architecture": "kim2019"})), "not an MLP scorer"),
             (broken("no_weights", data=None), "model.safetensors: missing"),
             (broken("bad_weights", data=b"\x00garbage" * 10), "corrupt safetensors"),
             (broken("wrong_dim", config=json.dumps(other)), "weights do not match config.json")]
    for path, expected in cases:
        with pytest.raises(BisentError) as info:
            MLPScorer.load(path)
        assert expected in str(info.value) and "\n" not in str(info.value), (path, info.value)
        assert str(path) in str(info.value)


def test_negative_strategies():
    assert parse_strategy("worst:60") == ("worst", 60) and parse_strategy("random") == ("random", None)
    for bad in ("worst", "worst:0", "worst:abc", "best:20", "random:3"):
        with pytest.raises(BisentError):
            parse_strategy(bad)
    neg = random_pairing(PAIRS, 30, seed=1)
    assert len(neg) == 30 and not set(neg) & set(PAIRS)
    cos = np.arange(100, dtype=float)          # pair i has cosine i: best first is 99, 98, ...
    assert list(worst_band(cos, 100, 5)) == [0, 1, 2, 3, 4]           # the very worst
    assert list(worst_band(cos, 20, 5)) == [80, 81, 82, 83, 84]       # just above the top-20 % cut
    noisy = [(f"s{i}", f"t{i}") for i in range(100)]
    chosen = choose_negatives("worst:40", PAIRS, noisy=noisy, noisy_cos=cos, n=50)
    assert len(chosen) == 20 and chosen[0] == ("s60", "t60")          # at most a fifth of the corpus
    syn = synthetic_noise(PAIRS, 12, seed=0)
    assert len(syn) == 12 and not set(syn) & set(PAIRS)
    assert any(s == t for s, t in syn)                                # untranslated copies among them
    with pytest.raises(BisentError, match="need a noisy corpus"):
        choose_negatives("sample", PAIRS)


# ---------------------------------------------------------------------------
# The CLI end to end
# ---------------------------------------------------------------------------

def messy_file(path: Path) -> list[bytes]:
    lines = [f"{s}\t{t}".encode() for s, t in PAIRS]
    lines += [b"only one column", b"a\tb\tc", b"Caf\xe9 au lait.\tMilchkaffee.",
              b"x" * (1 << 20 | 5) + b"\ty", PAIRS[0][0].encode() + b"\t" + PAIRS[0][0].encode(), lines[1]]
    path.write_bytes(gzip.compress(b"\n".join(lines) + b"\n"))
    return lines


def test_cli_filter_end_to_end(tmp_path, capsys):
    lines = messy_file(tmp_path / "in.tsv.gz")
    config = tmp_path / "f.yaml"
    config.write_text("steps:\n  - {type: duplicate}\n  - {type: empty}\n  - {type: overlap}\n"
                      "  - {name: margin, type: margin, encoder: use-m3, k: 2, sample: 100}\n"
                      "select: {mode: top_n, n: 8, step: margin}\n")
    kept, rej, summ = tmp_path / "kept.tsv.gz", tmp_path / "rej.tsv", tmp_path / "s.json"
    assert main(["filter", tmp_path / "in.tsv.gz", "-l", "en", "-L", "de", "--config", config, "-e", ENC,
                 "-o", kept, "--rejected", rej, "--summary", summ, "--chunk-size", "5"]) == 0
    summary = json.loads(summ.read_text())
    assert summary["lines"] == len(lines) == summary["kept"] + summary["rejected"]
    assert summary["kept"] == 8
    assert summary["rejected_by"] == {"bad_row:columns": 2, "bad_row:utf8": 1, "bad_row:too_long": 1,
                                      "duplicate": 1, "overlap": 1, "select:top_n": 4}
    rows = [r.split("\t", 3) for r in rej.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == summary["rejected"] and all(r[1] for r in rows)
    assert {int(r[0]) for r in rows} | {i + 1 for i, ln in enumerate(lines) if ln in
                                        gzip.decompress(kept.read_bytes()).splitlines()} == set(range(1, 19))
    assert summary["pipeline"]["steps"][-1]["encoder"] == ENC
    assert json.loads(capsys.readouterr().err)["kept"] == 8


def test_cli_train_scorer_then_filter_with_it(tmp_path, capsys):
    clean = tmp_path / "clean.tsv"
    clean.write_text("".join(f"{s}\t{t}\n" for s, t in PAIRS) + "bad row\n")
    out = tmp_path / "scorer"
    assert main(["train-scorer", "--clean", clean, "--negatives", "synthetic", "-l", "en", "-L", "de", "-e", ENC,
                 "-o", out, "--hidden", "16", "--max-updates", "20"]) == 0
    info = json.loads(capsys.readouterr().err)
    assert info["positives"] == 12 and info["clean_skipped"] == 1 and info["negative_pairs"] == 12
    config = tmp_path / "f.yaml"
    config.write_text(f"- {{type: mlp, model: '{out}', accept: {{min: 0.5}}}}\n")
    assert main(["filter", clean, "-l", "en", "-L", "de", "--config", config, "-o", tmp_path / "k.tsv",
                 "--rejected", tmp_path / "r.tsv"]) == 0
    summary = json.loads(capsys.readouterr().err)
    assert summary["lines"] == 13 == summary["kept"] + summary["rejected"]
    assert set(summary["rejected_by"]) <= {"mlp", "bad_row:columns"}


def test_cli_errors_are_one_line(tmp_path, capsys):
    clean = tmp_path / "clean.tsv"
    clean.write_text("".join(f"{s}\t{t}\n" for s, t in PAIRS))
    config = tmp_path / "f.yaml"
    config.write_text(f"- {{type: mlp, model: '{tmp_path / 'missing'}'}}\n")
    cases = [(["train-scorer", "--clean", clean, "--negatives", "worst:40", "-l", "en", "-L", "de", "-e", ENC,
               "-o", tmp_path / "s"], "needs --noisy"),
             (["train-scorer", "--clean", clean, "--negatives", "worst:7x", "-l", "en", "-L", "de", "-o",
               tmp_path / "s"], "worst:X"),
             (["filter", clean, "-l", "en", "-L", "de", "--config", config, "-o", tmp_path / "k.tsv",
               "--rejected", tmp_path / "r.tsv"], "no such scorer directory")]
    for args, expected in cases:
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.startswith("bisent: error: ") and err.count("\n") == 1 and expected in err, err
