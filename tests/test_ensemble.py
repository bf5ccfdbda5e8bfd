"""An ensemble model directory: the normalised mean of its members' embeddings, built and loaded as one folder."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from bisent.cli import main  # noqa: E402
from bisent.encoders import get_encoder, l2_normalise  # noqa: E402
from bisent.encoders.trained import load_model_dir  # noqa: E402
from bisent.errors import BisentError  # noqa: E402
from bisent.models.dual import DAN, Adapter, save_dual  # noqa: E402
from bisent.models.ensemble import make_ensemble  # noqa: E402

TINY_DAN = {"buckets": 4096, "embed_dim": 32, "hidden": [64]}
TEXTS = ["Open the file", "Save the document as PDF", "hello world", "Datei öffnen", "打开文件", ""]


@pytest.fixture(autouse=True)
def _isolated_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("BISENT_CACHE", str(tmp_path / "cache"))


def _students(tmp_path, dims=(8, 8)) -> list:
    out = []
    for seed, dim in enumerate(dims):
        torch.manual_seed(seed)
        save_dual(DAN(dim=dim, **TINY_DAN), tmp_path / f"s{seed}")
        out.append(tmp_path / f"s{seed}")
    return out


def test_ensemble_is_the_normalised_mean_of_its_members_and_moves_as_one_folder(tmp_path):
    a, b, c = _students(tmp_path, (8, 8, 8))
    (a / "checkpoint.safetensors").write_bytes(b"a training run's state")     # left behind: resumes that run only
    (a / "train_log.jsonl").write_text("{}\n")
    assert main(["ensemble", str(a), str(b), "-o", str(tmp_path / "ens")]) == 0
    assert sorted(p.name for p in (tmp_path / "ens" / "member-1").iterdir()) == [
        "config.json", "model.safetensors", "train_log.jsonl"]
    moved = tmp_path / "elsewhere" / "ens"
    moved.parent.mkdir()
    shutil.move(tmp_path / "ens", moved)                                    # members travel with it
    ens = get_encoder(str(moved))
    ea, eb = (load_model_dir(m).encode(TEXTS, "en", cache=False) for m in (a, b))
    got = ens.encode(TEXTS, "en", cache=False)
    np.testing.assert_allclose(got, l2_normalise(ea + eb), atol=1e-5)
    assert got.shape == (len(TEXTS), 8)
    assert ens.id != load_model_dir(a).id and ens.id.startswith("ensemble/")
    cos = lambda x, y: np.sum(x * y, axis=1)                                # noqa: E731
    # cos(normalised mean, t) = the members' mean cosine / |mean| with |mean| <= 1: never nearer zero than it
    t = load_model_dir(c).encode(TEXTS[:5], "en", cache=False)
    assert np.all(np.abs(cos(got[:5], t)) >= np.abs(cos(ea[:5], t) + cos(eb[:5], t)) / 2 - 1e-5)
    config = json.loads((moved / "config.json").read_text())
    assert config["members"] == ["member-1", "member-2"] and config["sources"][0]["from"] == "s0"
    save_dual(Adapter("char-ngram", 1024, dim=8), tmp_path / "adapter")      # members of other architectures too
    mixed = make_ensemble(tmp_path / "mixed", [a, tmp_path / "adapter"])
    np.testing.assert_allclose(load_model_dir(mixed).encode(TEXTS, "en", cache=False),
                               l2_normalise(ea + load_model_dir(tmp_path / "adapter").encode(TEXTS, "en", cache=False)),
                               atol=1e-5)
    three = make_ensemble(tmp_path / "ens3", [a, b, c])
    each = sum(load_model_dir(m).encode(TEXTS, "de", cache=False) for m in (a, b, c))
    np.testing.assert_allclose(load_model_dir(three).encode(TEXTS, "de", cache=False), l2_normalise(each), atol=1e-5)


def test_members_of_other_hash_seeds_and_buckets_share_one_featurisation_and_give_their_own_vectors(tmp_path):
    """Members that differ in hash_seed or buckets hash the text once (raw_bags) and bucket it each their way:
    the ensemble is still the normalised mean of each member's own encoding."""
    dirs = []
    for i, kw in enumerate(({}, {"hash_seed": 3}, {"hash_seed": 4, "buckets": 2048})):
        torch.manual_seed(i)
        save_dual(DAN(dim=8, **{**TINY_DAN, **kw}), tmp_path / f"h{i}")
        dirs.append(tmp_path / f"h{i}")
    ens = load_model_dir(make_ensemble(tmp_path / "ens", dirs))
    assert len({m.featurizer.config for m in ens.members}) == 3
    assert len({m.featurizer.shared_key() for m in ens.members}) == 1
    each = sum(load_model_dir(d).encode(TEXTS, "en", cache=False) for d in dirs)
    np.testing.assert_allclose(ens.encode(TEXTS, "en", cache=False), l2_normalise(each), atol=1e-5)


def test_ensemble_mistakes_are_one_line_errors(tmp_path, capsys):
    a, b = _students(tmp_path)
    save_dual(DAN(dim=16, **TINY_DAN), tmp_path / "wide")
    wide = tmp_path / "wide"
    with pytest.raises(BisentError, match="at least 2 model directories"):
        make_ensemble(tmp_path / "e1", [a])
    with pytest.raises(BisentError, match="different sizes \\(8, 16\\)"):
        make_ensemble(tmp_path / "e2", [a, wide])
    assert not (tmp_path / "e2").exists()                                      # nothing written
    with pytest.raises(BisentError, match="no such model directory"):
        make_ensemble(tmp_path / "e3", [a, tmp_path / "nowhere"])
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("mine")
    assert main(["ensemble", str(a), str(b), "-o", str(tmp_path / "full")]) == 2
    assert "full: exists and is not an empty folder" in capsys.readouterr().err
    assert (tmp_path / "full" / "notes.txt").read_text() == "mine"            # a user's folder is never clobbered
    # through the command: one "bisent: error:" line, no traceback, the member folders unchanged, nothing written
    before = {q: q.read_bytes() for q in tmp_path.rglob("*") if q.is_file()}
    for argv, message in (([a], "at least 2 model directories, got 1"), ([a, wide], "different sizes (8, 16)"),
                          ([a, tmp_path / "nowhere"], "nowhere: no such model directory")):
        assert main(["ensemble", *map(str, argv), "-o", str(tmp_path / "cli")]) == 2
        err = capsys.readouterr().err
        assert err.count("bisent: error:") == 1 and message in err and "Traceback" not in err
        assert not (tmp_path / "cli").exists()
    assert {q: q.read_bytes() for q in tmp_path.rglob("*") if q.is_file()} == before
    ens = make_ensemble(tmp_path / "ok", [a, b])
    cfg = json.loads((ens / "config.json").read_text())
    for members, message in ((["member-1", "../s0"], "not a sub-directory"), (["member-1", "member-9"], "is missing"),
                             ("member-1", "must be a list"), (["member-1"], "at least 2 members")):
        (ens / "config.json").write_text(json.dumps({**cfg, "members": members}))
        with pytest.raises(BisentError, match=message):
            load_model_dir(ens)


def test_ensembles_from_cached_member_rows_score_as_the_built_ensemble(tmp_path, monkeypatch, capsys):
    """benchmarks/ensembles.py: an ensemble's records from its members' (cached) rows give the errors the ensemble
    directory gives on the same set, beside the reference, with the item-by-item comparison; malformed arguments are
    one-line errors."""
    import ensembles
    from bisent.datasets import domains
    from bisent.datasets.libreoffice import Pair
    from bisent.evaluate import recovery_misses

    words = ["open", "save", "close", "print", "file", "window", "help", "edit", "view", "table", "cell", "sheet"]
    pairs = [Pair("d", str(i), f"{a} the {b} now", f"{b} {a} jetzt", "test")
             for i, (a, b) in enumerate((a, b) for a in words for b in words if a != b)][:60]
    monkeypatch.setattr(domains, "split_pairs", lambda domain, src, tgt, split="test": pairs)
    a, b, ref = _students(tmp_path, (8, 8, 8))
    built = load_model_dir(make_ensemble(tmp_path / "ens", [a, b]))
    encoders = {str(a): load_model_dir(a), str(b): load_model_dir(b)}
    recs = ensembles.set_records("dict", "en", "de", {"ab": [str(a), str(b)]}, encoders, load_model_dir(ref))
    assert [r["encoder"] for r in recs] == [str(ref), "ab"] and recs[1]["n"] == 60
    st, ts = recovery_misses(built.encode([p.src for p in pairs], "en"), built.encode([p.tgt for p in pairs], "de"),
                             "csls", 4)
    assert abs(recs[1]["error_src_tgt"] - 100 * st.mean()) <= 100 / 60 + 1e-9          # at most an item apart
    assert abs(recs[1]["error_tgt_src"] - 100 * ts.mean()) <= 100 / 60 + 1e-9
    assert recs[1]["vs"] == str(ref) and {"gap", "p"} <= set(recs[1]["paired_src_tgt"])
    texts = [p.tgt for p in pairs]                                     # the rows themselves: float16 apart at most
    np.testing.assert_allclose(ensembles.joined([encoders[str(m)].encode(texts, "de") for m in (a, b)]),
                               built.encode(texts, "de", cache=False), atol=2e-3)
    rows = [np.eye(3)[:2] * 2, np.array([[0.0, 1, 0], [1, 0, 0]])]
    np.testing.assert_allclose(ensembles.joined(rows), l2_normalise(np.array([[1.0, 1, 0], [1, 1, 0]])))
    for bad, says in ((["x"], "NAME=DIR"), (["x=a", "x=b"], "taken"), (["use-m3=a"], "reference"),
                      (["x=a", "--set", "dict"], "DOMAIN:SRC-TGT"), ([f"x={tmp_path / 'missing'}"], "no such model")):
        with pytest.raises(SystemExit) as e:
            ensembles.main([*bad, "--out", str(tmp_path / "o.jsonl")])
        assert says in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "o.jsonl").exists()                          # nothing written for a mistake
